"""Chapter 06's results record, `results/<profile>/model_variations.json`, and the committed runs
the chapter shows beside its own.

The chapter fills one `ThisRun` as it goes (`ThisRun.keep`, a line at the end of the cells that
compute a part); `build` makes its typed record (`ModelVariationsRecord`) and `config` the
settings it trained with, `write` writes them with one call and `read` reads the record back
(`ChapterRecord`'s one way, under the file name the chapter was given), and `sentences.closing`
makes the chapter's closing section of what it read.

What the record's "metrics" hold (`build`):

* `rows`: per Table 3 row trained, the geometric-mean validation perplexity over seeds and its 95%
  t-interval (`ppl`, `ppl_ci95`), every seed's perplexity and BLEU (`ppl_seeds`, `bleu_seeds`),
  BLEU's per-seed bootstrap intervals (`bleu_ci95_seeds`), the difference from base's BLEU and in
  which seeds it exceeds the resampling noise (`bleu_minus_base`,
  `bleu_beyond_noise_of_base_seeds`), the parameter count (`params_m`), the seeds, each seed's
  epochs, steps, validation curve and training seconds, and the settings it trained with
  (`trained_with`: warm-up, peak rate, maximum length and batch tokens as used). The
  introduction's reproduction summary reads `rows.base.ppl` and `rows.A1.bleu_minus_base`;
* `overfit`: per dropout row on the small corpus, its pairs, seeds, epochs, final perplexities,
  curves and the epoch of its mean curve's lowest point;
* `verdicts`: the six findings at every budget of this run (`findings.assess`), with every
  comparison's difference, interval and verdict; the summary reads its last budget's "one head is
  worse";
* `spearman_ppl`: the rank correlation of this run's perplexities with the paper's and its
  bootstrap interval; `extended`: the committed extended run's epochs, verdicts after each epoch
  and its rank correlation at the last (None where no extended run is committed);
* `tie_margin_pct`, `alpha`: the statistics' fixed margin and level;
* `flops`: the FLOPs arithmetic of section 6.7, one line per profile (`tables.flops_budget`);
* `dataset`, `bleu`, `ppl`: what was measured on; `train_seconds`, `workers`: the training's wall
  time and processes.

Its "config" holds the Table 3 profile, the scale (width, depth and head divisors) and, per row,
the model configuration and training settings its runs used (seed aside).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ...evaluation import results
from ...profiles import Profile, Table3Scale
from ..chapter_record import ChapterRecord
from ..chapter_state import ChapterState
from . import rows as variations
from . import statistics as f
from . import verdicts
from .calibration import Calibration

RESULTS_NAME = "model_variations"
# the gpu recipe's run (chapter 05's recipe at the gpu profile), whose achieved rate section 6.7
# sets beside this run's
GPU_RECIPE_RUN = ("sweep_d256x4", "gpu")


@dataclass
class ThisRun(ChapterState):
    """What chapter 06 computed, kept as it goes for its results record."""

    profile: Profile  # the Table 3 profile (its vocabulary and batches applied)
    scale: variations.VariationScale
    rows: list[str]
    epochs: int
    seeds: list[int]
    overfit_rows: list[str]
    # the data (section 6.2)
    valid_pairs: int = 0
    bleu_sentences: int = 0
    overfit_pairs: int = 0
    # the training (6.2): every RowRun, the wall time and the processes
    runs: list = field(default_factory=list)
    train_seconds: float = 0.0
    workers: int = 1
    # the small corpus's mean curves (6.3: columns row, point, epoch, ppl)
    small_mean: pd.DataFrame | None = None
    # the verdicts (6.4), this run's and the committed extended run's
    budgets: list = field(default_factory=list)
    extended_budgets: list = field(default_factory=list)
    # beside Table 3 (6.5): `tables.beside_table3` and {row: {seed: final perplexity}}
    table: pd.DataFrame | None = None
    final_ppl: dict | None = None
    # the rank correlations (6.6) and the FLOPs arithmetic (6.7)
    correlation: dict | None = None
    extended_correlation: dict | None = None
    flops: pd.DataFrame | None = None


# ------------------------------------------------------------------------------ the record
@dataclass(frozen=True)
class TrainedWith:
    """The settings a row's runs trained with, as used."""

    warmup_steps: int
    peak_lr: float
    max_len: int
    batch_tokens: int


@dataclass(frozen=True)
class RowRecord:
    """One Table 3 row trained on the whole corpus: its scores over seeds and per seed, its
    difference from base's BLEU, its size, and each seed's training."""

    ppl: float  # geometric mean over seeds
    ppl_ci95: list[float]  # [low, high]
    ppl_seeds: list[float]
    bleu: float
    bleu_seeds: list[float]
    bleu_ci95_seeds: list[float]
    bleu_minus_base: float
    # as `tables.beside_table3` gives it (None for base)
    bleu_beyond_noise_of_base_seeds: Any
    params_m: float
    seeds: list[int]
    epochs: list[float]
    steps: list[int]
    curves: dict[str, list[dict]]  # {seed: validation curve}
    train_s: list[float]
    trained_with: TrainedWith


@dataclass(frozen=True)
class OverfitRecord:
    """One dropout row on the small corpus: its runs, curves and the epoch of its mean curve's
    lowest point."""

    train_pairs: int
    seeds: list[int]
    epochs: list[float]
    ppl_seeds: list[float]
    curves: dict[str, list[dict]]
    lowest_epoch: float


@dataclass(frozen=True)
class ExtendedRecord:
    """The committed extended run as this record holds it: its epochs, its budgets' verdicts
    (`statistics.assess`'s findings) and its rank correlation at the last."""

    epochs: int = 0
    verdicts: list[dict] = field(default_factory=list)
    spearman_ppl: dict | None = None


@dataclass(frozen=True, kw_only=True)
class ModelVariationsRecord(ChapterRecord):
    """Chapter 06's record: the fields the module's docstring lists. A budget's verdicts
    (`verdicts`, `extended.verdicts`), the rank correlations and the FLOPs lines are kept as the
    statistics and tables give them (mappings)."""

    RESULTS_NAME = "model_variations"

    rows: dict[str, RowRecord]
    overfit: dict[str, OverfitRecord]
    verdicts: list[dict]
    spearman_ppl: dict | None
    extended: ExtendedRecord | None = None  # runs before the extended run hold none
    tie_margin_pct: float
    alpha: float
    flops: list[dict]
    dataset: str
    bleu: str
    ppl: str
    train_seconds: float
    workers: int


def row_records(
    table: pd.DataFrame,
    runs: Sequence,
    final_ppl: Mapping[str, Mapping[int, float]],
    seeds: Sequence[int],
    max_len: int,
    batch_tokens: int,
) -> dict[str, RowRecord]:
    """The record's `rows`: per row its scores, seeds, curves and settings."""

    def run_of(row: str, seed: int):
        return next(r for r in runs if (r.row, r.seed, r.corpus) == (row, seed, "full"))

    out = {}
    for r in table.itertuples():
        mine = [run_of(r.row, s) for s in seeds]
        out[r.row] = RowRecord(
            ppl=round(r.ppl, 3),
            ppl_ci95=[round(r.ppl_low, 3), round(r.ppl_high, 3)],
            ppl_seeds=[round(final_ppl[r.row][s], 3) for s in seeds],
            bleu=round(r.bleu, 2),
            bleu_seeds=[round(x, 2) for x in r.bleu_seeds],
            bleu_ci95_seeds=list(r.bleu_ci95_seeds),
            bleu_minus_base=round(r.bleu_minus_base, 2),
            bleu_beyond_noise_of_base_seeds=r.beyond,
            params_m=round(r.params / 1e6, 4),
            seeds=list(seeds),
            epochs=[x.epochs for x in mine],
            steps=[x.steps for x in mine],
            curves={str(s): x.curve for s, x in zip(seeds, mine)},
            train_s=[round(x.train_s, 1) for x in mine],
            trained_with=TrainedWith(
                warmup_steps=mine[0].warmup_steps,
                peak_lr=mine[0].peak_lr,
                max_len=max_len,
                batch_tokens=batch_tokens,
            ),
        )
    return out


def overfit_records(
    runs: Sequence,
    rows: Sequence[str],
    seeds: Sequence[int],
    train_pairs: int,
    lowest_epoch: Mapping[str, float],
) -> dict[str, OverfitRecord]:
    """The record's `overfit`: per dropout row its small-corpus runs, curves and lowest epoch."""
    out = {}
    for row in rows:
        mine = [
            next(r for r in runs if (r.row, r.seed, r.corpus) == (row, s, "small"))
            for s in seeds
        ]
        out[row] = OverfitRecord(
            train_pairs=train_pairs,
            seeds=list(seeds),
            epochs=[x.epochs for x in mine],
            ppl_seeds=[round(x.ppl, 3) for x in mine],
            curves={str(s): x.curve for s, x in zip(seeds, mine)},
            lowest_epoch=float(lowest_epoch[row]),
        )
    return out


def lowest_epochs(small_mean: pd.DataFrame) -> dict[str, float]:
    """{row: the epoch of its mean curve's lowest perplexity} on the small corpus."""
    lowest = small_mean.loc[small_mean.groupby("row").ppl.idxmin()].set_index("row")
    return lowest.epoch.to_dict()


def trained_with(profile: Profile, row: str, epochs: int) -> dict:
    """The configuration and training settings the row's runs trained with (seed aside)."""
    config = variations.row_config(row, profile)
    train = variations.row_settings(profile, config, epochs=epochs, seed=1).to_dict()
    return {
        "model": config.to_dict(),
        "train": {k: v for k, v in train.items() if k != "seed"},
    }


def _as_stored(value: Any) -> Any:
    """A mapping the record keeps as it is (a budget's verdicts), with its tuples as the lists
    its file gives back, so that the record read back equals the record built."""
    if isinstance(value, Mapping):
        return {k: _as_stored(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_as_stored(v) for v in value]
    return value


def config(run: ThisRun) -> dict:
    """The record file's "config": the Table 3 profile, the scale and, per row, the model
    configuration and training settings its runs used (seed aside)."""
    p = run.profile
    scale = run.scale
    return {
        "profile": p.to_dict(),
        "scale": {"width": scale.width, "depth": scale.depth, "heads": scale.heads},
        "rows": {row: trained_with(p, row, run.epochs) for row in run.rows},
    }


def build(run: ThisRun) -> ModelVariationsRecord:
    """The record from what the chapter kept (the module's docstring lists the fields)."""
    p = run.profile
    max_len = p.model_config().max_len
    return ModelVariationsRecord(
        rows=row_records(
            run.table, run.runs, run.final_ppl, run.seeds, max_len, p.batch_tokens
        ),
        overfit=overfit_records(
            run.runs,
            run.overfit_rows,
            run.seeds,
            run.overfit_pairs,
            lowest_epochs(run.small_mean),
        ),
        verdicts=_as_stored(run.budgets),
        spearman_ppl=run.correlation,
        extended=ExtendedRecord(
            epochs=len(run.extended_budgets),
            verdicts=_as_stored(
                [
                    {k: b[k] for k in ("full_epoch", "small_epoch", "label", "findings")}
                    for b in run.extended_budgets
                ]
            ),
            spearman_ppl=run.extended_correlation,
        ),
        tie_margin_pct=round(f.percent(f.TIE_MARGIN), 3),
        alpha=f.ALPHA,
        flops=run.flops.to_dict(orient="records"),
        dataset=f"{p.corpus} {p.src_lang}->{p.tgt_lang}, {p.valid_split} split",
        bleu="sacreBLEU, greedy translations of all "
        f"{run.bleu_sentences} validation sentences",
        ppl=f"per subword on all {run.valid_pairs} pairs of the validation split",
        train_seconds=round(run.train_seconds, 1),
        workers=run.workers,
    )


def write(
    record: ModelVariationsRecord,
    profile_name: str,
    wall_time_s: float,
    results_dir: str | os.PathLike | None = None,
    *,
    device: Any,
    config: dict | None = None,
    name: str = RESULTS_NAME,
) -> Path:
    """`results/<profile_name>/<name>.json` (under `results_dir`, default the results root) of
    `record`, with the settings it trained with (`config`) and the device's provenance; the path
    written. `name` keeps a run beside the default one (`model_variations_seeds4`)."""
    named = record if name == RESULTS_NAME else _named(name)(**vars(record))
    return named.write(
        profile_name, round(wall_time_s, 1), results_dir, device=device, config=config
    )


def read(
    profile_name: str,
    results_dir: str | os.PathLike | None = None,
    name: str = RESULTS_NAME,
) -> ModelVariationsRecord | None:
    """The record `write` wrote for `profile_name` under `name`, or None when the chapter has not
    run."""
    found = _named(name).read(profile_name, results_dir)
    return None if found is None else ModelVariationsRecord(**vars(found))


def _named(name: str) -> type[ModelVariationsRecord]:
    """The record class whose file is `name` (the chapter's own for RESULTS_NAME)."""
    if name == RESULTS_NAME:
        return ModelVariationsRecord
    return type("ModelVariationsRecord", (ModelVariationsRecord,), {"RESULTS_NAME": name})


# ------------------------------------------------------------------------------ committed runs
def _committed(root: str | os.PathLike | None) -> Path | None:
    return Path(root) if root is not None else results.committed_root()


def committed_calibration(
    profile_name: str, table3: Table3Scale, root: str | os.PathLike | None = None
) -> Calibration:
    """The calibration of `profile_name`'s warm-up and peak committed under the clone's results
    folder (`root`, default the clone's; none in an installed copy), with `table3`'s batches."""
    folder = _committed(root)
    tuning = f"tuning_table3_{profile_name}"

    def committed(name: str) -> dict | None:
        return results.read_result(name, tuning, folder) if folder else None

    return Calibration(
        chosen=committed("calibration"),
        whole_epoch=committed("calibration_epoch1"),
        pre_norm=committed("calibration_epoch1_prenorm"),
        batch_tokens=table3.batch_tokens,
    )


def committed_extended(
    profile_name: str, root: str | os.PathLike | None = None
) -> tuple[dict | None, list[dict]]:
    """The committed extended run of `profile_name` (`results/table3_extended_<profile>/`) and its
    budgets, one per epoch every row has finished; (None, []) when none is committed."""
    return verdicts.load_extended(_committed(root), profile_name)


def gpu_recipe_run(results_dir: str | os.PathLike | None = None) -> dict | None:
    """The results record of the gpu recipe's run (under the results root), whose achieved rate
    section 6.7 sets beside this run's; None where it has not run."""
    name, profile = GPU_RECIPE_RUN
    return results.read_result(name, profile, results_dir)

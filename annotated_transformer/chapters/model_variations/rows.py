"""Table 3 at a scale one machine can afford: each row's change applied to a scaled-down base.

Section 6.2 varies one thing at a time around the base model (heads and key size, depth, width,
feed-forward size, dropout, label smoothing, learned positions, and the big model). Training every
row at the paper's size takes days of GPU time; what carries over to a smaller model is the *ratio*
of each change. A `VariationScale` divides every width of the paper's configurations (d_model, d_ff)
by one number, every depth by another and every head count by a third (one head stays one head), and
gives each row the key and value sizes that keep its share of the width: h * d_k / d_model is the
paper's (1 for the A rows, 1/4 for B1). A scale that leaves a head narrower than `MIN_HEAD_DIM` is
refused: at d_k = 2 a head no longer means what the paper's 16 does.

`train_row` trains one row on prepared data through `training.fit`, the pipeline's door, for whole
epochs with one warm-up and peak rate for every row (chosen on base), and records the validation
perplexity through training (the curve), the final perplexity, BLEU and parameters. The verdicts are
`findings`'s.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from ...evaluation.scoring import sacrebleu_score, translate
from ...model.config import TABLE3_ALL_ROWS, TransformerConfig, preset
from ...model.transformer import count_parameters
from ...profiles import Profile
from ...runtime.files import scratch_folder
from ...runtime.precision import resolve_precision
from ...training.fit import fit
from ...training.settings import TrainSettings

WIDTH_FIELDS = ("d_model", "d_ff")
DEPTH_FIELDS = ("n_layers",)
MIN_HEAD_DIM = 8  # the narrowest key or value a scaled row may have


def paper_config(row: str) -> TransformerConfig:
    """The paper's configuration of a Table 3 row (the presets of model/config.py), d_k and d_v explicit."""
    if row not in TABLE3_ALL_ROWS:
        raise ValueError(
            f"unknown Table 3 row {row!r}; choose one of {', '.join(TABLE3_ALL_ROWS)}"
        )
    config = preset(row)
    return config.replace(d_k=config.head_dim_k, d_v=config.head_dim_v)


def changes(row: str) -> dict:
    """The fields in which a row differs from the paper's base (d_k and d_v explicit)."""
    base, config = paper_config("base"), paper_config(row)
    fields = (
        "n_layers",
        "d_model",
        "d_ff",
        "n_heads",
        "d_k",
        "d_v",
        "dropout",
        "label_smoothing",
        "positional",
    )
    return {
        f: getattr(config, f) for f in fields if getattr(config, f) != getattr(base, f)
    }


@dataclass(frozen=True)
class VariationScale:
    """Divide the paper's widths by `width`, depths by `depth` and head counts by `heads`.

    Every division must be exact; one head stays one head. d_k and d_v follow from the rest: each
    row keeps the paper's h * d_k / d_model, so A4 keeps h * d_k = d_model and B1 a quarter of it.
    """

    width: int = 4
    depth: int = 2
    heads: int = 1

    def _divide(self, name: str, value: int, by: int, row: str) -> int:
        if value % by:
            raise ValueError(
                f"row {row}: {name}={value} is not divisible by {by}; choose another scale"
            )
        return value // by

    def config(self, row: str, **overrides) -> TransformerConfig:
        """Row `row` at this scale: widths, depths and heads divided, the rest kept.

        `overrides` set what is not part of Table 3 (max_len, warmup_steps).
        """
        paper = paper_config(row)
        sized = {
            f: self._divide(f, getattr(paper, f), self.width, row) for f in WIDTH_FIELDS
        }
        sized.update(
            {f: self._divide(f, getattr(paper, f), self.depth, row) for f in DEPTH_FIELDS}
        )
        heads = (
            1
            if paper.n_heads == 1
            else self._divide("n_heads", paper.n_heads, self.heads, row)
        )
        for f in ("d_k", "d_v"):
            share = getattr(paper, f) * paper.n_heads  # h * d_k at the paper's width
            size = self._divide(f, share * sized["d_model"], paper.d_model * heads, row)
            if size < MIN_HEAD_DIM:
                raise ValueError(
                    f"row {row}: {f}={size} at this scale (the paper's {getattr(paper, f)}) is "
                    f"below {MIN_HEAD_DIM}; divide the widths less or the heads more"
                )
            sized[f] = size
        return paper.replace(**sized, n_heads=heads, name=row, **overrides)


def scaled_changes(row: str, scale: VariationScale) -> dict:
    """What row `row` changes from base at this scale (same fields as `changes`, scaled values)."""
    base, config = scale.config("base"), scale.config(row)
    return {f: getattr(config, f) for f in changes(row)} | {
        f: getattr(config, f)
        for f in ("n_heads", "d_k", "d_v")
        if getattr(config, f) != getattr(base, f)
    }


def scale_of(profile: Profile) -> VariationScale:
    """The profile's Table 3 scale."""
    book = profile.book
    return VariationScale(
        book.table3.width_divisor, book.table3.depth_divisor, book.table3.heads_divisor
    )


def row_settings(
    profile: Profile, config: TransformerConfig, *, epochs: int, seed: int
) -> TrainSettings:
    """One row's training: the profile's batches and optimiser for `epochs` epochs, no snapshots.

    Every row has the warm-up and peak rate the profile chose on base (`table3.warmup_steps`,
    `table3.peak_lr`); the peak follows the paper's rule lr ~ d_model^-0.5 (section 5.3) from base's
    width, so only C4, C5 and big, which change d_model, get another peak.
    """
    book = profile.book
    base_width = scale_of(profile).config("base").d_model
    peak = (
        None
        if book.table3.peak_lr is None
        else book.table3.peak_lr * math.sqrt(base_width / config.d_model)
    )
    return profile.train_settings().replace(
        name=f"table3 {profile.name}",
        max_steps=None,
        max_epochs=epochs,
        time_budget_minutes=None,
        seed=seed,
        peak_lr=peak,
        warmup_steps=book.table3.warmup_steps,
        eval_every=0,
        log_every=1000,
        save_every_steps=None,
        save_every_minutes=None,
        keep_snapshots=1,
        compile=False,
    )


def row_config(row: str, profile: Profile) -> TransformerConfig:
    """Row `row` as `train_row` trains it: scaled, with the profile model's positions and the rows'
    warm-up, so a results file records what trained rather than the preset's values."""
    config = scale_of(profile).config(row, max_len=profile.model_config().max_len)
    return config.replace(warmup_steps=profile.book.table3.warmup_steps)


@dataclass
class RowRun:
    """One trained row and seed: its curve, what Table 3 reports and what it cost."""

    row: str
    seed: int
    corpus: str  # "full": the whole training split; "tenth" and so on: its first pairs
    train_pairs: int
    epochs: float  # epochs of `train_pairs` trained
    # validation perplexity per subword at the end (eos included, no smoothing)
    ppl: float
    curve: list[dict]  # {"step", "epoch", "ppl"} through training, the end included
    # sacreBLEU of greedy translations of the BLEU sentences (None: not scored)
    bleu: float | None
    params: int
    steps: int
    train_s: float
    train_cpu_s: float  # CPU time per thread inside the training loop
    eval_s: float
    peak_lr: float | None
    warmup_steps: int
    # the greedy translations BLEU scored
    hypotheses: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        """The measurements, without the translations."""
        return {k: v for k, v in self.__dict__.items() if k != "hypotheses"}


def train_row(
    row: str,
    data,
    profile: Profile,
    *,
    seed: int,
    epochs: int,
    corpus: str = "full",
    train_pairs: int | None = None,
    curve_points: int = 8,
    device: torch.device | str = "cpu",
    bleu_sources: Sequence[str] = (),
    bleu_references: Sequence[str] = (),
    norm_position: str | None = None,
) -> RowRun:
    """Train row `row` under `profile`'s Table 3 scale on `data` (a `pipeline.PreparedData`).

    `train_pairs` keeps the first pairs of the training split (None: all). The validation perplexity
    on all of `data.valid` is measured `curve_points` times, evenly in epochs, the last at the end;
    the schedule has no horizon, so the curve at epoch e is what a run of e epochs would reach. BLEU
    comes from greedy decoding of `bleu_sources` (None when none are given). `norm_position` "pre"
    is a diagnostic, not a row of the table: the same row with the norm before each sub-layer.
    """
    config = row_config(row, profile)
    if norm_position is not None:
        config = config.replace(norm_position=norm_position)
    settings = row_settings(profile, config, epochs=epochs, seed=seed)
    # Rows are compared with one another, so they share one precision decided without timing:
    # timing each row's own shape could train rows of one table in different precisions.
    settings = settings.replace(precision=resolve_precision(settings.precision, device))
    train = data.train if train_pairs is None else data.train.subset(range(train_pairs))
    marks = [epochs * k / curve_points for k in range(1, curve_points)]
    curve: list[dict] = []

    def record(trainer, valid: dict) -> None:
        curve.append(
            {
                "step": trainer.progress.step,
                "epoch": round(trainer.epochs_done(), 4),
                "ppl": float(valid["ppl"]),
            }
        )

    def on_step(trainer) -> None:
        if len(curve) < len(marks) and trainer.epochs_done() >= marks[len(curve)] - 1e-9:
            record(trainer, trainer.validate())

    with scratch_folder(f"table3-{row}-") as out_dir:
        fitted = fit(
            config,
            data.tokenizer,
            train,
            data.valid,
            settings,
            out_dir,
            device=device,
            show_progress=False,
            on_step=on_step,
        )
    model, result = fitted.model, fitted.result
    record(fitted.trainer, result.valid)
    started = time.perf_counter()
    bleu, hypotheses = None, []
    if len(bleu_sources):
        greedy = profile.decode_settings().replace(beam_size=1)
        hypotheses = translate(model, data.tokenizer, list(bleu_sources), greedy)
        bleu = float(sacrebleu_score(hypotheses, list(bleu_references))["score"])
    return RowRun(
        row=row,
        seed=seed,
        corpus=corpus,
        train_pairs=len(train),
        epochs=round(fitted.trainer.epochs_done(), 4),
        ppl=float(result.valid["ppl"]),
        curve=curve,
        bleu=bleu,
        params=count_parameters(model),
        steps=result.progress.step,
        train_s=result.progress.train_time_s,
        train_cpu_s=result.progress.train_cpu_s,
        eval_s=time.perf_counter() - started,
        peak_lr=settings.peak_lr,
        warmup_steps=settings.warmup_steps,
        hypotheses=list(hypotheses),
    )


# ------------------------------------------------------------------------------------------ many rows
_WORKER: dict = {}


def _start_worker(profile: Profile, data_dir) -> None:
    """A worker process (one thread, see `runtime.side_by_side`): the data prepared once (the
    tokenizer comes from the cache)."""
    from ...pipeline import prepare_data

    _WORKER["data"] = prepare_data(profile, data_dir)


def _train_in_worker(arguments: dict) -> RowRun:
    return train_row(data=_WORKER["data"], **arguments)


def train_rows(
    plan: Sequence[dict],
    data,
    profile: Profile,
    *,
    workers: int = 1,
    data_dir=None,
    device: torch.device | str = "cpu",
    bleu_sources: Sequence[str] = (),
    bleu_references: Sequence[str] = (),
):
    """Train every job of `plan`, yielding each `RowRun` as it finishes (in any order).

    A job is `train_row`'s keywords (row, seed, epochs, and corpus and train_pairs where not the
    whole split; profile where its Table 3 settings differ) plus "bleu": whether to translate the
    BLEU sentences. With workers > 1, that many
    processes of one thread each train rows side by side (each prepares the same data from the
    tokenizer cache once): on a CPU, models this small keep one core busy but gain little from a
    second thread, so two processes do about twice the work of one; on a GPU the processes share it,
    since one small model leaves most of it idle. Otherwise the rows train one after another in this
    process, on `data`.
    """

    def arguments(job: dict) -> dict:
        job = dict(job)
        scored = job.pop("bleu", False)
        return job | {
            # a job may name a profile of its own Table 3 settings (a calibration's candidate);
            # its data must be `profile`'s
            "profile": job.get("profile", profile),
            "device": str(device),
            "bleu_sources": list(bleu_sources) if scored else [],
            "bleu_references": list(bleu_references) if scored else [],
        }

    if workers <= 1:
        for job in plan:
            yield train_row(data=data, **arguments(job))
        return
    from concurrent.futures import as_completed

    from ...runtime.side_by_side import one_thread_pool

    with one_thread_pool(workers, _start_worker, (profile, data_dir)) as pool:
        futures = [pool.submit(_train_in_worker, arguments(job)) for job in plan]
        for future in as_completed(futures):
            yield future.result()

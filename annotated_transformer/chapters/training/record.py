"""Chapter 04's results record, `results/<profile>/training.json`, and the translation record its
run publishes.

What the record's "metrics" hold, built by `build` from what the chapter computed:

* the profile's run, as `pipeline.run` summarised it: `dataset`, `steps`, `train_time_s`,
  `step_time_s` (which the introduction's summary sets beside the paper's 0.4 s),
  `target_tokens_per_step`, `target_tokens_per_s`, `mfu`, `valid_ppl` (last weights),
  `parameters`, `test_sacrebleu` and `test_bleu_tokenized` (averaged weights) and
  `translation_results`, the name of the translation record the run published;
* section 4.1: `bpe`, how the shared vocabulary cuts each split and side (the rows of
  `tables.bpe_table`);
* section 4.2: `padding_fraction`, {batching: share of padding} for the three batchings;
* section 4.5: `copy_task` (steps, held-out accuracy, longest trained length);
* `resume_bit_identical`: whether the stopped and resumed run ended with the straight run's
  weights;
* section 4.7: `warmup_experiment` (final training NLL of the four runs, its standard error,
  and each model's top-over-bottom gradient at initialisation) and `extrapolation` (copy
  accuracy per length and kind of position);
* `sizes`: the chapter's own experiment sizes under the profile.

Its "config" holds the model's configuration and the profile; the record keeps the profile's
`vocab_size` from it, which the closing section names. `TrainingRecord` holds them typed; `write`
writes it and `read` reads it back (`ChapterRecord`); `sentences.closing` turns the record read
back into the chapter's closing section.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from ...evaluation import results
from ..chapter_record import ChapterRecord, beside_metrics
from .sizes import TrainingSizes

RESULTS_NAME = "training"


@dataclasses.dataclass(frozen=True)
class CopyTask:
    """Section 4.5's copy task: its training steps, the share of held-out sequences copied
    exactly, and the longest sequence it trained on."""

    steps: int
    accuracy: float
    max_length: int


@dataclasses.dataclass(frozen=True)
class WarmupExperiment:
    """Section 4.7's four runs (post-norm and pre-norm, with and without a warm-up): each run's
    final training NLL and its standard error, by run name, and each model's top layer gradient
    over its bottom layer's at initialisation, by "<norm>-norm, <stack>"."""

    final_nll: dict[str, float]
    final_nll_se: dict[str, float]
    top_over_bottom_gradient: dict[str, float]


@dataclasses.dataclass(frozen=True)
class ExtrapolationRow:
    """One length of the extrapolation test, for one kind of position: the share of sequences
    copied whole and the share of tokens put in their place."""

    length: int
    exact_sequence: float
    tokens_in_place: float
    positions: str


def extrapolation_rows(table: pd.DataFrame) -> tuple[ExtrapolationRow, ...]:
    """The extrapolation table (one row per length and kind of position) as the record's rows."""
    return tuple(ExtrapolationRow(**row) for row in table.to_dict(orient="records"))


@dataclasses.dataclass(frozen=True)
class TrainingRecord(ChapterRecord):
    """Chapter 04's record: the metrics the module's docstring lists, and the profile's
    vocabulary size, which the file keeps in its config rather than its metrics."""

    RESULTS_NAME = "training"

    dataset: str
    step_time_s: float
    steps: int
    train_time_s: float
    target_tokens_per_step: float
    target_tokens_per_s: float
    mfu: float | None
    valid_ppl: float
    parameters: int
    test_sacrebleu: float
    test_bleu_tokenized: float
    translation_results: str
    bpe: tuple[dict[str, Any], ...]
    padding_fraction: dict[str, float]
    copy_task: CopyTask
    resume_bit_identical: bool
    warmup_experiment: WarmupExperiment
    extrapolation: tuple[ExtrapolationRow, ...]
    sizes: TrainingSizes
    # from the file's config: the vocabulary of the profile that ran
    vocab_size: int | None = beside_metrics(
        lambda found: found["config"]["profile"]["vocab_size"]
    )


def build(
    profile,
    summary: Mapping,
    bpe: pd.DataFrame,
    batching: pd.DataFrame,
    copy_run: Mapping,
    warm: tuple[pd.DataFrame, Mapping],
    extrapolation: pd.DataFrame,
    sizes: TrainingSizes,
    resume_identical: bool,
) -> TrainingRecord:
    """The record from `summary` of the profile's run (`pipeline.run`), the tables of sections
    4.1 (`bpe`) and 4.2 (`batching`), the copy run, `warm` (the warm-up runs' final losses table,
    {(norm, stack): top-over-bottom gradient}), the extrapolation table, the chapter's sizes, and
    whether the resumed run's weights were bit-identical."""
    final, top = warm
    by_run = final.set_index("run")
    return TrainingRecord(
        dataset=f"{profile.corpus} {profile.src_lang}->{profile.tgt_lang}",
        step_time_s=summary["train_time_s"] / summary["steps"],
        steps=summary["steps"],
        train_time_s=summary["train_time_s"],
        target_tokens_per_step=summary["target_tokens"] / summary["steps"],
        target_tokens_per_s=summary["target_tokens_per_s"],
        mfu=summary["mfu"],
        valid_ppl=summary["valid"]["ppl"],
        parameters=summary["parameters"],
        test_sacrebleu=summary["test"]["sacrebleu"],
        test_bleu_tokenized=summary["test"]["bleu_tokenized"],
        translation_results=Path(summary["results_path"]).name,
        bpe=tuple(bpe.to_dict(orient="records")),
        padding_fraction=batching.set_index("batches")["padding"].to_dict(),
        copy_task=CopyTask(
            steps=copy_run["steps"],
            accuracy=copy_run["accuracy"],
            max_length=sizes.copy_length,
        ),
        resume_bit_identical=bool(resume_identical),
        warmup_experiment=WarmupExperiment(
            final_nll=by_run.iloc[:, 0].to_dict(),
            final_nll_se=by_run["standard error"].to_dict(),
            top_over_bottom_gradient={f"{n}, {s}": v for (n, s), v in top.items()},
        ),
        extrapolation=extrapolation_rows(extrapolation),
        sizes=sizes,
        vocab_size=profile.vocab_size,
    )


def write(
    record: TrainingRecord,
    profile,
    device,
    wall_time_s: float,
    results_dir: str | os.PathLike | None = None,
) -> Path:
    """`results/<profile>/training.json` (under `results_dir`, default the results root), with
    the model's configuration and the profile as its config; the path written."""
    return record.write(
        profile.results_folder,
        round(wall_time_s, 1),
        results_dir,
        device=device,
        config={"model": profile.model_config().to_dict(), "profile": profile.to_dict()},
    )


read = TrainingRecord.read


def published_translation(
    summary: Mapping, profile_name: str, results_dir: str | os.PathLike | None = None
) -> str:
    """The translation record the profile's run published into `results/<profile_name>/`, read
    back and checked against the run's summary (its test scores and steps): one line naming
    the file and where and when it was measured. ValueError when it is missing or differs."""
    path = Path(summary["results_path"])
    published = results.read_result(path.stem, profile_name, results_dir)
    if published is None:
        raise ValueError(f"the run published no {path.name} under {profile_name}/")
    test, metrics = summary["test"], published["metrics"]
    expected = {
        "sacrebleu": test["sacrebleu"],
        "bleu_tokenized": test["bleu_tokenized"],
        "steps": summary["steps"],
    }
    differing = [k for k, v in expected.items() if metrics.get(k) != v]
    if differing:
        raise ValueError(
            f"{path.name} does not hold the run's {', '.join(differing)}: it is not this run's"
        )
    return f"{path.parent.name}/{path.name}: {results.describe_provenance(published)}"

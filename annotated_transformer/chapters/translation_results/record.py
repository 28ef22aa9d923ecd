"""Chapter 05's results record, `results/<profile>/translation.json`, and the committed runs the
chapter shows beside its own.

What the record's "metrics" hold, built by `build` from what the chapter computed:

* the averaged model's beam search on the test set, scored once: `dataset`, `test_set`, `sentences`,
  `bleu_tokenized` (the paper's kind, with compound splitting) with its signature and its value
  `..._without_compound_splitting`, `references_with_hyphen`, `sacrebleu` with
  `sacrebleu_ci95` (sacreBLEU's bootstrap) and its signature, `ppl`; the introduction's summary reads
  `bleu_tokenized`, `sacrebleu` with `sacrebleu_ci95`, and `training_flops`;
* the cost (`cost_fields`): `parameters`, `training_flops` (the paper's way: seconds x one device
  x a sustained rate, like for like with Table 2) and `training_flops_how`,
  `training_flops_counted` (from the model), `training_flops_six_n`, `model_flops_utilisation`;
* `greedy` and `beam` (`decoding_record`), on the validation split (`decoding_set`,
  `decoding_sentences`): both decodings' scores, seconds and 95% half-widths, and the beam's
  p-value against greedy; `kv_cache_seconds`: beam search with and without the key-value cache;
* `averaging`: the averaging sweep on the same validation sentences, one row per k;
  `averaged_checkpoints`: the snapshots of the profile's average;
* `run`: the run's steps, training time, target tokens, device, and who trained it;
* `gpu_comparison`: the committed `gpu` run beside this one (`GpuRun`), or None;
* `paper_recipe`: section 5.7, the recipe counted (`recipe_cost_fields`) and its check's steps,
  losses, validation loss, vocabulary and seconds (`recipe_check_fields`).

`TranslationRecord` holds them typed. Its file's "config" holds the model's configuration and the
profile. `write` writes it, `read` reads it back (`ChapterRecord`), and `sentences.closing` turns
it into the chapter's closing section. `paper_runs` finds the committed `paper` runs the chapter
shows (the committed `gpu` run is `table2.committed_gpu_run`'s, beside the comparison that reads
it).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...evaluation import results
from ...pipeline import default_results_name
from ...profiles import Profile, get_profile
from ..chapter_record import ChapterRecord

if TYPE_CHECKING:
    import pandas as pd

    from .table2 import FinishedRun, RecipeCheck, RecipeCost, RunCost

RESULTS_NAME = "translation"
_record = dataclasses.dataclass(frozen=True, kw_only=True)


# ------------------------------------------------------------------------------------------ parts
@_record
class Decoding:
    """Greedy decoding on the validation split: scores, seconds and the bootstrap's 95%
    half-width."""

    sacrebleu: float
    bleu_tokenized: float
    decode_seconds: float
    sacrebleu_ci95: float | None


@_record
class BeamDecoding:
    """Beam search on the same sentences, with its p-value against greedy."""

    sacrebleu: float
    bleu_tokenized: float
    decode_seconds: float
    beam_size: int
    length_penalty_alpha: float
    sacrebleu_ci95: float | None
    p_value_against_greedy: float | None
    exceeds_noise: bool | None


@_record
class AveragingRow:
    """One point of the averaging sweep: the newest k snapshots merged, scored on validation,
    with the paired bootstrap against k = 1 (None at k = 1)."""

    k: int
    snapshots: str
    ppl: float
    bleu: float
    ci95: float | None
    minus_k1: float
    p_value: float | None
    beyond_noise: bool | None


@_record
class RunInfo:
    """The run the chapter translates with; `origin` says who trained it (records written
    before it was kept lack it)."""

    steps: int
    train_time_s: float
    target_tokens: int
    device: str
    origin: str | None = None


@_record
class GpuRun:
    """The committed `gpu` run beside this one (`table2.gpu_comparison`): its label, its two
    points on Table 2's axes, and the paired bootstrap of both runs on the same sentences
    (`paired`), else its own interval."""

    label: str
    short: str  # the label on the chart, where a long one would run past the column
    sacrebleu: float
    ci95: float | None
    paper_way: float
    counted: float
    paired: bool
    difference: float | None  # gpu minus this run, when paired
    p_value: float | None
    exceeds_noise: bool | None


@_record
class PaperRecipe:
    """Section 5.7: the `paper` recipe counted, and its few steps' check (`check_vocab_size`:
    None in records written before it was kept)."""

    counted_flops: float
    table2_flops: float
    h100_gpu_hours: dict[str, float]
    check_steps: int
    check_losses: tuple[float, ...]
    check_valid_loss: float
    check_vocab_size: int | None = None
    check_seconds: float


@_record
class TranslationRecord(ChapterRecord):
    """Chapter 05's record: the fields the module's docstring lists, in the file's order."""

    RESULTS_NAME = "translation"

    dataset: str
    test_set: str
    sentences: int
    bleu_tokenized: float
    bleu_tokenized_signature: str
    bleu_tokenized_without_compound_splitting: float
    references_with_hyphen: int | None = None
    sacrebleu: float
    sacrebleu_ci95: float | None
    sacrebleu_signature: str
    ppl: float
    parameters: int
    training_flops: float
    training_flops_how: str
    training_flops_counted: float
    training_flops_six_n: float
    model_flops_utilisation: float
    decoding_set: str
    decoding_sentences: int
    greedy: Decoding
    beam: BeamDecoding
    kv_cache_seconds: dict[str, float]
    averaging: tuple[AveragingRow, ...]
    averaged_checkpoints: tuple[str, ...]
    run: RunInfo
    gpu_comparison: GpuRun | None = None
    paper_recipe: PaperRecipe


def decoding_record(greedy: dict, beamed: dict, intervals: dict, beam_name: str) -> dict:
    """Greedy decoding and beam search as the results record holds them, its fields
    `decoding_set`, `decoding_sentences`, `greedy` and `beam`: the sentences they decoded (the
    validation split's: a comparison that may choose is not made on test), scores, seconds, the
    bootstrap's 95% half-widths, and the beam's p-value against greedy."""
    if (greedy["test_set"], greedy["sentences"]) != (
        beamed["test_set"],
        beamed["sentences"],
    ):
        raise ValueError(
            "greedy and beam decoded different sentences: no paired comparison"
        )
    test = intervals[beam_name]
    keep = ("sacrebleu", "bleu_tokenized", "decode_seconds")
    return dict(
        decoding_set=greedy["test_set"],
        decoding_sentences=greedy["sentences"],
        greedy=Decoding(
            **{k: greedy[k] for k in keep}, sacrebleu_ci95=intervals["greedy"]["ci95"]
        ),
        beam=BeamDecoding(
            **{k: beamed[k] for k in keep + ("beam_size", "length_penalty_alpha")},
            sacrebleu_ci95=test["ci95"],
            p_value_against_greedy=test["p_value"],
            exceeds_noise=test["exceeds_noise"],
        ),
    )


def averaging_rows(sweep: pd.DataFrame) -> tuple[AveragingRow, ...]:
    """The averaging sweep's frame (`table2.sweep_frame`) as the record's rows."""
    return tuple(AveragingRow(**row) for row in sweep.to_dict(orient="records"))


def cost_fields(cost: RunCost) -> dict:
    """The run's cost as the record's fields."""
    return {
        "parameters": cost.parameters,
        "training_flops": cost.paper_way,
        "training_flops_how": f"paper's way: {cost.train_time_s} s x 1 device x "
        f"{cost.sustained:.4g} FLOP/s ({cost.how})",
        "training_flops_counted": cost.counted,
        "training_flops_six_n": cost.six_n,
        "model_flops_utilisation": cost.utilisation,
    }


def recipe_cost_fields(recipe_cost: RecipeCost) -> dict:
    """Section 5.7's count of the paper's recipe, as the record's `paper_recipe` holds it."""
    return {
        "counted_flops": recipe_cost.counted,
        "table2_flops": recipe_cost.table2,
        "h100_gpu_hours": recipe_cost.hours(),
    }


def recipe_check_fields(check: RecipeCheck) -> dict:
    """Section 5.7's few steps of the recipe, as the record's `paper_recipe` holds them."""
    return {
        "check_steps": check.steps,
        "check_losses": tuple(check.losses),
        "check_valid_loss": check.valid_loss,
        "check_vocab_size": check.vocab_size,
        "check_seconds": check.seconds,
    }


# ------------------------------------------------------------------------------------------ record
def build(
    profile: Profile,
    run: FinishedRun,
    beamed: dict,
    decoded: dict,
    bleus: tuple[float, int],
    cost: RunCost,
    sweep: pd.DataFrame,
    cache_rows: list[dict],
    averaged_from: Sequence[str],
    recipe: tuple[RecipeCost, RecipeCheck],
    gpu: GpuRun | None,
    origin: str,
) -> TranslationRecord:
    """The record. `beamed`: the test set's one decoding (`pipeline.evaluate`, with its
    interval); `decoded`: `decoding_record`'s; `bleus`: the tokenized BLEU without compound
    splitting and the number of references with a hyphen; `sweep`: the averaging sweep's frame;
    `recipe`: section 5.7's cost and check; `origin`: whose run it is (`table2.run_origin`)."""
    without_splitting, hyphenated = bleus
    recipe_cost, check = recipe
    return TranslationRecord(
        dataset=f"{profile.corpus} {profile.src_lang}->{profile.tgt_lang}",
        test_set=beamed["test_set"],
        sentences=beamed["sentences"],
        bleu_tokenized=beamed["bleu_tokenized"],
        bleu_tokenized_signature=beamed["bleu_tokenized_signature"],
        bleu_tokenized_without_compound_splitting=round(without_splitting, 2),
        references_with_hyphen=hyphenated,
        sacrebleu=beamed["sacrebleu"],
        sacrebleu_ci95=beamed["sacrebleu_ci95"],  # sacreBLEU's bootstrap
        sacrebleu_signature=beamed["sacrebleu_signature"],
        ppl=beamed["ppl"],
        **cost_fields(cost),
        **decoded,
        kv_cache_seconds={row["decoder"]: row["seconds"] for row in cache_rows},
        averaging=averaging_rows(sweep),
        averaged_checkpoints=tuple(averaged_from),
        run=RunInfo(
            steps=run.steps,
            train_time_s=run.train_time_s,
            target_tokens=run.target_tokens,
            device=run.device,
            origin=origin,
        ),
        gpu_comparison=gpu,
        paper_recipe=PaperRecipe(
            **recipe_cost_fields(recipe_cost), **recipe_check_fields(check)
        ),
    )


def write(
    record: TranslationRecord,
    profile: Profile,
    device: Any,
    wall_time_s: float,
    results_dir: str | os.PathLike | None = None,
) -> Path:
    """`results/<profile's results folder>/translation.json` (under `results_dir`, default the
    results root), with the model's configuration and the profile; the path written."""
    return record.write(
        profile.results_folder,
        round(wall_time_s, 1),
        results_dir,
        device=device,
        config={"model": profile.model_config().to_dict(), "profile": profile.to_dict()},
    )


read = TranslationRecord.read


# ------------------------------------------------------------------------------------------ committed
def paper_runs(results_dir: str | os.PathLike | None = None) -> dict[str, dict]:
    """The `paper` profile's results committed under `results/paper/` ({file stem: record}):
    this chapter's and the run's own; empty while no GPU run of the recipe is committed."""
    names = (RESULTS_NAME, default_results_name(get_profile("paper")))
    found = {name: results.read_result(name, "paper", results_dir) for name in names}
    return {name: record for name, record in found.items() if record}

"""Chapter 04's results record, `results/<profile>/training.json`, and the translation record its
run publishes.

What the record's "metrics" hold, built by `build` from what the chapter computed:

* the profile's run, as `pipeline.run` summarised it: `dataset`, `steps`, `train_time_s`,
  `step_time_s` (which the introduction's summary sets beside the paper's 0.4 s),
  `target_tokens_per_step`, `target_tokens_per_s`, `mfu`, `valid_ppl` (last weights),
  `parameters`, `test_sacrebleu` and `test_bleu_tokenized` (averaged weights) and
  `translation_results`, the name of the translation record the run published;
* section 4.1: `bpe`, how the shared vocabulary cuts each split and side;
* section 4.2: `padding_fraction`, {batching: share of padding} for the three batchings;
* section 4.5: `copy_task` (steps, held-out accuracy, longest trained length);
* `resume_bit_identical`: whether the stopped and resumed run ended with the straight run's
  weights;
* section 4.7: `warmup_experiment` (final training NLL of the four runs, its standard error,
  and each model's top-over-bottom gradient at initialisation) and `extrapolation` (copy
  accuracy per length and kind of position);
* `sizes`: the chapter's own experiment sizes under the profile.

Its "config" holds the model's configuration and the profile. `write` writes it through
`results.write_result`, `read` reads it back, and `sentences.closing` turns it into the
chapter's closing section.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from ...evaluation import results

RESULTS_NAME = "training"


def build(
    profile,
    summary: Mapping,
    bpe: pd.DataFrame,
    batching: pd.DataFrame,
    copy_run: Mapping,
    warm: tuple[pd.DataFrame, Mapping],
    extrapolation: pd.DataFrame,
    sizes: Any,
    resume_identical: bool,
) -> dict:
    """The record's metrics: `summary` of the profile's run (`pipeline.run`), the tables of
    sections 4.1 (`bpe`) and 4.2 (`batching`), the copy run, `warm` (the warm-up runs' final
    losses table, {(norm, stack): top-over-bottom gradient}), the extrapolation rows, the
    chapter's sizes, and whether the resumed run's weights were bit-identical."""
    final, top = warm
    nll = final.set_index("run").iloc[:, 0]
    return {
        "dataset": f"{profile.corpus} {profile.src_lang}->{profile.tgt_lang}",
        "step_time_s": summary["train_time_s"] / summary["steps"],
        "steps": summary["steps"],
        "train_time_s": summary["train_time_s"],
        "target_tokens_per_step": summary["target_tokens"] / summary["steps"],
        "target_tokens_per_s": summary["target_tokens_per_s"],
        "mfu": summary["mfu"],
        "valid_ppl": summary["valid"]["ppl"],
        "parameters": summary["parameters"],
        "test_sacrebleu": summary["test"]["sacrebleu"],
        "test_bleu_tokenized": summary["test"]["bleu_tokenized"],
        "translation_results": Path(summary["results_path"]).name,
        "bpe": bpe.to_dict(orient="records"),
        "padding_fraction": batching.set_index("batches")["padding"].to_dict(),
        "copy_task": {
            "steps": copy_run["steps"],
            "accuracy": copy_run["accuracy"],
            "max_length": sizes.copy_length,
        },
        "resume_bit_identical": bool(resume_identical),
        "warmup_experiment": {
            "final_nll": nll.to_dict(),
            "final_nll_se": final.set_index("run")["standard error"].to_dict(),
            "top_over_bottom_gradient": {f"{n}, {s}": v for (n, s), v in top.items()},
        },
        "extrapolation": extrapolation.to_dict(orient="records"),
        "sizes": sizes,
    }


def write(
    metrics: dict,
    profile,
    device,
    wall_time_s: float,
    results_dir: str | os.PathLike | None = None,
) -> Path:
    """`results/<profile>/training.json` (under `results_dir`, default the results root), with
    the model's configuration and the profile as its config; the path written."""
    return results.write_result(
        RESULTS_NAME,
        metrics,
        profile=profile.results_folder,
        device=device,
        config={"model": profile.model_config().to_dict(), "profile": profile.to_dict()},
        wall_time_s=round(wall_time_s, 1),
        root=results_dir,
    )


def read(profile_name: str, results_dir: str | os.PathLike | None = None) -> dict | None:
    """The record `write` wrote for `profile_name` (a profile's results folder), or None when
    the chapter has not run."""
    return results.read_result(RESULTS_NAME, profile_name, results_dir)


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

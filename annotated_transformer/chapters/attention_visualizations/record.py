"""Chapter 08's results record, `results/<profile>/attention_figures.json`.

What its "metrics" hold, built by `build` from what the chapter computed:

* `checkpoint`: the file the figures were drawn from (the book run's `averaged.pt`);
* the paper's sentences: `figure3_share_on_more_difficult` (mean and largest share of the weight
  of "making" on "more difficult" over the heads of the drawn layer, and an even spread's),
  `figure4_weight_its_to_law` (per head of the drawn layer) and `figure4_paper_heads` (the two
  heads drawn on Figure 4's sentence), `pieces_per_word` (how foreign the sentences are);
* what the figures drew: `figure3_layer_heads` and `figure4_layer_heads` ([layer, [heads]],
  `head_scores.figure_heads`), `figure5_heads`, and `drawn_cases` (the test caption, query and
  key words, weight and even spread of Figures 3 and 4);
* the measurements behind Figures 3 and 4: `findings`, per phenomenon the captions searched,
  the sentences and pairs found, and `heads`, one row per encoder head of `head_scores` (its
  `shows` is what `head_scores.passing_heads` selects); `captions_with_pronoun`,
  `interval_level` (the Bonferroni level of every interval);
* Figure 5 and section 8.6: `encoder_heads_test` (entropy, its standard error and distance per
  encoder head over the test captions), `per_head` (every kind of attention over
  `test_captions` translated captions), `explorer_spec_bytes`;
* the live page: `onnx_model_bytes` (float32), `onnx_int8` (its bytes, the captions and their
  `split`, validation's, how many translations equal float32's, both BLEUs with the paired
  bootstrap, the export served) and
  `greedy_paths`, the float32 export beside chapter 05's greedy decoding of the same captions
  (`exports.compare_greedy`).

`write` writes it through `results.write_result`, `read` reads it back, `committed_gpu` finds
the committed `gpu` book's record, and `sentences.closing` turns a record read back into the
chapter's closing section.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...evaluation import results
from .head_scores import DrawnHeads, Example, PairSamples

RESULTS_NAME = "attention_figures"
# The committed `gpu` book's results folder (`book.committed.folder_name("gpu")`).
GPU_BOOK_FOLDER = "book_gpu"


def build(
    *,
    checkpoint: Path,
    paper_share: tuple[np.ndarray, float],
    paper_law: tuple[np.ndarray, list[int]],
    drawn: tuple[DrawnHeads, DrawnHeads],
    cases: tuple[Example, Example],
    figure5_heads: tuple[int, int],
    with_pronoun: int,
    level: float,
    samples: dict[str, PairSamples],
    scores: dict[str, pd.DataFrame],
    encoder_heads: pd.DataFrame,
    domain: pd.DataFrame,
    per_head: pd.DataFrame,
    test_captions: int,
    explorer_bytes: int,
    live: dict[str, Any],
    greedy_paths: dict,
) -> dict:
    """The record's metrics. `paper_share`: the per-head share of "making" on "more difficult"
    and an even spread's; `paper_law`: the weight from "its" on "Law" per head and the two heads
    drawn; `drawn`: Figures 3 and 4's `figure_heads`; `cases`: their `example`s; `domain`:
    the pieces-per-word table; `live`: the exports' `bytes` ({"float32", "int8"}),
    `captions` of the `split` compared on, `same` translations, paired-bootstrap `bleu` and the
    export `served`."""
    share, uniform = paper_share
    on_law, chosen = paper_law
    drawn3, drawn4 = drawn
    case3, case4 = cases
    return {
        "checkpoint": str(checkpoint.name),
        "figure3_share_on_more_difficult": {
            "mean": float(share.mean()),
            "max": float(share.max()),
            "even_spread": uniform,
        },
        "figure4_weight_its_to_law": [float(w) for w in on_law],
        "figure4_paper_heads": chosen,
        "figure3_layer_heads": [drawn3.layer, drawn3.heads],
        "figure4_layer_heads": [drawn4.layer, drawn4.heads],
        "figure5_heads": list(figure5_heads),
        "captions_with_pronoun": with_pronoun,
        "interval_level": level,
        "findings": {
            name: {
                "captions": found.searched,
                "sentences": len(found.sentences),
                "pairs": len(found.pairs),
                "heads": scores[name].to_dict(orient="records"),
            }
            for name, found in samples.items()
        },
        "drawn_cases": {"dependency": vars(case3), "anaphora": vars(case4)},
        "encoder_heads_test": encoder_heads.to_dict(orient="records"),
        "pieces_per_word": dict(
            zip(domain["text"], domain["pieces per word"].astype(float))
        ),
        "test_captions": test_captions,
        "per_head": per_head.to_dict(orient="records"),
        "explorer_spec_bytes": explorer_bytes,
        "onnx_model_bytes": live["bytes"]["float32"],
        "onnx_int8": {
            "bytes": live["bytes"]["int8"],
            "captions": live["captions"],
            "same_translations": int(live["same"]),
            "bleu": live["bleu"],
            "served": live["served"],
            "split": live["split"],
        },
        "greedy_paths": greedy_paths,
    }


def write(
    metrics: dict,
    profile_name: str,
    config: Any,
    wall_time_s: float,
    results_dir: str | os.PathLike | None = None,
) -> Path:
    """`results/<profile_name>/attention_figures.json` (under `results_dir`, default the
    results root), with the model's configuration; measured on the CPU, where the chapter runs
    its model. The path written."""
    return results.write_result(
        RESULTS_NAME,
        metrics,
        profile=profile_name,
        config=config,
        wall_time_s=wall_time_s,
        device="cpu",
        root=results_dir,
    )


def read(profile_name: str, results_dir: str | os.PathLike | None = None) -> dict | None:
    """The record `write` wrote for `profile_name`, or None when the chapter has not run."""
    return results.read_result(RESULTS_NAME, profile_name, results_dir)


def committed_gpu(results_dir: str | os.PathLike | None = None) -> dict | None:
    """The committed `gpu` book's record of this chapter (`results/book_gpu/`, in the clone's
    committed results unless `results_dir` says otherwise), or None while that book has not
    run it (or in an installed copy without the clone)."""
    root = results_dir if results_dir is not None else results.committed_root()
    if root is None:
        return None
    return results.read_result(RESULTS_NAME, GPU_BOOK_FOLDER, root)

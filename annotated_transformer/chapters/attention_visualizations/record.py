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

`AttentionFiguresRecord` holds them typed (the per-head rows, whose columns are the chapter's
tables', stay rows of a mapping); `write` writes it and `read` reads it back (`ChapterRecord`),
`committed_gpu` finds the committed `gpu` book's record, and `sentences.closing` turns a record
read back into the chapter's closing section.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...evaluation import results
from ..chapter_record import ChapterRecord
from .exports import GreedyPaths
from .head_scores import DrawnHeads, Example, PairSamples

RESULTS_NAME = "attention_figures"
# The committed `gpu` book's results folder (`book.committed.folder_name("gpu")`).
GPU_BOOK_FOLDER = "book_gpu"


@dataclasses.dataclass(frozen=True)
class ShareOnMoreDifficult:
    """The weight of "making" on "more difficult" in Figure 3's sentence over the heads of the
    drawn layer: their mean and largest, and an even spread's."""

    mean: float
    max: float
    even_spread: float


@dataclasses.dataclass(frozen=True)
class Finding:
    """One phenomenon over the test captions: the captions searched, the sentences and pairs the
    heuristic found, and one row per encoder head (`head_scores.head_scores`'s columns)."""

    captions: int
    sentences: int
    pairs: int
    heads: tuple[dict[str, Any], ...]


@dataclasses.dataclass(frozen=True)
class DrawnCases:
    """The test captions Figures 3 and 4 draw (`head_scores.example`)."""

    dependency: Example
    anaphora: Example


@dataclasses.dataclass(frozen=True)
class OnnxInt8:
    """The int8 export beside the float32 one: its bytes, the captions of `split` both
    translated, how many translations are the same, both BLEUs with the paired bootstrap
    ({"float32": {"bleu", "mean", "ci95"}, "int8": {...}}) and the export the page serves."""

    bytes: int
    captions: int
    same_translations: int
    bleu: dict[str, dict[str, Any]]
    served: str
    split: str


@dataclasses.dataclass(frozen=True)
class AttentionFiguresRecord(ChapterRecord):
    """Chapter 08's record: the fields the module's docstring lists."""

    RESULTS_NAME = "attention_figures"
    DEVICE = "cpu"  # the chapter runs its model on the CPU whatever the book's device

    checkpoint: str
    figure3_share_on_more_difficult: ShareOnMoreDifficult
    figure4_weight_its_to_law: tuple[float, ...]
    figure4_paper_heads: tuple[int, ...]
    figure3_layer_heads: tuple[int, list[int]]  # (layer, [heads])
    figure4_layer_heads: tuple[int, list[int]]
    figure5_heads: tuple[int, ...]
    captions_with_pronoun: int
    interval_level: float
    findings: dict[str, Finding]
    drawn_cases: DrawnCases
    encoder_heads_test: tuple[dict[str, Any], ...]
    pieces_per_word: dict[str, float]
    test_captions: int
    per_head: tuple[dict[str, Any], ...]
    explorer_spec_bytes: int
    onnx_model_bytes: int
    onnx_int8: OnnxInt8
    greedy_paths: GreedyPaths | None = None


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
    greedy_paths: GreedyPaths,
) -> AttentionFiguresRecord:
    """The record. `paper_share`: the per-head share of "making" on "more difficult"
    and an even spread's; `paper_law`: the weight from "its" on "Law" per head and the two heads
    drawn; `drawn`: Figures 3 and 4's `figure_heads`; `cases`: their `example`s; `domain`:
    the pieces-per-word table; `live`: the exports' `bytes` ({"float32", "int8"}),
    `captions` of the `split` compared on, `same` translations, paired-bootstrap `bleu` and the
    export `served`."""
    share, uniform = paper_share
    on_law, chosen = paper_law
    drawn3, drawn4 = drawn
    case3, case4 = cases
    return AttentionFiguresRecord(
        checkpoint=str(checkpoint.name),
        figure3_share_on_more_difficult=ShareOnMoreDifficult(
            mean=float(share.mean()), max=float(share.max()), even_spread=uniform
        ),
        figure4_weight_its_to_law=tuple(float(w) for w in on_law),
        figure4_paper_heads=tuple(chosen),
        figure3_layer_heads=(drawn3.layer, list(drawn3.heads)),
        figure4_layer_heads=(drawn4.layer, list(drawn4.heads)),
        figure5_heads=tuple(figure5_heads),
        captions_with_pronoun=with_pronoun,
        interval_level=level,
        findings={
            name: Finding(
                captions=found.searched,
                sentences=len(found.sentences),
                pairs=len(found.pairs),
                heads=tuple(scores[name].to_dict(orient="records")),
            )
            for name, found in samples.items()
        },
        drawn_cases=DrawnCases(dependency=case3, anaphora=case4),
        encoder_heads_test=tuple(encoder_heads.to_dict(orient="records")),
        pieces_per_word=dict(
            zip(domain["text"], domain["pieces per word"].astype(float))
        ),
        test_captions=test_captions,
        per_head=tuple(per_head.to_dict(orient="records")),
        explorer_spec_bytes=explorer_bytes,
        onnx_model_bytes=live["bytes"]["float32"],
        onnx_int8=OnnxInt8(
            bytes=live["bytes"]["int8"],
            captions=live["captions"],
            same_translations=int(live["same"]),
            bleu=live["bleu"],
            served=live["served"],
            split=live["split"],
        ),
        greedy_paths=greedy_paths,
    )


write = AttentionFiguresRecord.write
read = AttentionFiguresRecord.read


def committed_gpu(
    results_dir: str | os.PathLike | None = None,
) -> AttentionFiguresRecord | None:
    """The committed `gpu` book's record of this chapter (`results/book_gpu/`, in the clone's
    committed results unless `results_dir` says otherwise), or None while that book has not
    run it (or in an installed copy without the clone)."""
    root = results_dir if results_dir is not None else results.committed_root()
    if root is None:
        return None
    return read(GPU_BOOK_FOLDER, root)

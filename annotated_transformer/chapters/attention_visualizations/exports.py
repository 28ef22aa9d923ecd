"""The live page's float32 export beside chapter 05's greedy decoding of the same model.

Both decode greedily in fp32 and on the same captions, and both are scored with sacreBLEU, yet
their scores can differ in the second decimal. The export (`web.onnx_export.OnnxTranslator`)
translates one sentence at a time and allows each its own source length plus 50 pieces;
chapter 05's `evaluation.translate` decodes batches of sentences of similar length, padded,
with PyTorch's attention and a key-value cache, and gives every sentence of a batch the
allowance of the batch's longest source. A translation that never writes `</s>` therefore runs
a few pieces longer there, and a near-tie between two pieces may fall the other way when the
sums run in another order. `compare_greedy` counts both.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import torch

from ...evaluation.scoring import sacrebleu_score, translate
from ...profiles import Profile


def batched_greedy(
    model, tokenizer, captions: Sequence[str], profile: Profile
) -> list[str]:
    """Greedy translations as chapter 05 makes them (`pipeline.evaluate` with beam 1): the
    profile's decoding settings on the model's device, batched by length."""
    device = next(model.parameters()).device
    settings = profile.decode_settings(torch.device(device)).replace(beam_size=1)
    return translate(model, tokenizer, list(captions), settings)


@dataclasses.dataclass(frozen=True)
class GreedyPaths:
    """Chapter 05's greedy decoding beside the float32 export's on the same captions: both
    sacreBLEUs, how many translations are the same and how many differ, and of those how many
    the export left unfinished (stopped at its allowance without `</s>`)."""

    captions: int
    batched_sacrebleu: float
    export_sacrebleu: float
    same: int
    differ: int
    differ_unfinished: int


def compare_greedy(
    batched: Sequence[str],
    exported: Sequence[str],
    unfinished: Sequence[bool],
    references: Sequence[str],
) -> GreedyPaths:
    """Chapter 05's greedy translations (`batched`) against the export's (`exported`, with
    `unfinished` true where the export stopped at its allowance without `</s>`): the captions,
    both sacreBLEUs, and how many translations differ, and of those how many the export left
    unfinished."""
    differ = [i for i, (a, b) in enumerate(zip(batched, exported, strict=True)) if a != b]
    return GreedyPaths(
        captions=len(exported),
        batched_sacrebleu=round(sacrebleu_score(batched, references)["score"], 2),
        export_sacrebleu=round(sacrebleu_score(exported, references)["score"], 2),
        same=len(exported) - len(differ),
        differ=len(differ),
        differ_unfinished=sum(bool(unfinished[i]) for i in differ),
    )

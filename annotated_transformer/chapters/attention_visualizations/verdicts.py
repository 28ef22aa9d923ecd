"""What chapter 08's measurements found, as values: each verdict with the numbers it rests on,
tested by value; `phrases` says them in words.

A verdict that names a head takes it from `head_scores.passing_heads`, the rows the chapter's
per-head tables mark "yes": no verdict names a head that fails the test, however high its ratio.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from .exports import GreedyPaths
from .head_scores import (
    APART_SE,
    DrawnHeads,
    Example,
    PairSamples,
    layers_apart,
    passing_heads,
)


@dataclasses.dataclass(frozen=True)
class Head:
    """One head that passes the test, with its numbers from the per-head table."""

    layer: int
    head: int
    weight: float
    even_spread: float
    ratio: float
    low: float
    high: float
    from_every_word: float
    times_any_word: float  # its weight over what the same key words draw from every query


def _head(r: Mapping) -> Head:
    return Head(
        int(r["layer"]),
        int(r["head"]),
        r["weight"],
        r["even spread"],
        r["ratio"],
        r["low"],
        r["high"],
        r["from every word"],
        r["weight"] / r["from every word"],
    )


@dataclasses.dataclass(frozen=True)
class HeadTable:
    """What a per-head table shows: the sentences and pairs, the heads that pass (best ratio
    first), how many heads lie clearly above an even spread (`above_even`) and above what the
    caption's other words give the key (`above_other`), and how many clearly below an even
    spread."""

    sentences: int
    pairs: int
    heads: int
    passing: tuple[Head, ...]
    above_even: int
    above_other: int
    below: int


def head_table(scores: pd.DataFrame) -> HeadTable:
    return HeadTable(
        sentences=int(scores["sentences"].iloc[0]),
        pairs=int(scores["pairs"].iloc[0]),
        heads=len(scores),
        passing=tuple(_head(r) for _, r in passing_heads(scores).iterrows()),
        above_even=int((scores["low"] > 1).sum()),
        above_other=int((scores["over every word low"] > 1).sum()),
        below=int((scores["high"] < 1).sum()),
    )


@dataclasses.dataclass(frozen=True)
class Drawn:
    """A figure's drawn case: its layer and heads, the first head that passes (None when none
    does) and how many drawn heads do not, and the case's words and weight."""

    layer: int
    heads: tuple[int, ...]
    head: int | None
    others: int
    text: str
    query: str
    key: str
    weight: float
    baseline: float


def drawn(heads: DrawnHeads, case: Example) -> Drawn:
    head = heads.passing[0] if heads.passing else None
    others = len([h for h in heads.heads if h not in heads.passing]) if head else 0
    return Drawn(
        heads.layer,
        tuple(heads.heads),
        head,
        others,
        case.text,
        case.query,
        case.key,
        case.weight,
        case.baseline,
    )


@dataclasses.dataclass(frozen=True)
class Samples:
    """How many captions the two heuristics find pairs in."""

    captions: int
    with_pronoun: int
    anaphora_sentences: int
    anaphora_pairs: int
    dependency_sentences: int
    dependency_pairs: int


def samples(
    captions: int, with_pronoun: int, found: Mapping[str, PairSamples]
) -> Samples:
    anaphora, dependency = found["anaphora"], found["dependency"]
    return Samples(
        captions,
        with_pronoun,
        len(anaphora.sentences),
        len(anaphora.pairs),
        len(dependency.sentences),
        len(dependency.pairs),
    )


@dataclasses.dataclass(frozen=True)
class LayerSpread:
    """One encoder layer's heads: the sharpest and the broadest by entropy, their gap in units
    of the layer's largest standard error, and the nearest and farthest by mean distance."""

    layer: int
    sharp_head: int
    sharp_bits: float
    broad_head: int
    broad_bits: float
    gap_in_se: float
    near_head: int
    near_distance: float
    far_head: int
    far_distance: float


def layer_spread(rows: pd.DataFrame) -> LayerSpread:
    sharp = rows.loc[rows["entropy (bits)"].idxmin()]
    broad = rows.loc[rows["entropy (bits)"].idxmax()]
    near = rows.loc[rows["mean distance"].idxmin()]
    far = rows.loc[rows["mean distance"].idxmax()]
    gap = broad["entropy (bits)"] - sharp["entropy (bits)"]
    return LayerSpread(
        int(sharp["layer"]),
        int(sharp["head"]),
        sharp["entropy (bits)"],
        int(broad["head"]),
        broad["entropy (bits)"],
        gap / rows["entropy s.e."].max(),
        int(near["head"]),
        near["mean distance"],
        int(far["head"]),
        far["mean distance"],
    )


@dataclasses.dataclass(frozen=True)
class Layers:
    """Figure 5's point: each layer's spread, and the layers whose sharpest and broadest heads
    differ by more than `head_scores.APART_SE` standard errors."""

    even_bits: float
    spreads: tuple[LayerSpread, ...]
    apart: tuple[int, ...]
    layers: int


def layers(heads: pd.DataFrame, even_bits: float) -> Layers:
    return Layers(
        even_bits,
        tuple(layer_spread(rows) for _, rows in heads.groupby("layer")),
        tuple(layers_apart(heads)),
        heads["layer"].nunique(),
    )


@dataclasses.dataclass(frozen=True)
class Spread:
    """How many encoder layers hold heads that spread their weight differently (`layers_apart`),
    of how many."""

    apart: int
    layers: int
    apart_se: int = APART_SE


def spread(heads: Sequence[Mapping]) -> Spread:
    table = pd.DataFrame(list(heads))
    return Spread(len(layers_apart(table)), table["layer"].nunique())


@dataclasses.dataclass(frozen=True)
class Exports:
    """The int8 export against the float32 one: both BLEUs, float32's 95% interval, the same
    translations, and the export the page serves (int8 only when its BLEU lies inside)."""

    captions: int
    split: str
    int8_bleu: float
    float32_bleu: float
    low: float
    high: float
    same: int
    served: str
    inside: bool
    served_mb: float
    float32_mb: float


def exports(
    bleu: Mapping[str, Mapping[str, Any]],
    same: int,
    captions: int,
    sizes: Mapping[str, int],
    served: str,
    split: str,
) -> Exports:
    full, small = bleu["float32"], bleu["int8"]
    return Exports(
        captions,
        split,
        small["bleu"],
        full["bleu"],
        full["mean"] - full["ci95"],
        full["mean"] + full["ci95"],
        same,
        served,
        served == "int8",
        sizes[served] / 1e6,
        sizes["float32"] / 1e6,
    )


@dataclasses.dataclass(frozen=True)
class Greedy:
    """Why chapter 05's greedy translations and the export's differ: how many differ, how many
    of those the export left unfinished, and the rest (near-ties)."""

    paths: GreedyPaths
    unfinished: int
    rest: int


def greedy(paths: GreedyPaths) -> Greedy:
    return Greedy(paths, paths.differ_unfinished, paths.differ - paths.differ_unfinished)


@dataclasses.dataclass(frozen=True)
class HeadsFound:
    """One phenomenon over the test captions as the record holds it: the heads tested, the
    captions with pairs, and the heads that pass."""

    heads: int
    sentences: int
    passing: tuple[Head, ...]


def heads_found(sentences: int, heads: Sequence[Mapping]) -> HeadsFound:
    table = pd.DataFrame(list(heads))
    passing = tuple(_head(r) for _, r in passing_heads(table).iterrows())
    return HeadsFound(len(table), sentences, passing)

"""What chapter 03's measurements of Table 1 found, as values: each verdict with the numbers it
rests on, tested by value; `phrases` says them in words. An ordering ("grows faster with the
length") is a verdict only when the measured exponents are in that order."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from .record import SentenceLengths, Slopes

# The share of test sentences shorter than d_model that the chapter requires of every corpus.
MOST_SENTENCES = 0.99
ATTENTION = "self-attention"


@dataclasses.dataclass(frozen=True)
class Exponents:
    """The fitted exponents of time against n and d of the three layers, and of self-attention's
    memory against n (over the larger half of the lengths, and between the two longest when
    measured)."""

    where: str
    attention_n: float
    recurrent_n: float
    convolution_n: float
    attention_d: float
    recurrent_d: float
    convolution_d: float
    attention_memory_n: float
    attention_memory_last: float | None


def exponents(
    where: str, slopes: Mapping[str, Slopes], attention_memory_last: float | None = None
) -> Exponents:
    a, r, c = slopes[ATTENTION], slopes["recurrent"], slopes["convolutional"]
    return Exponents(
        where,
        a.time_vs_n,
        r.time_vs_n,
        c.time_vs_n,
        a.time_vs_d,
        r.time_vs_d,
        c.time_vs_d,
        a.memory_vs_n,
        attention_memory_last,
    )


@dataclasses.dataclass(frozen=True)
class SlopeOrder:
    """Whether the measured exponents are ordered as Table 1's: the layers whose time grows at
    least as fast with n as self-attention's, and those whose time grows no faster with d."""

    slower_in_n: tuple[str, ...]
    faster_in_d: tuple[str, ...]

    @property
    def holds(self) -> bool:
        return not self.slower_in_n and not self.faster_in_d


def slope_order(slopes: Mapping[str, Slopes]) -> SlopeOrder:
    others = [k for k in slopes if k != ATTENTION]
    attention = slopes[ATTENTION]
    return SlopeOrder(
        tuple(k for k in others if slopes[k].time_vs_n >= attention.time_vs_n),
        tuple(k for k in others if slopes[k].time_vs_d <= attention.time_vs_d),
    )


@dataclasses.dataclass(frozen=True)
class Crossover:
    """Where self-attention's mixing step stops being faster than a recurrent layer's among the
    lengths measured: `found` is "never" (attention the faster up to the longest), "already"
    (the slower at the shortest) or "at" (the lengths where the two take the same time)."""

    where: str
    batch: int
    d: int
    found: str
    crossover_n: float | None
    shortest: int
    longest: int


def crossover(
    where: str, batch: int, d: int, crossover_n: float | str | None, ns: Sequence[int]
) -> Crossover:
    """`crossover_n`: the length `table1.crossover` found, or None (or the record's "above N")
    when attention stays faster up to the longest."""
    if crossover_n is None or isinstance(crossover_n, str):
        found, crossover_n = "never", None
    elif crossover_n <= min(ns):
        found = "already"
    else:
        found = "at"
    return Crossover(where, batch, d, found, crossover_n, min(ns), max(ns))


@dataclasses.dataclass(frozen=True)
class LstmCrossover:
    """Up to which length a full attention sub-layer (projections included) costs fewer FLOPs
    than an LSTM; whether that is 2d; the LSTM's FLOPs per position over d² where known."""

    lstm_crossover: int
    d: int
    twice: bool
    per_position_d2: float | None


def lstm(
    lstm_crossover: int, d: int, lstm_per_position: float | None = None
) -> LstmCrossover:
    per = None if lstm_per_position is None else lstm_per_position / d**2
    return LstmCrossover(lstm_crossover, d, lstm_crossover == 2 * d, per)


@dataclasses.dataclass(frozen=True)
class Lengths:
    """Whether real sentences satisfy n < d: the test sets where more than `most` of the
    sentences are shorter than d_model (`short`) and those where no more are (`long`, with their
    shares), the longest sentence and where, and the least share."""

    sets: int
    d_model: int
    short: tuple[str, ...]
    long: tuple[tuple[str, float], ...]
    longest_corpus: str
    longest: int
    least: float
    most: float = MOST_SENTENCES

    @property
    def every_set(self) -> bool:
        return not self.long


def sentence_lengths(rows: Sequence[SentenceLengths], d_model: int) -> Lengths:
    longest = max(rows, key=lambda r: r.longest)
    return Lengths(
        len(rows),
        d_model,
        tuple(r.corpus for r in rows if r.share_below_d > MOST_SENTENCES),
        tuple(
            (r.corpus, r.share_below_d) for r in rows if r.share_below_d <= MOST_SENTENCES
        ),
        longest.corpus,
        longest.longest,
        min(r.share_below_d for r in rows),
    )


@dataclasses.dataclass(frozen=True)
class PathLengths:
    """The maximum path lengths at the longest n computed, kind by kind (the kinds computed
    there)."""

    n: int
    kernel_size: int
    lengths: tuple[tuple[str, int], ...]


def path_lengths(
    max_path_length: Mapping[str, Mapping[int, int]], kernel_size: int
) -> PathLengths:
    n = max(max(v) for v in max_path_length.values())
    return PathLengths(
        n,
        kernel_size,
        tuple((k, v[n]) for k, v in max_path_length.items() if n in v),
    )

"""What chapter 01's measurements found, as values: each verdict with the numbers it rests on,
tested by value; `phrases` says them in words. A timing difference is a difference only when it
exceeds the spread of the timed runs: every run of one alternative faster than every run of the
other, over at least `MIN_RUNS` runs each; otherwise the two are within the timing noise."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

from . import record as _record

# Fewer runs than this say nothing about the timing noise: with 3 runs each, two
# indistinguishable alternatives still give ranges that do not overlap one time in ten.
MIN_RUNS = 3
# The decimals of the chapter's saturation table: a range of largest weights that reads the same
# at both ends is one value.
TABLE_DIGITS = 3


@dataclasses.dataclass(frozen=True)
class VarianceFollows:
    """How the variance of q·k follows d_k (from the smallest to the widest), how far from d_k
    it strays at most (rounded up to a tenth of a percent, so that "within" holds for every
    row), and the range of q·k/√d_k's variance."""

    smallest: int
    widest: int
    at_smallest: float
    at_widest: float
    off_d_k: float
    scaled_low: float
    scaled_high: float


def variance(rows: Mapping[int, _record.Variance]) -> VarianceFollows:
    smallest, widest = min(rows), max(rows)
    off_d_k = (
        math.ceil(1000 * max(abs(r.unscaled / d - 1) for d, r in rows.items())) / 1000
    )
    scaled = [r.scaled for r in rows.values()]
    return VarianceFollows(
        smallest,
        widest,
        rows[smallest].unscaled,
        rows[widest].unscaled,
        off_d_k,
        min(scaled),
        max(scaled),
    )


@dataclasses.dataclass(frozen=True)
class SaturationFound:
    """The scaled softmax's largest weight over every width (one value when its range reads the
    same at `TABLE_DIGITS` decimals); without the scale at the widest d_k, the largest weight out
    of `n_keys` keys and the scaled over the unscaled gradient norm (`vanishes`: the unscaled
    gradient is the smaller); that ratio at the smallest d_k."""

    smallest: int
    widest: int
    n_keys: int | str
    scaled_low: float
    scaled_high: float
    one_value: bool
    peak_unscaled: float
    small_ratio: float
    vanishes: bool
    gradient_factor: float  # times smaller (vanishes) or larger, the unscaled gradient


def saturation(
    rows: Mapping[int, _record.Saturation], n_keys: int | str
) -> SaturationFound:
    smallest, widest = min(rows), max(rows)
    peaks = [r.largest_weight_scaled for r in rows.values()]

    def ratio(d: int) -> float:
        return rows[d].gradient_norm_scaled / rows[d].gradient_norm_unscaled

    low, high, wide = min(peaks), max(peaks), ratio(widest)
    return SaturationFound(
        smallest,
        widest,
        n_keys,
        low,
        high,
        f"{low:.{TABLE_DIGITS}f}" == f"{high:.{TABLE_DIGITS}f}",
        rows[widest].largest_weight_unscaled,
        ratio(smallest),
        wide >= 1,
        wide if wide >= 1 else 1 / wide,
    )


@dataclasses.dataclass(frozen=True)
class Timing:
    """Alternative b against alternative a from every timed run of each: the medians, the spread,
    and the verdict ("faster" or "slower" when every run of b is faster (slower) than every run of
    a, "within noise" when their ranges overlap, "too few runs" below `MIN_RUNS` runs each).
    `factor`: the longer median over the shorter where that is two or more, else None and
    `share`, the difference as a share of a's median."""

    name_a: str
    name_b: str
    a: float
    b: float
    a_fastest: float
    a_slowest: float
    a_runs: int
    b_fastest: float
    b_slowest: float
    b_runs: int
    verdict: str
    factor: float | None
    share: float
    min_runs: int = MIN_RUNS


def timing_verdict(runs_a: Sequence[float], runs_b: Sequence[float]) -> str:
    """How the runs of b compare with those of a (`Timing.verdict`)."""
    if min(len(runs_a), len(runs_b)) < MIN_RUNS:
        return "too few runs"
    if max(runs_b) < min(runs_a):
        return "faster"
    if min(runs_b) > max(runs_a):
        return "slower"
    return "within noise"


def timing(
    name_a: str, runs_a: Sequence[float], name_b: str, runs_b: Sequence[float]
) -> Timing:
    a, b = _record.median(runs_a), _record.median(runs_b)
    longer, shorter = max(a, b), min(a, b)
    return Timing(
        name_a,
        name_b,
        a,
        b,
        min(runs_a),
        max(runs_a),
        len(runs_a),
        min(runs_b),
        max(runs_b),
        len(runs_b),
        timing_verdict(runs_a, runs_b),
        longer / shorter if longer >= 2 * shorter else None,
        abs(a - b) / a,
    )


@dataclasses.dataclass(frozen=True)
class AdditiveFound:
    """Additive against dot-product scores at the widest d_k of the comparison: each softmax's
    largest weight (`spread`: the additive one's is the smaller), and the timing by the runs
    where the record keeps them (else None, and the means alone)."""

    d_k: int
    additive_weight: float
    dot_weight: float
    spread: bool
    timing: Timing | None
    additive_ms: float
    dot_product_ms: float


def widest_additive(rows: Sequence[_record.AdditiveRow]) -> _record.AdditiveRow:
    return max(rows, key=lambda r: r.d_k)


def additive_timing(rows: Sequence[_record.AdditiveRow]) -> Timing:
    """The dot product against additive scores at the widest d_k, by their timed runs."""
    row = widest_additive(rows)
    return timing(
        "dot product", row.dot_product_runs_ms, "additive", row.additive_runs_ms
    )


def additive(rows: Sequence[_record.AdditiveRow]) -> AdditiveFound:
    row = widest_additive(rows)
    return AdditiveFound(
        row.d_k,
        row.largest_weight_additive,
        row.largest_weight_unscaled_dot_product,
        row.largest_weight_additive < row.largest_weight_unscaled_dot_product,
        None if row.additive_runs_ms is None else additive_timing(rows),
        row.additive_ms,
        row.dot_product_ms,
    )


@dataclasses.dataclass(frozen=True)
class CostChange:
    """One cost from the fewest heads to the most, and whether it is the same in every row."""

    first: int
    last: int
    stays: bool


@dataclasses.dataclass(frozen=True)
class HeadCosts:
    """How the parameters, the matrix-product FLOPs and the softmax entries change from the
    fewest heads to the most, and how many times as many softmax entries the most heads have."""

    fewest: int
    most: int
    parameters: CostChange
    flops: CostChange
    score_entries: CostChange
    entries_factor: float


def head_costs(rows: Sequence[_record.HeadCost]) -> HeadCosts:
    first = min(rows, key=lambda r: r.heads)
    last = max(rows, key=lambda r: r.heads)

    def change(column: str) -> CostChange:
        values = [getattr(r, column) for r in rows]
        return CostChange(
            getattr(first, column), getattr(last, column), min(values) == max(values)
        )

    return HeadCosts(
        first.heads,
        last.heads,
        change("parameters"),
        change("flops"),
        change("score_entries"),
        last.score_entries / first.score_entries,
    )

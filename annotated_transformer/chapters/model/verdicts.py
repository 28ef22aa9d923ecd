"""What chapter 02's counts and checks found, as values: each verdict with the numbers it rests on,
tested by value; `phrases` says them in words. A row of Table 3 is above or below the paper's
count by the sign of its own gap, as the chapter's table shows it, never by a rule about which row
it is."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from . import record as _record

# The chapter checks PE(pos + k) = M_k PE(pos) to this absolute tolerance: float32's rounding
# of the package's table, not an error of the rotation.
SHIFT_TOLERANCE = 1e-6
# The width at which the chapter states how far rounding the paper's counts moves a gap.
ROUNDING_WIDTH = 512


def row_name(row: str) -> str:
    return f"the {row} model" if row in ("base", "big") else f"row {row}"


@dataclasses.dataclass(frozen=True)
class Counts:
    """The base and big models' counts beside the paper's, in millions."""

    vocab_size: int
    models: tuple[tuple[str, float, float], ...]  # (row, ours, the paper's)


def counts(
    params_m: Mapping[str, float], paper_params_m: Mapping[str, float], vocab_size: int
) -> Counts:
    rows = [r for r in ("base", "big") if r in params_m and r in paper_params_m]
    return Counts(vocab_size, tuple((r, params_m[r], paper_params_m[r]) for r in rows))


@dataclasses.dataclass(frozen=True)
class ParameterGaps:
    """How our counts stand against the paper's in rows of width d_model: how many rows fall
    short and by how much (None where none does), what rounding the paper's millions alone
    moves, the vocabulary the median shortfall suggests, and the rows above the paper's."""

    rows: int
    short: int
    median: float | None
    low: float | None
    high: float | None
    rounding_rows: float
    suggested_vocab: float | None
    above: tuple[tuple[str, float, float], ...]  # (row, rows above, the paper's count)


def parameter_gaps(
    gaps: Mapping[str, float], paper_params_m: Mapping[str, float], vocab_size: int
) -> ParameterGaps:
    short = [g for g in gaps.values() if g > 0]
    median = _record.median_shortfall(gaps)
    return ParameterGaps(
        rows=len(gaps),
        short=len(short),
        median=median,
        low=min(short) if short else None,
        high=max(short) if short else None,
        rounding_rows=0.5e6 / ROUNDING_WIDTH,
        suggested_vocab=None if median is None else round(vocab_size + median, -3),
        above=tuple((r, -g, paper_params_m[r]) for r, g in gaps.items() if g < 0),
    )


@dataclasses.dataclass(frozen=True)
class FfnShare:
    """The feed-forward network's share at d_ff = 4 d_model: of the parameters, and of the
    FLOPs at the shortest and longest sentence measured; whether attention's n-squared term
    lowers it as sentences grow."""

    parameters: float
    shortest: int
    longest: int
    at_shortest: float
    at_longest: float
    falls_with_length: bool


def ffn_share(share: _record.FfnShare) -> FfnShare:
    flops = share.flops_by_n
    shortest, longest = min(flops), max(flops)
    return FfnShare(
        share.parameters,
        shortest,
        longest,
        flops[shortest],
        flops[longest],
        flops[longest] < flops[shortest],
    )


@dataclasses.dataclass(frozen=True)
class Tying:
    """What one shared embedding matrix saves in the base model against three, in millions."""

    vocab_size: int
    saved_m: float
    tied_m: float
    untied_m: float
    share: float


def tying(saved_m: float, tied_m: float, vocab_size: int) -> Tying:
    untied_m = tied_m + saved_m
    return Tying(vocab_size, saved_m, tied_m, untied_m, saved_m / untied_m)


@dataclasses.dataclass(frozen=True)
class ShiftCheck:
    """Whether PE(pos + k) = M_k PE(pos) held within SHIFT_TOLERANCE for the shifts checked."""

    held: bool
    max_error: float
    shifts: tuple[int, ...]
    positions: int
    tolerance: float = SHIFT_TOLERANCE


def shift_check(max_error: float, shifts: Sequence[int], positions: int) -> ShiftCheck:
    return ShiftCheck(max_error <= SHIFT_TOLERANCE, max_error, tuple(shifts), positions)

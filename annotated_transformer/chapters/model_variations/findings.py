"""What chapter 06's runs found, as values: each verdict with the numbers it rests on, tested by
value; `phrases` says them in words and `sentences` renders them. A finding is counted under the
verdict its test gave (`statistics.assess`), whatever the size of its difference."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

from . import statistics as f
from .record import ModelVariationsRecord


# ------------------------------------------------------------------------------ the closing
@dataclasses.dataclass(frozen=True)
class Tally:
    """One budget's verdicts counted: which findings each verdict holds, in the statistics'
    order of verdicts (a verdict no finding has is left out)."""

    name: str  # "this run", "the extended run"
    full_epoch: float
    findings: int
    groups: tuple[tuple[str, tuple[str, ...]], ...]  # (verdict, the findings' keys)


def tally(budget: Mapping, name: str) -> Tally:
    """`budget`: one of the record's budgets ({"full_epoch", "findings", ...})."""
    found = budget["findings"]
    groups = tuple(
        (v, tuple(x["finding"] for x in found if x["verdict"] == v)) for v in f.VERDICTS
    )
    return Tally(name, budget["full_epoch"], len(found), tuple(g for g in groups if g[1]))


@dataclasses.dataclass(frozen=True)
class Moved:
    """A finding whose verdict differs between two budgets."""

    finding: str
    before: str
    after: str


def moved(early: Sequence[Mapping], late: Sequence[Mapping]) -> tuple[Moved, ...]:
    """The findings (of two budgets' lists, in the same order) whose verdict changed."""
    return tuple(
        Moved(a["finding"], a["verdict"], b["verdict"])
        for a, b in zip(early, late)
        if a["verdict"] != b["verdict"]
    )


@dataclasses.dataclass(frozen=True)
class Correlation:
    """Spearman's correlation with the paper's perplexities and its bootstrap interval, and what
    the interval allows: "too_few" rows to read an ordering from (`orderings`: one in how many
    shuffles agrees or disagrees perfectly, None for two rows), else whether the interval
    "excludes_zero", "includes_zero" or lies "below_zero"."""

    who: str
    rows: int
    rho: float
    low: float
    high: float
    samples: int
    dropped: int
    reading: str
    orderings: int | None = None
    min_rows: int = f.MIN_ORDER_ROWS


def correlation(c: Mapping, who: str) -> Correlation:
    """`c`: `statistics.spearman_interval`'s result; `who`: "this run", "the extended run"."""
    rows = c["rows"]
    if rows < f.MIN_ORDER_ROWS:
        reading = "too_few"
    elif c["low"] > 0:
        reading = "excludes_zero"
    elif c["high"] > 0:
        reading = "includes_zero"
    else:
        reading = "below_zero"
    orderings = math.factorial(rows) // 2 if 2 < rows < f.MIN_ORDER_ROWS else None
    return Correlation(
        who,
        rows,
        c["rho"],
        c["low"],
        c["high"],
        c["samples"],
        c.get("dropped") or 0,
        reading,
        orderings,
    )


@dataclasses.dataclass(frozen=True)
class Closing:
    """What the closing section says: this run's verdicts at its longest budget and, where the
    record holds a committed extended run, that run's at its longest and the findings the longer
    budget changed (None with one run); then each run's rank correlation where it has one."""

    runs: tuple[Tally, ...]
    moved: tuple[Moved, ...] | None
    correlations: tuple[Correlation, ...]


def closing(record: ModelVariationsRecord) -> Closing:
    budgets = [("this run", record.verdicts[-1], record.spearman_ppl)]
    ext = record.extended
    if ext is not None and ext.verdicts:
        budgets.append(("the extended run", ext.verdicts[-1], ext.spearman_ppl))
    runs = tuple(tally(b, name) for name, b, _ in budgets)
    changed = (
        moved(budgets[0][1]["findings"], budgets[-1][1]["findings"])
        if len(budgets) > 1
        else None
    )
    correlations = tuple(correlation(c, name) for name, _, c in budgets if c is not None)
    return Closing(runs, changed, correlations)

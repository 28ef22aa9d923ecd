"""What chapter 06's runs found, as values: each verdict with the numbers it rests on, tested by
value; `phrases` says them in words and `sentences` renders them. A finding is counted under the
verdict its test gave (`statistics.assess`), whatever the size of its difference."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

import pandas as pd

from ...model.config import TABLE3_ALL_ROWS
from . import extended
from . import statistics as f
from .record import ModelVariationsRecord
from .verdicts import DEFAULT_EXTENDED_EPOCHS, full_corpus_rows


# ------------------------------------------------------------------------------ the run's plan
@dataclasses.dataclass(frozen=True)
class RowsTrained:
    """Which of Table 3's rows a profile leaves out: those a finding compares (`unread`, whose
    comparisons are skipped), the others (`others`), and the rows it trains that no finding
    compares (`extra`, for the table beside the paper's)."""

    trained: int
    of: int
    unread: tuple[str, ...]
    others: tuple[str, ...]
    extra: tuple[str, ...]


def rows_trained(
    rows: Sequence[str], all_rows: Sequence[str], finding_rows: Sequence[str]
) -> RowsTrained | None:
    """None when the profile trains every row."""
    missing = [r for r in all_rows if r not in rows]
    if not missing:
        return None
    unread = tuple(r for r in missing if r in finding_rows)
    return RowsTrained(
        len(rows),
        len(all_rows),
        unread,
        tuple(r for r in missing if r not in unread),
        tuple(r for r in rows if r not in finding_rows),
    )


@dataclasses.dataclass(frozen=True)
class WholeEpoch:
    """The calibration's whole-epoch grid at the chosen candidate: where base, C1 and C3 end
    with the norm after each sub-layer and where base is best; the candidates that keep C3 no
    worse than C1 (`deeper`) and base's best among them; the pre-norm diagnostic, and whether
    there the deepest stack ends below the one-layer one."""

    chosen: str
    base: float
    c1: float
    c3: float
    base_best_at: str
    deeper: tuple[str, ...]
    base_deeper: float | None
    pre_base: float
    pre_c1: float
    pre_c3: float
    pre_norm_deeper_helps: bool


def whole_epoch(by: pd.DataFrame, pre_at: Mapping[str, float], chosen: str) -> WholeEpoch:
    """`by`: perplexity, candidates × rows (base, C1, C3); `pre_at`: the pre-norm runs at
    `chosen`."""
    deeper = tuple(by.index[by.C3 <= by.C1].tolist())
    return WholeEpoch(
        chosen,
        by.base[chosen],
        by.C1[chosen],
        by.C3[chosen],
        by.base.idxmin(),
        deeper,
        by.base[list(deeper)].min() if deeper else None,
        pre_at["base"],
        pre_at["C1"],
        pre_at["C3"],
        pre_at["C3"] < pre_at["C1"],
    )


@dataclasses.dataclass(frozen=True)
class Training:
    """How long the runs took: their number, the wall time, the processes, the shortest and
    longest training on the whole corpus, its mean translation time, and how many times the wall
    time the runs' own times add up to."""

    runs: int
    minutes: float
    workers: int
    shortest_s: float
    longest_s: float
    mean_eval_s: float
    at_once: float


def training(measured: pd.DataFrame, seconds: float, workers: int) -> Training:
    """`measured`: one row per run, columns corpus, train_s, eval_s."""
    full = measured[measured.corpus == "full"]
    return Training(
        len(measured),
        seconds / 60,
        workers,
        full.train_s.min(),
        full.train_s.max(),
        full.eval_s.mean(),
        (measured.train_s + measured.eval_s).sum() / seconds,
    )


# ------------------------------------------------------------------------------ the curves
@dataclasses.dataclass(frozen=True)
class CurveEnd:
    """A dropout row's mean curve on the small corpus: its lowest point, where it ends, and
    whether it is still falling there (else it has begun to overfit)."""

    row: str
    dropout: float
    low_epoch: float
    low_ppl: float
    end_ppl: float
    rise_pct: float
    still_falling: bool


def overfitting(
    small_mean: pd.DataFrame, dropout_of: Mapping[str, float]
) -> tuple[CurveEnd, ...]:
    """Per row of `dropout_of` with a curve in `small_mean` (columns row, point, epoch, ppl)."""
    out = []
    for row, rate in dropout_of.items():
        curve = small_mean[small_mean.row == row].sort_values("point")
        if curve.empty:
            continue
        low = curve.loc[curve.ppl.idxmin()]
        end = curve.iloc[-1]
        out.append(
            CurveEnd(
                row,
                rate,
                low.epoch,
                low.ppl,
                end.ppl,
                100 * (end.ppl / low.ppl - 1),
                end.point == low.point,
            )
        )
    return tuple(out)


@dataclasses.dataclass(frozen=True)
class Budgets:
    """The verdicts at the longest budget counted (per verdict, in the statistics' order), and
    the findings whose verdict changes between the budgets."""

    margin_pct: float
    label: str
    counts: tuple[tuple[str, int], ...]
    changed: tuple[str, ...]


def budgets(budgets: Sequence[Mapping], margin_pct: float) -> Budgets:
    final = budgets[-1]["findings"]
    return Budgets(
        margin_pct,
        budgets[-1]["label"],
        tuple((v, sum(x["verdict"] == v for x in final)) for v in f.VERDICTS),
        tuple(
            x["finding"]
            for i, x in enumerate(final)
            if len({b["findings"][i]["verdict"] for b in budgets}) > 1
        ),
    )


def swapped(
    swaps: Sequence[tuple[str, str, Sequence[float]]],
) -> tuple[tuple[str, str, tuple[float, ...]], ...]:
    """The comparisons whose rows swap order along the curves, with the epochs they swap in."""
    return tuple((a, b, tuple(es)) for a, b, es in swaps if es)


# ------------------------------------------------------------------------------ the extended run
@dataclasses.dataclass(frozen=True)
class ExtendedPlan:
    """What the extended run adds to the live run: the rows it trains (`added`: those the live
    run leaves out; `missing`: the live run's it lacks), the epochs it aims at on the whole
    corpus and on dropout's small one (None with none committed), and whether one is committed."""

    live_epochs: float
    rows: tuple[str, ...]
    epochs: int
    added: tuple[str, ...]
    missing: tuple[str, ...]
    small_epochs: int | None
    committed: bool


def extended_plan(
    live_rows: Sequence[str], live_epochs: float, document: Mapping | None
) -> ExtendedPlan:
    """`document`: the committed extended run, or None: then the thirteen and any other row the
    live run trains, at four times the live run's epochs (at least the command's default)."""
    if document is None:
        wanted = {*extended.extended_rows(), *live_rows}
        rows = [r for r in TABLE3_ALL_ROWS if r in wanted]
        epochs = max(DEFAULT_EXTENDED_EPOCHS, 4 * math.ceil(live_epochs))
    else:
        rows = full_corpus_rows(document)
        epochs = document["targets"]["full"]
    return ExtendedPlan(
        live_epochs,
        tuple(rows),
        epochs,
        tuple(r for r in rows if r not in live_rows),
        tuple(r for r in live_rows if r not in rows),
        None if document is None else document["targets"]["small"],
        document is not None,
    )


# ------------------------------------------------------------------------------ the findings read
# What a pair of C rows varies, by the field the pair changes from base.
_ASPECTS = (("n_layers", "depth"), ("d_model", "width"), ("d_ff", "feed-forward size"))


def aspect(first: str, second: str) -> str | None:
    """ "depth" for C1 against C3: the size the two rows vary (None for other pairs)."""
    from . import rows as variations

    try:
        fields = set(variations.changes(first)) | set(variations.changes(second))
    except ValueError:
        return None
    return next((word for field, word in _ASPECTS if field in fields), None)


@dataclasses.dataclass(frozen=True)
class Reading:
    """A finding at one budget: its verdict, whether any of its comparisons was trained, its
    comparisons in the order a sentence gives them (against the paper first, then holding, then
    cannot tell; untrained last), each with the size it varies where the finding compares several
    (`aspect`), and the sizes that go against the paper (`against`)."""

    verdict: str
    kind: str
    compared: bool
    comparisons: tuple[tuple[Mapping, str | None], ...]
    against: tuple[str, ...]


def reading(finding: Mapping) -> Reading:
    """`finding`: one of `statistics.assess`'s findings."""
    comparisons = finding["comparisons"]
    rank = {f.DOES_NOT_HOLD: 0, f.HOLDS: 1, f.CANNOT_TELL: 2}
    ordered = sorted(comparisons, key=lambda c: (not c["trained"], rank[c["verdict"]]))
    several = len(comparisons) > 1
    pairs = tuple(
        (c, aspect(c["first"], c["second"]) if several else None) for c in ordered
    )
    return Reading(
        finding["verdict"],
        finding["kind"],
        any(c["trained"] for c in comparisons),
        pairs,
        tuple(
            a for c, a in pairs if a and c["verdict"] == f.DOES_NOT_HOLD and c["trained"]
        ),
    )


@dataclasses.dataclass(frozen=True)
class Move:
    """How one comparison moved between two budgets: its differences in percent at each, whether
    the rows swapped order, whether the gap narrowed, and, while neither budget can tell a
    "worse" finding, the smallest detectable change at each."""

    first: str
    second: str
    before_pct: float
    after_pct: float
    swapped: bool
    narrowed: bool
    detectable: tuple[float, float] | None


@dataclasses.dataclass(frozen=True)
class Change:
    """What the longer budget did to a finding (`compared`: whether the shorter one compared it
    at all)."""

    compared: bool
    before: str
    after: str
    moves: tuple[Move, ...]


def change(early: Mapping, late: Mapping) -> Change:
    """`early`, `late`: the same finding at two budgets."""
    moves = []
    for a, b in zip(early["comparisons"], late["comparisons"]):
        if a["difference_pct"] is None or b["difference_pct"] is None:
            continue
        x, y = a["difference_pct"], b["difference_pct"]
        untold = a["verdict"] == b["verdict"] == f.CANNOT_TELL
        moves.append(
            Move(
                a["first"],
                a["second"],
                x,
                y,
                (x > 0) != (y > 0),
                abs(y) < abs(x),
                (a["detectable_pct"], b["detectable_pct"])
                if untold and early["kind"] == "worse"
                else None,
            )
        )
    return Change(
        any(c["trained"] for c in early["comparisons"]),
        early["verdict"],
        late["verdict"],
        tuple(moves),
    )


@dataclasses.dataclass(frozen=True)
class SmallTurn:
    """A row's mean curve on the small corpus: its epochs, its lowest epoch and, once it has
    risen above that (`statistics`' rule: `extended.small_minimum_passed`), how far it ended
    above it (None while it is still improving)."""

    row: str
    epochs: int
    lowest: int
    rise_pct: float | None


def small_turns(
    small_curves: Mapping[str, Sequence[float]], rows: Sequence[str] = ("base",)
) -> tuple[SmallTurn, ...]:
    """Per row of `rows` with a curve: whether it has passed its lowest point (dropout can only
    help a model that has begun to overfit)."""
    out = []
    for row in rows:
        curve = small_curves.get(row, [])
        if not curve:
            continue
        lowest = min(range(len(curve)), key=curve.__getitem__) + 1
        rise = (
            100 * (curve[-1] / curve[lowest - 1] - 1)
            if extended.small_minimum_passed(curve)
            else None
        )
        out.append(SmallTurn(row, len(curve), lowest, rise))
    return tuple(out)


@dataclasses.dataclass(frozen=True)
class Flattening:
    """How much a row's mean curve fell in its last epoch, and the epoch it first fell by less
    than 1% (the extended run's rule for having trained long enough; None: not yet)."""

    row: str
    fell_pct: float
    epoch: int
    before: float
    after: float
    flat_at: int | None


def flattening(curves: Mapping[str, Sequence[float]]) -> Flattening | None:
    """Base's; None with fewer than two epochs of it."""
    row = "base"
    curve = curves.get(row, [])
    if len(curve) < 2:
        return None
    return Flattening(
        row,
        100 * (1 - curve[-1] / curve[-2]),
        len(curve),
        curve[-2],
        curve[-1],
        extended.flattened_at(curve),
    )


@dataclasses.dataclass(frozen=True)
class Overtake:
    """Whether `second`'s mean curve fell below `first`'s for good (from `since`), each curve's
    last perplexity, and while `second` is still behind, whether its gap in percent is closing
    (from `gap_first` at the first epoch to `gap_last`)."""

    first: str
    second: str
    overtook: bool
    since: float | None
    first_epoch: float
    last_epoch: float
    first_last: float
    second_last: float
    closing: bool
    gap_first: float
    gap_last: float


def overtake(
    curves: Mapping[str, Sequence[float]],
    first: str = "C1",
    second: str = "C3",
    epochs: Sequence[float] | None = None,
) -> Overtake | None:
    """`epochs`: the epoch of each curve point (default 1, 2, ...). None without both curves."""
    a, b = curves.get(first, []), curves.get(second, [])
    n = min(len(a), len(b))
    if n == 0:
        return None
    at = list(epochs)[:n] if epochs is not None else list(range(1, n + 1))
    behind = [b[i] >= a[i] for i in range(n)]
    overtook = not behind[-1]
    since = (
        at[n - next((i for i, x in enumerate(reversed(behind)) if x), n)]
        if overtook
        else None
    )
    gap = [100 * (b[i] / a[i] - 1) for i in range(n)]
    return Overtake(
        first,
        second,
        overtook,
        since,
        at[0],
        at[-1],
        a[-1],
        b[-1],
        n >= 2 and gap[-1] < gap[0],
        gap[0],
        gap[-1],
    )


# ------------------------------------------------------------------------------ BLEU
@dataclasses.dataclass(frozen=True)
class Bleu:
    """BLEU's range over rows and seeds and its intervals' half-widths; how many of the
    differences from base exceed the resampling noise against how many chance alone would give
    (p < 0.05), and so whether BLEU separates the rows from base."""

    references: int
    low: float
    high: float
    ci_low: float
    ci_high: float
    compared: int
    beyond: int
    expected: float
    separates: bool


def bleu(tests: pd.DataFrame, references: int) -> Bleu:
    """`tests`: one row per row and seed, columns row, bleu, ci95, exceeds_noise."""
    compared = tests[tests.row != "base"]
    beyond = int(compared.exceeds_noise.sum())
    expected = 0.05 * len(compared)
    return Bleu(
        references,
        tests.bleu.min(),
        tests.bleu.max(),
        tests.ci95.min(),
        tests.ci95.max(),
        len(compared),
        beyond,
        expected,
        beyond > expected,
    )


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

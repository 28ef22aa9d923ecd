"""The statistics behind chapter 06's verdicts: does a finding of section 6.2 hold at our budget?

A finding is one or more comparisons of two Table 3 rows. Every row is trained with the same seeds,
and a seed fixes the batch order, so row A's seed-s run and row B's seed-s run saw the same batches:
the comparison is of *paired* differences, seed by seed, which removes the batch order's share of the
noise. A difference is taken in log perplexity (nats per subword), so it reads as a ratio of
perplexities and means the same at perplexity 5 and at 50; it is shown as a change in percent.

Each comparison gets a Student-t interval of its mean paired difference and a p-value; the family of
comparisons (the six findings are eight comparisons: "bigger is better" is three) is corrected with
Holm's step-down method, so the chance of any false verdict stays below `alpha`. A "tie" (learned
against sinusoidal positions) is tested for equivalence (two one-sided tests, TOST) against a margin
fixed here, before any run: `TIE_MARGIN`. Each comparison is "holds", "does not hold" or "cannot tell
at this budget", with the interval at the confidence its Holm step used, so the verdict can be read
off the interval. The t quantiles come from mpmath (no SciPy in this project).

The rank correlation with the paper's perplexities gets a bootstrap interval over rows.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import mpmath
import numpy as np

HOLDS, DOES_NOT_HOLD, CANNOT_TELL = "holds", "does not hold", "cannot tell at this budget"
VERDICTS = (HOLDS, DOES_NOT_HOLD, CANNOT_TELL)

ALPHA = 0.05
# Stated before any run: learned and sinusoidal positions "tie" when their perplexities differ by
# less than 2%. The smallest difference the paper reads as an effect is A4's +1.8% ("too many heads
# hurt": 5.01 against 4.92); its E and base both read 4.92. A tie is a difference no larger than that.
TIE_MARGIN = math.log(1.02)  # in log perplexity (nats per subword)


@dataclass(frozen=True)
class Finding:
    """A claim of section 6.2 as comparisons of perplexity between rows.

    kind "worse": in each (worse, better) pair the first row has the higher perplexity.
    kind "tie": the two rows of each pair have the same perplexity, within `TIE_MARGIN`.
    corpus: which runs the finding is read on: "full" (the whole training split) or "small" (a share
        of it, many epochs: dropout can only help once a model overfits, which one epoch does not do).
    """

    name: str
    pairs: tuple[tuple[str, str], ...]
    kind: str = "worse"
    corpus: str = "full"


FINDINGS: tuple[Finding, ...] = (
    Finding("one head is worse", (("A1", "base"),)),
    Finding("too many heads hurt", (("A4", "base"),)),
    Finding("small d_k hurts", (("B1", "base"),)),
    # The smallest against the largest of each size the C rows vary: depth, width, feed-forward.
    Finding("bigger is better", (("C1", "C3"), ("C4", "C5"), ("C6", "C7"))),
    Finding("dropout helps", (("D1", "base"),), corpus="small"),
    Finding("learned and sinusoidal positions tie", (("E", "base"),), kind="tie"),
)


def finding_rows(
    findings: Sequence[Finding] = FINDINGS, corpus: str = "full"
) -> list[str]:
    """The rows the findings read on `corpus`, in first-use order."""
    rows: list[str] = []
    for finding in findings:
        if finding.corpus == corpus:
            for pair in finding.pairs:
                rows += [r for r in pair if r not in rows]
    return rows


# ------------------------------------------------------------------------------------ Student's t
def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with `df` degrees of freedom (the regularized incomplete beta)."""
    tail = float(mpmath.betainc(df / 2, 0.5, 0, df / (df + t * t), regularized=True)) / 2
    return 1 - tail if t > 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The t with P(T <= t) = p, for Student's t with `df` degrees of freedom."""
    if not 0 < p < 1:
        raise ValueError(f"p must be in (0, 1), got {p}")
    if p == 0.5:
        return 0.0
    sign = 1.0 if p > 0.5 else -1.0
    q = max(p, 1 - p)
    # P(|T| > t) = 2(1 - q) = I_{df/(df+t^2)}(df/2, 1/2): invert the incomplete beta for x.
    x = mpmath.findroot(
        lambda x: mpmath.betainc(df / 2, 0.5, 0, x, regularized=True) - 2 * (1 - q),
        (mpmath.mpf("1e-300"), mpmath.mpf(1)),
        solver="illinois",
    )
    return sign * math.sqrt(df * (1 - float(x)) / float(x))


@dataclass(frozen=True)
class Paired:
    """The paired differences of two rows over their common seeds, in log perplexity."""

    seeds: tuple[int, ...]
    differences: tuple[float, ...]

    @property
    def n(self) -> int:
        return len(self.differences)

    @property
    def mean(self) -> float:
        return float(np.mean(self.differences))

    @property
    def se(self) -> float:
        """Standard error of the mean difference (n - 1 in the variance)."""
        return float(np.std(self.differences, ddof=1) / math.sqrt(self.n))

    def interval(self, confidence: float) -> tuple[float, float]:
        """The two-sided Student-t interval of the mean difference."""
        half = t_quantile(1 - (1 - confidence) / 2, self.n - 1) * self.se
        return self.mean - half, self.mean + half

    def p_above(self, value: float) -> float:
        """One-sided p-value of "the mean difference is above `value`"."""
        return _p_greater(self.mean - value, self.se, self.n - 1)

    def p_below(self, value: float) -> float:
        """One-sided p-value of "the mean difference is below `value`"."""
        return _p_greater(value - self.mean, self.se, self.n - 1)


def _p_greater(distance: float, se: float, df: int) -> float:
    if se == 0:
        return 0.0 if distance > 0 else 1.0
    return 1 - t_cdf(distance / se, df)


def paired(first: Mapping[int, float], second: Mapping[int, float]) -> Paired:
    """Seed-paired log-perplexity differences first - second (`first[seed]` = a perplexity)."""
    seeds = tuple(sorted(set(first) & set(second)))
    return Paired(seeds, tuple(math.log(first[s]) - math.log(second[s]) for s in seeds))


def decide_pair(pair: Paired, kind: str, margin: float = TIE_MARGIN) -> tuple[float, str]:
    """A comparison's p-value and the verdict it supports when the p-value is small enough.

    "worse": the two-sided p-value (twice the smaller one-sided one); its sign says which way.
    "tie": twice the smaller of the equivalence p-value (TOST: inside +-margin) and the p-value of
    "outside the margin" on the side of the mean; at most one of them can be small.
    """
    if kind == "worse":
        above, below = pair.p_above(0.0), pair.p_below(0.0)
        return min(1.0, 2 * min(above, below)), HOLDS if above < below else DOES_NOT_HOLD
    if kind == "tie":
        inside = max(pair.p_above(-margin), pair.p_below(margin))
        outside = pair.p_above(margin) if pair.mean >= 0 else pair.p_below(-margin)
        if inside <= outside:
            return min(1.0, 2 * inside), HOLDS
        return min(1.0, 2 * outside), DOES_NOT_HOLD
    raise ValueError(f"kind must be 'worse' or 'tie', got {kind!r}")


def holm(p_values: Sequence[float], alpha: float = ALPHA) -> list[tuple[bool, float]]:
    """Holm's step-down correction: per p-value, (rejected, the level it was tested at).

    Sorted from the smallest, the i-th (from 0) of m is tested at alpha / (m - i) until one fails;
    that one and all after it are not rejected and keep the level of the failed step, so their
    intervals at 1 - level all contain what they test against.
    """
    m = len(p_values)
    out: list[tuple[bool, float]] = [(False, alpha)] * m
    stopped_at = None
    for i, index in enumerate(sorted(range(m), key=lambda k: p_values[k])):
        level = alpha / (m - i) if stopped_at is None else stopped_at
        rejected = stopped_at is None and p_values[index] <= level
        if not rejected and stopped_at is None:
            stopped_at = level
        out[index] = (rejected, level)
    return out


def percent(log_ratio: float) -> float:
    """A log-perplexity difference as a change of perplexity in percent."""
    return 100 * math.expm1(log_ratio)


def assess(
    findings: Sequence[Finding],
    ppl: Mapping[str, Mapping[str, Mapping[int, float]]],
    *,
    alpha: float = ALPHA,
    margin: float = TIE_MARGIN,
) -> list[dict]:
    """Every finding's verdict, from `ppl[corpus][row][seed]` (validation perplexities).

    The comparisons whose rows were trained form one Holm family; a pair with a row missing (a
    profile that trains a subset) is reported with its reason and left out of the family and of its
    finding, which then reads the pairs it has (none: cannot tell). A comparison needs at least two
    common seeds (else: cannot tell). A finding holds when all its trained comparisons hold, does
    not hold when one does not, and otherwise cannot be told. Each comparison reports its mean
    difference and interval in percent of perplexity.
    """
    tests = []  # (finding index, first, second, Paired or None, reason, trained)
    for i, finding in enumerate(findings):
        runs = ppl.get(finding.corpus, {})
        for a, b in finding.pairs:
            missing = [r for r in (a, b) if r not in runs]
            if missing:
                reason = (
                    f"{', '.join(missing)} not trained on the {finding.corpus} corpus"
                )
                tests.append((i, a, b, None, reason, False))
                continue
            pair = paired(runs[a], runs[b])
            reason = None if pair.n >= 2 else "fewer than two common seeds"
            tests.append((i, a, b, pair if pair.n >= 2 else None, reason, True))
    decided = [
        decide_pair(t[3], findings[t[0]].kind, margin) if t[3] else (1.0, CANNOT_TELL)
        for t in tests
    ]
    family = iter(holm([p for (p, _), t in zip(decided, tests) if t[5]], alpha))
    corrected = [next(family) if t[5] else (False, None) for t in tests]
    out = []
    for i, finding in enumerate(findings):
        comparisons = []
        for (j, a, b, pair, reason, kept), (p, way), (rejected, level) in zip(
            tests, decided, corrected
        ):
            if j != i:
                continue
            row = {"first": a, "second": b, "verdict": CANNOT_TELL, "p_value": p}
            row["trained"] = kept
            row |= {"level": level, "seeds": list(pair.seeds) if pair else []}
            if pair is None:
                row |= {"difference_pct": None, "interval_pct": None, "reason": reason}
            else:
                low, high = pair.interval(1 - level)
                row |= {
                    "difference_pct": percent(pair.mean),
                    "interval_pct": (percent(low), percent(high)),
                    "verdict": way if rejected else CANNOT_TELL,
                }
            comparisons.append(row)
        verdicts = [c["verdict"] for c in comparisons if c["trained"]]
        overall = (
            HOLDS
            if verdicts and all(v == HOLDS for v in verdicts)
            else DOES_NOT_HOLD
            if DOES_NOT_HOLD in verdicts
            else CANNOT_TELL
        )
        out.append(
            {
                "finding": finding.name,
                "kind": finding.kind,
                "corpus": finding.corpus,
                "verdict": overall,
                "comparisons": comparisons,
            }
        )
    return out


def describe(comparison: dict) -> str:
    """One comparison as text: rows, mean change with its interval and level, verdict."""
    c = comparison
    if c["difference_pct"] is None:
        return f"{c['first']} vs {c['second']}: {c['reason']}"
    low, high = c["interval_pct"]
    return (
        f"{c['first']} vs {c['second']}: {c['difference_pct']:+.1f}% "
        f"[{low:+.1f}, {high:+.1f}] at {100 * (1 - c['level']):.1f}%"
    )


# ------------------------------------------------------------------------------ rank correlation
def ranks(values: Sequence[float]) -> np.ndarray:
    """Ranks from 1; tied values share the mean of their ranks."""
    _, inverse, counts = np.unique(
        np.asarray(values, dtype=float), return_inverse=True, return_counts=True
    )
    ends = np.cumsum(counts)
    return ((ends - counts + 1 + ends) / 2)[inverse]


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    """Spearman's rank correlation: Pearson's correlation of the ranks (nan if one side is constant)."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape != y.shape or x.size < 2:
        raise ValueError("spearman needs two sequences of the same length, at least 2")
    rx, ry = ranks(x) - (x.size + 1) / 2, ranks(y) - (y.size + 1) / 2
    denominator = math.sqrt(float((rx**2).sum() * (ry**2).sum()))
    return float((rx * ry).sum() / denominator) if denominator else float("nan")


def spearman_interval(
    a: Sequence[float],
    b: Sequence[float],
    *,
    confidence: float = 0.95,
    samples: int = 10_000,
    seed: int = 0,
) -> dict:
    """Spearman's correlation with a percentile bootstrap interval over rows (pairs resampled
    together; resamples where one side is constant are dropped and counted). Fixed seed."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    rho = spearman(x, y)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, x.size, size=(samples, x.size))
    values = np.array([spearman(x[d], y[d]) for d in draws])
    kept = values[np.isfinite(values)]
    tail = (1 - confidence) / 2
    low, high = np.quantile(kept, [tail, 1 - tail])
    return {
        "rho": rho,
        "low": float(low),
        "high": float(high),
        "confidence": confidence,
        "samples": int(kept.size),
        "dropped": int(samples - kept.size),
        "rows": int(x.size),
    }

"""The statistics behind chapter 06's verdicts: does a finding of section 6.2 hold at our budget?

A finding is one or more comparisons of two Table 3 rows. Every row is trained with the same seeds,
and a seed fixes the batch order, so the rows' runs of one seed saw the same batches: a seed is a
block, and the batch order's share of the noise is common to every row of the block. A difference
is taken in log perplexity (nats per subword), so it reads as a ratio of perplexities and means the
same at perplexity 5 and at 50; it is shown as a change in percent.

The default analysis (`method="pooled"`) fits every row of a corpus at once as a randomized block
design: log perplexity = row + seed + noise, one noise variance for the whole table
(`BlockModel`, ordinary least squares from statsmodels, which also copes with a missing run). A
comparison is the difference of two row effects, its standard error comes from the pooled residual
variance with (rows - 1) x (seeds - 1) degrees of freedom: 20 for 11 rows of 3 seeds, where a
comparison's own seeds give 2. The price is an assumption: every row is as noisy as every other.
`method="paired"` is the earlier analysis, a Student-t interval of each pair's seed-by-seed
differences alone, kept for comparison.

The family of comparisons (the six findings are eight comparisons: "bigger is better" is three) is
corrected with Holm's step-down method, so the chance of any false verdict stays below `alpha`. A
"tie" (learned against sinusoidal positions) is tested for equivalence (two one-sided tests, TOST)
against a margin fixed here, before any run: `TIE_MARGIN`. Each comparison is "holds", "does not
hold" or "cannot tell at this budget", with the interval at the confidence its Holm step used, so the
verdict can be read off the interval, and the minimum detectable difference: the true change that
the test would find four times in five at that level (`Contrast.detectable`), so "cannot tell" says
how small an effect the run could have seen. The t quantiles are scipy's.

The rank correlation with the paper's perplexities gets a bootstrap interval over rows.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

HOLDS, DOES_NOT_HOLD, CANNOT_TELL = "holds", "does not hold", "cannot tell at this budget"
VERDICTS = (HOLDS, DOES_NOT_HOLD, CANNOT_TELL)
METHODS = ("pooled", "paired")

ALPHA = 0.05
POWER = 0.8  # the minimum detectable difference is found this often
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


def finding_rows(corpus: str = "full") -> list[str]:
    """The rows the findings read on `corpus`, in first-use order."""
    rows: list[str] = []
    for finding in FINDINGS:
        if finding.corpus == corpus:
            for pair in finding.pairs:
                rows += [r for r in pair if r not in rows]
    return rows


# ------------------------------------------------------------------------------------ Student's t
def t_quantile(p: float, df: float) -> float:
    """The t with P(T <= t) = p, for Student's t with `df` degrees of freedom."""
    if not 0 < p < 1:
        raise ValueError(f"p must be in (0, 1), got {p}")
    return float(stats.t.ppf(p, df))


@dataclass(frozen=True)
class Contrast:
    """A difference of two rows' mean log perplexity: estimate, standard error, degrees of freedom,
    and the seeds both rows were trained with."""

    seeds: tuple[int, ...]
    mean: float
    se: float
    df: float

    @property
    def n(self) -> int:
        return len(self.seeds)

    def interval(self, confidence: float) -> tuple[float, float]:
        """The two-sided Student-t interval of the difference."""
        half = t_quantile(1 - (1 - confidence) / 2, self.df) * self.se
        return self.mean - half, self.mean + half

    def p_above(self, value: float) -> float:
        """One-sided p-value of "the difference is above `value`"."""
        return _p_greater(self.mean - value, self.se, self.df)

    def p_below(self, value: float) -> float:
        """One-sided p-value of "the difference is below `value`"."""
        return _p_greater(value - self.mean, self.se, self.df)

    def detectable(self, level: float, power: float = POWER) -> float:
        """The smallest true difference a two-sided test at `level` finds with probability
        `power`, in log perplexity: (t at 1 - level/2 + t at power) standard errors."""
        return (t_quantile(1 - level / 2, self.df) + t_quantile(power, self.df)) * self.se


def _p_greater(distance: float, se: float, df: float) -> float:
    if se == 0:
        return 0.0 if distance > 0 else 1.0
    return float(stats.t.sf(distance / se, df))


def paired(first: Mapping[int, float], second: Mapping[int, float]) -> Contrast:
    """Seed-paired log-perplexity differences first - second (`first[seed]` = a perplexity), with
    the Student-t standard error of their own spread (n - 1 degrees of freedom)."""
    seeds = tuple(sorted(set(first) & set(second)))
    d = np.array([math.log(first[s]) - math.log(second[s]) for s in seeds])
    se = float(d.std(ddof=1) / math.sqrt(d.size)) if d.size >= 2 else math.nan
    return Contrast(seeds, float(d.mean()) if d.size else math.nan, se, d.size - 1)


class BlockModel:
    """log perplexity = row effect + seed effect + noise, fitted to `runs[row][seed]` =
    perplexity, every run of one corpus, by ordinary least squares (statsmodels), one noise
    variance for all rows.

    The design has a column per row (its mean at the first seed) and one per further seed, so the
    difference of two rows is the difference of their columns, with the pooled standard error.
    """

    def __init__(self, runs: Mapping[str, Mapping[int, float]]):
        import statsmodels.api as sm

        self.rows = [r for r in runs if runs[r]]
        self.seeds = sorted({s for r in self.rows for s in runs[r]})
        self.runs = runs
        y, x = [], []
        width = max(0, len(self.rows) + len(self.seeds) - 1)
        for i, row in enumerate(self.rows):
            for seed, ppl in runs[row].items():
                column = np.zeros(width)
                column[i] = 1.0
                j = self.seeds.index(seed)
                if j:
                    column[len(self.rows) + j - 1] = 1.0
                y.append(math.log(ppl))
                x.append(column)
        self.df = len(y) - width
        self.fit = sm.OLS(np.array(y), np.array(x)).fit() if y and self.df >= 1 else None

    def contrast(self, first: str, second: str) -> Contrast:
        seeds = tuple(sorted(set(self.runs[first]) & set(self.runs[second])))
        if self.fit is None:
            return Contrast(seeds, math.nan, math.nan, 0)
        vector = np.zeros(len(self.fit.params))
        vector[self.rows.index(first)] = 1.0
        vector[self.rows.index(second)] = -1.0
        test = self.fit.t_test(vector)
        return Contrast(
            seeds, float(test.effect[0]), float(test.sd[0][0]), float(self.fit.df_resid)
        )


def decide_pair(pair: Contrast, kind: str) -> tuple[float, str]:
    """A comparison's p-value and the verdict it supports when the p-value is small enough.

    "worse": the two-sided p-value (twice the smaller one-sided one); its sign says which way.
    "tie": twice the smaller of the equivalence p-value (TOST: inside +-margin) and the p-value of
    "outside the margin" on the side of the mean; at most one of them can be small.
    """
    if kind == "worse":
        above, below = pair.p_above(0.0), pair.p_below(0.0)
        return min(1.0, 2 * min(above, below)), HOLDS if above < below else DOES_NOT_HOLD
    if kind == "tie":
        margin = TIE_MARGIN
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


def _contrasts(
    findings: Sequence[Finding],
    ppl: Mapping[str, Mapping[str, Mapping[int, float]]],
    method: str,
) -> list[tuple[int, str, str, Contrast | None, str | None, bool]]:
    """(finding index, first, second, contrast or None, reason, trained) per comparison."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    models = (
        {c: BlockModel(runs) for c, runs in ppl.items()} if method == "pooled" else {}
    )
    tests = []
    for i, finding in enumerate(findings):
        runs = ppl.get(finding.corpus, {})
        for a, b in finding.pairs:
            missing = [r for r in (a, b) if not runs.get(r)]
            if missing:
                reason = (
                    f"{', '.join(missing)} not trained on the {finding.corpus} corpus"
                )
                tests.append((i, a, b, None, reason, False))
                continue
            pair = (
                models[finding.corpus].contrast(a, b)
                if method == "pooled"
                else paired(runs[a], runs[b])
            )
            usable = pair.n >= 2 and pair.df >= 1 and math.isfinite(pair.se)
            reason = None if usable else "fewer than two common seeds"
            tests.append((i, a, b, pair if usable else None, reason, True))
    return tests


def assess(
    findings: Sequence[Finding],
    ppl: Mapping[str, Mapping[str, Mapping[int, float]]],
    *,
    method: str = "pooled",
) -> list[dict]:
    """Every finding's verdict, from `ppl[corpus][row][seed]` (validation perplexities).

    `method` "pooled" reads every comparison of a corpus off one block model of all its rows
    (`BlockModel`); "paired" off each pair's own seeds. The comparisons whose rows were trained form
    one Holm family; a pair with a row missing (a profile that trains a subset) is reported with its
    reason and left out of the family and of its finding, which then reads the pairs it has (none:
    cannot tell). A comparison needs at least two common seeds (else: cannot tell). A finding holds
    when all its trained comparisons hold, does not hold when one does not, and otherwise cannot be
    told. Each comparison reports its mean difference, interval and minimum detectable difference in
    percent of perplexity.
    """
    tests = _contrasts(findings, ppl, method)
    decided = [
        decide_pair(t[3], findings[t[0]].kind) if t[3] else (1.0, CANNOT_TELL)
        for t in tests
    ]
    family = iter(holm([p for (p, _), t in zip(decided, tests) if t[5]]))
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
                row |= {
                    "difference_pct": None,
                    "interval_pct": None,
                    "detectable_pct": None,
                    "df": None,
                    "reason": reason,
                }
            else:
                low, high = pair.interval(1 - level)
                row |= {
                    "difference_pct": percent(pair.mean),
                    "interval_pct": (percent(low), percent(high)),
                    "detectable_pct": percent(pair.detectable(level)),
                    "df": pair.df,
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
                "method": method,
                "comparisons": comparisons,
            }
        )
    return out


# ------------------------------------------------------------------------------ rank correlation
# Over n rows, shuffled ranks agree or disagree perfectly 2 / n! of the time: 1 in 12 at n = 4,
# 1 in 60 at n = 5. Below 5 rows not even a perfect ordering is rarer than the 1 in 20 a reading
# of it needs, so fewer rows (a profile, or a merged part of an extended run, that trains few) get
# the correlation without a reading.
MIN_ORDER_ROWS = 5


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    """Spearman's rank correlation: Pearson's correlation of the ranks (nan if one side is constant)."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape != y.shape or x.size < 2:
        raise ValueError("spearman needs two sequences of the same length, at least 2")
    # tied values share the mean of their ranks
    rx = stats.rankdata(x) - (x.size + 1) / 2
    ry = stats.rankdata(y) - (y.size + 1) / 2
    denominator = math.sqrt(float((rx**2).sum() * (ry**2).sum()))
    return float((rx * ry).sum() / denominator) if denominator else float("nan")


def spearman_interval(
    a: Sequence[float],
    b: Sequence[float],
    *,
    samples: int = 10_000,
) -> dict:
    """Spearman's correlation with a percentile bootstrap interval over rows (pairs resampled
    together; resamples where one side is constant are dropped and counted). Fixed seed."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    rho = spearman(x, y)
    confidence = 0.95
    rng = np.random.default_rng(0)
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

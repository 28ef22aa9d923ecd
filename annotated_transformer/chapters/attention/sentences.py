"""Chapter 01's sentences: what one run measured of attention's scale, cost and timings, in
words.

Each function reads plain numbers (the chapter passes what it just computed; `closing` passes
the results record read back), so the page's sentences and its closing section say the same
thing. A timing difference is called a difference only when it exceeds the spread of the timed
runs: every run of one alternative faster than every run of the other, over at least
`MIN_RUNS` runs each; otherwise the sentence says the two are within the timing noise.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from ..wording import gap
from . import record as _record

# Fewer runs than this say nothing about the timing noise: with 3 runs each, two
# indistinguishable alternatives still give ranges that do not overlap one time in ten.
MIN_RUNS = 3


def _by_d_k(table: Mapping) -> dict[int, Mapping]:
    """A per-d_k mapping with int keys (the record read back has JSON's string keys)."""
    return {int(d): row for d, row in table.items()}


def describe_variance(variance: Mapping[int | str, Mapping[str, float]]) -> str:
    """How the variance of q·k follows d_k and that of q·k/√d_k stays near 1.
    `variance`: {d_k: {"unscaled", "scaled"}}, as the record holds it."""
    rows = _by_d_k(variance)
    smallest, widest = min(rows), max(rows)
    # rounded up to a tenth of a percent, so that "within" holds for every row
    off_d_k = (
        math.ceil(1000 * max(abs(r["unscaled"] / d - 1) for d, r in rows.items())) / 1000
    )
    scaled = [r["scaled"] for r in rows.values()]
    return (
        f"The variance of q·k went from {rows[smallest]['unscaled']:.1f} at "
        f"d_k = {smallest} to {rows[widest]['unscaled']:,.1f} at d_k = {widest}, within "
        f"{off_d_k:.1%} of d_k at every width; divided by √d_k, it stayed between "
        f"{min(scaled):.3f} and {max(scaled):.3f}."
    )


def describe_saturation(
    saturation: Mapping[int | str, Mapping[str, float]], n_keys: int
) -> str:
    """What the softmax does with and without the scale at the widest d_k, and the gradient
    ratio there and at the smallest. `saturation`: the record's `softmax_saturation`."""
    rows = _by_d_k(saturation)
    smallest, widest = min(rows), max(rows)
    scaled_peaks = [r["largest_weight_scaled"] for r in rows.values()]

    def ratio(d: int) -> float:
        return rows[d]["gradient_norm_scaled"] / rows[d]["gradient_norm_unscaled"]

    wide_ratio = ratio(widest)
    if wide_ratio >= 1:
        gradient = f"{wide_ratio:,.0f} times smaller than with the scale"
    else:
        gradient = f"{1 / wide_ratio:,.1f} times larger than with the scale"
    # as many decimals as the chapter's table, so the range holds every row it shows
    low, high = f"{min(scaled_peaks):.3f}", f"{max(scaled_peaks):.3f}"
    stays = f"at {low}" if low == high else f"between {low} and {high}"
    return (
        f"With the scale, the largest weight stays {stays} at every width. Without it, at d_k = {widest} the softmax "
        f"gives on average {rows[widest]['largest_weight_unscaled']:.1%} of its weight to a "
        f"single key out of {n_keys}, and the gradient reaching the scores of a typical row "
        f"is {gradient} (at d_k = {smallest} the scaled gradient is {ratio(smallest):.1f} "
        "times the unscaled one). The paper's heads have d_k = 64; its single-head variant "
        "in Table 3 has d_k = 512."
    )


def describe_additive_timing(rows: Sequence[Mapping]) -> str:
    """Additive against dot-product scores at the widest d_k, by their timed runs (the record's
    `additive_attention`): the medians, the spread, and whether the difference exceeds it."""
    row = max(rows, key=lambda r: r["d_k"])
    return f"At d_k = {row['d_k']}, " + timing_comparison(
        "dot product", row["dot_product_runs_ms"], "additive", row["additive_runs_ms"]
    )


def describe_additive(rows: Sequence[Mapping], repeats: int) -> str:
    """Additive against dot-product scores at the widest d_k of the comparison: their times
    (with the runs' spread where the record keeps the runs) and whether additive scores'
    softmax is less peaked than the unscaled dot product's. `rows`: the record's
    `additive_attention`."""
    row = max(rows, key=lambda r: r["d_k"])
    additive, dot = (
        row["largest_weight_additive"],
        row["largest_weight_unscaled_dot_product"],
    )
    peaked = "stays more spread than" if additive < dot else "is no more spread than"
    weights = (
        f"additive scores' softmax {peaked} the unscaled dot product's: largest weight "
        f"{additive:.3f} against {dot:.3f}."
    )
    if "additive_runs_ms" in row:
        return f"{describe_additive_timing(rows)} At that width, {weights}"
    return (
        f"At d_k = {row['d_k']}, additive scores took {row['additive_ms']:.2f} ms against "
        f"{row['dot_product_ms']:.3f} ms for the dot product (means of {repeats} calls, "
        f"without their spread), and {weights}"
    )


def describe_head_costs(rows: Sequence[Mapping[str, float]]) -> str:
    """How parameters, matrix-product FLOPs and softmax entries change from the fewest heads
    to the most. `rows`: the record's `multi_head_cost`."""
    first = min(rows, key=lambda r: r["heads"])
    last = max(rows, key=lambda r: r["heads"])

    def change(column: str, what: str) -> str:
        values = [r[column] for r in rows]
        if min(values) == max(values):
            return f"{what} stay at {values[0]:,}"
        return f"{what} go from {first[column]:,} to {last[column]:,}"

    return (
        f"From {first['heads']} to {last['heads']} heads, "
        f"{change('parameters', 'the parameters')} and "
        f"{change('flops', 'the matrix-product FLOPs')}, while "
        f"{change('score_entries', 'the softmax entries')} "
        f"({last['score_entries'] / first['score_entries']:,.0f} times as many)."
    )


def timing_verdict(runs_a: Sequence[float], runs_b: Sequence[float]) -> str:
    """How the runs of b compare with those of a: "faster" or "slower" when every run of b is
    faster (slower) than every run of a, "within noise" when their ranges overlap, "too few
    runs" below `MIN_RUNS` runs each."""
    if min(len(runs_a), len(runs_b)) < MIN_RUNS:
        return "too few runs"
    if max(runs_b) < min(runs_a):
        return "faster"
    if min(runs_b) > max(runs_a):
        return "slower"
    return "within noise"


def _relative(a: float, b: float) -> str:
    """b's median against a's, as a share of a's below a factor of two, else as a factor."""
    longer, shorter = max(a, b), min(a, b)
    if longer >= 2 * shorter:
        return (
            f"{longer / shorter:,.1f} times as long"
            if b > a
            else (f"{longer / shorter:,.1f} times as fast")
        )
    return f"{abs(a - b) / a:.0%}"


def timing_comparison(
    name_a: str, runs_a: Sequence[float], name_b: str, runs_b: Sequence[float]
) -> str:
    """`name_b` against `name_a` (milliseconds of every run of each): the medians, the spread
    of the runs, and whether the difference exceeds that spread (`timing_verdict`)."""
    a, b = _record.median(runs_a), _record.median(runs_b)
    name_a, name_b = f"`{name_a}`", f"`{name_b}`"
    spread = (
        f"{name_a} took a median of {a:.2f} ms ({min(runs_a):.2f} to {max(runs_a):.2f} ms "
        f"over {len(runs_a)} runs), {name_b} {b:.2f} ms ({min(runs_b):.2f} to "
        f"{max(runs_b):.2f} ms over {len(runs_b)} runs)"
    )
    verdict = timing_verdict(runs_a, runs_b)
    if verdict == "too few runs":
        return (
            f"{spread}; with fewer than {MIN_RUNS} runs each, the run cannot tell a "
            "difference from the timing noise."
        )
    if verdict in ("faster", "slower"):
        return (
            f"{spread}: {name_b} is {verdict} by {gap(a, b, 2)} ms "
            f"({_relative(a, b)}), more than the timing noise, since every one of its "
            f"runs was {verdict} than every run of {name_a}."
        )
    return (
        f"{spread}: the runs' ranges overlap, so the difference of the medians "
        f"({gap(b, a, 2)} ms) is within the timing noise and this run shows neither as "
        "faster."
    )


def _medians_only(name_a: str, a: float, name_b: str, b: float) -> str:
    return (
        f"`{name_a}` took a median of {a:.2f} ms, `{name_b}` {b:.2f} ms; the record keeps no "
        "single runs, so it cannot say whether the difference exceeds the timing noise."
    )


ANSWERS = {
    "faster": "Yes, on this run",
    "slower": "No: on this run it is slower",
    "within noise": "Not measurably",
    "too few runs": "This run cannot tell",
}


def describe_projections(
    runs: Mapping[str, Sequence[float]] | None,
    medians: Mapping[str, float] | None = None,
    where: str = "",
) -> str:
    """Section 1.6's question, whether one fused projection saves time against three, answered
    from the timed runs ({name: milliseconds}, `record.THREE_PROJECTIONS` and
    `record.ONE_PROJECTION`), or from the medians alone for a record without its runs."""
    three, one = _record.THREE_PROJECTIONS, _record.ONE_PROJECTION
    where = f" on {where}" if where else ""
    if runs:
        answer = ANSWERS[timing_verdict(runs[three], runs[one])]
        text = timing_comparison(three, runs[three], one, runs[one])
    else:
        answer = "This record cannot tell"
        text = _medians_only(three, medians[three], one, medians[one])
    return f"Does one fused projection save time against three? {answer}. Timed{where}, {text}"


def describe_paths(
    runs: Mapping[str, Sequence[float]] | None,
    weights_mb: float | None,
    medians: Mapping[str, float] | None = None,
) -> str:
    """The fused and the explicit code path's timed runs ({name: milliseconds},
    `record.FUSED_PATH` and `record.EXPLICIT_PATH`) and the memory of the weights the explicit
    path keeps."""
    fused, explicit = _record.FUSED_PATH, _record.EXPLICIT_PATH
    if runs:
        text = timing_comparison(fused, runs[fused], explicit, runs[explicit])
    else:
        text = _medians_only(fused, medians[fused], explicit, medians[explicit])
    text = f"Of the module's two code paths, {text}"
    if weights_mb is None:
        return text
    return (
        f"{text} The explicit path keeps {weights_mb:.1f} MB of weights for one layer; they "
        "grow with the square of the length, which is why training never records them."
    )


def _where(record: Mapping) -> str:
    provenance = record.get("provenance") or {}
    return str(provenance.get("device_name") or provenance.get("device") or "")


def closing(record: Mapping) -> str:
    """The chapter's closing section, "What this run shows", from its results record as
    `record.read` returns it: the variance and the saturation that the scale prevents,
    additive scores, the cost of h heads, and whether the fused projection and the fused
    path are faster than the alternatives by more than the timing noise."""
    m = record["metrics"]
    sizes = m.get("sizes") or {}
    lines = [
        describe_variance(m["dot_product_variance"]),
        describe_saturation(m["softmax_saturation"], sizes.get("n_keys", "?")),
    ]
    if m.get("additive_attention"):
        lines.append(
            describe_additive(m["additive_attention"], sizes.get("repeats", "?"))
        )
    lines += [
        describe_head_costs(m["multi_head_cost"]),
        describe_projections(
            m.get("projection_runs_ms"), m["projection_ms"], _where(record)
        ),
        describe_paths(
            m.get("attention_path_runs_ms"),
            m.get("explicit_weights_kept_mb"),
            m["attention_path_ms"],
        ),
    ]
    return "\n".join(f"- {line}" for line in lines)

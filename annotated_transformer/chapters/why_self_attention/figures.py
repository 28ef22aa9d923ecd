"""Chapter 03's figures: Table 1's costs by length and width, maximum path lengths, where self-attention overtakes recurrence, and how long real sentences are."""

from __future__ import annotations

from typing import Mapping

import altair as alt
import numpy as np
import pandas as pd

from ...viz.charts import (
    line_chart,
    loglog_with_reference,
    loglog_with_rules,
    side_by_side,
    tighten,
)


def scaling_charts(
    by_n: pd.DataFrame,
    by_d: pd.DataFrame,
    y: str,
    exponents_n: Mapping[str, float],
    exponents_d: Mapping[str, float],
    *,
    what: str,
    y_title: str,
) -> alt.HConcatChart:
    """`y` against the length n (at by_n's one width d) and against the width d (at by_d's
    one length n), each with `loglog_with_reference` lines of the given exponents."""
    d, n = by_n["d"].iloc[0], by_d["n"].iloc[0]
    return side_by_side(
        loglog_with_reference(
            by_n,
            "n",
            y,
            exponents_n,
            title=f"{what} against n (d = {d})",
            y_title=y_title,
        ),
        loglog_with_reference(
            by_d,
            "d",
            y,
            exponents_d,
            title=f"{what} against d (n = {n})",
            y_title=y_title,
        ),
        independent_y=True,
    )


def path_length_charts(
    paths: pd.DataFrame, to_last: pd.DataFrame, *, kernel_size: int
) -> alt.HConcatChart:
    """Maximum path length against n (`paths`: kind, n, max_path_length; log-log) beside
    the path length from each input position to the last output (`to_last`: kind,
    input_position, path_length) at one n."""
    panel = dict(points=True, width=270, height=260)
    longest = tighten(
        line_chart(
            paths,
            "n",
            "max_path_length",
            "kind",
            log_x=True,
            log_y=True,
            y_title="maximum path length",
            title=f"Maximum path length against n (k = r = {kernel_size})",
            **panel,
        )
    )
    n = to_last.groupby("kind").input_position.max().max() + 1
    each = line_chart(
        to_last,
        "input_position",
        "path_length",
        "kind",
        title=f"Path length from each input to the last output (n = {n})",
        x_title="input position",
        y_title="path length",
        **panel,
    )
    return side_by_side(longest, each, legend_columns=3)


def crossover_chart(
    flops: pd.DataFrame,
    times: pd.DataFrame,
    rules: Mapping[str, float],
    *,
    d: int,
) -> alt.HConcatChart:
    """Two layers (`kind`) compared as the length `n` grows: counted FLOPs (`flops`,
    column "flops") beside measured time (`times`, column "seconds"), both with the
    crossovers of `rules` marked (`loglog_with_rules`)."""
    x, color = "n", "kind"
    return side_by_side(
        loglog_with_rules(
            flops, x, "flops", color, rules, title=f"FLOPs, d = {d}", y_title="FLOPs"
        ),
        loglog_with_rules(
            times,
            x,
            "seconds",
            color,
            rules,
            title=f"Measured time, d = {d}",
            y_title="seconds per forward pass",
        ),
    )


# Gridline steps of a share axis, finest first: the first that needs at most this many.
# The share axis runs a tenth past 100%: every curve ends inside the frame, and the band above
# the 100% gridline, where no line runs, holds the name of d_model.
_SHARE_TOP = 1.1
_DASHES = ([1, 0], [6, 3], [2, 2], [8, 3, 2, 3])


def sentence_lengths_chart(
    lengths: pd.DataFrame, d_model: int, *, title: str | None = None
) -> alt.LayerChart:
    """The share of sentences at most n long in `subwords` (each corpus's empirical
    distribution function, a step line per `corpus`, told apart by colour and dash), with
    `d_model` marked by a dashed rule and named beside it.

    Cumulative curves do not hide one another as four overlaid histograms do, and they read the
    chapter's question directly: how close to 100% each corpus is long before d_model. The length
    axis ends at the longest sentence or the rule and draws no gridlines; the share axis has
    headroom, and the name sits in the band above 100%, so that nothing crosses it."""
    value, color = "subwords", "corpus"
    values = lengths[value].to_numpy(dtype=float)
    high = max(float(values.max()) if len(values) else 0.0, float(d_model)) * 1.02
    rows = []
    for name, part in lengths.groupby(color, sort=False):
        ordered = np.sort(part[value].to_numpy(dtype=float))
        seen, counts = np.unique(ordered, return_counts=True)
        shares = np.cumsum(counts) / len(ordered)
        rows.append({"length": 0.0, "share": 0.0, color: name})
        rows += [
            {"length": float(n), "share": float(s), color: name}
            for n, s in zip(seen, shares)
        ]
        rows.append({"length": float(high), "share": 1.0, color: name})
    curves = pd.DataFrame(rows)
    names = list(dict.fromkeys(curves[color])) if len(curves) else []
    legend = alt.Legend(orient="bottom", columns=2, labelLimit=0, symbolType="stroke")
    dashes = [list(_DASHES[i % len(_DASHES)]) for i in range(len(names))]
    x_scale = alt.Scale(domain=[0.0, float(high)], nice=False)
    x_title = "sentence length (subwords)"
    x = alt.X("length:Q", title=x_title, scale=x_scale, axis=alt.Axis(grid=False))
    lines = (
        alt.Chart(curves)
        .mark_line(interpolate="step-after", strokeWidth=2, clip=True)
        .encode(
            x=x,
            y=alt.Y(
                "share:Q",
                title="share of sentences at most this long",
                scale=alt.Scale(domain=[0.0, _SHARE_TOP], nice=False),
                axis=alt.Axis(format="%", values=[0.0, 0.25, 0.5, 0.75, 1.0]),
            ),
            color=alt.Color(
                f"{color}:N",
                title=None,
                sort=names,
                scale=alt.Scale(domain=names),
                legend=legend,
            ),
            strokeDash=alt.StrokeDash(
                f"{color}:N",
                sort=names,
                title=None,
                scale=alt.Scale(domain=names, range=dashes),
                legend=legend,  # the same legend as the colour's: one entry per group, both drawn
            ),
            tooltip=[
                color,
                alt.Tooltip("length:Q", format=".0f", title=f"{value}, at most"),
                alt.Tooltip("share:Q", format=".1%"),
            ],
        )
    )
    label = f"d_model = {d_model}"
    rule_data = pd.DataFrame([{"at": float(d_model), "what": label}])
    rule = (
        alt.Chart(rule_data)
        .mark_rule(color="#444", strokeDash=[4, 3])
        .encode(x=alt.X("at:Q", scale=x_scale), tooltip=["what"])
    )
    name = (
        alt.Chart(rule_data)
        .mark_text(align="right", baseline="top", dx=-4, dy=4, color="#444", fontSize=10)
        .encode(x=alt.X("at:Q", scale=x_scale), y=alt.value(0), text="what")
    )
    return alt.layer(lines, rule, name).properties(
        width=560, height=260, **({"title": title} if title else {})
    )

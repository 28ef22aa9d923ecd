"""Chapter 03's figures: Table 1's costs by length and width, maximum path lengths, where self-attention overtakes recurrence, and how long real sentences are."""

from __future__ import annotations

import math
from typing import Mapping

import altair as alt
import numpy as np
import pandas as pd

from ..charts import (
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
    x: str = "n",
    color: str = "kind",
) -> alt.HConcatChart:
    """Two layers compared as the length grows: counted FLOPs (`flops`, column "flops") beside
    measured time (`times`, column "seconds"), both with the crossovers of `rules` marked
    (`loglog_with_rules`)."""
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
_SHARE_STEPS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.25)
_MAX_SHARE_TICKS = 8


def _share_axis(highest: float) -> tuple[float, list[float]]:
    """(top of a share axis, its tick values): a multiple of a round step above `highest`
    with a tenth of headroom, so that the tallest bar ends inside the frame and the band
    below the top edge holds no gridline but the edge's."""
    wanted = max(highest, 1e-9) * 1.1
    step = next(
        (s for s in _SHARE_STEPS if math.ceil(wanted / s) <= _MAX_SHARE_TICKS),
        _SHARE_STEPS[-1],
    )
    count = min(math.ceil(wanted / step), round(1 / step))
    return count * step, [round(i * step, 10) for i in range(count + 1)]


def sentence_lengths_chart(
    lengths: pd.DataFrame,
    d_model: int,
    *,
    value: str = "subwords",
    color: str = "corpus",
    bins: int = 40,
    title: str | None = None,
    x_title: str = "sentence length (subwords)",
    width: int = 560,
    height: int = 260,
) -> alt.LayerChart:
    """Share of sentences per bin of length (bins shared by every group), one overlaid
    histogram per value of `color`, with `d_model` marked by a dashed rule and named beside it.

    The axes end at the data and the rule, and the share axis has headroom, so that no bar
    leaves the frame; the length axis draws no gridlines, and the name sits in the band below
    the frame's top edge, where no line runs, so that nothing crosses it."""
    values = lengths[value].to_numpy(dtype=float)
    high = max(float(values.max()) if len(values) else 0.0, float(d_model)) * 1.02
    edges = np.linspace(0.0, high, bins + 1)
    rows = []
    for name, part in lengths.groupby(color, sort=False):
        counts, _ = np.histogram(part[value].to_numpy(dtype=float), bins=edges)
        share = counts / max(len(part), 1)
        rows += [
            {"start": a, "end": b, "share": s, "zero": 0.0, color: name}
            for a, b, s in zip(edges[:-1], edges[1:], share)
        ]
    binned = pd.DataFrame(rows)
    top, ticks = _share_axis(float(binned.share.max()) if len(binned) else 0.0)
    x_scale = alt.Scale(domain=[0.0, float(high)], nice=False)
    x = alt.X("start:Q", title=x_title, scale=x_scale, axis=alt.Axis(grid=False))
    y_axis = alt.Axis(format="%", values=ticks)
    bars = (
        alt.Chart(binned)
        .mark_bar(opacity=0.55, binSpacing=0, clip=True)
        .encode(
            x=x,
            x2="end:Q",
            y=alt.Y(
                "share:Q",
                stack=None,
                title="share of sentences",
                scale=alt.Scale(domain=[0.0, top], nice=False),
                axis=y_axis,
            ),
            y2="zero:Q",
            color=alt.Color(
                f"{color}:N",
                title=None,
                sort=None,
                legend=alt.Legend(orient="bottom", columns=2, labelLimit=0),
            ),
            tooltip=[
                color,
                alt.Tooltip("start:Q", format=".0f"),
                alt.Tooltip("end:Q", format=".0f"),
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
    return alt.layer(bars, rule, name).properties(
        width=width, height=height, **({"title": title} if title else {})
    )

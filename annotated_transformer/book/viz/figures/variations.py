"""Chapter 06's figure: each Table 3 row's difference from base."""

from __future__ import annotations

from typing import Mapping, Sequence

import altair as alt
import pandas as pd


def table3_differences_chart(
    differences: pd.DataFrame, rows: Sequence[str], metrics: Mapping[str, str]
) -> alt.VConcatChart:
    """Each Table 3 row's difference from base, ours beside the paper's, one panel per metric
    (`metrics` maps each to its axis title).

    `differences` has the columns `row`, `metric`, `who` ("ours" or "paper"), `diff`, and for ours
    `low` and `high` (the whisker: the spread over seeds) and `faded` (True where the difference is
    within the noise the text names, drawn pale).
    """
    panels = []
    for metric, y_title in metrics.items():
        part = differences[differences.metric == metric].copy()
        faded = part["faded"] if "faded" in part else pd.Series(False, index=part.index)
        part["faded"] = faded.fillna(False).astype(bool)
        who = alt.XOffset("who:N", scale=alt.Scale(domain=["ours", "paper"]))
        bars = (
            alt.Chart(part)
            .mark_bar()
            .encode(
                x=alt.X("row:N", sort=list(rows), title=None),
                xOffset=who,
                y=alt.Y("diff:Q", title=y_title),
                color=alt.Color(
                    "who:N",
                    title=None,
                    scale=alt.Scale(
                        domain=["ours", "paper"], range=["#f58518", "#4c78a8"]
                    ),
                ),
                opacity=alt.condition("datum.faded", alt.value(0.35), alt.value(1.0)),
                tooltip=["row", "who", alt.Tooltip("diff:Q", format="+.2f")],
            )
        )
        whiskers = (
            alt.Chart(part[part.who == "ours"])
            .mark_rule(color="black")
            .encode(
                x=alt.X("row:N", sort=list(rows)), xOffset=who, y="low:Q", y2="high:Q"
            )
        )
        panels.append(
            alt.layer(bars, whiskers).properties(width=560, height=200, title=metric)
        )
    return alt.vconcat(*panels).resolve_scale(y="independent")

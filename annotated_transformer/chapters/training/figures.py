"""Chapter 04's figures: the label-smoothed target distribution and the copy task's extrapolation."""

from __future__ import annotations

from typing import Any, Sequence

import altair as alt
import pandas as pd

from ...viz.charts import (
    _as_array,
    bar_chart,
    edge_scale,
    heatmap,
)


def label_smoothing_chart(
    distribution: Any,
    *,
    token_labels: Sequence[str] | None = None,
    row_labels: Sequence[str] | None = None,
    title: str = "Smoothed target distribution",
    show_values: bool = False,
) -> alt.Chart:
    """The target distribution after label smoothing (section 5.4).

    A 1-D vector (one target) gives bars over the vocabulary; a 2-D matrix (one row per target
    token) gives a heatmap, which shows the smoothing mass and the zeroed padding column at once.
    `show_values=True` writes each probability in its cell, on a square-root colour scale that keeps
    the small ones visible.
    """
    values = _as_array(distribution)
    if values.ndim == 1:
        labels = (
            [str(s) for s in token_labels]
            if token_labels is not None
            else [str(i) for i in range(len(values))]
        )
        if len(labels) != len(values):
            raise ValueError(
                f"got {len(labels)} token labels for {len(values)} probabilities"
            )
        df = pd.DataFrame({"token": labels, "probability": values.astype(float)})
        return bar_chart(
            df, "token", "probability", title=title, x_title="target vocabulary"
        )
    heat = heatmap(
        values,
        x_labels=token_labels,
        y_labels=row_labels,
        title=title,
        x_title="vocabulary",
        y_title="target",
        value_title="probability",
        scheme="blues",
    )
    if not show_values:
        return heat
    heat = heat.encode(
        color=alt.Color(
            "probability:Q",
            scale=alt.Scale(scheme="blues", type="sqrt"),
            title="probability",
        )
    )
    text = (
        alt.Chart(heat.data)
        .mark_text(fontSize=9)
        .encode(
            x="column:O",
            y="row:O",
            text=alt.Text("probability:Q", format=".2f"),
            color=alt.condition(
                "datum.probability > 0.5", alt.value("white"), alt.value("black")
            ),
        )
    )
    return alt.layer(heat, text)


def extrapolation_chart(rows: pd.DataFrame, trained_length: int) -> alt.FacetChart:
    """Copy accuracy against sequence length, one line per kind of position, in two panels (whole
    sequences, tokens in their place), with a dashed rule after the longest trained length."""
    names = {
        "exact_sequence": "sequences copied whole",
        "tokens_in_place": "tokens in their place",
    }
    long = rows.rename(columns=names).melt(
        ["length", "positions"], var_name="measure", value_name="accuracy"
    )
    lines = (
        alt.Chart()
        .mark_line(point=True)
        .encode(
            x=alt.X(
                "length:Q",
                title="sequence length (dashed: longest in training)",
                scale=edge_scale(),
            ),
            y=alt.Y(
                "accuracy:Q",
                scale=edge_scale(domain=[0, 1]),
                axis=alt.Axis(format="%", values=[0, 0.2, 0.4, 0.6, 0.8, 1.0]),
            ),
            color=alt.Color("positions:N", legend=alt.Legend(orient="bottom")),
            tooltip=["positions", "length", alt.Tooltip("accuracy:Q", format=".0%")],
        )
    )
    rule = (
        alt.Chart()
        .mark_rule(strokeDash=[4, 3], color="#888")
        .encode(x=alt.datum(trained_length + 0.5))
    )
    return (
        alt.layer(lines, rule, data=long)
        .properties(width=290, height=220)
        .facet(column=alt.Column("measure:N", title=None))
        .properties(
            title=f"Copying sequences longer than the {trained_length} tokens seen in training"
        )
    )

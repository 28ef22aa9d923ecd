"""Chapter 01's figures: the masks, the softmax's saturation, the relative cost of additive and dot-product scores, and the three uses of attention."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import altair as alt
import numpy as np
import pandas as pd

from ...viz.charts import (
    _label_axis,
    as_matrix,
    heatmap,
    legend_below,
    line_chart,
    side_by_side,
    tighten,
)


def mask_chart(mask: Any, *, title: str = "Attention mask") -> alt.Chart:
    """A boolean mask as two colours; rows are queries, columns keys. True means "may
    attend", the convention of `F.scaled_dot_product_attention`'s boolean mask."""
    values = as_matrix(mask, "a mask (queries, keys)")
    n_rows, n_cols = values.shape
    rows, cols = np.meshgrid(np.arange(n_rows), np.arange(n_cols), indexing="ij")
    df = pd.DataFrame(
        {
            "query": rows.ravel(),
            "key": cols.ravel(),
            "state": np.where(values.astype(bool).ravel(), "may attend", "masked"),
        }
    )
    size = max(4, min(28, 420 // max(n_rows, n_cols)))
    chart = (
        alt.Chart(df)
        .mark_rect(stroke="white", strokeWidth=0.5 if size > 8 else 0)
        .encode(
            x=alt.X(
                "key:O",
                title="key position",
                axis=alt.Axis(orient="top", **_label_axis(None, n_cols)),
            ),
            y=alt.Y(
                "query:O",
                title="query position",
                axis=alt.Axis(**_label_axis(None, n_rows)),
            ),
            color=alt.Color(
                "state:N",
                title=None,
                scale=alt.Scale(
                    domain=["may attend", "masked"], range=["#3b6ea8", "#e8e8e8"]
                ),
            ),
            tooltip=["query", "key", "state"],
        )
    )
    return chart.properties(width=size * n_cols, height=size * n_rows, title=title)


def softmax_saturation_chart(saturation: pd.DataFrame) -> alt.HConcatChart:
    """Two panels against the head width: the mean largest softmax weight and the median
    gradient norm reaching the scores (log), one line per value of `scores` (scaled or
    not).

    `saturation` has the columns `d_k`, `scores`, `largest_weight` and `gradient_norm`.
    """
    x, color = "d_k", "scores"
    panel = dict(log_x=True, points=True, width=270, height=240)
    return side_by_side(
        _tick_every_value(
            line_chart(
                saturation,
                x,
                "largest_weight",
                color,
                title="Largest softmax weight",
                y_title="mean largest weight",
                **panel,
            ),
            x,
        ),
        _tick_every_value(
            line_chart(
                saturation,
                x,
                "gradient_norm",
                color,
                log_y=True,
                title="Gradient reaching the scores",
                y_title="median gradient norm",
                **panel,
            ),
            x,
        ),
    )


def _tick_every_value(chart: alt.Chart, x: str) -> alt.Chart:
    """`tighten`, with a labelled tick at every swept value of `x`, however many: none is
    dropped for crowding (Vega-Lite hides a log axis's labels that would overlap, which lost
    the widest d_k of a narrow panel); labels are written without a thousands separator, and
    turned when the values are many."""
    chart = tighten(chart)
    values = sorted(float(v) for v in chart.data[x].unique())
    chart.encoding["x"]["axis"] = alt.Axis(
        values=values,
        format="d",
        labelOverlap=False,
        labelAngle=0,
        labelFlush=False,
    )
    return chart


def relative_cost_chart(
    df: pd.DataFrame,
    x: str,
    columns: Mapping[str, str],
    *,
    title: str,
    subtitle: str | None = None,
) -> alt.TopLevelMixin:
    """Each column of `columns` ({column: label}) divided by its value in the first row,
    against `x` on log-log axes: how each cost grows relative to the smallest setting."""
    relative = pd.DataFrame(
        {x: df[x], **{label: df[c] / df[c].iloc[0] for c, label in columns.items()}}
    )
    long = relative.melt(
        x,
        value_vars=list(columns.values()),
        var_name="quantity",
        value_name="relative cost",
    )
    chart = tighten(
        line_chart(
            long, x, "relative cost", "quantity", log_x=True, log_y=True, points=True
        )
    )
    return legend_below(
        chart.properties(
            title=alt.TitleParams(title, **({"subtitle": subtitle} if subtitle else {}))
        )
    )


def attention_uses_chart(
    encoder: Any,
    decoder_self: Any,
    decoder_cross: Any,
    src_labels: Sequence[str],
    tgt_labels: Sequence[str],
) -> alt.HConcatChart:
    """The weights of the model's three attentions side by side, on one colour scale from 0
    to 1: encoder self-attention (source by source), decoder self-attention (target by
    target) and encoder-decoder attention (target queries by source keys)."""
    heat = dict(value_title="weight", scheme="blues", domain=(0, 1), cell=18)
    panels = (
        (encoder, src_labels, src_labels, "Encoder self-attention", "source", "source"),
        (
            decoder_self,
            tgt_labels,
            tgt_labels,
            "Decoder self-attention",
            "target",
            "target",
        ),
        (
            decoder_cross,
            src_labels,
            tgt_labels,
            "Encoder-decoder attention",
            "source",
            "target",
        ),
    )
    return alt.hconcat(
        *(
            heatmap(
                weights,
                x_labels,
                y_labels,
                title=title,
                x_title=f"key ({keys})",
                y_title=f"query ({queries})",
                **heat,
            )
            for weights, x_labels, y_labels, title, keys, queries in panels
        )
    ).resolve_scale(color="shared")

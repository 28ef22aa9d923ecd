"""The figures of one chapter each: the paper's Figure 1, the masks and the positional encoding,
the label smoothing and softmax pictures, Table 1's costs, Table 2's and Table 3's panels, the
averaging chart, and the profile tables. Built from `charts`, shown with `display.show`.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable, Mapping, Sequence

import altair as alt
import numpy as np
import pandas as pd

from .charts import (
    _as_array,
    _interval_rules,
    _label_axis,
    bar_chart,
    heatmap,
    legend_below,
    line_chart,
    loglog_with_reference,
    loglog_with_rules,
    side_by_side,
    tighten,
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
            x=alt.X("length:Q", title="sequence length (dashed: longest in training)"),
            y=alt.Y(
                "accuracy:Q", scale=alt.Scale(domain=[0, 1]), axis=alt.Axis(format="%")
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


def positional_encoding_chart(
    pe: Any,
    *,
    dims: Sequence[int] = (4, 5, 6, 7),
    max_positions: int = 100,
    max_dims: int = 64,
) -> alt.VConcatChart:
    """Sinusoidal positional encodings (section 3.5): a heatmap of positions by dimensions, and
    the curves of a few dimensions, whose wavelengths grow geometrically with the index."""
    values = _as_array(pe)
    while values.ndim > 2 and values.shape[0] == 1:  # (1, max_len, d_model) buffers
        values = values[0]
    if values.ndim != 2:
        raise ValueError(
            f"positional encodings must be (positions, d_model), got shape {values.shape}"
        )
    values = values[:max_positions]
    bad = [d for d in dims if not 0 <= d < values.shape[1]]
    if bad:
        raise ValueError(f"dimensions {bad} are outside d_model={values.shape[1]}")
    grid = heatmap(
        values[:, :max_dims].T,
        title="Positional encoding: dimension by position",
        x_title="position",
        y_title="dimension",
        value_title="PE",
        scheme="redblue",
        domain=(-1.0, 1.0),
        cell=max(3, 560 // values.shape[0]),
    )
    curves = pd.DataFrame(
        [
            {"position": pos, "PE": float(values[pos, d]), "dimension": f"dim {d}"}
            for d in dims
            for pos in range(values.shape[0])
        ]
    )
    lines = line_chart(
        curves,
        "position",
        "PE",
        "dimension",
        title="A few dimensions along the positions",
        height=200,
    )
    return alt.vconcat(grid, lines).resolve_scale(color="independent")


def mask_chart(
    mask: Any,
    x_labels: Sequence[str] | None = None,
    y_labels: Sequence[str] | None = None,
    *,
    title: str = "Attention mask",
    true_label: str = "may attend",
    false_label: str = "masked",
) -> alt.Chart:
    """A boolean mask as two colours; rows are queries, columns keys.

    True means "may attend", the convention of `F.scaled_dot_product_attention`'s boolean mask;
    pass other labels if a mask uses the opposite convention.
    """
    values = _as_array(mask)
    while values.ndim > 2 and values.shape[0] == 1:
        values = values[0]
    if values.ndim != 2:
        raise ValueError(
            f"mask_chart needs a 2-D mask (queries, keys), got shape {values.shape}"
        )
    n_rows, n_cols = values.shape
    rows, cols = np.meshgrid(np.arange(n_rows), np.arange(n_cols), indexing="ij")
    df = pd.DataFrame(
        {
            "query": rows.ravel(),
            "key": cols.ravel(),
            "state": np.where(values.astype(bool).ravel(), true_label, false_label),
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
                axis=alt.Axis(orient="top", **_label_axis(x_labels, n_cols)),
            ),
            y=alt.Y(
                "query:O",
                title="query position",
                axis=alt.Axis(**_label_axis(y_labels, n_rows)),
            ),
            color=alt.Color(
                "state:N",
                title=None,
                scale=alt.Scale(
                    domain=[true_label, false_label], range=["#3b6ea8", "#e8e8e8"]
                ),
            ),
            tooltip=["query", "key", "state"],
        )
    )
    return chart.properties(width=size * n_cols, height=size * n_rows, title=title)


def softmax_saturation_chart(
    saturation: pd.DataFrame, *, x: str = "d_k", color: str = "scores"
) -> alt.HConcatChart:
    """Two panels against the head width: the mean largest softmax weight and the median
    gradient norm reaching the scores (log), one line per value of `color` (scaled or not).

    `saturation` has the columns `x`, `color`, `largest_weight` and `gradient_norm`.
    """
    panel = dict(log_x=True, points=True, width=270, height=240)
    return side_by_side(
        tighten(
            line_chart(
                saturation,
                x,
                "largest_weight",
                color,
                title="Largest softmax weight",
                y_title="mean largest weight",
                **panel,
            )
        ),
        tighten(
            line_chart(
                saturation,
                x,
                "gradient_norm",
                color,
                log_y=True,
                title="Gradient reaching the scores",
                y_title="median gradient norm",
                **panel,
            )
        ),
    )


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


def cost_quality_chart(
    table2: pd.DataFrame,
    *,
    cost: str = "flops_en_de",
    quality: str = "bleu_en_de",
    title: str = "Paper, Table 2: BLEU against training cost (EN-DE)",
    label_sides: Mapping[str, str] | None = None,
) -> alt.LayerChart:
    """Table 2 as a picture: quality against training cost (log), one labelled point per system.

    `table2` has the columns `system`, `family` ("Transformer" or "earlier systems"), `ensemble`,
    `cost` and `quality`; `label_sides` moves a crowded label "left" or "below" (default right).
    """
    data = table2.assign(
        side=table2["system"].map(dict(label_sides or {})).fillna("right"),
        entry=np.where(table2["ensemble"].astype(bool), "ensemble", "single model"),
    )
    low, high = data[cost].min(), data[cost].max()
    domain = [10 ** np.floor(np.log10(low)), 10 ** np.ceil(np.log10(high))]
    ticks = [
        float(10**e)
        for e in range(int(np.log10(domain[0])), int(np.log10(domain[1])) + 1)
    ]
    base = alt.Chart(data).encode(
        x=alt.X(
            f"{cost}:Q",
            title="training cost (FLOPs, log scale)",
            scale=alt.Scale(type="log", domain=domain),
            axis=alt.Axis(values=ticks, format=".0e"),
        ),
        y=alt.Y(f"{quality}:Q", scale=alt.Scale(zero=False), title="BLEU"),
    )
    points = base.mark_point(filled=True, size=90).encode(
        color=alt.Color(
            "family:N",
            title=None,
            scale=alt.Scale(
                domain=["earlier systems", "Transformer"], range=["#8a96a3", "#c0392b"]
            ),
        ),
        shape=alt.Shape(
            "entry:N",
            title=None,
            scale=alt.Scale(domain=["single model", "ensemble"]),
        ),
        tooltip=[
            "system",
            alt.Tooltip(f"{quality}:Q", title="BLEU"),
            alt.Tooltip(f"{cost}:Q", format=".2g", title="FLOPs"),
        ],
    )
    placements = {
        "right": {"align": "left", "dx": 8},
        "left": {"align": "right", "dx": -8},
        "below": {"align": "center", "dy": 14},
    }
    labels = [
        base.mark_text(fontSize=11, **placement)
        .encode(text="system")
        .transform_filter(f"datum.side == '{side}'")
        for side, placement in placements.items()
    ]
    return alt.layer(points, *labels).properties(width=520, height=320, title=title)


def block_diagram(
    boxes: pd.DataFrame,
    frames: pd.DataFrame,
    arrow: pd.DataFrame,
    *,
    colors: Mapping[str, str],
    title: str,
    width: int = 620,
    height: int = 520,
) -> alt.LayerChart:
    """A stack-of-boxes diagram (Figure 1): labelled boxes, dashed frames, one arrow.

    `boxes` has x, x2, y, y2, cx, cy, kind, text (lines split by "\\n") and any tooltip columns
    side, label, parameters; `frames` has x, x2, y, y2, tx and text (a "x N" label at (tx, y2));
    `arrow` has x, y and order, and ends in a triangle. `colors` maps each kind to its fill.
    """
    x_domain = [
        min(boxes.x.min(), frames.x.min(), frames.tx.min()) - 0.3,
        max(boxes.x2.max(), frames.x2.max(), frames.tx.max()) + 0.3,
    ]
    y_domain = [
        min(boxes.y.min(), frames.y.min()) - 0.3,
        max(boxes.y2.max(), frames.y2.max()) + 0.3,
    ]
    X = alt.X("x:Q", axis=None, scale=alt.Scale(domain=x_domain))
    Y = alt.Y("y:Q", axis=None, scale=alt.Scale(domain=y_domain))
    tooltip = [c for c in ("side", "label") if c in boxes.columns]
    if "parameters" in boxes.columns:
        tooltip.append(alt.Tooltip("parameters:Q", format=","))
    chart = alt.layer(
        alt.Chart(frames)
        .mark_rect(fillOpacity=0, stroke="#888", strokeDash=[4, 3])
        .encode(X, x2="x2", y=Y, y2="y2"),
        alt.Chart(frames)
        .mark_text(fontSize=13, fontWeight="bold")
        .encode(x=alt.X("tx:Q", axis=None), y=alt.Y("y2:Q", axis=None), text="text"),
        alt.Chart(boxes)
        .mark_rect(cornerRadius=4, opacity=0.85)
        .encode(
            X,
            x2="x2",
            y=Y,
            y2="y2",
            tooltip=tooltip,
            color=alt.Color(
                "kind:N",
                title="module",
                scale=alt.Scale(domain=list(colors), range=list(colors.values())),
            ),
        ),
        alt.Chart(boxes)
        .mark_text(fontSize=10, lineBreak="\n")
        .encode(x=alt.X("cx:Q", axis=None), y=alt.Y("cy:Q", axis=None), text="text"),
        alt.Chart(arrow)
        .mark_line(color="#555", strokeWidth=1.5)
        .encode(X, Y, order="order:Q"),
        alt.Chart(arrow.tail(1))
        .mark_point(shape="triangle-right", filled=True, color="#555", size=60)
        .encode(X, Y),
    )
    return chart.properties(width=width, height=height, title=title).configure_view(
        stroke=None
    )


# Figure 1 of the paper, bottom up: side, row, label, kind (the box's colour) and the key of
# its parameter count in `figure1_layout`'s `parameters` (None: a box with no weights of its
# own; the output embedding and the final linear map reuse the input embedding's matrix).
FIGURE1_BOXES = (
    ("encoder", 0, "input embedding x sqrt(d_model)", "embedding", "src_embed"),
    ("encoder", 1, "+ positional encoding", "position", None),
    ("encoder", 2, "multi-head self-attention", "attention", "encoder.self_attn"),
    ("encoder", 3, "add & norm", "norm", "encoder.norm1"),
    ("encoder", 4, "feed-forward", "feed-forward", "encoder.ffn"),
    ("encoder", 5, "add & norm", "norm", "encoder.norm2"),
    ("decoder", 0, "output embedding x sqrt(d_model)", "embedding", None),
    ("decoder", 1, "+ positional encoding", "position", None),
    ("decoder", 2, "masked multi-head self-attention", "attention", "decoder.self_attn"),
    ("decoder", 3, "add & norm", "norm", "decoder.norm1"),
    ("decoder", 4, "encoder-decoder attention", "attention", "decoder.cross_attn"),
    ("decoder", 5, "add & norm", "norm", "decoder.norm2"),
    ("decoder", 6, "feed-forward", "feed-forward", "decoder.ffn"),
    ("decoder", 7, "add & norm", "norm", "decoder.norm3"),
    ("decoder", 8, "linear (tied to the embedding)", "output", None),
    ("decoder", 9, "softmax", "output", None),
)


FIGURE1_COLORS = {
    "embedding": "#f4d6a0",
    "position": "#f0f0f0",
    "attention": "#f6b7a8",
    "norm": "#fbf3b5",
    "feed-forward": "#a8d5f6",
    "output": "#c9e7c1",
}


def figure1_layout(
    parameters: Mapping[str, int], n_encoder_layers: int, n_decoder_layers: int
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The boxes, frames and arrow of Figure 1, as `block_diagram` takes them.

    `parameters` maps each key of `FIGURE1_BOXES` (such as "encoder.self_attn") to that
    module's parameter count; each box prints its label and count. The frames around the
    repeated layers say "x N"; the arrow carries the encoder's output into the decoder's
    encoder-decoder attention.
    """
    missing = sorted({key for *_, key in FIGURE1_BOXES if key} - set(parameters))
    if missing:
        raise KeyError(f"figure1_layout: no parameter count for {missing}")
    boxes = pd.DataFrame(
        [
            (side, row, label, kind, parameters[key] if key else 0)
            for side, row, label, kind, key in FIGURE1_BOXES
        ],
        columns=["side", "row", "label", "kind", "parameters"],
    )
    boxes["x"] = boxes["side"].map({"encoder": 0.0, "decoder": 2.6})
    boxes["x2"] = boxes.x + 2.0
    boxes["y"], boxes["y2"] = boxes.row + 0.1, boxes.row + 0.9
    boxes["text"] = [
        f"{label}\n{p / 1e6:.2f}M parameters"
        if p >= 1e5
        else (f"{label}\n{p:,} parameters" if p else label)
        for label, p in zip(boxes.label, boxes.parameters)
    ]
    boxes.loc[boxes.label.str.contains("output embedding"), "text"] += (
        "\n(the input embedding's matrix)"
    )
    boxes["cx"], boxes["cy"] = boxes.x + 1.0, boxes.row + 0.5
    frames = pd.DataFrame(
        [
            dict(x=-0.1, x2=2.1, y=1.95, y2=6.05, text=f"x {n_encoder_layers}", tx=-0.3),
            dict(x=2.5, x2=4.7, y=1.95, y2=8.05, text=f"x {n_decoder_layers}", tx=4.95),
        ]
    )
    arrow = pd.DataFrame(
        [
            dict(x=1.0, y=6.0, order=0),
            dict(x=1.0, y=6.5, order=1),
            dict(x=2.3, y=6.5, order=2),
            dict(x=2.3, y=4.5, order=3),
            dict(x=2.6, y=4.5, order=4),
        ]
    )
    return boxes, frames, arrow


def figure1_chart(
    parameters: Mapping[str, int],
    n_encoder_layers: int,
    n_decoder_layers: int,
    *,
    title: str = "Figure 1 of the paper",
) -> alt.LayerChart:
    """Figure 1 drawn by `block_diagram` from `figure1_layout`, in `FIGURE1_COLORS`."""
    boxes, frames, arrow = figure1_layout(parameters, n_encoder_layers, n_decoder_layers)
    return block_diagram(boxes, frames, arrow, colors=FIGURE1_COLORS, title=title)


def parameter_count_chart(counts: pd.DataFrame, *, ours_label: str) -> alt.VConcatChart:
    """Our parameter count beside the paper's for every row of Table 3 (grouped bars), and
    the gap between them in rows of width d_model (points shaded by d_model).

    `counts` has the columns row, ours_m, paper_m (both in millions), d_model, gap_m and
    gap_in_vocabulary_rows; rows whose paper_m is missing are left out.
    """
    listed = counts.dropna(subset=["paper_m"])
    compare = listed.melt(
        id_vars=["row"],
        value_vars=["ours_m", "paper_m"],
        var_name="source",
        value_name="millions",
    )
    compare["source"] = compare.source.map(
        {"ours_m": ours_label, "paper_m": "paper, Table 3"}
    )
    rows = alt.X("row:N", sort=list(listed.row), title="Table 3 row")
    bars = (
        alt.Chart(compare)
        .mark_bar()
        .encode(
            x=rows,
            xOffset=alt.XOffset("source:N"),
            y=alt.Y("millions:Q", title="parameters (millions)"),
            color=alt.Color("source:N", title=None),
            tooltip=["row", "source", alt.Tooltip("millions:Q", format=".1f")],
        )
        .properties(
            width=560,
            height=260,
            title="Parameters: our count against the paper's column",
        )
    )
    gaps = (
        alt.Chart(listed)
        .mark_point(filled=True, size=70)
        .encode(
            x=rows,
            y=alt.Y("gap_in_vocabulary_rows:Q", title="(paper - ours) / d_model"),
            color=alt.Color(
                "d_model:N", title="d_model", scale=alt.Scale(scheme="greys")
            ),
            tooltip=[
                "row",
                "d_model",
                alt.Tooltip("gap_m:Q", format=".2f"),
                alt.Tooltip("gap_in_vocabulary_rows:Q", format=",.0f"),
            ],
        )
        .properties(width=520, height=200, title="The gap, in rows of width d_model")
    )
    return (
        alt.vconcat(bars, gaps)
        .resolve_scale(color="independent")
        .resolve_legend(color="independent")
        .configure_legend(orient="bottom", labelLimit=0)
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


def averaging_chart(
    sweep: pd.DataFrame, *, title: str, bleu_title: str = "test sacreBLEU"
) -> alt.HConcatChart:
    """Checkpoint averaging (section 6.1): test perplexity and test BLEU against the number of
    newest snapshots averaged, BLEU with its 95% interval as error bars.

    `sweep` has the columns `k`, `test_ppl`, `bleu` and `ci95` (the interval's half-width).
    """
    x = alt.X(
        "k:Q",
        title="snapshots averaged (newest k)",
        scale=alt.Scale(padding=12),
        axis=alt.Axis(values=[int(k) for k in sweep["k"]], format="d"),
    )
    ppl = (
        alt.Chart(sweep)
        .mark_line(point=True)
        .encode(
            x=x,
            y=alt.Y("test_ppl:Q", title="perplexity", scale=alt.Scale(zero=False)),
            tooltip=["k", alt.Tooltip("test_ppl:Q", format=".2f")],
        )
        .properties(width=260, height=200, title="test perplexity (lower is better)")
    )
    line = (
        alt.Chart(sweep)
        .mark_line(point=True)
        .encode(
            x=x,
            y=alt.Y("bleu:Q", title=bleu_title, scale=alt.Scale(zero=False)),
            tooltip=[
                "k",
                alt.Tooltip("bleu:Q", format=".2f"),
                alt.Tooltip("ci95:Q", format=".2f", title="± (95%)"),
            ],
        )
    )
    bleu = alt.layer(line, _interval_rules(sweep, x, "bleu", "ci95")).properties(
        width=260,
        height=200,
        title=f"{bleu_title} ± 95% interval (higher is better)",
    )
    return alt.hconcat(ppl, bleu).resolve_scale(y="independent").properties(title=title)


def _cost_panel(
    points: pd.DataFrame, *, title: str, y_title: str, domain: list[float], color: str
) -> alt.LayerChart:
    ticks = [
        float(10**e)
        for e in range(int(np.log10(domain[0])), int(np.log10(domain[1])) + 1, 2)
    ]
    x = alt.X(
        "training_flops:Q",
        scale=alt.Scale(type="log", domain=domain),
        axis=alt.Axis(values=ticks, format=".0e"),
        title="training cost (FLOPs, log scale)",
    )
    base = alt.Chart(points).encode(
        x=x,
        y=alt.Y("bleu:Q", title=y_title, scale=alt.Scale(zero=False)),
        tooltip=[
            "system",
            alt.Tooltip("bleu:Q", format=".2f"),
            alt.Tooltip("training_flops:Q", format=".2e"),
        ],
    )
    below = points["below"] if "below" in points else pd.Series(False, index=points.index)
    labels = points.assign(below=below.fillna(False).astype(bool))
    # A label layer only for labels it has: a layer with no rows gives its scale an infinite
    # extent, which Vega reports on the console.
    layers = [
        base.mark_point(filled=True, size=70, color=color),
        *(
            alt.Chart(labels[labels.below == under])
            .mark_text(align="left", dx=7, fontSize=10, **placement)
            .encode(x=x, y="bleu:Q", text="system:N")
            for under, placement in ((False, {}), (True, {"dy": 12}))
            if (labels.below == under).any()
        ),
    ]
    if "ci95" in points and points["ci95"].notna().any():
        layers.insert(
            0, _interval_rules(points.dropna(subset=["ci95"]), x, "bleu", "ci95")
        )
    # Two panels and their labels fit the book's 800-pixel column (at 260 px each they took
    # 852); a long title breaks at ": ".
    lines = title.split(": ", 1)
    title = [lines[0] + ":", lines[1]] if len(lines) == 2 else title
    return alt.layer(*layers).properties(width=230, height=300, title=title)


def table2_panels(
    paper_points: pd.DataFrame,
    our_points: pd.DataFrame,
    *,
    paper_title: str,
    our_title: str,
    paper_y: str = "tokenized BLEU",
    our_y: str = "sacreBLEU ± 95% interval",
    title: str = "Table 2: BLEU against training cost, one panel per test set",
) -> alt.HConcatChart:
    """Table 2's BLEU against training cost, one panel per test set: the paper's systems on theirs,
    ours on ours (error bars where `our_points` has `ci95`). The cost axis is the same in both
    panels; the BLEU axes are not, because the test sets differ.

    Both frames have the columns `system`, `bleu` and `training_flops`; a true `below` puts a
    point's label under it rather than beside it (two points of one run, close together).
    """
    costs = pd.concat([paper_points.training_flops, our_points.training_flops])
    domain = [
        float(10 ** np.floor(np.log10(costs.min()))),
        float(10 ** np.ceil(np.log10(costs.max()))),
    ]
    return (
        alt.hconcat(
            _cost_panel(
                paper_points,
                title=paper_title,
                y_title=paper_y,
                domain=domain,
                color="#4c78a8",
            ),
            _cost_panel(
                our_points, title=our_title, y_title=our_y, domain=domain, color="#f58518"
            ),
        )
        .resolve_scale(y="independent")
        .properties(title=title)
    )


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


def profiles_table(profiles: Iterable[Any]) -> pd.DataFrame:
    """One row per profile (`profiles.Profile`): corpus, model shape, batch, length, book budget."""
    rows = []
    for p in profiles:
        c = p.model_config()
        limits = [
            f"{p.max_steps:,} steps" if p.max_steps else "",
            f"{p.max_epochs} epochs" if p.max_epochs else "",
            f"{p.time_budget_minutes:g} min" if p.time_budget_minutes else "",
        ]
        rows.append(
            {
                "profile": p.name,
                "corpus": f"{p.corpus} {p.src_lang}-{p.tgt_lang}",
                "layers": f"{c.n_layers}+{c.n_layers}",
                "d_model": c.d_model,
                "heads": c.n_heads,
                "d_ff": c.d_ff,
                "BPE": p.vocab_size,
                "tokens per step": p.batch_tokens * p.accumulation,
                "training": " or ".join(limit for limit in limits if limit),
                "beam": p.beam_size,
                "Table 3 rows": len(p.book.table3.rows),
                "book budget (h)": round(p.book.minutes / 60, 2),
            }
        )
    return pd.DataFrame(rows)


def sizes_table(chapter: str, profile_name: str) -> pd.DataFrame:
    """A chapter's sizes (`Profile.chapter_sizes`) as one row per field of its record and one column
    per profile: the four main profiles and the executing one, whose column is marked "(this run)"."""
    from ...profiles import get_profile

    names = list(dict.fromkeys(["smoke", "cpu", "gpu", "paper", profile_name]))
    sizes = {
        name: dataclasses.asdict(get_profile(name).chapter_sizes(chapter))
        for name in names
    }
    knobs = list(dict.fromkeys(k for p in names for k in sizes[p]))

    def cell(value: Any) -> str:
        if isinstance(value, Mapping):
            return "; ".join(f"{k} {cell(v)}" for k, v in value.items())
        if isinstance(value, (tuple, list)):
            return ", ".join(str(v) for v in value)
        return (
            f"{value:,}"
            if isinstance(value, int) and not isinstance(value, bool)
            else str(value)
        )

    rows = [
        {
            "knob": knob,
            **{
                (f"{p} (this run)" if p == profile_name else p): cell(
                    sizes[p].get(knob, "")
                )
                for p in names
            },
        }
        for knob in knobs
    ]
    return pd.DataFrame(rows)

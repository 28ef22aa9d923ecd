"""Chapter 02's figures: the paper's Figure 1 as a block diagram, the positional encoding, and the parameter counts."""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import altair as alt
import pandas as pd

from ...viz.charts import as_matrix, heatmap


def positional_encoding_chart(
    pe: Any,
    *,
    dims: Sequence[int] = (4, 5, 6, 7),
    max_positions: int = 100,
    max_dims: int = 64,
) -> alt.VConcatChart:
    """Sinusoidal positional encodings (section 3.5): a heatmap of positions by dimensions, and
    the curves of a few dimensions, one panel each, whose wavelengths grow geometrically with
    the index."""
    values = as_matrix(pe, "positional encodings (positions, d_model)")[:max_positions]
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
    d_model = values.shape[1]
    names = [_dimension_name(d, d_model) for d in dims]
    curves = pd.DataFrame(
        [
            {"position": pos, "PE": float(values[pos, d]), "dimension": name}
            for d, name in zip(dims, names)
            for pos in range(values.shape[0])
        ]
    )
    # One small panel per dimension on a shared position axis: drawn on one axis, curves of
    # close wavelengths cross each other at every step and cannot be followed.
    lines = (
        alt.Chart(curves)
        .mark_line(color="#4c78a8")
        .encode(
            x=alt.X("position:Q", title="position", scale=alt.Scale(nice=False)),
            y=alt.Y(
                "PE:Q",
                title=None,
                scale=alt.Scale(domain=[-1.0, 1.0]),
                axis=alt.Axis(values=[-1, 0, 1], format="d"),
            ),
            tooltip=["dimension", "position", alt.Tooltip("PE:Q", format=".3f")],
        )
        .properties(width=560, height=42)
        .facet(
            row=alt.Row(
                "dimension:N",
                sort=names,
                title=None,
                header=alt.Header(labelAngle=0, labelAnchor="start", labelOrient="top",
                                  labelPadding=2, labelFontSize=11),
            ),
            spacing=6,
            title="A few dimensions along the positions",
        )
    )  # fmt: skip
    return alt.vconcat(grid, lines)


def _dimension_name(d: int, d_model: int) -> str:
    """'dim 5: cos, wavelength 6.8' (d_model 512): even dimensions are sines, odd ones cosines, and the pair
    2i, 2i + 1 repeats every 2 pi 10000^(2i / d_model) positions."""
    wavelength = 2 * math.pi * 10000 ** ((d - d % 2) / d_model)
    return f"dim {d}: {'cos' if d % 2 else 'sin'}, wavelength {wavelength:,.1f}"


def block_diagram(
    boxes: pd.DataFrame,
    frames: pd.DataFrame,
    arrow: pd.DataFrame,
    *,
    colors: Mapping[str, str],
    title: str,
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
    return chart.properties(width=620, height=520, title=title).configure_view(
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
            # padded by a tenth so that no point sits on the frame ("big" did)
            y=alt.Y(
                "gap_in_vocabulary_rows:Q",
                title="(paper - ours) / d_model",
                scale=alt.Scale(padding=12),
            ),
            # d_model as shape and a dark colour each: a grey ramp left 256 white on white
            color=alt.Color(
                "d_model:N",
                title="d_model",
                scale=alt.Scale(range=["#4c78a8", "#e45756", "#54a24b", "#b279a2"]),
            ),
            shape=alt.Shape("d_model:N", title="d_model"),
            tooltip=[
                "row",
                "d_model",
                alt.Tooltip("gap_m:Q", format=".2f"),
                alt.Tooltip("gap_in_vocabulary_rows:Q", format=",.0f"),
            ],
        )
        .properties(width=520, height=200, title="The gap, in rows of width d_model")
    )
    # Each panel keys its own colours; the gaps' shape is resolved with its colour, so that
    # Vega-Lite merges the two into one d_model legend (a shared shape scale keyed it twice).
    return (
        alt.vconcat(bars, gaps)
        .resolve_scale(color="independent", shape="independent")
        .resolve_legend(color="independent", shape="independent")
        .configure_legend(orient="bottom", labelLimit=0)
    )

"""Charts of the book (altair) and their export to HTML, SVG and PNG.

Builders take plain data (pandas DataFrames, arrays, tensors) and return altair charts; `show`
puts a chart on the page. In Jupyter and Colab it uses altair's own renderer. Under the book
runner (`AT_BOOK_BUILD=1`) it emits a small div with the chart's spec inline, drawn by the Vega
scripts the site serves from `_static/vendor/` (see `_static/at-charts.js`): the default output
loads Vega from a CDN and draws nothing offline.
"""
from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import altair as alt
import numpy as np
import pandas as pd

BOOK_BUILD_ENV = "AT_BOOK_BUILD"
CHART_CLASS = "at-vega-chart"
EXPORT_FORMATS = ("html", "svg", "png")


# ----------------------------------------------------------------------------------------------
# Showing and exporting

def in_book_build() -> bool:
    """True when the book runner executes this notebook (it sets AT_BOOK_BUILD=1)."""
    return os.environ.get(BOOK_BUILD_ENV, "") not in ("", "0")


def chart_spec(chart: alt.TopLevelMixin) -> dict:
    """The Vega-Lite spec of `chart`; the builders here bound their data, so the row cap is lifted."""
    with alt.data_transformers.disable_max_rows():
        return chart.to_dict()


def book_html(chart: alt.TopLevelMixin) -> str:
    """A div plus the spec as inline JSON; `_static/at-charts.js` finds it and calls vegaEmbed."""
    chart_id = f"at-chart-{uuid.uuid4().hex[:12]}"
    # "</" inside the JSON would end the script element early.
    spec = json.dumps(chart_spec(chart), separators=(",", ":")).replace("</", "<\\/")
    return (
        f'<div class="{CHART_CLASS}" id="{chart_id}" data-spec="{chart_id}-spec">'
        '<noscript>This chart needs JavaScript.</noscript></div>\n'
        f'<script type="application/json" id="{chart_id}-spec">{spec}</script>\n'
        # Pages loaded after the scripts (or re-rendered) draw at once; others on DOMContentLoaded.
        f'<script>window.atDrawCharts && window.atDrawCharts();</script>'
    )


def mimebundle(chart: alt.TopLevelMixin) -> dict:
    """Output for the book: the offline HTML for the site and a one-line text stand-in.

    (altair's own mimetype, "application/vnd.vegalite.v6.json", is not valid in a notebook file.)
    """
    title = chart_spec(chart).get("title")
    if isinstance(title, dict):
        title = title.get("text")
    return {
        "text/plain": f"<altair chart{': ' + str(title) if title else ''}>",
        "text/html": book_html(chart),
    }


def show(chart: alt.TopLevelMixin) -> None:
    """Display `chart`: offline-ready HTML under the book runner, altair's renderer elsewhere."""
    from IPython.display import display  # deferred: IPython is there in Jupyter, not in every script

    if in_book_build():
        display(mimebundle(chart), raw=True)
    else:
        with alt.data_transformers.disable_max_rows():
            display(chart)


def export(
    chart: alt.TopLevelMixin,
    path_stem: str | os.PathLike,
    formats: Iterable[str] = EXPORT_FORMATS,
    *,
    scale: float = 2.0,
) -> dict[str, Path]:
    """Write `chart` as `<path_stem>.html/.svg/.png` with vl-convert, all offline.

    The HTML inlines the Vega libraries (no remote script), the SVG is vector, the PNG is
    rendered at `scale` times the chart's size.

    Returns:
        {format: path written}.
    """
    stem = Path(path_stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    with alt.data_transformers.disable_max_rows():
        for fmt in formats:
            path = stem.with_name(f"{stem.name}.{fmt}")
            if fmt == "html":
                chart.save(path, format="html", inline=True)
            elif fmt == "svg":
                chart.save(path, format="svg")
            elif fmt == "png":
                chart.save(path, format="png", scale_factor=scale)
            else:
                raise ValueError(f"unknown export format {fmt!r}; choose from {', '.join(EXPORT_FORMATS)}")
            written[fmt] = path
    return written


# ----------------------------------------------------------------------------------------------
# Generic builders

def _as_array(values: Any) -> np.ndarray:
    """numpy view of a list, array or (CPU or GPU, grad or not) torch tensor."""
    if hasattr(values, "detach"):
        values = values.detach().float().cpu().numpy()
    return np.asarray(values)


def _scale(log: bool) -> alt.Scale:
    return alt.Scale(type="log") if log else alt.Scale(zero=False)


def line_chart(
    df: pd.DataFrame,
    x: str,
    y: str,
    color: str | None = None,
    *,
    title: str | None = None,
    x_title: str | None = None,
    y_title: str | None = None,
    log_x: bool = False,
    log_y: bool = False,
    points: bool = False,
    width: int = 560,
    height: int = 280,
) -> alt.Chart:
    """Lines of `y` against `x` in a long-format DataFrame, one line per value of `color`."""
    for column in (x, y, color):
        if column is not None and column not in df.columns:
            raise KeyError(f"line_chart: no column {column!r} in the DataFrame (has {list(df.columns)})")
    encoding = dict(
        x=alt.X(x, type="quantitative", title=x_title or x, scale=_scale(log_x)),
        y=alt.Y(y, type="quantitative", title=y_title or y, scale=_scale(log_y)),
        tooltip=[c for c in (color, x, y) if c is not None],
    )
    if color is not None:
        encoding["color"] = alt.Color(color, type="nominal", title=color, sort=None)
    chart = alt.Chart(df).mark_line(point=points).encode(**encoding)
    return chart.properties(width=width, height=height, **({"title": title} if title else {}))


def bar_chart(
    df: pd.DataFrame,
    x: str,
    y: str,
    color: str | None = None,
    *,
    title: str | None = None,
    x_title: str | None = None,
    y_title: str | None = None,
    width: int = 560,
    height: int = 280,
) -> alt.Chart:
    """Bars of quantitative `y` for each category `x`, in the DataFrame's order."""
    for column in (x, y, color):
        if column is not None and column not in df.columns:
            raise KeyError(f"bar_chart: no column {column!r} in the DataFrame (has {list(df.columns)})")
    encoding = dict(
        x=alt.X(x, type="nominal", title=x_title or x, sort=None),
        y=alt.Y(y, type="quantitative", title=y_title or y),
        tooltip=[c for c in (x, color, y) if c is not None],
    )
    if color is not None:
        encoding["color"] = alt.Color(color, type="nominal", title=color, sort=None)
    chart = alt.Chart(df).mark_bar().encode(**encoding)
    return chart.properties(width=width, height=height, **({"title": title} if title else {}))


def _label_axis(labels: Sequence[str] | None, n: int, max_ticks: int = 40) -> dict:
    """Axis settings for index-encoded positions: show labels (which may repeat, like tokens)."""
    if labels is None:
        step = max(1, int(np.ceil(n / max_ticks)))
        return dict(values=list(range(0, n, step)), labelAngle=0)
    if len(labels) != n:
        raise ValueError(f"got {len(labels)} labels for an axis of length {n}")
    # Encoding the index keeps repeated tokens apart; labelExpr prints the token.
    return dict(labelExpr=f"{json.dumps([str(s) for s in labels])}[datum.value]", labelAngle=-45 if n > 8 else 0)


def heatmap(
    matrix: Any,
    x_labels: Sequence[str] | None = None,
    y_labels: Sequence[str] | None = None,
    *,
    title: str | None = None,
    x_title: str = "",
    y_title: str = "",
    value_title: str = "value",
    scheme: str = "viridis",
    domain: tuple[float, float] | None = None,
    cell: int | None = None,
    max_cells: int = 40_000,
) -> alt.Chart:
    """A rect per entry of a 2-D matrix (rows on y, columns on x); labels may repeat (tokens).

    `cell` fixes the pixel size of one cell (default: fit about 480 px); `max_cells` guards the
    page against megabytes of inline data: slice the matrix first.
    """
    values = _as_array(matrix)
    values = values.reshape(values.shape[-2:]) if values.ndim > 2 and all(s == 1 for s in values.shape[:-2]) else values
    if values.ndim != 2:
        raise ValueError(f"heatmap needs a 2-D matrix, got shape {values.shape}")
    n_rows, n_cols = values.shape
    if n_rows * n_cols > max_cells:
        raise ValueError(f"heatmap of {n_rows}x{n_cols} exceeds max_cells={max_cells}: slice the matrix "
                         "(e.g. the first positions) or raise max_cells")
    rows, cols = np.meshgrid(np.arange(n_rows), np.arange(n_cols), indexing="ij")
    df = pd.DataFrame({"row": rows.ravel(), "column": cols.ravel(), value_title: values.ravel().astype(float)})
    tooltip = ["row", "column", alt.Tooltip(value_title, format=".3g")]
    if x_labels is not None:
        df["x label"] = [str(x_labels[c]) for c in df["column"]]
        tooltip.insert(2, "x label")
    if y_labels is not None:
        df["y label"] = [str(y_labels[r]) for r in df["row"]]
        tooltip.insert(2, "y label")
    size = cell or max(2, min(24, 480 // max(n_rows, n_cols)))
    color_scale = alt.Scale(scheme=scheme, **({"domain": list(domain)} if domain else {}))
    chart = alt.Chart(df).mark_rect().encode(
        x=alt.X("column:O", title=x_title, axis=alt.Axis(**_label_axis(x_labels, n_cols))),
        y=alt.Y("row:O", title=y_title, axis=alt.Axis(**_label_axis(y_labels, n_rows))),
        color=alt.Color(f"{value_title}:Q", title=value_title, scale=color_scale),
        tooltip=tooltip,
    )
    return chart.properties(width=size * n_cols, height=size * n_rows, **({"title": title} if title else {}))


# ----------------------------------------------------------------------------------------------
# Builders for the paper's pictures

def schedule_chart(
    steps: Sequence[int],
    lrs_by_label: Mapping[str, Sequence[float]],
    *,
    title: str = "Learning rate against training step",
    log_y: bool = False,
) -> alt.Chart:
    """Learning-rate curves (section 5.3), one line per label such as "d_model=512, warmup=4000"."""
    steps = _as_array(steps)
    frames = []
    for label, lrs in lrs_by_label.items():
        lrs = _as_array(lrs)
        if lrs.shape != steps.shape:
            raise ValueError(f"schedule {label!r} has {lrs.shape[0]} values for {steps.shape[0]} steps")
        frames.append(pd.DataFrame({"step": steps, "learning rate": lrs, "schedule": label}))
    df = pd.concat(frames, ignore_index=True)
    return line_chart(df, "step", "learning rate", "schedule", title=title, log_y=log_y)


def label_smoothing_chart(
    distribution: Any,
    *,
    token_labels: Sequence[str] | None = None,
    row_labels: Sequence[str] | None = None,
    title: str = "Smoothed target distribution",
) -> alt.Chart:
    """The target distribution after label smoothing (section 5.4).

    A 1-D vector (one target) gives bars over the vocabulary; a 2-D matrix (one row per target
    token) gives a heatmap, which shows the smoothing mass and the zeroed padding column at once.
    """
    values = _as_array(distribution)
    if values.ndim == 1:
        labels = [str(s) for s in token_labels] if token_labels is not None else [str(i) for i in range(len(values))]
        if len(labels) != len(values):
            raise ValueError(f"got {len(labels)} token labels for {len(values)} probabilities")
        df = pd.DataFrame({"token": labels, "probability": values.astype(float)})
        return bar_chart(df, "token", "probability", title=title, x_title="target vocabulary")
    return heatmap(values, x_labels=token_labels, y_labels=row_labels, title=title,
                   x_title="vocabulary", y_title="target", value_title="probability", scheme="blues")


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
        raise ValueError(f"positional encodings must be (positions, d_model), got shape {values.shape}")
    values = values[:max_positions]
    bad = [d for d in dims if not 0 <= d < values.shape[1]]
    if bad:
        raise ValueError(f"dimensions {bad} are outside d_model={values.shape[1]}")
    grid = heatmap(values[:, :max_dims].T, title="Positional encoding: dimension by position",
                   x_title="position", y_title="dimension", value_title="PE", scheme="redblue",
                   domain=(-1.0, 1.0), cell=max(3, 560 // values.shape[0]))
    curves = pd.DataFrame([
        {"position": pos, "PE": float(values[pos, d]), "dimension": f"dim {d}"}
        for d in dims for pos in range(values.shape[0])
    ])
    lines = line_chart(curves, "position", "PE", "dimension", title="A few dimensions along the positions",
                       height=200)
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
        raise ValueError(f"mask_chart needs a 2-D mask (queries, keys), got shape {values.shape}")
    n_rows, n_cols = values.shape
    rows, cols = np.meshgrid(np.arange(n_rows), np.arange(n_cols), indexing="ij")
    df = pd.DataFrame({"query": rows.ravel(), "key": cols.ravel(),
                       "state": np.where(values.astype(bool).ravel(), true_label, false_label)})
    size = max(4, min(28, 420 // max(n_rows, n_cols)))
    chart = alt.Chart(df).mark_rect(stroke="white", strokeWidth=0.5 if size > 8 else 0).encode(
        x=alt.X("key:O", title="key position", axis=alt.Axis(orient="top", **_label_axis(x_labels, n_cols))),
        y=alt.Y("query:O", title="query position", axis=alt.Axis(**_label_axis(y_labels, n_rows))),
        color=alt.Color("state:N", title=None,
                        scale=alt.Scale(domain=[true_label, false_label], range=["#3b6ea8", "#e8e8e8"])),
        tooltip=["query", "key", "state"],
    )
    return chart.properties(width=size * n_cols, height=size * n_rows, title=title)

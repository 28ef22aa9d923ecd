"""Chart builders any chapter can use: lines, bars, heatmaps, log-log plots with a
reference slope, and the small layout helpers (panels side by side, a legend below). They take plain
data (DataFrames, arrays, tensors) and return altair charts; `display.show` puts one on the page.
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

import altair as alt
import numpy as np
import pandas as pd


def _as_array(values: Any) -> np.ndarray:
    """numpy view of a list, array or (CPU or GPU, grad or not) torch tensor."""
    if hasattr(values, "detach"):
        values = values.detach().float().cpu().numpy()
    return np.asarray(values)


def as_matrix(values: Any, what: str) -> np.ndarray:
    """`values` as a 2-D array, leading dimensions of size 1 dropped ((1, 1, n, m) buffers
    and batches of one); anything else is a ValueError naming `what` and the shape."""
    values = _as_array(values)
    while values.ndim > 2 and values.shape[0] == 1:
        values = values[0]
    if values.ndim != 2:
        raise ValueError(f"{what} must be 2-D, got shape {values.shape}")
    return values


def _check_columns(chart: str, df: pd.DataFrame, *columns: str | None) -> None:
    for column in columns:
        if column is not None and column not in df.columns:
            raise KeyError(
                f"{chart}: no column {column!r} in the DataFrame (has {list(df.columns)})"
            )


def _sized(chart: alt.Chart, width: int, height: int, title: str | None) -> alt.Chart:
    return chart.properties(
        width=width, height=height, **({"title": title} if title else {})
    )


# Pixels between the frame and the outermost data: an axis that ends at the data (or at 0 and
# 100%) otherwise draws its first and last points half outside the frame.
EDGE_PADDING = 8


def edge_scale(*, log: bool = False, **options: Any) -> alt.Scale:
    """A scale that ends at the data (no rounding out to round numbers) with `EDGE_PADDING`
    pixels to spare at both ends, so that no point sits on the frame."""
    return alt.Scale(
        type="log" if log else "linear", nice=False, padding=EDGE_PADDING, **options
    )


def _scale(log: bool, points: bool = False) -> alt.Scale:
    if points:  # ending at the data with room to spare: rounded out after the padding, an
        # axis ran from -400 steps or to 10,000 perplexity
        return edge_scale(log=True) if log else edge_scale(zero=False)
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
    _check_columns("line_chart", df, x, y, color)
    encoding = dict(
        x=alt.X(x, type="quantitative", title=x_title or x, scale=_scale(log_x, points)),
        y=alt.Y(y, type="quantitative", title=y_title or y, scale=_scale(log_y, points)),
        tooltip=[c for c in (color, x, y) if c is not None],
    )
    if color is not None:
        encoding["color"] = alt.Color(color, type="nominal", title=color, sort=None)
        dashes = overlap_dashes(df, x, y, color)
        if len(set(map(tuple, dashes.values()))) > 1:
            # the colour's domain given too: Vega-Lite keys both in one legend only where the
            # two scales agree on it
            encoding["color"] = alt.Color(
                color, type="nominal", title=color, scale=alt.Scale(domain=list(dashes))
            )
            encoding["strokeDash"] = alt.StrokeDash(
                color,
                type="nominal",
                title=color,
                scale=alt.Scale(domain=list(dashes), range=list(dashes.values())),
            )
    return _sized(
        alt.Chart(df).mark_line(point=points).encode(**encoding), width, height, title
    )


# A line drawn over another that runs through the same points: dashed, so that the one beneath
# shows through its gaps (chapter 01's parameters and FLOPs, both 1 at every head count).
SOLID, OVER = [1, 0], [6, 4]


def overlap_dashes(df: pd.DataFrame, x: str, y: str, color: str) -> dict:
    """{series: dash} in order of appearance: solid, except a series whose points are all those
    of a series before it, which Vega draws on top of that one and so is dashed."""
    dashes: dict = {}
    seen: list[frozenset] = []
    for series, part in df.groupby(color, sort=False):
        drawn = frozenset(zip(part[x], part[y]))
        dashes[series] = OVER if drawn in seen else SOLID
        seen.append(drawn)
    return dashes


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
    _check_columns("bar_chart", df, x, y, color)
    encoding = dict(
        x=alt.X(x, type="nominal", title=x_title or x, sort=None),
        y=alt.Y(y, type="quantitative", title=y_title or y),
        tooltip=[c for c in (x, color, y) if c is not None],
    )
    if color is not None:
        encoding["color"] = alt.Color(color, type="nominal", title=color, sort=None)
    return _sized(alt.Chart(df).mark_bar().encode(**encoding), width, height, title)


#: About the width of a character of an axis label (10 px type), to tell whether labels fit.
LABEL_CHAR_PX = 6


def _label_axis(
    labels: Sequence[str] | None,
    n: int,
    max_ticks: int = 40,
    *,
    across_px: int | None = None,
) -> dict:
    """Axis settings for index-encoded positions: show labels (which may repeat, like tokens).

    `across_px`: the room each label has along a horizontal axis (a cell's width); labels longer
    than that are tilted so neighbours do not run together. A vertical axis keeps them level."""
    if labels is None:
        step = max(1, int(np.ceil(n / max_ticks)))
        return dict(values=list(range(0, n, step)), labelAngle=0)
    if len(labels) != n:
        raise ValueError(f"got {len(labels)} labels for an axis of length {n}")
    longest = max((len(str(s)) for s in labels), default=0)
    tilted = across_px is not None and longest * LABEL_CHAR_PX > across_px
    # Encoding the index keeps repeated tokens apart; labelExpr prints the token.
    return dict(
        labelExpr=f"{json.dumps([str(s) for s in labels])}[datum.value]",
        labelAngle=-45 if tilted else 0,
    )


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
    values = as_matrix(matrix, "a heatmap's matrix")
    n_rows, n_cols = values.shape
    if n_rows * n_cols > max_cells:
        raise ValueError(
            f"heatmap of {n_rows}x{n_cols} exceeds max_cells={max_cells}: slice the matrix "
            "(e.g. the first positions) or raise max_cells"
        )
    rows, cols = np.meshgrid(np.arange(n_rows), np.arange(n_cols), indexing="ij")
    df = pd.DataFrame(
        {
            "row": rows.ravel(),
            "column": cols.ravel(),
            value_title: values.ravel().astype(float),
        }
    )
    tooltip = ["row", "column", alt.Tooltip(value_title, format=".3g")]
    if x_labels is not None:
        df["x label"] = [str(x_labels[c]) for c in df["column"]]
        tooltip.insert(2, "x label")
    if y_labels is not None:
        df["y label"] = [str(y_labels[r]) for r in df["row"]]
        tooltip.insert(2, "y label")
    size = cell or max(2, min(24, 480 // max(n_rows, n_cols)))
    color_scale = alt.Scale(scheme=scheme, **({"domain": list(domain)} if domain else {}))
    chart = (
        alt.Chart(df)
        .mark_rect()
        .encode(
            x=alt.X(
                "column:O",
                title=x_title,
                axis=alt.Axis(**_label_axis(x_labels, n_cols, across_px=size)),
            ),
            y=alt.Y(
                "row:O", title=y_title, axis=alt.Axis(**_label_axis(y_labels, n_rows))
            ),
            color=alt.Color(f"{value_title}:Q", title=value_title, scale=color_scale),
            tooltip=tooltip,
        )
    )
    return _sized(chart, size * n_cols, size * n_rows, title)


def tighten(chart: alt.Chart) -> alt.Chart:
    """End log axes at the data instead of rounding them out to powers of ten (with
    `EDGE_PADDING` to spare), and tick the x values that were measured (log axes otherwise crowd
    their labels). Returns `chart`."""
    for channel in ("x", "y"):
        encoding = chart.encoding[channel]
        scale = encoding["scale"]
        if scale is alt.Undefined or scale["type"] != "log":
            continue
        encoding["scale"] = edge_scale(log=True)
        field = (
            encoding["field"]
            if encoding["field"] is not alt.Undefined
            else encoding["shorthand"]
        )
        values = (
            sorted(chart.data[field.split(":")[0]].unique()) if channel == "x" else []
        )
        if 1 < len(values) <= 12:
            encoding["axis"] = alt.Axis(values=[float(v) for v in values])
    return chart


def legend_below(
    chart: alt.TopLevelMixin, columns: int | None = None
) -> alt.TopLevelMixin:
    """Put the legend under the chart, where it does not eat the page's width.

    Labels are never cut (Vega-Lite's default cuts them at 160 px, which hid the settings that
    tell a chart's lines apart); `columns` stacks long ones.
    """
    return chart.configure_legend(
        orient="bottom", labelLimit=0, **({"columns": columns} if columns else {})
    )


def side_by_side(
    *charts: alt.TopLevelMixin,
    independent_y: bool = False,
    legend_columns: int | None = None,
) -> alt.HConcatChart:
    """Panels in a row with one legend under them (`legend_below`).

    `independent_y` gives each panel its own y scale (panels of different quantities).
    """
    row = alt.hconcat(*charts)
    if independent_y:
        row = row.resolve_scale(y="independent")
    return legend_below(row, legend_columns)


# The smallest ratio between neighbouring ticks of a log x axis: closer ticks would have labels
# that Vega hides for overlapping, leaving ticks without a number (chapter 03's 1,024 and 2,048
# between 768 and 1,536).
LOG_TICK_RATIO = 1.9


def _log_ticks(values) -> list[float]:
    """The measured values, smallest first, leaving out each one closer than LOG_TICK_RATIO to
    the last one kept."""
    kept: list[float] = []
    for v in sorted({float(v) for v in values}):
        if not kept or v >= kept[-1] * LOG_TICK_RATIO:
            kept.append(v)
    return kept


def _log_x(df: pd.DataFrame, x: str, title: str | None = None) -> alt.X:
    """A log x axis that ends at the data and ticks measured values, as many as fit a label."""
    return alt.X(
        f"{x}:Q",
        scale=edge_scale(log=True),
        title=title or x,
        axis=alt.Axis(values=_log_ticks(df[x].unique())),
    )


def _loglog_lines(
    df: pd.DataFrame, x: str, y: str, y_title: str, color: str, colour: alt.Color
) -> alt.Chart:
    """Measured `y` against `x` on log-log axes, points joined, one line per value of
    `color`, drawn in `colour`."""
    return (
        alt.Chart(df)
        .mark_line(point=True)
        .encode(
            x=_log_x(df, x),
            y=alt.Y(f"{y}:Q", scale=edge_scale(log=True), title=y_title),
            color=colour,
            tooltip=[color, x, alt.Tooltip(f"{y}:Q", format=".3g")],
        )
    )


def loglog_with_reference(
    df: pd.DataFrame,
    x: str,
    y: str,
    exponents: Mapping[str, float],
    *,
    title: str,
    y_title: str,
    color: str = "kind",
    color_title: str = "layer",
    width: int = 270,
    height: int = 260,
) -> alt.LayerChart:
    """Measured `y` against `x` on log-log axes (solid, one line per `color`), and for each
    line a dashed line of slope `exponents[kind]` through its largest-`x` point: where the
    measurements would lie if they grew with exactly that exponent."""
    reference = []
    for kind, part in df.groupby(color):
        anchor = part.sort_values(x).iloc[-1]
        for value in part[x]:
            reference.append(
                {
                    color: kind,
                    x: value,
                    y: anchor[y] * (value / anchor[x]) ** exponents[kind],
                }
            )
    colors = alt.Color(f"{color}:N", title=color_title, sort=list(exponents))
    measured = _loglog_lines(df, x, y, y_title, color, colors)
    expected = (
        alt.Chart(pd.DataFrame(reference))
        # clipped: a steep reference runs below the smallest measurement, out of the frame
        .mark_line(strokeDash=[5, 4], opacity=0.6, clip=True)
        .encode(x=f"{x}:Q", y=f"{y}:Q", color=colors)
    )
    return (expected + measured).properties(width=width, height=height, title=title)


def loglog_with_rules(
    df: pd.DataFrame,
    x: str,
    y: str,
    color: str,
    rules: Mapping[str, float],
    *,
    title: str,
    y_title: str,
    color_title: str = "layer",
    width: int = 270,
    height: int = 260,
) -> alt.LayerChart:
    """Lines of `y` against `x` on log-log axes, one per `color` (in order of appearance),
    with a labelled dashed vertical rule at each x of `rules` ({label: x}).

    Each label runs up its own rule, on its left, from the bottom of the frame: a label written
    across the frame would cross the next rule when two rules stand close (chapter 03's n = d and
    measured crossovers), and lines that rise with x leave the bottom of a rule free."""
    marks = pd.DataFrame([dict(at=at, what=label) for label, at in rules.items()])
    order = list(dict.fromkeys(df[color]))
    colours = alt.Color(f"{color}:N", title=color_title, sort=order)
    layers = [_loglog_lines(df, x, y, y_title, color, colours)]
    if len(marks):
        layers.append(
            alt.Chart(marks)
            .mark_rule(strokeDash=[4, 3], color="#444")
            .encode(x="at:Q", tooltip=["what"])
        )
        layers.append(
            alt.Chart(marks)
            .mark_text(
                angle=270,
                align="left",
                baseline="bottom",
                dx=4,
                dy=-3,
                fontSize=10,
                color="#444",
            )
            .encode(x="at:Q", y=alt.value(height), text="what")
        )
    return alt.layer(*layers).properties(width=width, height=height, title=title)


def _interval_rules(data: pd.DataFrame, x: alt.X, y: str, half_width: str) -> alt.Chart:
    """Error bars: a vertical rule from y - half_width to y + half_width at each point."""
    bars = data.assign(low=data[y] - data[half_width], high=data[y] + data[half_width])
    return (
        alt.Chart(bars)
        .mark_rule(color="black")
        .encode(x=x, y=alt.Y("low:Q"), y2=alt.Y2("high:Q"))
    )

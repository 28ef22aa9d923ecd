"""Chapter 06's figures: the rows' validation curves and each Table 3 row's difference from base.

Every row of Table 3 keeps one look in every curve chart of the chapter (`ROW_STYLES`): a colour
and a stroke dash that no other row shares, so that one legend names every line, the live run's
and the extended run's charts read alike, and two rows that end at the same perplexity still show
as two lines (a dashed one over a solid one). Base is the reference: a wide pale grey band drawn
under the other rows, in every panel, so that a row lying on base hides neither itself nor base.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import altair as alt
import pandas as pd

from ...model.config import TABLE3_ALL_ROWS
from ...viz.charts import legend_below

# The panels of the validation curves: each group of Table 3 with base in it.
GROUPS = {
    "heads and key size (A, B)": ["base", "A1", "A2", "A3", "A4", "B1", "B2"],
    "depth, width, feed-forward (C)": [
        "base",
        "C1",
        "C2",
        "C3",
        "C4",
        "C5",
        "C6",
        "C7",
        "big",
    ],
    "regularisation and positions (D, E)": ["base", "D1", "D2", "D3", "D4", "E"],
}
REFERENCE = "base"
REFERENCE_COLOUR = "#9e9e9e"
# Ten well-separated colours (Tableau 10) without its grey, which is base's.
PALETTE = (
    "#4c78a8",
    "#f58518",
    "#e45756",
    "#72b7b2",
    "#54a24b",
    "#eeca3b",
    "#b279a2",
    "#ff9da6",
    "#9d755d",
)
SOLID = (1, 0)
DASHES = (SOLID, (6, 3), (2, 2), (8, 3, 2, 3))


def row_styles(
    rows: Sequence[str] = TABLE3_ALL_ROWS,
) -> dict[str, tuple[str, tuple[int, ...]]]:
    """{row: (colour, stroke dash)}: base grey and solid; every other row a (colour, dash) pair
    no other row has, a colour no other row of its panel (group) has, and the next dash of its
    panel, so that neighbouring rows of a panel differ in both. Rows in no group come last."""
    styles = {REFERENCE: (REFERENCE_COLOUR, SOLID)}
    panels = [list(members) for members in GROUPS.values()]
    grouped = {r for members in panels for r in members}
    panels.append([r for r in rows if r not in grouped])
    used: set[tuple[str, tuple[int, ...]]] = set()
    for members in panels:
        in_panel: set[str] = set()
        position = 0
        for row in members:
            if row in styles:
                continue
            dash = DASHES[position % len(DASHES)]
            free = [c for c in PALETTE if c not in in_panel and (c, dash) not in used]
            # more rows in one panel than colours: reuse a colour, not a pair
            if not free:
                free = [c for c in PALETTE if (c, dash) not in used]
            colour = free[0]
            styles[row] = (colour, dash)
            used.add((colour, dash))
            in_panel.add(colour)
            position += 1
    return styles


ROW_STYLES = row_styles()


def _ordered(rows: Sequence[str]) -> list[str]:
    """`rows` in Table 3's order (rows it does not know last, as given)."""
    order = {r: i for i, r in enumerate(TABLE3_ALL_ROWS)}
    return sorted(dict.fromkeys(rows), key=lambda r: order.get(r, len(order)))


def _encodings(rows: Sequence[str]) -> dict:
    """Colour and stroke dash of `rows`, one legend for both (same field, same title), its
    symbols short lines in each row's colour and dash."""
    unknown = [r for r in rows if r not in ROW_STYLES]
    styles = row_styles(rows=[*TABLE3_ALL_ROWS, *unknown]) if unknown else ROW_STYLES
    domain = _ordered(rows)
    legend = alt.Legend(symbolType="stroke", symbolStrokeWidth=2.5, symbolSize=500)
    return dict(
        color=alt.Color(
            "row:N",
            title="row",
            sort=domain,
            legend=legend,
            scale=alt.Scale(domain=domain, range=[styles[r][0] for r in domain]),
        ),
        strokeDash=alt.StrokeDash(
            "row:N",
            title="row",
            sort=domain,
            legend=legend,
            scale=alt.Scale(domain=domain, range=[list(styles[r][1]) for r in domain]),
        ),
    )


def padded_log_domain(values: Sequence[float], factor: float = 1.12) -> list[float]:
    """A log axis's ends a little beyond the data (`factor` on each side), so that no point or
    line lies on the frame."""
    low, high = min(values), max(values)
    return [low / factor, high * factor]


def padded_domain(values: Sequence[float], share: float = 0.04) -> list[float]:
    """A linear axis's ends `share` of the data's span beyond it (half a unit for one value)."""
    low, high = min(values), max(values)
    pad = (high - low) * share if high > low else 0.5
    return [low - pad, high + pad]


def _curves_panel(
    curves: pd.DataFrame,
    legend_rows: Sequence[str],
    domains: tuple[Sequence[float], Sequence[float]],
    *,
    title: str,
    x_title: str,
    width: int,
    height: int,
    points: bool = True,
) -> alt.LayerChart:
    """Base as a pale grey band under the other rows' lines, perplexity on a log axis; both axes
    end a little beyond the data (`domains`: x, y), so that no point lies on the frame. The band
    carries no legend of its own: the lines' scales name base (grey, solid) with the rest."""
    x_domain, y_domain = domains
    x = alt.X(
        "epoch:Q", title=x_title, scale=alt.Scale(domain=list(x_domain), nice=False)
    )
    y = alt.Y(
        "ppl:Q",
        title="validation perplexity",
        scale=alt.Scale(type="log", domain=list(y_domain), nice=False),
    )
    tooltip = ["row", "epoch", alt.Tooltip("ppl:Q", format=".2f")]
    band = (
        alt.Chart(curves[curves.row == REFERENCE])
        .mark_line(color=REFERENCE_COLOUR, strokeWidth=7, opacity=0.45, strokeCap="round")
        .encode(x=x, y=y, tooltip=tooltip)
    )
    lines = (
        alt.Chart(curves[curves.row != REFERENCE])
        .mark_line(point=points, strokeWidth=1.8)
        .encode(x=x, y=y, tooltip=tooltip, **_encodings(legend_rows))
    )
    return alt.layer(band, lines).properties(title=title, width=width, height=height)


def validation_curves_chart(curves: pd.DataFrame) -> alt.HConcatChart:
    """Mean validation curves (columns row, epoch, ppl), one panel per group of rows that holds
    a row besides base, base in each as the grey reference; one legend below for every row."""
    trained = set(curves.row)
    panels = [
        (title, [r for r in members if r in trained])
        for title, members in GROUPS.items()
        if trained & (set(members) - {REFERENCE})
    ]
    legend_rows = [r for _, members in panels for r in members]
    legend_rows += [r for r in trained if r not in legend_rows]
    return legend_below(
        alt.hconcat(
            *[
                _curves_panel(
                    curves[curves.row.isin(members)],
                    legend_rows,
                    (padded_domain(curves.epoch), padded_log_domain(curves.ppl)),
                    title=title,
                    x_title="epochs of the training split",
                    width=190,  # three panels and their axes inside the book's 808 px chart box
                    height=240,
                )
                for title, members in panels
            ]
        ),
        columns=10,
    )


def overfitting_chart(
    curves: pd.DataFrame,
    *,
    title: str,
    points: bool = True,
) -> alt.LayerChart:
    """Dropout's rows on the small corpus (columns row, epoch, ppl), base the grey reference;
    `points` marks every measured epoch on the lines."""
    return legend_below(
        _curves_panel(
            curves,
            list(curves.row.unique()),
            (padded_domain(curves.epoch), padded_log_domain(curves.ppl)),
            title=title,
            x_title="epochs of the small corpus",
            width=560,
            height=280,
            points=points,
        )
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

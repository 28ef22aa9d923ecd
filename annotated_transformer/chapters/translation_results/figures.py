"""Chapter 05's figures: checkpoint averaging and Table 2's cost and quality panels."""

from __future__ import annotations

from dataclasses import dataclass

import altair as alt
import numpy as np
import pandas as pd

from ...viz.charts import _interval_rules, edge_scale
from .table2 import COSTS


def averaging_chart(sweep: pd.DataFrame, *, title: str) -> alt.HConcatChart:
    """Checkpoint averaging (section 6.1): perplexity and sacreBLEU on validation against the
    number of newest snapshots averaged, BLEU with its 95% interval as error bars.

    `sweep` has the columns `k`, `ppl`, `bleu` and `ci95` (the interval's half-width).
    """
    bleu_title = "validation sacreBLEU"
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
            y=alt.Y("ppl:Q", title="perplexity", scale=edge_scale(zero=False)),
            tooltip=["k", alt.Tooltip("ppl:Q", format=".2f")],
        )
        .properties(
            width=260, height=200, title="validation perplexity (lower is better)"
        )
    )
    line = (
        alt.Chart(sweep)
        .mark_line(point=True)
        .encode(
            x=x,
            # ending at the data with room to spare: a point at the lowest BLEU sat on the frame
            y=alt.Y("bleu:Q", title=f"{bleu_title} ± 95%", scale=edge_scale(zero=False)),
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
        # as short as the perplexity panel's: a longer one ran past the panel
        title=f"{bleu_title} (higher is better)",
    )
    return alt.hconcat(ppl, bleu).resolve_scale(y="independent").properties(title=title)


# ------------------------------------------------------------------------------------------ labels
# Table 2's panels write each point's label beside it, at an offset chosen per label so that no
# label covers another label, a point or an error bar, and none leaves the panel. The chart's
# scales are set here (the cost axis's decades, the BLEU axis's padded extent), so the panel's
# pixels are known before Vega draws it; a label's width is measured in the advance widths of
# Helvetica and Arial, the sans-serif fonts the book's charts are drawn in.
_FONT_SIZE = 10
_LABEL_HEIGHT = 12.0
_POINT_RADIUS = 5.0  # a point of size 70 (square pixels) is a disc of radius 4.7
_BAR_HALF_WIDTH = 1.0
_PANEL_WIDTH, _PANEL_HEIGHT = 230, 300
# Advance widths in ems (Helvetica/Arial); any other character counts as 0.6.
_EM = {
    **dict.fromkeys("ijl'|", 0.222), **dict.fromkeys("ftI ,.:;/!", 0.278),
    **dict.fromkeys("r()-[]", 0.333), **dict.fromkeys("Jcksvxyz", 0.5),
    **dict.fromkeys("abdeghnopqu0123456789L_#$", 0.556), "+": 0.584, "=": 0.584,
    **dict.fromkeys("FTZ", 0.611), **dict.fromkeys("ABEKPSVXY&", 0.667),
    **dict.fromkeys("CDHNRUw", 0.722), **dict.fromkeys("GOQ", 0.778),
    **dict.fromkeys("mM", 0.833), "%": 0.889, "W": 0.944,
}  # fmt: skip


def text_width(text: str, size: float = _FONT_SIZE) -> float:
    """The drawn width of `text` in pixels at font size `size`, with 5% to spare."""
    return 1.05 * size * sum(_EM.get(c, 0.6) for c in text)


@dataclass(frozen=True)
class Placement:
    """Where a label goes from its point: `anchor` is the point's left end ("x0"), right end
    ("x1") or middle ("mid") when one label names two points of one run, `level` the point's
    height ("y") or the top ("top") or bottom ("bottom") of its error bar; then `dx`, `dy` and
    the text's alignment, as Vega-Lite's text mark takes them."""

    name: str
    anchor: str
    level: str
    dx: int
    dy: int
    align: str


# In order of preference.
PLACEMENTS = (
    Placement("right", "x1", "y", 7, 0, "left"),
    Placement("left", "x0", "y", -7, 0, "right"),
    Placement("above right", "x1", "y", 7, -12, "left"),
    Placement("below right", "x1", "y", 7, 12, "left"),
    Placement("above left", "x0", "y", -7, -12, "right"),
    Placement("below left", "x0", "y", -7, 12, "right"),
    Placement("above", "mid", "y", 0, -12, "center"),
    Placement("below", "mid", "y", 0, 12, "center"),
    Placement("over the interval", "mid", "top", 0, -12, "center"),
    Placement("under the interval", "mid", "bottom", 0, 12, "center"),
)
PLACEMENT = {p.name: p for p in PLACEMENTS}
# A point whose row has a true `below` takes this one.
BELOW = PLACEMENT["below right"]

Box = tuple[float, float, float, float]  # x0, y0, x1, y1 in pixels, y downwards


@dataclass(frozen=True)
class Label:
    """One label to place: its text and its points (one, or a run's two at one BLEU), in the
    panel's pixels: `x0`, `x1` (the leftmost and rightmost point), `y`, and the error bar's
    `top` and `bottom` (`y` without a bar)."""

    text: str
    x0: float
    x1: float
    y: float
    top: float
    bottom: float
    forced: Placement | None = None

    @property
    def points(self) -> tuple[tuple[float, float], ...]:
        return ((self.x0, self.y), (self.x1, self.y))

    def box(self, p: Placement) -> Box:
        """The pixels the text covers in placement `p`."""
        x = {"x0": self.x0, "x1": self.x1, "mid": (self.x0 + self.x1) / 2}[p.anchor]
        y = {"y": self.y, "top": self.top, "bottom": self.bottom}[p.level] + p.dy
        width = text_width(self.text)
        left = {"left": x + p.dx, "right": x + p.dx - width, "center": x - width / 2}
        x0 = left[p.align]
        return x0, y - _LABEL_HEIGHT / 2, x0 + width, y + _LABEL_HEIGHT / 2


def _overlap(a: Box, b: Box) -> float:
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    return w * h if w > 0 and h > 0 else 0.0


def _distance(box: Box, point: tuple[float, float]) -> float:
    x, y = point
    return float(np.hypot(max(box[0] - x, 0, x - box[2]), max(box[1] - y, 0, y - box[3])))


@dataclass(frozen=True)
class Scene:
    """What a panel's labels keep clear of: every point's centre, the error bars, and the panel,
    which a label may leave by `overflow` pixels on the right (Vega widens the row of panels to
    hold it, so nothing of the next panel is covered)."""

    points: list[tuple[float, float]]
    bars: list[Box]
    width: float = _PANEL_WIDTH
    height: float = _PANEL_HEIGHT
    overflow: float = 0.0

    @property
    def obstacles(self) -> list[Box]:
        r = _POINT_RADIUS
        return [(x - r, y - r, x + r, y + r) for x, y in self.points] + self.bars

    def outside(self, box: Box) -> float:
        """How much of `box` lies outside the panel, as an area."""
        inside = _overlap(box, (0.0, 0.0, self.width + self.overflow, self.height))
        return (box[2] - box[0]) * (box[3] - box[1]) - inside

    def closer_to_another(self, label: Label, box: Box) -> bool:
        """Whether a point other than the label's own lies as near the label as its own do: a
        reader would take the label for that point's."""
        own = min(_distance(box, p) for p in label.points)
        return any(
            _distance(box, p) <= own
            for p in self.points
            if all(np.hypot(p[0] - q[0], p[1] - q[1]) > 0.5 for q in label.points)
        )


# What a label that would be read as another point's costs, beside areas of overlap.
_MISREAD = 1e4


def place_labels(
    labels: list[Label], scene: Scene, *, budget: int = 20_000
) -> list[Placement]:
    """A placement per label such that no label overlaps another, a point or an error bar, none
    leaves the panel (`scene`), and each lies nearer its own point than any other: the first
    such set in the order of `PLACEMENTS`, found by backtracking, the most constrained label
    first. When none exists (or `budget` steps do not find one), each label in turn takes its
    least-overlapping placement."""
    obstacles = scene.obstacles

    def candidates(label: Label) -> list[Placement]:
        return [label.forced] if label.forced else list(PLACEMENTS)

    def fixed_cost(label: Label, p: Placement) -> float:
        box = label.box(p)
        misread = _MISREAD if scene.closer_to_another(label, box) else 0.0
        return scene.outside(box) + sum(_overlap(box, o) for o in obstacles) + misread

    free = [[p for p in candidates(lab) if fixed_cost(lab, p) == 0] for lab in labels]
    order = sorted(range(len(labels)), key=lambda i: len(free[i]))
    chosen: dict[int, Placement] = {}
    steps = 0

    def search(k: int) -> bool:
        nonlocal steps
        if k == len(order):
            return True
        i = order[k]
        for p in free[i]:
            steps += 1
            if steps > budget:
                return False
            box = labels[i].box(p)
            if all(_overlap(box, labels[j].box(q)) == 0 for j, q in chosen.items()):
                chosen[i] = p
                if search(k + 1):
                    return True
                del chosen[i]
        return False

    if search(0):
        return [chosen[i] for i in range(len(labels))]
    placed: list[Box] = []
    out = []
    for label in labels:
        p = min(
            candidates(label),
            key=lambda p: (
                fixed_cost(label, p) + sum(_overlap(label.box(p), b) for b in placed)
            ),
        )
        placed.append(label.box(p))
        out.append(p)
    return out


def bleu_domain(points: pd.DataFrame) -> list[float]:
    """The BLEU axis: every point and error bar, and room above and below for a label, never
    below a BLEU of 0."""
    ci = points["ci95"].fillna(0) if "ci95" in points else 0
    low, high = float((points["bleu"] - ci).min()), float((points["bleu"] + ci).max())
    span = (high - low) or 1.0
    pad = span * (2.2 * _LABEL_HEIGHT) / (_PANEL_HEIGHT - 4.4 * _LABEL_HEIGHT)
    return [max(low - pad, 0.0) if low >= 0 else low - pad, high + pad]


def interval_bars(points: pd.DataFrame) -> pd.DataFrame:
    """Where a panel draws its error bars (`training_flops`, `bleu`, `ci95`): at each point with
    a `ci95`, so that every bar stands on its point. A run priced two ways has one BLEU and one
    interval, drawn once, at its cost counted the paper's way (the cost the paper's panel shows)."""
    columns = ["training_flops", "bleu", "ci95"]
    if "ci95" not in points:
        return pd.DataFrame(columns=columns)
    if "cost" in points:
        points = points[points["cost"] == COSTS[0]]
    return points.dropna(subset=["ci95"])[columns].reset_index(drop=True)


def label_layout(
    points: pd.DataFrame, x_domain: list[float], y_domain: list[float], overflow: float
) -> tuple[list[Label], Scene, pd.DataFrame]:
    """The panel's labels (one per `run` when the frame has that column, else one per point),
    its `Scene` (points, error bars and the line joining a run's two points, in pixels; labels
    may run `overflow` pixels past its right edge), and the labels' rows (text and their points' data coordinates: `cost0`, `cost1`,
    `bleu`, `top`, `bottom`)."""
    lx = np.log10(x_domain)

    def x_px(flops: float) -> float:
        return _PANEL_WIDTH * (np.log10(flops) - lx[0]) / (lx[1] - lx[0])

    def y_px(bleu: float) -> float:
        low, high = y_domain
        return _PANEL_HEIGHT * (1 - (bleu - low) / (high - low))

    ci = points["ci95"].fillna(0.0) if "ci95" in points else pd.Series(0.0, points.index)
    frame = points.assign(
        _ci=ci, _label=points["run"] if "run" in points else points["system"]
    )
    below = frame["below"].fillna(False).astype(bool) if "below" in frame else None
    centres, bars, labels, rows = [], [], [], []
    for x, y in zip(frame["training_flops"], frame["bleu"]):
        centres.append((x_px(x), y_px(y)))
    for x, y, c in zip(
        *(interval_bars(points)[k] for k in ("training_flops", "bleu", "ci95"))
    ):
        if c > 0:
            h = _BAR_HALF_WIDTH
            bars.append((x_px(x) - h, y_px(y + c), x_px(x) + h, y_px(y - c)))
    for text, group in frame.groupby("_label", sort=False):
        costs = group["training_flops"]
        bleu, c = float(group["bleu"].iloc[0]), float(group["_ci"].max())
        forced = BELOW if below is not None and below[group.index].any() else None
        if len(group) > 1:  # the line that joins a run's two points
            bars.append(
                (x_px(costs.min()), y_px(bleu) - 1, x_px(costs.max()), y_px(bleu) + 1)
            )
        labels.append(
            Label(
                str(text), x_px(costs.min()), x_px(costs.max()), y_px(bleu),
                y_px(bleu + c), y_px(bleu - c), forced,
            )
        )  # fmt: skip
        rows.append(
            {
                "text": str(text), "cost0": float(costs.min()),
                "cost1": float(costs.max()), "bleu": bleu, "top": bleu + c,
                "bottom": bleu - c,
            }
        )  # fmt: skip
    return labels, Scene(centres, bars, overflow=overflow), pd.DataFrame(rows)


def _label_layers(rows: pd.DataFrame, placements: list[Placement], x, y_scale):
    """One text layer per placement in use (a layer with no rows gives its scale an infinite
    extent, which Vega reports on the console); `x(field)` is the panel's cost channel."""
    frame = rows.assign(placement=[p.name for p in placements])
    frame["at_cost"] = [
        {"x0": r.cost0, "x1": r.cost1, "mid": float(np.sqrt(r.cost0 * r.cost1))}[
            PLACEMENT[r.placement].anchor
        ]
        for r in frame.itertuples()
    ]
    frame["at_bleu"] = [
        {"y": r.bleu, "top": r.top, "bottom": r.bottom}[PLACEMENT[r.placement].level]
        for r in frame.itertuples()
    ]
    layers = []
    for p in PLACEMENTS:
        mine = frame[frame.placement == p.name]
        if mine.empty:
            continue
        layers.append(
            alt.Chart(mine)
            .mark_text(align=p.align, dx=p.dx, dy=p.dy, fontSize=_FONT_SIZE)
            .encode(
                x=x("at_cost:Q"),
                y=alt.Y("at_bleu:Q", scale=y_scale),
                text="text:N",
            )
        )
    return layers


def _cost_panel(
    points: pd.DataFrame,
    *,
    title: str,
    y_title: str,
    domain: list[float],
    color: str,
    overflow: float,
) -> alt.LayerChart:
    ticks = cost_ticks(domain)

    def cost_channel(field: str) -> alt.X:
        return alt.X(
            field,
            scale=alt.Scale(type="log", domain=domain),
            # "1e14", not ".0e"'s "1e+14"
            axis=alt.Axis(
                values=ticks, labelExpr="replace(format(datum.value, '.0e'), '+', '')"
            ),
            title="training cost (FLOPs, log scale)",
        )

    x = cost_channel("training_flops:Q")
    y_domain = bleu_domain(points)
    y_scale = alt.Scale(domain=y_domain, nice=False, zero=False)
    shape = (
        {
            "shape": alt.Shape(
                "cost:N",
                scale=alt.Scale(domain=list(COSTS), range=["circle", "diamond"]),
                legend=alt.Legend(title="training cost", orient="bottom"),
            )
        }
        if "cost" in points
        else {}
    )
    base = alt.Chart(points).encode(
        x=x,
        y=alt.Y("bleu:Q", title=y_title, scale=y_scale),
        tooltip=[
            "system",
            alt.Tooltip("bleu:Q", format=".2f"),
            alt.Tooltip("training_flops:Q", format=".2e"),
        ],
        **shape,
    )
    labels, scene, rows = label_layout(points, domain, y_domain, overflow)
    placements = place_labels(labels, scene)
    layers = [
        base.mark_point(filled=True, size=90, color=color),
        *_label_layers(rows, placements, cost_channel, y_scale),
    ]
    if "run" in points:  # a run's two costs, joined at its one BLEU
        joins = alt.Chart(rows).mark_rule(color=color, strokeWidth=1.5)
        layers.insert(
            0,
            joins.encode(
                x=cost_channel("cost0:Q"),
                x2="cost1:Q",
                y=alt.Y("bleu:Q", scale=y_scale),
            ),
        )
    bars = interval_bars(points)
    if len(bars):
        rules = _interval_rules(bars, x, "bleu", "ci95")  # on the panel's BLEU scale
        layers.insert(0, rules.encode(y=alt.Y("low:Q", scale=y_scale)))
    # Two panels and their labels fit the book's 800-pixel column (at 260 px each they took
    # 852); a long title breaks at ": ".
    lines = title.split(": ", 1)
    title = [lines[0] + ":", lines[1]] if len(lines) == 2 else title
    return alt.layer(*layers).properties(
        width=_PANEL_WIDTH, height=_PANEL_HEIGHT, title=title
    )


# Pixels between two labelled ticks of the cost axis: closer, Vega hides every other label for
# overlapping, and a tick stands without its number.
_TICK_SPACING = 45


def cost_ticks(domain: list[float]) -> list[float]:
    """The decades the cost axis labels: every second one, or every third, fourth ... where the
    panel's width would put two labels closer than `_TICK_SPACING` pixels."""
    low, high = (int(round(np.log10(d))) for d in domain)
    step = max(2, int(np.ceil(_TICK_SPACING * (high - low) / _PANEL_WIDTH)))
    return [float(10**e) for e in range(low, high + 1, step)]


def cost_domain(*frames: pd.DataFrame) -> list[float]:
    """The cost axis both panels share: the decades around every point's `training_flops`,
    with at least 0.3 of a decade between a point and either end, so that no point sits on the
    frame (chapter 05's cpu run at 1.1e14 sat on a 1e14 edge)."""
    costs = pd.concat([f.training_flops for f in frames])
    return [
        float(10 ** np.floor(np.log10(costs.min()) - 0.3)),
        float(10 ** np.ceil(np.log10(costs.max()) + 0.3)),
    ]


# How far the labels of each panel may run past its right edge: two panels of 230 pixels, their
# axes (about 60 each) and these stay within the book's 800-pixel column. Table 2's own systems
# crowd the left panel's top right corner, where "GNMT + RL (ensemble)" fits only to the right.
LABEL_OVERFLOW = (115, 45)


def table2_panels(
    paper_points: pd.DataFrame,
    our_points: pd.DataFrame,
    *,
    paper_title: str,
    our_title: str,
) -> alt.HConcatChart:
    """Table 2's BLEU against training cost, one panel per test set: the paper's systems on theirs,
    ours on ours (error bars where `our_points` has `ci95`). The cost axis is the same in both
    panels; the BLEU axes are not, because the test sets differ.

    Both frames have the columns `system`, `bleu` and `training_flops`. Each point is labelled
    at the offset `place_labels` chooses, clear of the other labels, the points and the error
    bars. Rows with a `run` (`experiments.translation.table2.run_points`) are one run priced two
    ways: one label names the run, a line joins its two points, and their shapes, with a legend
    below, say which cost is which. A true `below` puts a point's label under it.
    """
    domain = cost_domain(paper_points, our_points)
    return (
        alt.hconcat(
            _cost_panel(
                paper_points,
                title=paper_title,
                y_title="tokenized BLEU",
                domain=domain,
                color="#4c78a8",
                overflow=LABEL_OVERFLOW[0],
            ),
            _cost_panel(
                our_points,
                title=our_title,
                y_title="sacreBLEU ± 95% interval",
                domain=domain,
                color="#f58518",
                overflow=LABEL_OVERFLOW[1],
            ),
        )
        # the shapes' legend under the panel that draws them (shared, it went under the first)
        .resolve_scale(y="independent", shape="independent")
        .properties(title="Table 2: BLEU against training cost, one panel per test set")
    )

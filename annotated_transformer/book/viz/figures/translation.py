"""Chapter 05's figures: checkpoint averaging and Table 2's cost and quality panels."""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from ..charts import (
    _interval_rules,
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

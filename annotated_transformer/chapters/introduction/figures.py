"""The introduction's figures: cost against quality of Table 2's systems, and the profiles side by side."""

from __future__ import annotations

from typing import Any, Iterable, Mapping

import altair as alt
import numpy as np
import pandas as pd


def cost_quality_chart(
    table2: pd.DataFrame, *, label_sides: Mapping[str, str] | None = None
) -> alt.LayerChart:
    """Table 2 as a picture: EN-DE BLEU against training cost (log), one labelled point
    per system.

    `table2` has the columns `system`, `family` ("Transformer" or "earlier systems"), `ensemble`,
    `flops_en_de` and `bleu_en_de`; `label_sides` moves a crowded label "left" or "below"
    (default right).
    """
    cost, quality = "flops_en_de", "bleu_en_de"
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
    title = "Paper, Table 2: BLEU against training cost (EN-DE)"
    return alt.layer(points, *labels).properties(width=520, height=320, title=title)


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

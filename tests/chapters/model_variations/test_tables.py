"""Chapter 06's tables: the differences chart's whiskers come from the model the verdicts read."""

import pandas as pd
import pytest

from annotated_transformer.chapters.model_variations import statistics as f
from annotated_transformer.chapters.model_variations import tables

# Two seeds, as the cpu book trains them: B1 is 17% and 12% above base.
FINAL = {
    "base": {1: 30.0, 2: 33.0},
    "A1": {1: 31.0, 2: 33.5},
    "B1": {1: 35.0, 2: 37.0},
    "C1": {1: 40.0, 2: 45.0},
    "C3": {1: 36.0, 2: 39.0},
}


def test_perplexity_whiskers_are_the_pooled_model_s_interval():
    table = pd.DataFrame(
        [
            dict(row=r, paper_ppl=5.0, paper_bleu=25.0, bleu_minus_base=0.0,
                 bleu_minus_base_seeds=[0.0, 0.0], beyond=[False, False])
            for r in FINAL
        ]
    )  # fmt: skip
    diffs = tables.differences(table, FINAL)
    ours = diffs[(diffs.metric == tables.PPL) & (diffs.who == "ours")].set_index("row")
    model = f.BlockModel(FINAL)
    for row in ("A1", "B1", "C1", "C3"):
        low, high = model.contrast(row, "base").interval(0.95)
        assert ours.loc[row, "low"] == pytest.approx(f.percent(low))
        assert ours.loc[row, "high"] == pytest.approx(f.percent(high))
    # with two seeds a row's own interval has one degree of freedom: far wider, and across zero
    own_low, _ = f.paired(FINAL["B1"], FINAL["base"]).interval(0.95)
    assert f.percent(own_low) < 0 < ours.loc["B1", "low"]

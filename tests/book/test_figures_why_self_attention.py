"""Chapter 03's histogram of sentence lengths: every bar inside its frame, and the name of
d_model where no line crosses it."""

import pandas as pd
import pytest

from annotated_transformer.book import viz
from annotated_transformer.book.viz.figures import why_self_attention as figures


def _lengths(tall_share: float) -> pd.DataFrame:
    """Two corpora; a share `tall_share` of the first's sentences in one bin."""
    short = int(round(tall_share * 1000))
    rows = [{"corpus": "a", "subwords": 12}] * short
    rows += [{"corpus": "a", "subwords": 40 + i % 90} for i in range(1000 - short)]
    rows += [{"corpus": "b", "subwords": 20 + i % 150} for i in range(500)]
    return pd.DataFrame(rows)


def _layers(chart) -> list[dict]:
    return viz.chart_spec(chart)["layer"]


@pytest.mark.parametrize("tall_share", [0.634, 0.708, 0.12, 1.0])
def test_the_tallest_bar_ends_inside_the_frame(tall_share):
    chart = figures.sentence_lengths_chart(_lengths(tall_share), 512)
    bars = _layers(chart)[0]
    top = bars["encoding"]["y"]["scale"]["domain"][1]
    tallest = chart.layer[0].data.share.max()
    assert min(tallest * 1.05, 1.0) <= top <= 1.0  # a share of 100% ends at the top edge
    assert bars["encoding"]["y"]["axis"]["values"][-1] == pytest.approx(top)
    assert bars["mark"]["clip"] is True


def test_the_length_axis_reaches_d_model_and_the_longest_sentence():
    lengths = _lengths(0.5)
    lengths.loc[0, "subwords"] = 700  # longer than d_model
    chart = figures.sentence_lengths_chart(lengths, 512)
    domain = _layers(chart)[0]["encoding"]["x"]["scale"]["domain"]
    assert domain[0] == 0 and domain[1] >= 700
    assert chart.layer[0].data.end.max() == pytest.approx(domain[1])


def test_no_gridline_runs_through_the_name_of_d_model():
    layers = _layers(figures.sentence_lengths_chart(_lengths(0.634), 512))
    bars, rule, name = layers
    assert bars["encoding"]["x"]["axis"]["grid"] is False  # no vertical line at all
    assert rule["mark"]["type"] == "rule" and name["mark"]["type"] == "text"
    # the name hangs from the top edge, inside the band above the highest gridline below it
    assert name["mark"]["baseline"] == "top" and name["encoding"]["y"] == {"value": 0}
    ticks = bars["encoding"]["y"]["axis"]["values"]
    band = (ticks[-1] - ticks[-2]) / ticks[-1] * 260  # pixels between the top two lines
    assert name["mark"]["dy"] + name["mark"]["fontSize"] < band


def test_share_axis_steps_stay_few_and_round():
    for highest in (0.001, 0.05, 0.3, 0.634, 0.95, 1.0):
        top, ticks = figures._share_axis(highest)
        assert highest < top or top == 1.0
        assert len(ticks) <= figures._MAX_SHARE_TICKS + 1 and ticks[-1] == pytest.approx(
            top
        )

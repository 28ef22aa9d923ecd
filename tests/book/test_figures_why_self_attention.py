"""Chapter 03's sentence lengths: each corpus's share of sentences at most n long, every curve
inside its frame, the groups told apart, and the name of d_model where no line crosses it."""

import numpy as np
import pandas as pd
import pytest

from annotated_transformer import viz
from annotated_transformer.chapters.why_self_attention import figures as figures
from tests.support.chart_audit import series_collisions


def _lengths(tall_share: float) -> pd.DataFrame:
    """Two corpora; a share `tall_share` of the first's sentences in one bin."""
    short = int(round(tall_share * 1000))
    rows = [{"corpus": "a", "subwords": 12}] * short
    rows += [{"corpus": "a", "subwords": 40 + i % 90} for i in range(1000 - short)]
    rows += [{"corpus": "b", "subwords": 20 + i % 150} for i in range(500)]
    return pd.DataFrame(rows)


def _layers(chart) -> list[dict]:
    return viz.chart_spec(chart)["layer"]


def test_each_curve_is_the_share_of_sentences_at_most_that_long():
    lengths = _lengths(0.634)
    chart = figures.sentence_lengths_chart(lengths, 512)
    curves = chart.layer[0].data
    for corpus, part in lengths.groupby("corpus"):
        curve = curves[curves.corpus == corpus]
        assert curve.share.iloc[0] == 0 and curve.share.iloc[-1] == 1.0
        assert curve.share.is_monotonic_increasing
        for n in (12, 13, 40, 85, 169):  # the step at n holds the share at most n long
            at = curve[curve.length <= n].share.iloc[-1]
            assert at == pytest.approx(float(np.mean(part.subwords <= n)))


def test_every_curve_ends_inside_the_frame():
    bars = _layers(figures.sentence_lengths_chart(_lengths(1.0), 512))[0]
    top = bars["encoding"]["y"]["scale"]["domain"][1]
    assert top > 1.0 and bars["encoding"]["y"]["axis"]["values"][-1] == 1.0
    assert bars["mark"]["clip"] is True and bars["mark"]["interpolate"] == "step-after"


def test_the_groups_differ_by_colour_and_dash_in_one_legend():
    chart = figures.sentence_lengths_chart(_lengths(0.634), 512)
    encoding = _layers(chart)[0]["encoding"]
    assert encoding["color"]["field"] == encoding["strokeDash"]["field"] == "corpus"
    assert (
        encoding["color"]["legend"] == encoding["strokeDash"]["legend"]
    )  # merged into one
    dashes = encoding["strokeDash"]["scale"]["range"]
    assert len({tuple(d) for d in dashes}) == len(dashes) == 2
    assert not series_collisions(viz.chart_spec(chart))


def test_the_length_axis_reaches_d_model_and_the_longest_sentence():
    lengths = _lengths(0.5)
    lengths.loc[0, "subwords"] = 700  # longer than d_model
    chart = figures.sentence_lengths_chart(lengths, 512)
    domain = _layers(chart)[0]["encoding"]["x"]["scale"]["domain"]
    assert domain[0] == 0 and domain[1] >= 700
    assert chart.layer[0].data.length.max() == pytest.approx(domain[1])


def test_no_gridline_runs_through_the_name_of_d_model():
    layers = _layers(figures.sentence_lengths_chart(_lengths(0.634), 512))
    lines, rule, name = layers
    assert lines["encoding"]["x"]["axis"]["grid"] is False  # no vertical line at all
    assert rule["mark"]["type"] == "rule" and name["mark"]["type"] == "text"
    # the name hangs from the top edge, inside the band above the 100% gridline
    assert name["mark"]["baseline"] == "top" and name["encoding"]["y"] == {"value": 0}
    top = lines["encoding"]["y"]["scale"]["domain"][1]
    band = (top - lines["encoding"]["y"]["axis"]["values"][-1]) / top * 260
    assert name["mark"]["dy"] + name["mark"]["fontSize"] < band

"""Every series of a chart can be told apart: the audit over the charts' Vega-Lite specs finds two
series drawn in the same colour with the same stroke, and passes charts whose series differ."""

import json

import altair as alt
import pandas as pd
import pytest

from annotated_transformer.viz.display import book_html, chart_spec
from tests.support import chart_audit as audit


def curves(n: int) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"row": f"R{i:02d}", "epoch": e, "ppl": 10 - e + i}
            for i in range(n)
            for e in (1, 2)
        ]
    )


def lines(n: int, **colour) -> dict:
    chart = (
        alt.Chart(curves(n), title="curves")
        .mark_line()
        .encode(x="epoch:Q", y="ppl:Q", color=alt.Color("row:N", **colour))
    )
    return chart_spec(chart)


def test_eleven_series_on_the_default_ten_colours_collide():
    found = audit.series_collisions(lines(11))
    assert found == ["curves: row 'R00' and 'R10' share colour 0 and stroke"]


def test_ten_series_on_ten_colours_do_not():
    assert audit.series_collisions(lines(10)) == []


def test_a_scheme_of_twenty_colours_separates_thirteen_series():
    assert audit.series_collisions(lines(13, scale=alt.Scale(scheme="tableau20"))) == []


def test_dashes_on_the_same_field_help_only_until_colour_and_dash_repeat_together():
    def dashed(n):
        spec = lines(n)
        spec["encoding"]["strokeDash"] = {"field": "row", "type": "nominal"}
        return spec

    assert audit.series_collisions(dashed(10)) == []
    # 10 colours x 5 dashes: the 11th series repeats the first's colour and dash
    assert len(audit.series_collisions(dashed(11))) == 1


def test_an_explicit_range_that_repeats_a_colour_collides():
    found = audit.series_collisions(
        lines(3, scale=alt.Scale(range=["#111111", "#222222", "#111111"]))
    )
    assert found == ["curves: row 'R00' and 'R02' share colour #111111 and stroke"]


def test_layers_and_concatenations_are_audited():
    spec = chart_spec(
        alt.hconcat(
            alt.Chart(curves(2)).mark_point().encode(x="epoch:Q", y="ppl:Q"),
            alt.layer(
                alt.Chart(curves(12), title="inner")
                .mark_line()
                .encode(x="epoch:Q", y="ppl:Q", color="row:N")
            ),
        )
    )
    assert len(audit.series_collisions(spec)) == 2


@pytest.mark.parametrize("n", [3, 12])
def test_a_pages_specs_are_found_in_its_executed_notebook(tmp_path, n):
    chart = (
        alt.Chart(curves(n), title="curves")
        .mark_line()
        .encode(x="epoch:Q", y="ppl:Q", color="row:N")
    )
    cell = {
        "cell_type": "code",
        "outputs": [
            {"output_type": "display_data", "data": {"text/html": book_html(chart)}}
        ],
    }
    path = tmp_path / "page.ipynb"
    path.write_text(json.dumps({"cells": [{"cell_type": "markdown"}, cell]}))
    ((index, spec),) = audit.page_specs(path)
    assert index == 1 and spec == chart_spec(chart)
    assert bool(audit.series_collisions(spec)) == (n > 10)


def panels(resolve_independent: bool) -> dict:
    """Three panels of five rows each, as chapter 06 drew its groups of Table 3's rows."""
    frames = [curves(15).iloc[10 * k : 10 * (k + 1)] for k in range(3)]
    chart = alt.hconcat(
        *[
            alt.Chart(frame).mark_line().encode(x="epoch:Q", y="ppl:Q", color="row:N")
            for frame in frames
        ]
    )
    if resolve_independent:
        chart = chart.resolve_scale(color="independent")
    return chart_spec(chart)


def test_panels_that_share_a_colour_scale_pool_their_series():
    # fifteen rows over three panels on one ten-colour scale: five pairs drawn alike
    assert len(audit.series_collisions(panels(resolve_independent=False))) == 5


def test_panels_with_scales_of_their_own_are_audited_one_by_one():
    assert audit.series_collisions(panels(resolve_independent=True)) == []


# ---------------------------------------------------------------------------------------------
# Series on top of each other, error bars at no point, a legend given twice


def test_two_series_drawn_at_the_same_places_hide_each_other():
    def heads(shift: float) -> dict:
        frame = pd.DataFrame(
            [
                {"head": h, "x": 0, "x2": 1, "y": 2 + shift * h, "y2": k + shift * h}
                for h in (1, 4)
                for k in (0, 3)
            ]
        )
        return chart_spec(
            alt.Chart(frame, title="heads")
            .mark_rule()
            .encode(x="x:Q", x2="x2:Q", y="y:Q", y2="y2:Q", color="head:N")
        )

    assert audit.hidden_series(heads(0.0)) == [
        "heads: head 1 and 4 are drawn at the same places: the one drawn last hides the other"
    ]
    assert audit.hidden_series(heads(0.1)) == []  # a step apart: both lines show


def _interval_chart(bar_at: float) -> dict:
    points = pd.DataFrame({"cost": [1.0, 10.0], "bleu": [30.0, 30.0]})
    bars = pd.DataFrame({"cost": [bar_at], "low": [29.0], "high": [31.0]})
    return chart_spec(
        alt.layer(
            alt.Chart(points, title="costs").mark_point().encode(x="cost:Q", y="bleu:Q"),
            alt.Chart(bars).mark_rule().encode(x="cost:Q", y="low:Q", y2="high:Q"),
        )
    )


def test_an_error_bar_stands_at_a_point_or_is_named():
    assert audit.detached_intervals(_interval_chart(10.0)) == []
    assert audit.detached_intervals(_interval_chart(3.16)) == [
        "costs: the interval 29 to 31 at x = 3.16 is drawn at no point"
    ]


def test_a_colour_and_a_shape_keyed_apart_are_two_legends_of_one_title():
    frame = pd.DataFrame({"row": ["a", "b"], "gap": [1.0, 2.0], "d_model": [256, 512]})
    points = (
        alt.Chart(frame, title="gaps")
        .mark_point()
        .encode(x="row:N", y="gap:Q", color="d_model:N", shape="d_model:N")
    )
    bars = alt.Chart(frame).mark_bar().encode(x="row:N", y="gap:Q", color="row:N")
    apart = alt.vconcat(bars, points).resolve_scale(color="independent")
    assert audit.repeated_legends(chart_spec(apart)) == [
        'gaps: 2 legends are titled "d_model"'
    ]
    together = alt.vconcat(bars, points).resolve_scale(
        color="independent", shape="independent"
    )
    assert audit.repeated_legends(chart_spec(together)) == []
    assert audit.chart_faults(chart_spec(together)) == []


def test_a_line_over_another_through_the_same_points_is_dashed_and_keyed_once():
    """Chapter 01's parameters and FLOPs stay at 1 for every head count: the second line is
    dashed, so that the first shows through its gaps, and one legend keys colour and dash."""
    from annotated_transformer.viz.charts import OVER, SOLID, line_chart

    frame = pd.DataFrame(
        [
            {"heads": h, "cost": value, "quantity": name}
            for name, values in (
                ("parameters", [1, 1]),
                ("flops", [1, 1]),
                ("softmax", [1, 2]),
            )
            for h, value in zip((1, 2), values)
        ]
    )
    spec = chart_spec(line_chart(frame, "heads", "cost", "quantity", title="costs"))
    dash = spec["encoding"]["strokeDash"]["scale"]
    assert dict(zip(dash["domain"], dash["range"])) == {
        "parameters": SOLID,
        "flops": OVER,
        "softmax": SOLID,
    }
    assert audit.chart_faults(spec) == []
    undashed = dict(spec, encoding=dict(spec["encoding"]))
    del undashed["encoding"]["strokeDash"]
    assert audit.hidden_series(undashed) == [
        "costs: quantity 'flops' and 'parameters' are drawn at the same places: the one drawn "
        "last hides the other"
    ]
    apart = frame[frame.quantity != "flops"]
    assert (
        "strokeDash"
        not in chart_spec(line_chart(apart, "heads", "cost", "quantity"))["encoding"]
    )

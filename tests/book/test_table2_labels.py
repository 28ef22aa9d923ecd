"""Table 2's panels (chapter 05): every label lies clear of the other labels, of every point and
error bar, within its panel (and the overflow the row allows), and nearer its own point than
any other, for Table 2's own systems and for our runs priced two ways."""

import itertools

import numpy as np
import pandas as pd
import pytest

from annotated_transformer import viz
from annotated_transformer.chapters.translation_results import figures as figures
from annotated_transformer.chapters.translation_results import (
    figures as translation_results_figures,
)
from annotated_transformer.chapters.translation_results import table2 as report
from tests.support import chart_audit as audit

# The committed cpu run and the earlier gpu run, as chapter 05 draws them: the cpu run's two
# costs lie three pixels apart, and both runs carry error bars.
OURS = pd.DataFrame(
    report.run_points("cpu, 7.6M", 36.61, 1.61, 1.25e14, 9.96e13)
    + report.run_points("gpu (earlier), 2.3M", 38.97, 1.67, 4.11e17, 6.48e14)
)
PAPER = report.table2_points()


def _placed(points: pd.DataFrame, overflow: float):
    domain = figures.cost_domain(PAPER, OURS)
    y_domain = figures.bleu_domain(points)
    labels, scene, _ = figures.label_layout(points, domain, y_domain, overflow)
    placements = figures.place_labels(labels, scene)
    return labels, scene, [label.box(p) for label, p in zip(labels, placements)]


def _assert_clear(labels, scene, boxes):
    for a, b in itertools.combinations(boxes, 2):
        assert figures._overlap(a, b) == 0, (a, b)
    for label, box in zip(labels, boxes):
        assert scene.outside(box) == 0, label.text
        for obstacle in scene.obstacles:
            assert figures._overlap(box, obstacle) == 0, (label.text, obstacle)
        assert not scene.closer_to_another(label, box), label.text


@pytest.mark.parametrize(
    "points,overflow",
    [(PAPER, figures.LABEL_OVERFLOW[0]), (OURS, figures.LABEL_OVERFLOW[1])],
    ids=["the paper's systems", "our runs"],
)
def test_no_label_covers_another_a_point_or_an_error_bar(points, overflow):
    _assert_clear(*_placed(points, overflow))


def test_a_run_priced_two_ways_is_labelled_once():
    labels, _, _ = _placed(OURS, figures.LABEL_OVERFLOW[1])
    assert [label.text for label in labels] == ["cpu, 7.6M", "gpu (earlier), 2.3M"]


def test_two_points_a_few_pixels_apart_take_labels_on_either_side():
    """ConvS2S (ensemble) and GNMT + RL (ensemble) lie 4 pixels apart in BLEU and 11 in cost:
    one label goes left, the other right, and neither sits over the other's point."""
    labels, scene, boxes = _placed(PAPER, figures.LABEL_OVERFLOW[0])
    _assert_clear(labels, scene, boxes)
    where = {label.text: box for label, box in zip(labels, boxes)}
    conv, gnmt = where["ConvS2S (ensemble)"], where["GNMT + RL (ensemble)"]
    assert conv[2] < gnmt[0]  # ConvS2S's label ends before GNMT's begins


def test_a_label_no_placement_can_clear_takes_the_least_overlap():
    crowded = figures.Scene(points=[(50.0, 50.0), (50.0, 62.0), (50.0, 38.0)], bars=[])
    label = figures.Label("x" * 60, 50.0, 50.0, 50.0, 50.0, 50.0)
    (placement,) = figures.place_labels([label], crowded)
    assert placement in figures.PLACEMENTS


def test_the_chart_draws_each_label_at_its_placement():
    spec = viz.chart_spec(
        translation_results_figures.table2_panels(
            PAPER, OURS, paper_title="a: b", our_title="c: d"
        )
    )
    for panel in spec["hconcat"]:
        texts = [layer for layer in panel["layer"] if layer["mark"]["type"] == "text"]
        offsets = {(p.dx, p.dy, p.align) for p in figures.PLACEMENTS}
        for layer in texts:
            mark = layer["mark"]
            assert (mark["dx"], mark["dy"], mark["align"]) in offsets
    right = spec["hconcat"][1]
    shapes = [
        layer["encoding"]["shape"]
        for layer in right["layer"]
        if layer["mark"]["type"] == "point"
    ]
    assert shapes and shapes[0]["field"] == "cost"


def test_text_width_grows_with_wide_letters():
    assert figures.text_width("WWW") > figures.text_width("iii") * 3


def test_each_runs_error_bar_stands_once_at_a_point_and_one_legend_keys_the_costs():
    spec = viz.chart_spec(
        translation_results_figures.table2_panels(
            PAPER, OURS, paper_title="a: b", our_title="c: d"
        )
    )
    assert audit.chart_faults(spec) == []
    right = spec["hconcat"][1]
    bars = [layer for layer in right["layer"] if layer["mark"]["type"] == "rule"]
    drawn = {
        row["training_flops"]
        for layer in bars
        if "y2" in layer["encoding"]
        for row in spec["datasets"][layer["data"]["name"]]
    }
    # one bar a run, at its cost counted the paper's way
    assert drawn == set(OURS.training_flops[OURS.cost == report.COSTS[0]])
    assert len(drawn) == 2


def test_every_labelled_cost_tick_has_room_for_its_number():
    """Ticks closer than a label's width lose every other number to Vega's overlap rule (1e12
    stood bare between 1e10 and 1e14); the cost axis labels fewer decades as the span grows."""
    for domain in ([1e10, 1e21], [1e13, 1e21], [1e9, 1e22]):
        ticks = figures.cost_ticks(domain)
        span = np.log10(domain[1] / domain[0])
        pixels = [
            figures._PANEL_WIDTH * np.log10(b / a) / span
            for a, b in zip(ticks, ticks[1:])
        ]
        assert len(ticks) >= 3 and min(pixels) >= figures._TICK_SPACING, domain


def test_the_averaging_chart_keeps_its_points_off_the_frame():
    sweep = pd.DataFrame(
        {"k": [1, 2, 3], "ppl": [240.3, 256.0, 309.0], "bleu": [0.11, 0.03, 0.03]}
    ).assign(ci95=[0.03, 0.0, 0.0])
    spec = viz.chart_spec(figures.averaging_chart(sweep, title="t"))
    for panel in spec["hconcat"]:
        units = panel.get("layer", [panel])
        scale = units[0]["encoding"]["y"]["scale"]
        assert scale["nice"] is False and scale["padding"] > 0

"""Chapter 06's curve charts: every row keeps a colour and dash no other row shares, base is the
grey reference under the others in every panel, and no point lies on a panel's frame."""

from __future__ import annotations

import itertools

import pandas as pd
import pytest

from annotated_transformer.chapters.model_variations import figures as figures
from annotated_transformer.model.config import TABLE3_ALL_ROWS


def _curves(rows, epochs=(0.25, 0.5, 0.75, 1.0)):
    # every row on base's curve: the case where a row could hide under base
    return pd.DataFrame(
        [
            dict(row=r, epoch=e, ppl=100.0 / (1 + e) * (1 + 0.001 * i))
            for i, r in enumerate(rows)
            for e in epochs
        ]
    )


def test_no_two_rows_share_both_colour_and_dash():
    styles = figures.ROW_STYLES
    assert set(styles) == set(TABLE3_ALL_ROWS)
    looks = [(colour, tuple(dash)) for colour, dash in styles.values()]
    assert len(set(looks)) == len(looks)
    assert styles["base"][0] == figures.REFERENCE_COLOUR
    assert all(
        c != figures.REFERENCE_COLOUR for r, (c, _) in styles.items() if r != "base"
    )


@pytest.mark.parametrize("title", list(figures.GROUPS))
def test_the_rows_of_one_panel_differ_in_colour(title):
    members = [r for r in figures.GROUPS[title] if r != "base"]
    colours = [figures.ROW_STYLES[r][0] for r in members]
    assert len(set(colours)) == len(colours)
    for a, b in itertools.pairwise(members):  # neighbours differ in dash too
        assert figures.ROW_STYLES[a][1] != figures.ROW_STYLES[b][1]


def _layers(spec):
    panels = spec.get("hconcat", [spec])
    return [layer for panel in panels for layer in panel["layer"]]


def _data(spec, layer):
    return spec["datasets"][layer["data"]["name"]]


def test_the_validation_chart_draws_base_as_a_band_under_every_panel():
    rows = ["base", "A1", "A4", "B1", "C1", "C3", "C4", "C5", "D1", "D2", "E"]
    spec = figures.validation_curves_chart(_curves(rows)).to_dict()
    assert len(spec["hconcat"]) == 3
    for panel in spec["hconcat"]:
        band, lines = panel["layer"]
        assert band["mark"]["color"] == figures.REFERENCE_COLOUR
        assert band["mark"]["strokeWidth"] > lines["mark"]["strokeWidth"]
        assert {d["row"] for d in _data(spec, band)} == {"base"}
        assert "base" not in {d["row"] for d in _data(spec, lines)}
        assert "color" not in band["encoding"]  # the band is named in the lines' legend
    # one legend for all panels: the same domain, colours and dashes everywhere
    scales = {
        (
            tuple(layer["encoding"]["color"]["scale"]["domain"]),
            tuple(layer["encoding"]["color"]["scale"]["range"]),
            tuple(map(tuple, layer["encoding"]["strokeDash"]["scale"]["range"])),
        )
        for layer in _layers(spec)
        if "color" in layer["encoding"]
    }
    assert len(scales) == 1
    domain, colours, dashes = scales.pop()
    assert sorted(domain) == sorted(rows)
    assert len(set(zip(colours, dashes))) == len(domain)


def test_panels_hold_only_groups_with_a_trained_row_besides_base():
    spec = figures.validation_curves_chart(_curves(["base", "A1", "C1"])).to_dict()
    titles = [panel["title"] for panel in spec["hconcat"]]
    assert titles == ["heads and key size (A, B)", "depth, width, feed-forward (C)"]


@pytest.mark.parametrize("chart", ["validation", "overfitting"])
def test_no_point_lies_on_a_panels_frame(chart):
    curves = _curves(["base", "D1", "D2"], epochs=(1, 2, 3, 4))
    built = (
        figures.validation_curves_chart(curves)
        if chart == "validation"
        else figures.overfitting_chart(curves, title="small corpus")
    )
    spec = built.to_dict()
    for layer in _layers(spec):
        x = layer["encoding"]["x"]["scale"]["domain"]
        y = layer["encoding"]["y"]["scale"]["domain"]
        for d in _data(spec, layer):
            assert x[0] < d["epoch"] < x[1] and y[0] < d["ppl"] < y[1]


def test_a_row_outside_table3_still_gets_a_look_of_its_own():
    spec = figures.overfitting_chart(
        _curves(["base", "D1", "X9"]), title="t", points=False
    ).to_dict()
    lines = spec["layer"][1]
    assert lines["mark"]["point"] is False
    domain = lines["encoding"]["color"]["scale"]["domain"]
    looks = set(
        zip(
            lines["encoding"]["color"]["scale"]["range"],
            map(tuple, lines["encoding"]["strokeDash"]["scale"]["range"]),
        )
    )
    assert domain == ["base", "D1", "X9"] and len(looks) == 3

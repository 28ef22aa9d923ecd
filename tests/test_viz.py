"""Chart builders give valid Vega-Lite; the book output is offline; exports open."""

import json
import re
import xml.etree.ElementTree as ET

import numpy as np
import pandas as pd
import pytest
import torch

from annotated_transformer.book import viz

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _marks(spec):
    """Mark types anywhere in a (possibly layered or concatenated) spec."""
    found = []
    if isinstance(spec, dict):
        mark = spec.get("mark")
        if mark is not None:
            found.append(mark["type"] if isinstance(mark, dict) else mark)
        for value in spec.values():
            found += _marks(value)
    elif isinstance(spec, list):
        for value in spec:
            found += _marks(value)
    return found


def _rows(spec):
    return sum(len(v) for v in spec.get("datasets", {}).values())


def test_line_chart_has_one_line_per_colour():
    df = pd.DataFrame(
        {"step": [1, 2, 1, 2], "loss": [3.0, 2.0, 3.5, 2.5], "run": ["a", "a", "b", "b"]}
    )
    spec = viz.chart_spec(
        viz.line_chart(df, "step", "loss", "run", log_y=True, title="loss")
    )
    assert _marks(spec) == ["line"]
    assert spec["encoding"]["color"]["field"] == "run"
    assert spec["encoding"]["y"]["scale"] == {"type": "log"}
    with pytest.raises(KeyError, match="no column 'nope'"):
        viz.line_chart(df, "step", "nope")


def test_schedule_chart_takes_curves_by_label():
    steps = np.arange(1, 101)
    spec = viz.chart_spec(
        viz.schedule_chart(
            steps, {"warmup 10": steps**-0.5, "warmup 20": steps**-0.5 / 2}
        )
    )
    assert _rows(spec) == 200
    with pytest.raises(ValueError, match="has 3 values for 100 steps"):
        viz.schedule_chart(steps, {"bad": [1, 2, 3]})


def test_heatmap_keeps_repeated_token_labels_apart():
    tokens = ["the", "cat", "saw", "the", "dog"]
    spec = viz.chart_spec(
        viz.heatmap(torch.rand(5, 5), tokens, tokens, title="attention")
    )
    assert _marks(spec) == ["rect"] and _rows(spec) == 25
    # Positions are encoded, tokens only printed: the two "the" stay two rows.
    assert spec["encoding"]["y"]["field"] == "row"
    assert '"the"' in spec["encoding"]["x"]["axis"]["labelExpr"]
    with pytest.raises(ValueError, match="2-D"):
        viz.heatmap(np.zeros((2, 3, 4)))
    with pytest.raises(ValueError, match="max_cells"):
        viz.heatmap(np.zeros((300, 300)))


def test_mask_chart_shows_a_causal_mask():
    causal = torch.ones(4, 4, dtype=torch.bool).tril()
    spec = viz.chart_spec(viz.mask_chart(causal))
    states = [row["state"] for row in next(iter(spec["datasets"].values()))]
    assert states.count("may attend") == 10 and states.count("masked") == 6


def test_positional_encoding_chart_has_heatmap_and_curves():
    positions = torch.arange(50).unsqueeze(1)
    freqs = torch.exp(-torch.arange(0, 16, 2) / 16 * np.log(10000.0))
    pe = torch.zeros(1, 50, 16)
    pe[0, :, 0::2], pe[0, :, 1::2] = (
        torch.sin(positions * freqs),
        torch.cos(positions * freqs),
    )
    spec = viz.chart_spec(viz.positional_encoding_chart(pe, dims=(2, 3)))
    assert sorted(_marks(spec)) == ["line", "rect"]
    with pytest.raises(ValueError, match="outside d_model=16"):
        viz.positional_encoding_chart(pe, dims=(40,))


def test_label_smoothing_chart_bars_or_heatmap():
    dist = torch.full((5,), 0.1 / 3)
    dist[0], dist[2] = 0.0, 0.9
    assert _marks(viz.chart_spec(viz.label_smoothing_chart(dist))) == ["bar"]
    assert _marks(viz.chart_spec(viz.label_smoothing_chart(dist.repeat(3, 1)))) == [
        "rect"
    ]


def test_book_output_is_an_offline_div_with_the_spec(monkeypatch):
    chart = viz.bar_chart(
        pd.DataFrame({"k": ["a", "b"], "v": [1, 2]}), "k", "v", title="</script> test"
    )
    bundle = viz.mimebundle(chart)
    html = bundle["text/html"]
    assert 'class="at-vega-chart"' in html
    assert "<script src" not in html  # the site serves Vega from _static/vendor
    spec_text = re.search(
        r'<script type="application/json"[^>]*>(.*?)</script>', html, re.S
    ).group(1)
    assert (
        json.loads(spec_text)["title"] == "</script> test"
    )  # escaped, so it cannot end the script early

    shown = []
    monkeypatch.setattr(
        "IPython.display.display", lambda obj, raw=False: shown.append((obj, raw))
    )
    monkeypatch.setenv(viz.BOOK_BUILD_ENV, "1")
    viz.show(chart)
    assert shown[-1][1] is True and "at-vega-chart" in shown[-1][0]["text/html"]
    monkeypatch.setenv(viz.BOOK_BUILD_ENV, "0")
    viz.show(chart)
    assert shown[-1][0] is chart  # outside the book: altair's own renderer


def test_export_writes_files_that_open(tmp_path):
    df = pd.DataFrame({"x": range(20), "y": np.sin(np.arange(20) / 3), "curve": "sin"})
    chart = viz.line_chart(df, "x", "y", "curve", title="export check")
    written = viz.export(chart, tmp_path / "figures" / "sine")
    assert set(written) == {"html", "svg", "png"}

    png = written["png"].read_bytes()
    assert png[:8] == PNG_SIGNATURE
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert width > 200 and height > 100  # IHDR: a real picture, not an empty canvas

    root = ET.parse(written["svg"]).getroot()
    assert root.tag.endswith("svg")
    assert any(el.tag.endswith("path") for el in root.iter())

    page = written["html"].read_text()
    assert "export check" in page  # the spec is in the page
    assert '<script src="http' not in page and "<script src='http" not in page
    with pytest.raises(ValueError, match="unknown export format"):
        viz.export(chart, tmp_path / "x", formats=("gif",))

"""Chart builders give valid Vega-Lite; the book output is offline; exports open."""

import json
import re
import xml.etree.ElementTree as ET

import numpy as np
import pandas as pd
import pytest
import torch

from annotated_transformer import viz
from annotated_transformer.chapters.attention import figures as attention_figures
from annotated_transformer.chapters.model import figures as model_figures
from annotated_transformer.chapters.model_variations import (
    figures as model_variations_figures,
)
from annotated_transformer.chapters.training import figures as training_figures
from annotated_transformer.chapters.translation_results import (
    figures as translation_results_figures,
)
from annotated_transformer.chapters.why_self_attention import (
    figures as why_self_attention_figures,
)
from annotated_transformer.chapters.wording import plus_minus
from annotated_transformer.runtime.progress import BOOK_BUILD_ENV
from tests.support import chart_audit as audit

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


def test_heatmap_tilts_column_labels_only_where_they_would_run_together():
    def angles(tokens, cell=None):
        chart = viz.heatmap(
            torch.rand(len(tokens), len(tokens)), tokens, tokens, cell=cell
        )
        encoding = viz.chart_spec(chart)["encoding"]
        return encoding["x"]["axis"]["labelAngle"], encoding["y"]["axis"]["labelAngle"]

    sentence = [
        "Two",
        "dogs",
        "run",
        "through",
        "the",
        "snow",
    ]  # 24 px cells for 6 tokens
    assert angles(sentence) == (
        -45,
        0,
    )  # "through" is wider than its cell; rows stay level
    assert angles(["a", "b", "c"]) == (0, 0)
    assert angles(sentence, cell=60) == (0, 0)


def test_mask_chart_shows_a_causal_mask():
    causal = torch.ones(4, 4, dtype=torch.bool).tril()
    spec = viz.chart_spec(attention_figures.mask_chart(causal))
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
    spec = viz.chart_spec(model_figures.positional_encoding_chart(pe, dims=(2, 3)))
    assert sorted(_marks(spec)) == ["line", "rect"]
    # one panel per dimension (on one axis, close wavelengths tangled), each named with its
    # function and wavelength: 2 pi 10000^(2/16) = 19.9 for the pair 2, 3
    curves = spec["vconcat"][1]
    assert curves["facet"]["row"]["field"] == "dimension"
    assert curves["facet"]["row"]["sort"] == [
        "dim 2: sin, wavelength 19.9",
        "dim 3: cos, wavelength 19.9",
    ]
    with pytest.raises(ValueError, match="outside d_model=16"):
        model_figures.positional_encoding_chart(pe, dims=(40,))


def test_label_smoothing_chart_bars_or_heatmap():
    dist = torch.full((5,), 0.1 / 3)
    dist[0], dist[2] = 0.0, 0.9
    assert _marks(viz.chart_spec(training_figures.label_smoothing_chart(dist))) == ["bar"]
    assert _marks(
        viz.chart_spec(training_figures.label_smoothing_chart(dist.repeat(3, 1)))
    ) == ["rect"]


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
    monkeypatch.setenv(BOOK_BUILD_ENV, "1")
    viz.show(chart)
    assert shown[-1][1] is True and "at-vega-chart" in shown[-1][0]["text/html"]
    monkeypatch.setenv(BOOK_BUILD_ENV, "0")
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


def _datasets(spec):
    """Each layer's or panel's rows, in the order the spec names them."""
    names = []

    def walk(node):
        if isinstance(node, dict):
            data = node.get("data")
            if isinstance(data, dict) and "name" in data:
                names.append(data["name"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(spec)
    return [spec["datasets"][name] for name in names]


def _panel_titles(spec):
    """The title of each panel of a side-by-side spec."""
    titles = [panel.get("title") for panel in spec["hconcat"]]
    return [t["text"] if isinstance(t, dict) else t for t in titles]


def test_side_by_side_puts_one_legend_below():
    df = pd.DataFrame({"x": [1, 2], "y": [3.0, 4.0], "c": ["a", "a"]})
    a, b = viz.line_chart(df, "x", "y", "c"), viz.bar_chart(df, "c", "y")
    spec = viz.chart_spec(viz.side_by_side(a, b, independent_y=True, legend_columns=3))
    assert len(spec["hconcat"]) == 2 and _marks(spec) == ["line", "bar"]
    assert spec["config"]["legend"] == {"orient": "bottom", "labelLimit": 0, "columns": 3}
    assert spec["resolve"]["scale"]["y"] == "independent"
    assert "resolve" not in viz.chart_spec(viz.side_by_side(a, b))


def test_a_legend_below_shows_long_labels_whole():
    """Vega-Lite cuts legend labels at 160 px unless told otherwise; the drawn SVG must hold
    the whole label, the part that tells the lines apart included."""
    vl_convert = pytest.importorskip("vl_convert")
    label = "profile cpu (d_model 256, warm-up 400 steps, peak rate 1.0e-03)"
    df = pd.DataFrame(
        {"x": [1, 2, 1, 2], "y": [1.0, 2.0, 2.0, 1.0], "c": [label] * 2 + ["b"] * 2}
    )
    svg = vl_convert.vegalite_to_svg(
        viz.chart_spec(viz.legend_below(viz.line_chart(df, "x", "y", "c")))
    )
    assert label in svg and "…" not in svg


def test_softmax_saturation_chart_has_both_panels():
    saturation = pd.DataFrame(
        {
            "d_k": [4, 4, 64, 64],
            "scores": ["scaled", "unscaled"] * 2,
            "largest_weight": [0.2, 0.3, 0.2, 0.9],
            "gradient_norm": [0.2, 0.2, 0.2, 0.01],
        }
    )
    spec = viz.chart_spec(attention_figures.softmax_saturation_chart(saturation))
    left, right = spec["hconcat"]
    assert left["encoding"]["y"]["field"] == "largest_weight"
    assert right["encoding"]["y"]["field"] == "gradient_norm"
    assert right["encoding"]["y"]["scale"]["type"] == "log"
    assert left["encoding"]["x"]["axis"]["values"] == [4.0, 64.0]  # the measured widths


def test_relative_cost_chart_divides_by_the_first_row():
    costs = pd.DataFrame(
        {"heads": [1, 2, 4], "flops": [10, 10, 10], "entries": [5, 10, 20]}
    )
    chart = attention_figures.relative_cost_chart(
        costs, "heads", {"flops": "FLOPs", "entries": "softmax"}, title="t", subtitle="s"
    )
    spec = viz.chart_spec(chart)
    rows = _datasets(spec)[0]
    assert len(rows) == 6
    relative = {(r["quantity"], r["heads"]): r["relative cost"] for r in rows}
    assert relative[("FLOPs", 4)] == 1.0 and relative[("softmax", 4)] == 4.0
    assert spec["title"] == {"text": "t", "subtitle": "s"}


def test_attention_uses_chart_has_three_panels_on_one_scale():
    S, T = 5, 3
    spec = viz.chart_spec(
        attention_figures.attention_uses_chart(
            torch.rand(S, S),
            torch.rand(T, T).tril(),
            torch.rand(T, S),
            [f"s{i}" for i in range(S)],
            [f"t{i}" for i in range(T)],
        )
    )
    assert _marks(spec) == ["rect"] * 3
    assert [len(rows) for rows in _datasets(spec)] == [S * S, T * T, T * S]
    assert spec["resolve"]["scale"]["color"] == "shared"
    assert _panel_titles(spec) == [
        "Encoder self-attention",
        "Decoder self-attention",
        "Encoder-decoder attention",
    ]


def _figure1_counts():
    keys = [key for *_, key in model_figures.FIGURE1_BOXES if key]
    return {key: 1000 * (i + 1) for i, key in enumerate(keys)} | {"src_embed": 250_000}


def test_figure1_layout_labels_every_box_with_its_count():
    boxes, frames, arrow = model_figures.figure1_layout(_figure1_counts(), 6, 4)
    assert len(boxes) == len(model_figures.FIGURE1_BOXES) == 16
    assert (boxes.x2 > boxes.x).all() and (boxes.y2 > boxes.y).all()
    embedding = boxes[boxes.label == "input embedding x sqrt(d_model)"].text.item()
    assert embedding.endswith("0.25M parameters")
    assert (
        boxes[boxes.label == "softmax"].text.item() == "softmax"
    )  # no weights: no count
    assert (
        "input embedding's matrix"
        in boxes.text[boxes.label.str.contains("output")].item()
    )
    assert frames.text.tolist() == ["x 6", "x 4"]
    assert arrow.x.iloc[-1] == boxes[boxes.side == "decoder"].x.min()  # into the decoder
    counts = _figure1_counts()
    del counts["decoder.ffn"]
    with pytest.raises(KeyError, match="decoder.ffn"):
        model_figures.figure1_layout(counts, 6, 6)


def test_figure1_chart_draws_boxes_frames_and_arrow():
    spec = viz.chart_spec(
        model_figures.figure1_chart(_figure1_counts(), 6, 6, title="Figure 1")
    )
    assert sorted(_marks(spec)) == ["line", "point", "rect", "rect", "text", "text"]
    box_rows = max(_datasets(spec), key=len)
    assert len(box_rows) == 16
    assert spec["title"] == "Figure 1"


def test_parameter_count_chart_skips_rows_without_a_paper_count():
    counts = pd.DataFrame(
        {
            "row": ["base", "A1", "big"],
            "ours_m": [62.0, 62.0, 212.0],
            "paper_m": [65.0, None, 213.0],
            "d_model": [512, 512, 1024],
        }
    )
    counts["gap_m"] = counts.paper_m - counts.ours_m
    counts["gap_in_vocabulary_rows"] = counts.gap_m * 1e6 / counts.d_model
    spec = viz.chart_spec(model_figures.parameter_count_chart(counts, ours_label="ours"))
    bars, gaps = _datasets(spec)
    assert len(bars) == 4 and {r["source"] for r in bars} == {"ours", "paper, Table 3"}
    assert [r["row"] for r in gaps] == ["base", "big"]
    assert _marks(spec) == ["bar", "point"]
    # d_model's colour and shape make one legend, not two of the same title
    assert audit.chart_faults(spec) == []


def test_loglog_with_reference_draws_the_exponent_through_the_last_point():
    df = pd.DataFrame(
        {"kind": ["a"] * 3 + ["b"] * 3, "n": [1, 2, 4] * 2, "t": [1, 3, 9, 5, 6, 7]}
    )
    spec = viz.chart_spec(
        viz.loglog_with_reference(df, "n", "t", {"a": 2, "b": 1}, title="x", y_title="s")
    )
    reference, measured = _datasets(spec)
    assert len(measured) == 6
    line = {(r["kind"], r["n"]): r["t"] for r in reference}
    assert line[("a", 4)] == 9 and line[("a", 1)] == pytest.approx(9 / 16)
    assert line[("b", 4)] == 7 and line[("b", 2)] == pytest.approx(3.5)
    assert spec["layer"][0]["mark"]["strokeDash"] == [5, 4]


def test_scaling_charts_name_the_fixed_size_in_each_title():
    by_n = pd.DataFrame({"kind": "a", "n": [8, 16], "d": 32, "seconds": [1.0, 2.0]})
    by_d = pd.DataFrame({"kind": "a", "n": 64, "d": [8, 16], "seconds": [1.0, 4.0]})
    spec = viz.chart_spec(
        why_self_attention_figures.scaling_charts(
            by_n, by_d, "seconds", {"a": 1}, {"a": 2}, what="Time", y_title="s"
        )
    )
    assert _panel_titles(spec) == ["Time against n (d = 32)", "Time against d (n = 64)"]
    assert spec["resolve"]["scale"]["y"] == "independent"


def test_path_length_charts_show_both_views():
    paths = pd.DataFrame(
        {"kind": ["a", "a", "b", "b"], "n": [2, 4, 2, 4], "max_path_length": [1, 1, 2, 4]}
    )
    to_last = pd.DataFrame(
        {"kind": ["a"] * 3, "input_position": [0, 1, 2], "path_length": [1, 1, 1]}
    )
    spec = viz.chart_spec(
        why_self_attention_figures.path_length_charts(paths, to_last, kernel_size=3)
    )
    assert _marks(spec) == ["line", "line"]
    assert _panel_titles(spec)[1].endswith("(n = 3)")
    assert spec["config"]["legend"]["columns"] == 3


def test_loglog_with_rules_labels_each_rule():
    df = pd.DataFrame({"n": [1, 10, 1, 10], "y": [1, 2, 3, 4], "kind": list("aabb")})
    spec = viz.chart_spec(
        viz.loglog_with_rules(
            df, "n", "y", "kind", {"n = d": 5.0, "measured": 7.0}, title="t", y_title="y"
        )
    )
    assert _marks(spec) == ["line", "rule", "text"]
    rules = _datasets(spec)[1]
    assert [(r["what"], r["at"]) for r in rules] == [("n = d", 5.0), ("measured", 7.0)]
    bare = viz.chart_spec(
        viz.loglog_with_rules(df, "n", "y", "kind", {}, title="t", y_title="y")
    )
    assert _marks(bare) == ["line"]


def test_crossover_chart_marks_the_same_rules_on_both_panels():
    flops = pd.DataFrame(
        {"n": [1, 10, 1, 10], "flops": [1, 100, 10, 100], "kind": list("abab")}
    )
    times = flops.rename(columns={"flops": "seconds"})
    spec = viz.chart_spec(
        why_self_attention_figures.crossover_chart(flops, times, {"n = d": 4.0}, d=4)
    )
    assert _panel_titles(spec) == ["FLOPs, d = 4", "Measured time, d = 4"]
    assert _marks(spec) == ["line", "rule", "text"] * 2
    lines = [layer["layer"][0]["encoding"]["y"]["field"] for layer in spec["hconcat"]]
    assert lines == ["flops", "seconds"]


def test_plus_minus_writes_the_interval_or_the_bare_score():
    assert plus_minus(36.125, 1.2) == "36.12 ± 1.20"
    assert plus_minus(36.1, None, 1) == "36.1"
    assert plus_minus(36.1, float("nan")) == "36.10"


def test_averaging_chart_draws_bleu_with_error_bars():
    sweep = pd.DataFrame(
        {"k": [1, 2, 5], "ppl": [7.0, 6.8, 6.6], "bleu": [35, 35.5, 36], "ci95": 1.0}
    )
    spec = viz.chart_spec(
        translation_results_figures.averaging_chart(sweep, title="averaging")
    )
    assert _marks(spec) == ["line", "line", "rule"]
    titles = [panel.get("title") for panel in spec["hconcat"]]
    assert titles[0] == "validation perplexity (lower is better)"
    rules = [d for d in _datasets(spec) if "low" in d[0]]
    assert [(r["low"], r["high"]) for r in rules[0]] == [(34, 36), (34.5, 36.5), (35, 37)]
    assert spec["resolve"]["scale"]["y"] == "independent"


def test_table2_panels_keep_the_test_sets_apart_on_one_cost_axis():
    paper_points = pd.DataFrame(
        {
            "system": ["base", "big"],
            "bleu": [27.3, 28.4],
            "training_flops": [3.3e18, 2.3e19],
        }
    )
    ours = pd.DataFrame(
        {"system": ["ours"], "bleu": [36.1], "ci95": [1.2], "training_flops": [1e14]}
    )
    spec = viz.chart_spec(
        translation_results_figures.table2_panels(
            paper_points, ours, paper_title="newstest2014", our_title="ours"
        )
    )
    left, right = spec["hconcat"]
    assert _panel_titles(spec) == ["newstest2014", "ours"]
    assert spec["resolve"]["scale"]["y"] == "independent"
    domains = [p["layer"][-1]["encoding"]["x"]["scale"]["domain"] for p in (left, right)]
    # one cost axis for both test sets, with room on each side of the outermost points
    assert domains[0] == domains[1] == [1e13, 1e20]
    # one label layer per placement that has labels: an empty layer is a console warning
    assert _marks(left) == ["point", "text"]
    assert _marks(right) == ["rule", "point", "text"]
    ours_below = viz.chart_spec(
        translation_results_figures.table2_panels(
            paper_points, ours.assign(below=[True]), paper_title="a", our_title="b"
        )
    )
    placements = [
        layer["mark"].get("dy")
        for layer in ours_below["hconcat"][1]["layer"]
        if layer["mark"]["type"] == "text"
    ]
    assert placements == [12]  # the only label goes under its point


def test_table3_differences_chart_fades_what_is_within_noise():
    differences = pd.DataFrame(
        [
            dict(row="A1", metric="ppl", who="ours", diff=5.0, low=1.0, high=9.0),
            dict(row="A1", metric="ppl", who="paper", diff=4.0),
            dict(
                row="A1", metric="bleu", who="ours", diff=0.2, low=-1, high=1, faded=True
            ),
            dict(row="A1", metric="bleu", who="paper", diff=-0.9),
        ]
    )
    spec = viz.chart_spec(
        model_variations_figures.table3_differences_chart(
            differences, ["base", "A1"], {"ppl": "% change", "bleu": "points"}
        )
    )
    assert _marks(spec) == ["bar", "rule"] * 2
    ppl_panel, bleu_panel = spec["vconcat"]
    assert ppl_panel["layer"][0]["encoding"]["y"]["title"] == "% change"
    assert (
        bleu_panel["layer"][0]["encoding"]["opacity"]["condition"]["test"]
        == "datum.faded"
    )
    faded = {
        (r["metric"], r["who"]): r["faded"]
        for d in _datasets(spec)
        for r in d
        if "who" in r
    }
    assert faded[("bleu", "ours")] is True and faded[("ppl", "ours")] is False


def test_log_axis_ticks_only_values_whose_labels_fit():
    from annotated_transformer.viz.charts import _log_ticks

    assert _log_ticks([2, 4, 8, 16, 1024, 512]) == [2, 4, 8, 16, 512, 1024]
    assert _log_ticks([64, 128, 256, 512, 768, 1024, 1536, 2048, 3072]) == [
        64,
        128,
        256,
        512,
        1024,
        2048,
    ]


def test_axes_that_end_at_the_data_leave_room_for_the_outermost_points():
    # chapter 01's d_k = 2 and 1,024 and chapter 04's 0% and 100% sat half outside the frame
    df = pd.DataFrame({"d_k": [2, 16, 1024], "v": [2.0, 16.0, 1000.0], "s": ["a"] * 3})
    tight = viz.chart_spec(viz.tighten(viz.line_chart(df, "d_k", "v", "s", log_x=True,
                                                      log_y=True, points=True)))  # fmt: skip
    for channel in ("x", "y"):
        scale = tight["encoding"][channel]["scale"]
        assert scale["nice"] is False and scale["padding"] == viz.charts.EDGE_PADDING > 0
    plain = viz.chart_spec(viz.line_chart(df, "d_k", "v", "s", points=True))
    for channel in ("x", "y"):
        # padded, then not rounded out: "nice" after the padding ran chapter 04's steps from -400
        scale = plain["encoding"][channel]["scale"]
        assert scale["padding"] == viz.charts.EDGE_PADDING and scale["nice"] is False
    rows = pd.DataFrame(
        {"length": [1, 2, 3], "positions": "learned", "exact_sequence": [1.0, 0.5, 0.0],
         "tokens_in_place": [1.0, 0.7, 0.4]}
    )  # fmt: skip
    extrapolation = viz.chart_spec(training_figures.extrapolation_chart(rows, 2))
    lines = extrapolation["spec"]["layer"][0]["encoding"]
    assert lines["y"]["scale"]["domain"] == [0, 1]
    assert lines["x"]["scale"]["padding"] == lines["y"]["scale"]["padding"] > 0


def test_an_export_that_fails_mid_way_keeps_the_previous_figure(tmp_path, monkeypatch):
    df = pd.DataFrame({"x": range(5), "y": range(5), "curve": "line"})
    chart = viz.line_chart(df, "x", "y", "curve")
    (tmp_path / "fig.svg").write_text("<svg>previous</svg>")

    def crash(self, fp, **options):
        with open(fp, "w") as handle:
            handle.write("<svg>half")
        raise RuntimeError("renderer crashed")

    monkeypatch.setattr(type(chart), "save", crash)
    with pytest.raises(RuntimeError, match="renderer crashed"):
        viz.export(chart, tmp_path / "fig", formats=("svg",))
    assert (tmp_path / "fig.svg").read_text() == "<svg>previous</svg>"
    assert [p.name for p in tmp_path.iterdir()] == ["fig.svg"]

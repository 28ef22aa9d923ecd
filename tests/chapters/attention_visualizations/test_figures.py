"""The attention pictures draw exactly the weights `attention_maps` returns, and every export opens."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from annotated_transformer.chapters.attention_visualizations import figures as af
from annotated_transformer.cli import main
from annotated_transformer.model.transformer import attention_maps
from annotated_transformer.training.checkpoint import model_from_checkpoint
from tests.support import chart_audit as audit
from tests.support.browser import Browser, find_chromium
from tests.support.tiny_checkpoint import SENTENCES, write_tiny_checkpoint

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    return write_tiny_checkpoint(tmp_path_factory.mktemp("attention") / "tiny.pt")


@pytest.fixture(scope="module")
def loaded(checkpoint):
    return model_from_checkpoint(checkpoint)


@pytest.fixture(scope="module")
def data(loaded) -> af.SentenceAttention:
    model, tokenizer = loaded
    return af.sentence_attention(
        model, tokenizer, SENTENCES[0], "Ein Mann spielt Gitarre."
    )


def test_weights_are_distributions_with_causal_and_padding_masks(loaded):
    model, tokenizer = loaded
    ids = [tokenizer.encode(s) + [tokenizer.eos_id] for s in SENTENCES[:2]]
    width = max(map(len, ids))
    src = torch.tensor([row + [tokenizer.pad_id] * (width - len(row)) for row in ids])
    tgt = torch.tensor([[tokenizer.bos_id] + tokenizer.encode("Ein Hund läuft.")] * 2)
    maps = attention_maps(model, src, tgt)
    short = int(np.argmin([len(r) for r in ids]))
    for kind in af.KINDS:
        for w in maps[kind]:
            torch.testing.assert_close(
                w.sum(-1), torch.ones(w.shape[:-1])
            )  # softmax rows
            if kind != "decoder_self":  # keys are source positions: padding gets nothing
                assert w[short, ..., len(ids[short]) :].abs().max() == 0
    for w in maps["decoder_self"]:
        assert torch.equal(w, w.tril()), "a decoder query saw a later position"


def test_figures_draw_the_weights_of_attention_maps(loaded, data):
    model, tokenizer = loaded
    src = torch.tensor([tokenizer.encode(SENTENCES[0]) + [tokenizer.eos_id]])
    tgt = torch.tensor(
        [[tokenizer.bos_id] + tokenizer.encode("Ein Mann spielt Gitarre.")]
    )
    maps = attention_maps(model, src, tgt)
    for kind in af.KINDS:
        np.testing.assert_array_equal(
            data.weights[kind], torch.stack([m[0] for m in maps[kind]]).numpy()
        )
    # The explorer's rows hold those weights in thousandths (half a thousandth of rounding).
    rows, tokens = af.explorer_tables(data)
    for row in rows.sample(50, random_state=0).itertuples():
        expected = data.weights[af.KINDS[row.k]][row.l - 1, row.h - 1, row.q]
        np.testing.assert_allclose(np.array(row.w) / 1000, expected, atol=5e-4 + 1e-9)
    assert len(tokens) == len(data.source_tokens) + len(data.target_tokens)
    # Figure 5's lines carry the weights of its two heads.
    lines = af._lines_frame(data.weights["encoder"][1], [0, 2], None, threshold=0.0)
    w = data.weights["encoder"][1]
    for line in lines.sample(30, random_state=0).itertuples():
        assert abs(line.weight - w[line.head - 1, line.query, line.key]) < 1e-4


def test_head_statistics_bound_by_uniform_entropy(data):
    stats = af.head_statistics(data)
    assert len(stats) == 3 * data.layers * data.heads
    encoder = stats[stats.kind == "encoder"]
    assert (encoder["entropy (bits)"] <= np.log2(len(data.source_tokens)) + 1e-6).all()
    assert (encoder["entropy (bits)"] >= 0).all() and (
        encoder["mean distance"] >= 0
    ).all()


def test_explorer_spec_is_compact(data):
    chart = af.explorer(data)
    spec = chart.to_dict()
    assert {p["name"] for p in spec["params"]} >= {"kind", "layer", "head"}
    n_pairs = sum(w.size for w in data.weights.values())
    # Integer thousandths in arrays: a few bytes per (query, key) pair, not a JSON record each.
    assert af.spec_size(chart) < 8 * n_pairs + 20_000


@pytest.mark.parametrize(
    "figure,extra",
    [
        ("3", ["--word", "guitar"]),
        ("4", ["--word", "man", "--heads", "1", "3"]),
        ("5", ["--layer", "1", "--heads", "2", "4"]),
    ],
)
def test_figures_build_for_each_number(data, figure, extra):
    word = extra[extra.index("--word") + 1] if "--word" in extra else None
    heads = (
        [int(h) for h in extra[extra.index("--heads") + 1 :]]
        if "--heads" in extra
        else None
    )
    layer = int(extra[extra.index("--layer") + 1]) if "--layer" in extra else None
    chart = af.build_figure(data, figure, word=word, heads=heads, layer=layer)
    assert chart.to_dict()["$schema"].startswith(
        "https://vega.github.io/schema/vega-lite/"
    )


@pytest.mark.parametrize(
    "figure,fmt,magic",
    [
        ("explorer", "html", b"<!DOCTYPE html>"),
        ("5", "svg", b"<svg"),
        ("3", "png", b"\x89PNG\r\n\x1a\n"),
    ],
)
def test_attention_command_exports_each_format(
    checkpoint, tmp_path, figure, fmt, magic, capsys
):
    out = tmp_path / f"figure.{fmt}"
    argv = [
        "attention",
        "--checkpoint",
        str(checkpoint),
        "--sentence",
        SENTENCES[0],
        "--figure",
        figure,
        "--word",
        "guitar",
        "--out",
        str(out),
    ]
    assert main(argv) == 0
    head = out.read_bytes()[:200]
    assert magic in head, f"{out.name} does not start like a {fmt} file: {head[:40]!r}"
    if fmt == "html":
        text = out.read_text()
        assert (
            "cdn.jsdelivr" not in text and '<script src="http' not in text
        )  # opens offline


@pytest.mark.parametrize(
    "extra,message",
    [
        (["--figure", "5", "--layer", "9"], "no layer 9"),
        (["--figure", "5", "--heads", "1", "7"], "no head 7"),
        (["--figure", "3", "--word", "zebra"], "not in the sentence"),
        (["--figure", "3", "--word", "man", "--out-format"], None),
    ],
)
def test_bad_arguments_get_one_line_and_fail(
    checkpoint, tmp_path, extra, message, capsys
):
    argv = [
        "attention",
        "--checkpoint",
        str(checkpoint),
        "--sentence",
        SENTENCES[0],
        "--out",
        str(tmp_path / "x.svg"),
        *extra,
    ]
    if message is None:
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        assert exit_info.value.code == 2
        return
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err.splitlines()[0]


def test_unknown_format_and_foreign_checkpoint_are_refused(checkpoint, tmp_path, capsys):
    base = ["attention", "--sentence", "Two dogs.", "--figure", "5"]
    assert (
        main([*base, "--checkpoint", str(checkpoint), "--out", str(tmp_path / "x.pdf")])
        == 1
    )
    assert "unknown format '.pdf'" in capsys.readouterr().err
    foreign = tmp_path / "not.pt"
    foreign.write_bytes(b"hello")
    assert (
        main([*base, "--checkpoint", str(foreign), "--out", str(tmp_path / "x.svg")]) == 1
    )
    assert "not a readable checkpoint" in capsys.readouterr().err


_CANVAS = (
    "(() => { const c = document.querySelector('canvas, svg'); "
    "return c && (c.toDataURL ? c.toDataURL() : c.outerHTML); })()"
)


def test_explorer_dropdown_redraws_in_chromium(checkpoint, tmp_path):
    chromium = find_chromium()
    if chromium is None:
        pytest.skip("no Chromium or Chrome on PATH (set AT_CHROMIUM to its path)")
    out = tmp_path / "explorer.html"
    assert (
        main(
            [
                "attention",
                "--checkpoint",
                str(checkpoint),
                "--sentence",
                SENTENCES[1],
                "--figure",
                "explorer",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    with Browser(chromium) as page:
        page.open(out.as_uri())
        page.wait_for(
            "document.querySelectorAll('select').length >= 3 && !!document.querySelector('canvas, svg')"
        )
        before = page.wait_for(_CANVAS)
        names = page.evaluate(
            "Array.from(document.querySelectorAll('.vega-bind-name')).map(e => e.textContent)"
        )
        assert any("layer" in n for n in names), names
        page.evaluate("""(() => {
            const label = Array.from(document.querySelectorAll('.vega-bind'))
                .find(b => b.textContent.includes('layer'));
            const select = label.querySelector('select');
            select.value = select.options[0].value;
            select.dispatchEvent(new Event('change', {bubbles: true}));
        })()""")
        after = page.wait_for(
            f"(() => {{ const now = {_CANVAS}; return now !== {json.dumps(before)} && now; }})()",
            timeout=10,
        )
        assert after != before
        shot = REPO / "results" / "smoke" / "screenshots" / "attention_explorer.png"
        page.screenshot(shot)


def test_find_word_follows_whole_words_not_prefixes():
    pieces = ["▁ma", "j", "ority", "▁ma", "king", "▁the", "▁La", "w", ",", "▁its"]
    assert af.find_word(pieces, "making") == 3
    assert af.find_word(pieces, "Law") == 6 and af.find_word(pieces, "its") == 9
    with pytest.raises(ValueError, match="not in the sentence"):
        af.find_word(pieces, "ma")


def test_head_statistics_of_an_encoder_only_pass(data):
    alone = af.SentenceAttention(
        data.source_tokens, [], {"encoder": data.weights["encoder"]}
    )
    stats = af.head_statistics(alone)
    full = af.head_statistics(data)
    assert set(stats["kind"]) == {"encoder"}
    np.testing.assert_allclose(
        stats["entropy (bits)"], full[full.kind == "encoder"]["entropy (bits)"]
    )


def test_figure3_title_names_the_heads_it_draws(data):
    assert "in every head" in af.figure3(data, "guitar").to_dict()["title"]
    assert (
        "in heads 1, 3 (" in af.figure3(data, "guitar", heads=[1, 3]).to_dict()["title"]
    )


def test_figure3_draws_every_head_it_names_apart(data):
    """Two heads that attend to the same words draw two lines, side by side, not one over the
    other; with every head drawn, no head hides another either."""
    for heads in ([1, 3], [4, 1], None):
        spec = af.figure3(data, "guitar", heads=heads).to_dict()
        assert audit.chart_faults(spec) == [], heads
        (rules,) = [layer for layer in spec["layer"] if layer["mark"]["type"] == "rule"]
        rows = spec["datasets"][rules["data"]["name"]]
        drawn = {r["head"] for r in rows}
        assert drawn == ({1, 3} if heads == [1, 3] else drawn)
        at_key = {(r["key"], r["head"]): r["y_key"] for r in rows if r["layer"] == 1}
        keys = {k for k, _ in at_key}
        for k in keys:
            ys = sorted(y for (kk, _), y in at_key.items() if kk == k)
            assert len(set(ys)) == len(drawn) and ys[-1] - ys[0] < 1  # within a row


def test_figure3_and_lines_chart_mark_the_query_word_in_the_left_column(data):
    """Both charts share one pair of word columns: every query on the left, only the picked one
    red, every key on the right, and a bare word-start piece shown as the mark."""

    def columns(chart):
        spec = chart.to_dict()
        texts = [layer for layer in spec["layer"] if layer["mark"]["type"] == "text"]
        datasets = spec["datasets"]
        return [datasets[layer["data"]["name"]] for layer in texts]

    queries = data.tokens("encoder", "query")
    q = af.find_word(queries, "guitar")
    left, right = columns(af.figure3(data, "guitar"))
    assert [row["i"] for row in left if row["picked"]] == [q]
    assert len(left) == len(queries) and "picked" not in right[0]
    bare = af.SentenceAttention(
        ["▁", "▁guitar"], ["<s>"], {"encoder": np.full((1, 1, 2, 2), 0.5)}
    )
    left, right = columns(af.figure3(bare, "guitar"))
    assert (
        [row["token"] for row in left] == ["▁", "guitar"] == [r["token"] for r in right]
    )
    assert [row["picked"] for row in left] == [False, True]
    w = np.full((1, 2, 2), 0.5)  # one head, two queries, two keys
    left, right = columns(
        af.lines_chart(w, ["▁", "▁a"], ["▁b", "▁"], [0], queries=[1], threshold=0.0)
    )
    assert [row["token"] for row in left] == ["▁", "a"]
    assert [row["token"] for row in right] == ["b", "▁"]
    assert [row["picked"] for row in left] == [False, True]


def test_numbers_on_the_head_grid_are_white_on_the_mid_teals_and_black_on_the_greens():
    # WCAG 2's ratio chose black on #21918c, where the numbers were hard to read; APCA chooses
    # white there and black from the greens on, as the eye does
    colours = [af.text_colour(af._rgb(stop)) for stop in af.VIRIDIS]
    assert colours == ["white"] * 7 + ["black"] * 4
    # the method's published reference pair: #888 text on white is about Lc 63.1
    assert af.apca_contrast((136, 136, 136), (255, 255, 255)) == pytest.approx(
        63.06, abs=0.1
    )
    assert (
        af.apca_contrast((255, 255, 255), (0, 0, 0)) < -100
    )  # light on dark is negative


def test_head_grids_are_headed_by_their_kind_of_attention_in_words(data):
    spec = af.head_statistics_chart(af.head_statistics(data)).to_dict()
    expression = spec["facet"]["column"]["header"]["labelExpr"]
    assert '"encoder-decoder", "attention"' in expression
    assert '"decoder", "self-attention"' in expression

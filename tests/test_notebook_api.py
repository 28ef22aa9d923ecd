"""The package's top as a notebook uses it: `load`, `translate`, `attention`, `attention_chart`,
on a tiny checkpoint; the README's notebook example and every docstring example run as written."""

from __future__ import annotations

import doctest
import html
import inspect
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import annotated_transformer
from annotated_transformer import (
    AttentionChart,
    TrainedModel,
    attention,
    attention_chart,
    load,
    translate,
)
from annotated_transformer import notebook_api as api
from annotated_transformer.evaluation import scoring
from annotated_transformer.training.checkpoint import CheckpointError
from tests.support.browser import Browser, find_chromium
from tests.support.tiny_checkpoint import SENTENCES, write_tiny_checkpoint

REPO = Path(__file__).resolve().parents[1]
# The run folder the README's example and the docstrings' examples load.
EXAMPLE_RUN = '"runs/cpu"'
# A remote script: what a page that draws offline must not hold.
REMOTE_SCRIPT = re.compile(r"<script[^>]*\bsrc\s*=", re.IGNORECASE)


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """A run folder as `train` leaves it for a notebook: its averaged.pt beside its last.pt."""
    folder = tmp_path_factory.mktemp("run")
    write_tiny_checkpoint(folder / "averaged.pt", seed=1)
    write_tiny_checkpoint(folder / "last.pt", seed=2)
    return folder


@pytest.fixture(scope="module")
def trained(run) -> TrainedModel:
    return load(run)


# ------------------------------------------------------------------------------------------ load
def test_load_prefers_a_run_folders_averaged_checkpoint(run, trained):
    assert trained.path == run / "averaged.pt"
    assert not trained.model.training
    assert trained.config == trained.model.config
    averaged = torch.load(run / "averaged.pt", weights_only=True)["model"]
    for name, tensor in trained.model.state_dict().items():
        assert torch.equal(tensor, averaged[name]), name
    assert "step 0" in repr(trained) and "beam 4" in repr(trained)


def test_load_takes_last_without_averaged_and_a_file_as_it_is(run, tmp_path):
    shutil.copy(run / "last.pt", tmp_path / "last.pt")
    assert load(tmp_path).path == tmp_path / "last.pt"
    assert load(run / "last.pt").path == run / "last.pt"
    assert translate(load(run / "averaged.pt"), SENTENCES[1]) == translate(
        load(run), SENTENCES[1]
    )


def _one_line(error: pytest.ExceptionInfo) -> str:
    message = str(error.value)
    assert "\n" not in message and message, message
    return message


def test_load_refuses_what_is_no_run_nor_checkpoint_in_one_line(tmp_path):
    with pytest.raises(FileNotFoundError) as missing:
        load(tmp_path / "nowhere")
    assert "no run folder or checkpoint" in _one_line(missing)
    with pytest.raises(FileNotFoundError) as empty:
        load(tmp_path)
    assert "averaged.pt or last.pt" in _one_line(empty)
    (tmp_path / "notes.pt").write_text("not a checkpoint")
    with pytest.raises(CheckpointError) as foreign:
        load(tmp_path / "notes.pt")
    assert "notes.pt" in _one_line(foreign)


def test_load_refuses_an_averaged_checkpoint_the_run_has_moved_past(run, tmp_path):
    """Newer snapshots than the ones averaged.pt averages: it is no longer the run's model."""
    (tmp_path / "checkpoints").mkdir()
    shutil.copy(run / "last.pt", tmp_path / "checkpoints" / "step_00000010.pt")
    shutil.copy(run / "averaged.pt", tmp_path / "averaged.pt")
    shutil.copy(run / "last.pt", tmp_path / "last.pt")
    with pytest.raises(ValueError) as stale:
        load(tmp_path)
    message = _one_line(stale)
    assert "average --run" in message and "last.pt" in message


# ------------------------------------------------------------------------------------------ translate
def test_translate_a_list_as_each_sentence_alone(trained):
    together = translate(trained, SENTENCES)
    assert isinstance(together, list) and len(together) == len(SENTENCES)
    assert together == [translate(trained, sentence) for sentence in SENTENCES]
    assert all(isinstance(text, str) for text in together)
    # the checkpoint's profile's beam, as `evaluate` decodes
    assert together == scoring.translate(
        trained.model, trained.tokenizer, SENTENCES, trained.decoding
    )
    assert translate(trained, []) == []


def test_translate_one_string_gives_one_string_and_beam_1_is_greedy(trained):
    one = translate(trained, SENTENCES[0], beam_size=1)
    assert isinstance(one, str)
    assert (
        one
        == scoring.translate(
            trained.model,
            trained.tokenizer,
            [SENTENCES[0]],
            trained.decoding,
            beam_size=1,
        )[0]
    )
    with pytest.raises(ValueError, match="item 1"):
        translate(trained, ["A dog.", 3])


# ------------------------------------------------------------------------------------------ attention
def test_attention_holds_every_layer_and_head_with_the_tokens(trained):
    seen = attention(trained, SENTENCES[0], "Ein Mann spielt Gitarre.")
    layers, heads = trained.config.n_layers, trained.config.n_heads
    assert seen.source_tokens[-1] == "</s>"
    assert seen.target_tokens[0] == "<s>"
    pieces = trained.tokenizer.encode("Ein Mann spielt Gitarre.")
    assert len(seen.target_tokens) == 1 + len(pieces)
    q_src, q_tgt = len(seen.source_tokens), len(seen.target_tokens)
    assert seen.weights["encoder"].shape == (layers, heads, q_src, q_src)
    assert seen.weights["decoder_self"].shape == (layers, heads, q_tgt, q_tgt)
    assert seen.weights["decoder_cross"].shape == (layers, heads, q_tgt, q_src)
    for w in seen.weights.values():
        np.testing.assert_allclose(w.sum(-1), 1.0, atol=1e-5)
    # without a target, the decoder reads the model's own translation
    assert attention(trained, SENTENCES[1]).target_tokens[0] == "<s>"


# ------------------------------------------------------------------------------------------ charts
@pytest.fixture(scope="module")
def chart(trained) -> AttentionChart:
    return attention_chart(trained, SENTENCES[1], kind="cross", layer=2, head=3)


def test_a_saved_chart_draws_offline_and_holds_its_spec(chart, tmp_path):
    out = chart.save(tmp_path / "x.html")
    assert out == tmp_path / "x.html"
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>")
    assert not REMOTE_SCRIPT.search(page), "the page loads a script from elsewhere"
    assert "cdn.jsdelivr" not in page and "vegaEmbed(" in page
    assert "https://vega.github.io/schema/vega-lite/" in page  # the Vega-Lite spec
    assert "encoder-decoder attention, layer 2, head 3" in page
    spec = chart.to_dict()
    assert spec["title"] == "encoder-decoder attention, layer 2, head 3"
    assert chart.chart.to_dict()["mark"]["type"] == "rect"


@pytest.mark.parametrize("name,magic", [("x.svg", b"<svg"), ("x.PNG", b"\x89PNG")])
def test_a_chart_saves_as_svg_and_png(chart, tmp_path, name, magic):
    assert magic in chart.save(tmp_path / name).read_bytes()[:200]


def test_a_chart_in_jupyter_is_a_self_contained_frame(chart):
    bundle = chart._repr_mimebundle_()
    assert set(bundle) == {"text/html", "text/plain"}
    frame = bundle["text/html"]
    assert chart._repr_html_() == frame
    match = re.fullmatch(r'<iframe srcdoc="([^"]*)"[^>]*></iframe>', frame)
    assert match, frame[:200]
    page = html.unescape(match.group(1))
    assert page.startswith("<!DOCTYPE html>") and "vegaEmbed(" in page
    assert not REMOTE_SCRIPT.search(page), "the frame loads a script from elsewhere"
    assert "https://vega.github.io/schema/vega-lite/" in page
    assert bundle["text/plain"] == (
        "<AttentionChart: encoder-decoder attention, layer 2, head 3>"
    )


def test_every_kind_and_style_draws_and_bad_choices_are_named(trained, tmp_path):
    for kind in ("encoder", "decoder", "cross"):
        for style in ("heatmap", "lines"):
            drawn = attention_chart(trained, "Two dogs run.", kind=kind, style=style)
            assert drawn.to_dict()["title"].endswith(
                f"layer {trained.config.n_layers}, head 1"
            )
    with pytest.raises(ValueError, match="no layer 9"):
        attention_chart(trained, "Two dogs run.", layer=9)
    with pytest.raises(ValueError, match="no head 7"):
        attention_chart(trained, "Two dogs run.", head=7)
    with pytest.raises(ValueError, match="encoder, decoder or cross"):
        attention_chart(trained, "Two dogs run.", kind="self")
    with pytest.raises(ValueError, match="heatmap or lines"):
        attention_chart(trained, "Two dogs run.", style="bars")
    drawn = attention_chart(trained, "Two dogs run.")
    with pytest.raises(ValueError, match="unknown format '.pdf'"):
        drawn.save(tmp_path / "x.pdf")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        drawn.save(tmp_path / "missing" / "x.html")


def test_a_saved_chart_and_the_notebook_frame_draw_in_chromium(chart, tmp_path):
    chromium = find_chromium()
    if chromium is None:
        pytest.skip("no Chromium or Chrome on PATH (set AT_CHROMIUM to its path)")
    saved = chart.save(tmp_path / "saved.html")
    notebook = tmp_path / "notebook.html"
    notebook.write_text(
        f"<!DOCTYPE html><html><body><p>a cell</p>{chart._repr_html_()}</body></html>",
        encoding="utf-8",
    )
    drawn = "document.querySelector('.vega-embed svg, .vega-embed canvas') !== null"
    with Browser(chromium) as page:
        page.open(saved.as_uri())
        assert page.wait_for(drawn)
        page.open(notebook.as_uri())
        inner = f"document.querySelector('iframe').contentWindow.eval(\"{drawn}\")"
        assert page.wait_for(
            f"(() => {{ try {{ return {inner}; }} catch (e) {{ return false; }} }})()"
        )
        # the frame grows to the chart once it has drawn
        assert page.wait_for(
            "document.querySelector('iframe').getBoundingClientRect().height >= "
            "document.querySelector('iframe').contentDocument.body.scrollHeight"
        )


# ------------------------------------------------------------------------------------------ the README
def readme_notebook_example(heading: str = "### Use it in your own notebook") -> str:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index(heading) :]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match, f"the README's section {heading!r} has no python block"
    return match.group(1)


def test_the_readmes_model_example_runs_as_written():
    namespace: dict = {}
    code = readme_notebook_example("### The model and the pipeline")
    exec(compile(code, "README.md", "exec"), namespace)
    assert namespace["logits"].shape == (2, 9, 37000)
    pad = namespace["config"].pad_id
    assert namespace["real"].shape[0] == (namespace["tgt_out"] != pad).sum()


def test_the_readmes_notebook_example_runs(run, tmp_path, monkeypatch):
    code = readme_notebook_example()
    assert code.count(EXAMPLE_RUN) == 1, f"the example loads {EXAMPLE_RUN} once"
    assert 5 <= len(code.strip().splitlines()) <= 10
    monkeypatch.chdir(tmp_path)
    exec(compile(code.replace(EXAMPLE_RUN, repr(str(run))), "README.md", "exec"), {})
    written = list(tmp_path.glob("*.html"))
    assert len(written) == 1 and not REMOTE_SCRIPT.search(written[0].read_text())


# ------------------------------------------------------------------------------------------ the top
def test_every_public_name_has_a_docstring_and_the_new_ones_an_example():
    for name in annotated_transformer.__all__:
        obj = getattr(annotated_transformer, name)
        if not (inspect.isfunction(obj) or inspect.isclass(obj)):
            continue  # constants (PRESET_NAMES, TABLE3_ROWS) are described where defined
        assert inspect.getdoc(obj), f"annotated_transformer.{name} has no docstring"
    for name in api.__all__:
        assert name in annotated_transformer.__all__
        assert ">>> " in inspect.getdoc(getattr(api, name)), (
            f"{name}'s docstring has no example"
        )
    assert annotated_transformer.translate is api.translate
    assert set(api.__all__) <= set(dir(annotated_transformer))
    # tab completion offers the package's names, not the modules it imports for itself
    assert {"os", "warnings"}.isdisjoint(dir(annotated_transformer))


def test_the_docstring_examples_run(run, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner(verbose=False)
    tests = [t for t in finder.find(api) if t.examples]
    assert len(tests) >= len(api.__all__)
    for test in tests:
        for example in test.examples:
            example.source = example.source.replace(EXAMPLE_RUN, repr(str(run)))
        runner.run(test)
    results = runner.summarize(verbose=False)
    assert results.failed == 0 and results.attempted >= 15


def test_importing_the_package_imports_no_chart_library():
    code = (
        "import sys, annotated_transformer\n"
        "from annotated_transformer import load, translate, attention, attention_chart\n"
        "from annotated_transformer import *\n"
        "print(sorted(m for m in ('altair', 'pandas', 'vl_convert') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True
    )
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_a_missing_chart_library_is_named_with_its_extra(trained, monkeypatch):
    figures = "annotated_transformer.chapters.attention_visualizations.figures"
    monkeypatch.delitem(sys.modules, figures, raising=False)
    monkeypatch.delattr(
        sys.modules["annotated_transformer.chapters.attention_visualizations"],
        "figures",
        raising=False,
    )
    monkeypatch.setitem(sys.modules, "altair", None)  # as where altair is not installed
    with pytest.raises(ImportError, match=r"needs altair .*\[charts\]"):
        attention(trained, "Two dogs run.")

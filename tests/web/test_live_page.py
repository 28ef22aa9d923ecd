"""The live page: its sentencepiece encoder in JavaScript gives sentencepiece's ids, and a sentence
typed into the page comes back translated, token for token as the PyTorch model translates it."""

from __future__ import annotations

import functools
import http.server
import json
import os
import shutil
import threading
from pathlib import Path

import pytest
import torch

from annotated_transformer.model.decoding import greedy_decode
from annotated_transformer.training.checkpoint import model_from_checkpoint
from annotated_transformer.web import live_page
from tests.support.browser import Browser, find_chromium
from tests.support.tiny_checkpoint import SENTENCES, write_tiny_checkpoint

pytest.importorskip("onnx", reason="the ONNX export needs `pip install onnx onnxruntime`")
from annotated_transformer.web.onnx_export import OnnxTranslator, export_onnx

REPO = Path(__file__).resolve().parents[2]
VENDOR = REPO / "_static" / "vendor"
TOKENIZER_SENTENCES = [
    *SENTENCES,
    "  Spaces   around,  and ÉLAN: naïve café (1,2)! ",
    "Ein Mädchen läuft über die Straße.",
    "x",
    "unknown ☃ symbols ✓ here",
]


@pytest.fixture(scope="module", params=["float32", "int8"])
def site(tmp_path_factory, request):
    """A one-page site: the widget, the Vega scripts, onnxruntime-web and a tiny model's export,
    with float32 or int8 weights (chapter 08 serves int8 when its BLEU holds up)."""
    if find_chromium() is None:
        pytest.skip("no Chromium or Chrome on PATH (set AT_CHROMIUM to its path)")
    try:
        live_page.onnxruntime_web_files(download=False)
    except FileNotFoundError as error:
        pytest.skip(str(error))
    root = tmp_path_factory.mktemp("site")
    checkpoint = write_tiny_checkpoint(root / "tiny.pt", seed=3)
    export_onnx(checkpoint, root / "export", quantize=request.param == "int8")
    static = root / "_static"
    live_page.stage_live_assets(static, root / "live", root / "export", download=False)
    for name in ("vega.min.js", "vega-lite.min.js", "vega-embed.min.js"):
        shutil.copy2(VENDOR / name, static / name)
    scripts = "".join(
        f'<script src="_static/{n}"></script>'
        for n in ("vega.min.js", "vega-lite.min.js", "vega-embed.min.js")
    )
    (root / "index.html").write_text(
        f"<!DOCTYPE html><html><head><meta charset='utf-8'>{scripts}</head><body>"
        f"{live_page.widget_html('_static', 'live', SENTENCES[1])}</body></html>"
    )
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield root, checkpoint, f"http://127.0.0.1:{server.server_address[1]}/index.html"
    # (root / "export" is the served model; its weights are request.param's)
    server.shutdown()


LOADED = """performance.getEntriesByType('resource').map(e => e.name)
    .filter(n => /\\.(onnx|wasm)$|ort\\.wasm|tokenizer\\.json|model\\.json/.test(n))"""
STATE = "document.querySelector('.at-live')?.getAttribute('data-state')"


def click_translate(page, sentence: str) -> None:
    page.evaluate(f"""(() => {{
        document.querySelector('.at-live-input').value = {json.dumps(sentence)};
        document.querySelector('.at-live-go').click();
    }})()""")


def test_live_page_translates_a_typed_sentence(site):
    root, checkpoint, url = site
    model, tokenizer = model_from_checkpoint(checkpoint)
    with Browser(find_chromium()) as page:
        page.open(url)
        page.wait_for(f"{STATE} === 'idle'", timeout=30)
        # nothing of the model is fetched before the reader asks
        assert page.evaluate(LOADED) == []
        click_translate(page, "   ")
        page.wait_for(f"{STATE} === 'empty'", timeout=10)
        assert page.evaluate(LOADED) == []
        sentence = "A girl in a red coat walks her dog."
        click_translate(page, sentence)
        page.wait_for(f"{STATE} === 'done'", timeout=60)
        loaded = page.evaluate(LOADED)
        assert any(n.endswith(".onnx") for n in loaded), loaded
        text = page.evaluate("document.querySelector('.at-live-output').textContent")
        page_ms = float(
            page.evaluate("document.querySelector('.at-live').getAttribute('data-ms')")
        )
        # The JavaScript encoder against sentencepiece itself.
        encoded = page.evaluate(
            f"""(async () => {{
            const t = await document.querySelector('.at-live').atTranslator;
            return {json.dumps(TOKENIZER_SENTENCES)}.map(s => t.tokenizer.encode(s));
        }})()""",
            await_promise=True,
        )
        assert encoded == [tokenizer.encode(s) for s in TOKENIZER_SENTENCES]
        page.screenshot(
            REPO / "results" / "smoke" / "screenshots" / "live_translation_test.png"
        )
        # an error clears the previous answer instead of leaving it on screen as if it were one
        click_translate(page, " ".join(["dog"] * 200))  # past the tiny model's positions
        page.wait_for(f"{STATE} === 'error'", timeout=30)
        assert (
            page.evaluate("document.querySelector('.at-live-output').textContent") == ""
        )
        status = page.evaluate("document.querySelector('.at-live-status').textContent")
        assert "longer than the model's positions" in status
    ids = tokenizer.encode(sentence) + [tokenizer.eos_id]
    if json.loads((root / "export" / "model.json").read_text())["weights"] == "int8":
        # int8 arithmetic is not PyTorch's: the page must match onnxruntime's own greedy search
        expected = OnnxTranslator(root / "export").greedy(ids, len(ids) + 50)
    else:
        expected = greedy_decode(model, torch.tensor([ids]), len(ids) + 50)[0]
    assert text == tokenizer.decode(expected)
    assert (
        0 < page_ms < 30_000
    )  # the page's own timing of the translation, as it shows it


def test_missing_runtime_offline_fails_with_the_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("AT_ORT_WEB_DIR", str(tmp_path / "empty"))
    monkeypatch.setattr(
        live_page, "ORT_WEB_URL", "http://127.0.0.1:9/onnxruntime-web.tgz"
    )  # nothing listens
    with pytest.raises(FileNotFoundError, match="run scripts/setup.sh"):
        live_page.onnxruntime_web_files(download=False)
    with pytest.raises(
        OSError, match="could not be downloaded .* connect to the network once"
    ):
        live_page.onnxruntime_web_files()


def test_a_changed_tarball_is_refused(tmp_path, monkeypatch):
    tarball = tmp_path / "ort.tgz"
    tarball.write_bytes(b"not the published package")
    monkeypatch.setenv("AT_ORT_WEB_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(live_page, "ORT_WEB_URL", tarball.as_uri())
    with pytest.raises(OSError, match="does not match the pinned sha512"):
        live_page.onnxruntime_web_files()
    assert not (tmp_path / "cache").exists()


def test_site_without_export_gets_a_note(tmp_path):
    notes = live_page.stage_for_site(
        tmp_path / "stage", tmp_path / "runs" / "book-x-onnx"
    )
    assert len(notes) == 1 and "no export" in notes[0]


def test_the_page_serves_int8_only_when_its_bleu_is_inside_float32s_interval():
    full = {"bleu": 36.0, "mean": 36.1, "ci95": 1.5}
    inside = {"float32": full, "int8": {"bleu": 34.7, "mean": 34.8, "ci95": 1.5}}
    outside = {"float32": full, "int8": {"bleu": 34.5, "mean": 34.6, "ci95": 1.5}}
    assert live_page.choose_export(inside) == "int8"
    assert live_page.choose_export(outside) == "float32"
    with pytest.raises(ValueError, match="float32"):
        live_page.choose_export({"int8": full, "float32": full})


def _model_json(weights: str) -> str:
    """A whole model.json (what the page reads; the site refuses less) with `weights`."""
    return json.dumps(
        {
            "max_len": 64,
            "bos_id": 1,
            "eos_id": 2,
            "banned": [0, 1],
            "weights": weights,
            "files": {"encoder": "encoder.onnx", "decoder": "decoder.onnx"},
        }
    )


def test_site_stages_chapter_08s_choice_before_the_float32_export(tmp_path):
    if not live_page.ort_cache_dir().is_dir():
        pytest.skip("onnxruntime-web is not in the cache (scripts/setup.sh fetches it)")
    exports = live_page.exports_dir(tmp_path / "runs" / "book-p")
    for name, weights in (
        (live_page.FLOAT32_EXPORT, "float32"),
        (live_page.LIVE_EXPORT, "int8"),
    ):
        (exports / name).mkdir(parents=True)
        (exports / name / "model.json").write_text(_model_json(weights))
    try:
        notes = live_page.stage_for_site(tmp_path / "stage", exports)
    except FileNotFoundError as error:
        pytest.skip(str(error))
    assert "int8 weights" in notes[0], notes
    served = tmp_path / "stage" / "_extra" / live_page.SITE_LIVE / live_page.SITE_MODEL
    assert json.loads((served / "model.json").read_text())["weights"] == "int8"


def test_a_choice_older_than_the_float32_export_is_not_served(tmp_path):
    """A run that exported float32 and then failed before choosing must not leave the site on the
    previous model's choice; a run that chose serves its choice."""
    exports = live_page.exports_dir(tmp_path / "runs" / "book-p")
    web = exports / live_page.FLOAT32_EXPORT
    small = exports / live_page.INT8_EXPORT
    for folder, weights in ((web, "float32"), (small, "int8")):
        folder.mkdir(parents=True)
        (folder / "model.json").write_text(json.dumps({"weights": weights}))
    live = live_page.publish_choice(small, exports)
    old_time = (live / "model.json").stat().st_mtime
    assert json.loads((live / "model.json").read_text())["weights"] == "int8"
    assert not live_page._older(live, web)
    # the next run exports float32 again (after the choice) and stops before its own choice
    os.utime(live / "model.json", (old_time - 10, old_time - 10))
    assert live_page._older(live, web)
    # a new choice replaces the old one whole, including files the new export lacks
    (live / "left_over.bin").write_bytes(b"x")
    live_page.publish_choice(web, exports)
    assert json.loads((live / "model.json").read_text())["weights"] == "float32"
    assert not (live / "left_over.bin").exists()
    assert not live_page._older(live, web)

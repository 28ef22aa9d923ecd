"""The ONNX export's model.json is a record of kind "onnx_model" (runtime/records.py): the export
writes it through the schema, and OnnxTranslator and the site's live page read it through the
schema, so a broken or hand-edited description is one line naming the file, the field and the fix."""

from __future__ import annotations

import json
import shutil

import pytest

from annotated_transformer.runtime import records
from annotated_transformer.runtime.records import RecordError
from annotated_transformer.web import live_page
from tests.support.tiny_checkpoint import write_tiny_checkpoint

pytest.importorskip("onnx", reason="the ONNX export needs `pip install onnx onnxruntime`")
pytest.importorskip(
    "onnxruntime", reason="OnnxTranslator needs `pip install onnxruntime`"
)
from annotated_transformer.web import onnx_export  # noqa: E402
from annotated_transformer.web.onnx_export import OnnxTranslator, export_onnx  # noqa: E402

ORIGIN = {"path": "runs/tiny/averaged.pt", "step": 7, "averaged_from": None}


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    root = tmp_path_factory.mktemp("model_json")
    checkpoint = write_tiny_checkpoint(root / "tiny.pt", layers=1, heads=2, seed=5)
    export_onnx(checkpoint, root / "web", origin=ORIGIN)
    return checkpoint, root / "web"


def _edited(exported, tmp_path, edit) -> tuple:
    """A copy of the export whose model.json `edit` changed (a dict -> dict, or -> str)."""
    folder = tmp_path / "web"
    shutil.copytree(exported[1], folder)
    info = json.loads((folder / "model.json").read_text())
    changed = edit(info)
    (folder / "model.json").write_text(
        changed if isinstance(changed, str) else json.dumps(changed)
    )
    return folder, folder / "model.json"


def _without(*path: str):
    def edit(info: dict) -> dict:
        inner = info
        for key in path[:-1]:
            inner = inner[key]
        del inner[path[-1]]
        return info

    return edit


def test_the_schema_declares_every_field_the_export_writes_and_accepts_them(exported):
    _, folder = exported
    info = records.read_record(folder / "model.json", "onnx_model")
    declared = records.SCHEMAS["onnx_model"]["properties"]
    assert set(info) <= set(declared), set(info) - set(declared)
    assert info["checkpoint"] == ORIGIN
    assert info["files"]["encoder"] == onnx_export.ENCODER_FILE
    assert info["files"]["decoder"] == onnx_export.DECODER_FILE
    # written as before the schema checked it: indent 1, no newline at the end
    assert (folder / "model.json").read_text() == json.dumps(info, indent=1)


@pytest.mark.parametrize(
    "field",
    [
        ("max_len",),
        ("bos_id",),
        ("eos_id",),
        ("banned",),
        ("weights",),
        ("files", "decoder"),
    ],
    ids=lambda field: ".".join(field),
)
def test_a_model_json_without_a_field_the_decoder_reads_is_one_line_naming_file_and_field(
    exported, tmp_path, field
):
    folder, path = _edited(exported, tmp_path, _without(*field))
    with pytest.raises(RecordError) as caught:
        OnnxTranslator(folder)
    message = str(caught.value)
    assert "\n" not in message
    assert str(path) in message and f"{'.'.join(field)} is missing" in message
    assert f"export-onnx --out {folder}" in message


def test_a_hand_edited_value_of_the_wrong_kind_is_named_with_the_kind_wanted(
    exported, tmp_path
):
    folder, path = _edited(exported, tmp_path, lambda info: {**info, "max_len": "64"})
    with pytest.raises(RecordError, match=r'max_len is "64", not an integer'):
        OnnxTranslator(folder)


def test_a_model_json_that_is_not_json_names_the_file_line_and_column(exported, tmp_path):
    folder, path = _edited(
        exported, tmp_path, lambda info: json.dumps(info, indent=1)[:-3]
    )
    with pytest.raises(RecordError) as caught:
        OnnxTranslator(folder)
    assert f"{path} is not valid JSON (line" in str(caught.value)
    assert "column" in str(caught.value)


def test_the_site_leaves_out_an_export_with_a_broken_model_json_naming_file_and_field(
    exported, tmp_path
):
    exports = live_page.exports_dir(tmp_path / "runs" / "book-p")
    web = exports / live_page.FLOAT32_EXPORT
    shutil.copytree(exported[1], web)
    info = json.loads((web / "model.json").read_text())
    del info["eos_id"]
    (web / "model.json").write_text(json.dumps(info))
    notes = live_page.stage_for_site(tmp_path / "stage", exports)
    assert len(notes) == 1, notes
    assert notes[0].startswith("live translation left out of the site: ")
    assert str(web / "model.json") in notes[0] and "eos_id is missing" in notes[0]
    assert not (tmp_path / "stage" / "_extra").exists()


def test_an_export_whose_description_a_reader_would_refuse_writes_nothing(
    exported, tmp_path, monkeypatch
):
    """A tokenizer without a padding piece (sentencepiece's pad_id -1) would make the page ban
    token -1, the last of the vocabulary: the export refuses to write that description."""
    checkpoint, _ = exported
    loaded = onnx_export.model_from_checkpoint

    def without_padding(*args, **kwargs):
        model, tokenizer = loaded(*args, **kwargs)
        model.config.pad_id = -1
        return model, tokenizer

    monkeypatch.setattr(onnx_export, "model_from_checkpoint", without_padding)
    out = tmp_path / "web"
    with pytest.raises(RecordError) as caught:
        export_onnx(checkpoint, out)
    assert f"not writing {out / 'model.json'}" in str(caught.value)
    assert "banned[0] is -1, not at least 0" in str(caught.value)
    assert list(out.iterdir()) == []  # no graph, no tokenizer, no model.json

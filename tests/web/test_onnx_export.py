"""The exported ONNX graphs translate token for token as the PyTorch model does."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import numpy as np
import pytest
import torch

from annotated_transformer.cli import main
from annotated_transformer.model.decoding import greedy_decode
from annotated_transformer.model.transformer import attention_maps
from annotated_transformer.training.checkpoint import model_from_checkpoint
from tests.support.tiny_checkpoint import SENTENCES, write_tiny_checkpoint

pytest.importorskip("onnx", reason="the ONNX export needs `pip install onnx onnxruntime`")
pytest.importorskip(
    "onnxruntime", reason="the ONNX check needs `pip install onnxruntime`"
)

from annotated_transformer.web.onnx_export import OnnxTranslator


def _test_sentences(n: int = 6) -> list[str]:
    root = os.environ.get("AT_DATA_DIR")
    path = Path(root or "") / "multi30k" / "test_2016_flickr.en.gz"
    if root and path.is_file():
        with gzip.open(path, "rt", encoding="utf-8") as f:
            return [next(f).strip() for _ in range(n)] + SENTENCES
    return SENTENCES


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    root = tmp_path_factory.mktemp("onnx")
    checkpoint = write_tiny_checkpoint(root / "tiny.pt", layers=2, heads=4, seed=3)
    assert (
        main(["export-onnx", "--checkpoint", str(checkpoint), "--out", str(root / "web")])
        == 0
    )
    return checkpoint, root / "web"


def test_onnx_greedy_gives_the_pytorch_tokens(exported):
    checkpoint, folder = exported
    model, tokenizer = model_from_checkpoint(checkpoint)
    translator = OnnxTranslator(folder)
    for sentence in _test_sentences():
        ids = tokenizer.encode(sentence) + [tokenizer.eos_id]
        expected = [
            t
            for t in greedy_decode(model, torch.tensor([ids]), 30)[0].tolist()
            if t != tokenizer.pad_id
        ]
        assert translator.greedy(ids, 30) == expected, sentence


def test_onnx_attention_outputs_are_attention_maps(exported):
    checkpoint, folder = exported
    model, tokenizer = model_from_checkpoint(checkpoint)
    translator = OnnxTranslator(folder)
    ids = tokenizer.encode(SENTENCES[0]) + [tokenizer.eos_id]
    prefix = [tokenizer.bos_id] + tokenizer.encode("Ein Mann spielt.")
    src = np.array([ids], dtype=np.int64)
    memory, encoder_attention = translator.encoder.run(None, {"src": src})
    _, cross = translator.decoder.run(
        None, {"src": src, "memory": memory, "prefix": np.array([prefix], dtype=np.int64)}
    )
    maps = attention_maps(model, torch.tensor([ids]), torch.tensor([prefix]))
    # float32 graphs against float32 eager: the same function, rounding differs only in the last bits
    np.testing.assert_allclose(
        encoder_attention, torch.stack([m[0] for m in maps["encoder"]]), atol=1e-5
    )
    np.testing.assert_allclose(
        cross, torch.stack([m[0] for m in maps["decoder_cross"]]), atol=1e-5
    )


def test_tokenizer_table_lists_every_piece(exported):
    import json

    checkpoint, folder = exported
    _, tokenizer = model_from_checkpoint(checkpoint)
    table = json.loads((folder / "tokenizer.json").read_text())
    assert table["type"] == "bpe" and len(table["pieces"]) == tokenizer.vocab_size
    assert [tokenizer.piece_to_id(p) for p in table["pieces"][:50]] == list(range(50))


def test_export_refuses_a_file_as_folder(exported, tmp_path, capsys):
    checkpoint, _ = exported
    file = tmp_path / "taken"
    file.write_text("x")
    assert main(["export-onnx", "--checkpoint", str(checkpoint), "--out", str(file)]) == 1
    assert "is a file: name a folder" in capsys.readouterr().err


def test_quantized_export_is_smaller_and_decodes(exported, tmp_path):
    checkpoint, folder = exported
    small = tmp_path / "int8"
    assert (
        main(
            [
                "export-onnx",
                "--checkpoint",
                str(checkpoint),
                "--out",
                str(small),
                "--quantize",
            ]
        )
        == 0
    )
    for name in ("encoder.onnx", "decoder.onnx"):
        assert (small / name).stat().st_size < (folder / name).stat().st_size
    assert not list(small.glob("*.float32.onnx"))
    _, tokenizer = model_from_checkpoint(checkpoint)
    tokens = OnnxTranslator(small).greedy(
        tokenizer.encode(SENTENCES[1]) + [tokenizer.eos_id], 20
    )
    assert tokens[0] == tokenizer.bos_id and len(tokens) >= 2

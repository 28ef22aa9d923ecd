"""A checkpoint as two ONNX graphs and a tokenizer table: what a web page needs to translate offline.

The decoder graph recomputes the whole target prefix at every step instead of carrying a KV cache.
A cached step would need the cache as graph inputs and outputs (two tensors per layer) and the
position offset threaded through; recomputation keeps the graph the same function the tests
already trust (`use_cache=False` in decoding.py), and for a caption of 20 tokens the extra work is
a few milliseconds. Both graphs also return attention weights, so the page can draw them:
the encoder's self-attention and the decoder's encoder-decoder attention, every layer and head.

`OnnxTranslator` runs the graphs with onnxruntime and decodes greedily exactly as
`decoding.greedy_decode` does, so a test can hold the exported model to the PyTorch one token for
token; the page's JavaScript decoder follows the same steps.
"""

from __future__ import annotations

import json
import logging
import os
import warnings
from pathlib import Path

import numpy as np
import torch
from torch import nn

from ..model.transformer import Transformer, recording_attention
from ..runtime.files import atomic_write_text, remove_file, rename, staged_files
from ..runtime.records import read_record, record_text
from ..training.checkpoint import model_from_checkpoint

ENCODER_FILE = "encoder.onnx"
DECODER_FILE = "decoder.onnx"
TOKENIZER_FILE = "tokenizer.json"
MODEL_FILE = "model.json"
OPSET = 17


class _EncoderGraph(nn.Module):
    """src (1, S) -> memory (1, S, d), encoder self-attention (layers, heads, S, S)."""

    def __init__(self, model: Transformer):
        super().__init__()
        self.model = model

    def forward(self, src: torch.Tensor):
        memory = self.model.encode(src)
        weights = torch.stack(
            [layer.self_attn.record[-1][0] for layer in self.model.encoder_layers]
        )
        return memory, weights


class _DecoderGraph(nn.Module):
    """(src, memory, prefix (1, T)) -> next-token logits (1, V), cross-attention (layers, heads, T, S)."""

    def __init__(self, model: Transformer):
        super().__init__()
        self.model = model

    def forward(self, src: torch.Tensor, memory: torch.Tensor, prefix: torch.Tensor):
        logits = self.model.decode(prefix, memory, self.model.source_mask(src))[:, -1]
        weights = torch.stack(
            [layer.cross_attn.record[-1][0] for layer in self.model.decoder_layers]
        )
        return logits, weights


def tokenizer_table(tokenizer) -> dict:
    """The pieces and scores of the sentencepiece BPE model, for an encoder written in JavaScript.

    sentencepiece's BPE encoding: normalise (NFKC here), mark word starts with "▁", split into
    characters, then repeatedly merge the adjacent pair whose merged piece has the highest score.
    """
    from sentencepiece import sentencepiece_model_pb2 as model_pb2

    proto = model_pb2.ModelProto()
    proto.ParseFromString(tokenizer.to_bytes())
    kind = model_pb2.TrainerSpec.ModelType.Name(proto.trainer_spec.model_type)
    if kind != "BPE":
        raise ValueError(
            f"the page's tokenizer implements sentencepiece BPE, this model is {kind}"
        )
    normalizer = proto.normalizer_spec
    return {
        "type": "bpe",
        "normalization": normalizer.name,
        "add_dummy_prefix": normalizer.add_dummy_prefix,
        "remove_extra_whitespaces": normalizer.remove_extra_whitespaces,
        "pieces": [p.piece for p in proto.pieces],
        "scores": [round(p.score, 4) for p in proto.pieces],
        # 1 normal, 2 unknown, 3 control, 4 user defined, 6 byte, 5 unused
        "kinds": [int(p.type) for p in proto.pieces],
        "unk_id": tokenizer.unk_id,
        "bos_id": tokenizer.bos_id,
        "eos_id": tokenizer.eos_id,
        "pad_id": tokenizer.pad_id,
    }


@torch.no_grad()
def export_onnx(
    checkpoint: str | os.PathLike | dict,
    out_dir: str | os.PathLike,
    *,
    quantize: bool = False,
    origin: dict | None = None,
) -> dict[str, Path]:
    """Write encoder.onnx, decoder.onnx, tokenizer.json and model.json into `out_dir`.

    `origin` (the checkpoint's path, step and `averaged_from`, as `export-onnx` gives it) goes into
    model.json as "checkpoint", so an export names what it was made from.

    `quantize=True` stores the weight matrices as int8 (onnxruntime's dynamic quantization), about a
    quarter of the float32 files; its arithmetic differs, so its tokens can differ from PyTorch's,
    and only the float32 export is held to them.
    """
    model, tokenizer = model_from_checkpoint(checkpoint, "cpu")
    # Every file is written into a staging folder and moved into `out_dir` only when all four are
    # complete: an interrupted export leaves the previous one whole.
    with staged_files(out_dir) as staging:
        written = _export_into(staging, model, tokenizer, quantize, origin, Path(out_dir))
    return {name: Path(out_dir) / path.name for name, path in written.items()}


def _export_into(
    out: Path,
    model,
    tokenizer,
    quantize: bool,
    origin: dict | None = None,
    published: Path | None = None,
) -> dict[str, Path]:
    """The four files, written into `out` (a staging folder that becomes `published`)."""
    src = torch.tensor([tokenizer.encode("A dog runs.") + [tokenizer.eos_id]])
    prefix = torch.tensor([[tokenizer.bos_id, 5, 6]])
    written = {}
    common = dict(opset_version=OPSET, dynamo=False)
    # The tracer warns about Python numbers taken from shapes (the head size, the position table's
    # length): both are fixed by the model, so the constants it records are right for every input.
    with recording_attention(model), warnings.catch_warnings():
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        memory = model.encode(src)
        torch.onnx.export(
            _EncoderGraph(model),
            (src,),
            out / ENCODER_FILE,
            input_names=["src"],
            output_names=["memory", "attention"],
            dynamic_axes={
                "src": {1: "source"},
                "memory": {1: "source"},
                "attention": {2: "source", 3: "source"},
            },
            **common,
        )
        torch.onnx.export(
            _DecoderGraph(model),
            (src, memory, prefix),
            out / DECODER_FILE,
            input_names=["src", "memory", "prefix"],
            output_names=["logits", "attention"],
            dynamic_axes={
                "src": {1: "source"},
                "memory": {1: "source"},
                "prefix": {1: "target"},
                "attention": {2: "target", 3: "source"},
            },
            **common,
        )
    written["encoder"], written["decoder"] = out / ENCODER_FILE, out / DECODER_FILE
    if quantize:
        # optional dependency, as for OnnxTranslator
        from onnxruntime.quantization import QuantType, quantize_dynamic

        # its advice to pre-process applies to image models
        logging.disable(logging.WARNING)
        try:
            for path in (written["encoder"], written["decoder"]):
                float_path = path.with_suffix(".float32.onnx")
                rename(path, float_path)
                quantize_dynamic(str(float_path), str(path), weight_type=QuantType.QInt8)
                remove_file(float_path)
        finally:
            logging.disable(logging.NOTSET)
    written["tokenizer"] = atomic_write_text(
        out / TOKENIZER_FILE,
        json.dumps(tokenizer_table(tokenizer), ensure_ascii=False, separators=(",", ":")),
    )
    c = model.config
    info = {
        "layers": c.decoder_layers,
        "encoder_layers": c.encoder_layers,
        "heads": c.n_heads,
        "d_model": c.d_model,
        "max_len": c.max_len,
        "vocab_size": tokenizer.vocab_size,
        "banned": [c.pad_id, c.bos_id],
        "bos_id": c.bos_id,
        "eos_id": c.eos_id,
        "weights": "int8" if quantize else "float32",
        "files": {name: path.name for name, path in written.items()},
    }
    if origin is not None:
        info["checkpoint"] = origin
    # checked as its readers (OnnxTranslator, the live page) will check it: a description they
    # would refuse is never written (RecordError naming the file it was to be), and the staged
    # export is dropped whole
    text = record_text(info, "onnx_model", (published or out) / MODEL_FILE)
    written["model"] = atomic_write_text(out / MODEL_FILE, text)
    return written


class OnnxTranslator:
    """Greedy translation with onnxruntime over the exported graphs (the page's algorithm, in Python)."""

    def __init__(self, folder: str | os.PathLike):
        import onnxruntime as ort  # optional dependency: only export checks and the live page need it

        folder = Path(folder)
        # a broken or hand-edited model.json is one line naming the file and the field
        self.info = read_record(folder / MODEL_FILE, "onnx_model")
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        self.encoder = ort.InferenceSession(
            str(folder / ENCODER_FILE), options, providers=["CPUExecutionProvider"]
        )
        self.decoder = ort.InferenceSession(
            str(folder / DECODER_FILE), options, providers=["CPUExecutionProvider"]
        )

    def greedy(self, src_ids: list[int], max_new_tokens: int) -> list[int]:
        """bos, then the argmax token at each step until eos or `max_new_tokens` (as greedy_decode)."""
        info = self.info
        max_new_tokens = max(1, min(max_new_tokens, info["max_len"] - 1))
        src = np.array([src_ids], dtype=np.int64)
        memory, _ = self.encoder.run(None, {"src": src})
        tokens = [info["bos_id"]]
        for _ in range(max_new_tokens):
            logits, _ = self.decoder.run(
                None,
                {
                    "src": src,
                    "memory": memory,
                    "prefix": np.array([tokens], dtype=np.int64),
                },
            )
            logits = logits[0].astype(np.float32)
            logits[info["banned"]] = -np.inf
            tokens.append(int(logits.argmax()))
            if tokens[-1] == info["eos_id"]:
                break
        return tokens

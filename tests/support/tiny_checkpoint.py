"""A checkpoint file of a tiny, randomly initialised Transformer with a real sentencepiece tokenizer.

Random weights draw valid attention (rows sum to 1, masks hold) and decode deterministically, which
is all the figure and export tests need; the tokenizer is trained on Multi30k lines when the staged
corpora are there, else on made-up English and German captions, so these tests need no data.
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import numpy as np
import torch

from annotated_transformer import Transformer
from annotated_transformer.data import train_tokenizer
from annotated_transformer.model.config import preset
from annotated_transformer.training.checkpoint import atomic_torch_save, snapshot_of

SENTENCES = [
    "A man in a blue shirt is playing a guitar.",
    "Two dogs run through the snow.",
    "The law will never be perfect, but its application should be just.",
]


def _lines(n: int = 300) -> list[str]:
    root = os.environ.get("AT_DATA_DIR")
    if root and (Path(root) / "multi30k" / "train.en.gz").is_file():
        lines = []
        for lang in ("en", "de"):
            with gzip.open(
                Path(root) / "multi30k" / f"train.{lang}.gz", "rt", encoding="utf-8"
            ) as f:
                lines += [next(f).strip() for _ in range(n)]
        return lines
    words = [
        "a",
        "man",
        "woman",
        "dog",
        "two",
        "the",
        "in",
        "on",
        "is",
        "are",
        "playing",
        "running",
        "blue",
        "red",
        "snow",
        "park",
        "street",
        "guitar",
        # German too: the model is EN->DE and the tests feed it German targets. With English words
        # alone the text is too poor for a 300-piece vocabulary ("Vocabulary size too high").
        "Ein",
        "eine",
        "Mann",
        "Frau",
        "Hund",
        "zwei",
        "im",
        "auf",
        "der",
        "die",
        "spielt",
        "läuft",
        "blauen",
        "roten",
        "Schnee",
        "Straße",
        "Gitarre",
    ]
    rng = np.random.default_rng(0)
    return [
        " ".join(rng.choice(words, size=int(rng.integers(3, 10)))) + "."
        for _ in range(2 * n)
    ] + SENTENCES


def write_tiny_checkpoint(
    path: Path, *, layers: int = 2, heads: int = 4, seed: int = 0
) -> Path:
    tokenizer = train_tokenizer(_lines(), vocab_size=300)
    torch.manual_seed(seed)
    config = preset(
        "tiny",
        n_layers=layers,
        n_heads=heads,
        d_model=32,
        d_ff=64,
        max_len=128,
        dropout=0.0,
    )
    model = Transformer(config, tokenizer.vocab_size, tokenizer.vocab_size).eval()
    state = snapshot_of(model, tokenizer, step=0)
    return atomic_torch_save(state, path)

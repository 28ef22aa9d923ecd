"""The parser's data, training through `fit`, loading a checkpoint, and the report of chapter 07:
the search chosen on dev, the test split parsed once, the floors and the trees written for evalb.
"""

from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import torch
from nltk import Tree

from ...data.batching import SRC_SPECIALS, EncodedPairs
from ...model.config import TransformerConfig
from ...model.transformer import Transformer
from ...runtime.files import atomic_write_text
from ...training.checkpoint import load_checkpoint
from ...training.fit import Fitted, fit
from ...training.settings import TrainSettings
from .baselines import baselines
from .linearization import Delinearized, linearize
from .scoring import EVALB_CONVENTIONS, _short_sentences, corpus_score, f1_by_length
from .search import PAPER_ALPHA, PAPER_BEAM, PAPER_EXTRA_LENGTH, evaluate_parser
from .vocabulary import ParserVocabularies


def write_trees(path: str | os.PathLike, trees: Iterable[Tree | Delinearized]) -> Path:
    """One bracketed tree per line, in order, as evalb reads them."""
    lines = [
        (t.tree if isinstance(t, Delinearized) else t).pformat(margin=sys.maxsize)
        for t in trees
    ]
    path = Path(path)
    atomic_write_text(path, "".join(line + "\n" for line in lines))
    return path


@dataclass
class ParsingData:
    """Cleaned trees by split, the vocabularies of the training trees, and the encoded pairs."""

    trees: dict[str, list[Tree]]
    vocabularies: ParserVocabularies

    @classmethod
    def from_splits(
        cls, trees: dict[str, Sequence[Tree]], *, min_count: int = 2, tags: bool = False
    ) -> "ParsingData":
        trees = {name: list(split) for name, split in trees.items()}
        return cls(
            trees,
            ParserVocabularies.from_trees(trees["train"], min_count=min_count, tags=tags),
        )

    def encoded(self, split: str) -> EncodedPairs:
        return self.vocabularies.encode(self.trees[split])


def parser_max_len(data: ParsingData, extra_length: int = PAPER_EXTRA_LENGTH) -> int:
    """Positions for every training pair and every sentence's output allowance, rounded up to 64."""
    needed = 1
    for split, trees in data.trees.items():
        for t in trees:
            n = len(t.leaves())
            needed = max(needed, n + SRC_SPECIALS + 1 + extra_length)
            if split == "train":
                needed = max(needed, len(linearize(t).split()) + 1)
    return 64 * math.ceil(needed / 64)


def train_parser(
    config: TransformerConfig,
    data: ParsingData,
    settings: TrainSettings,
    out_dir: str | os.PathLike,
    *,
    device: torch.device | str = "cpu",
    **fit_options,
) -> Fitted:
    """Train the parser through `fit`: sentence -> linearized tree, separate source and target
    embeddings (the two vocabularies differ), the development trees as validation."""
    train, skipped = data.encoded("train").fitting(config.max_len)
    if skipped:
        raise ValueError(
            f"{skipped} training trees do not fit max_len={config.max_len}: use parser_max_len"
        )
    valid = (
        data.encoded("dev").fitting(config.max_len)[0] if data.trees.get("dev") else None
    )
    return fit(
        config,
        data.vocabularies,
        train,
        valid,
        settings,
        out_dir,
        vocab_size=data.vocabularies.sizes,
        device=device,
        metadata={
            "task": "constituency parsing",
            "train_trees": len(data.trees["train"]),
        },
        show_progress=False,
        **fit_options,
    )


def load_parser(
    checkpoint: str | os.PathLike | dict, device: torch.device | str = "cpu"
) -> tuple[Transformer, ParserVocabularies]:
    """(model in eval mode, vocabularies) from a parser's checkpoint (a snapshot, an average or a
    run folder), so a learning curve can score the snapshots of one run."""
    state = checkpoint if isinstance(checkpoint, dict) else load_checkpoint(checkpoint)
    vocab = state["vocab"]
    model = Transformer(
        TransformerConfig.from_dict(state["config"]),
        vocab["src_vocab_size"],
        vocab["tgt_vocab_size"],
        share_embeddings=vocab["share_embeddings"],
    )
    model.load_state_dict(state["model"])
    return model.to(device).eval(), ParserVocabularies.from_bytes(state["tokenizer"])


def report_parser(
    model: Transformer,
    data: ParsingData,
    *,
    split: str = "test",
    decodings: Sequence[dict] = (
        dict(beam_size=PAPER_BEAM, constrained=True),
        dict(beam_size=PAPER_BEAM, constrained=False),
    ),
    results_dir: str | os.PathLike | None = None,
    file_suffix: str = "",
    **decoding,
) -> dict:
    """Evaluate a trained parser on a split with and without the constraint, beside the baselines.

    Returns a JSON-able record: per decoding, F1, precision, recall, exact and invalid trees, F1 on
    the sentences of at most 40 words (evalb's second summary: ``f1_le40``, ``sentences_le40``) and
    F1 by sentence length; the same for the baselines on the same trees. With `results_dir`, writes the
    gold trees and the first decoding's trees, one per line in the same order, as
    ``parsing_<split>_gold.txt`` and ``parsing_<split>_predicted<file_suffix>.txt`` for evalb.
    """
    gold = data.trees[split]
    runs = [
        evaluate_parser(model, data.vocabularies, gold, **{**decoding, **d})
        for d in decodings
    ]
    floors = baselines(gold, data.trees["train"])
    record = {
        "split": split,
        "sentences": len(gold),
        "scoring": EVALB_CONVENTIONS,
        "decoding": {
            "alpha": decoding.get("alpha", PAPER_ALPHA),
            "max_length": f"input + {decoding.get('extra_length', PAPER_EXTRA_LENGTH)}",
        },
        "decodings": {run.name: run.summary(gold) for run in runs},
        "baselines": {
            name: {
                **corpus_score(gold, trees).to_dict(),
                **_short_sentences(gold, trees),
                "f1_by_length": f1_by_length(gold, trees),
            }
            for name, trees in floors.items()
        },
    }
    if results_dir is not None:
        record["files"] = {
            "gold": write_trees(
                Path(results_dir) / f"parsing_{split}_gold.txt", gold
            ).name,
            "predicted": write_trees(
                Path(results_dir) / f"parsing_{split}_predicted{file_suffix}.txt",
                runs[0].parses,
            ).name,
            "predicted_by": runs[0].name,
        }
    return record

"""Parsing with the translation model's search: a constraint that admits valid trees only, greedy
or beam search over it, scoring the parses, and the choice of search on the development trees.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Sequence

import torch
from nltk import Tree

from ...data.batching import SRC_SPECIALS, collate_sources, pack_by_tokens
from ...model.decoding import beam_search
from ...model.transformer import Transformer
from ...runtime import attention_kernels
from ...runtime.precision import autocast_context
from .linearization import Delinearized, delinearize
from .scoring import BracketScore, _short_sentences, corpus_score, f1_by_length
from .vocabulary import EOS_ID, SPECIAL_SYMBOLS, ParserVocabularies, Vocabulary

# Section 6.3's decoding: beam 21, alpha 0.3, outputs up to the input length + 300.
PAPER_BEAM, PAPER_ALPHA, PAPER_EXTRA_LENGTH = 21, 0.3, 300


class TreeConstraint:
    """The `allowed_tokens` hook of `beam_search` and `greedy_decode` that admits valid trees only.

    A word slot only while words remain; an opening bracket only inside the tree (or to start it),
    while words remain (it needs one) and while the length limit still leaves room to close it; a
    closing bracket only for the innermost open constituent, once it holds a word, and the root's only
    once every word is placed; eos only when the tree is complete. Every prefix it admits can be
    completed within the limit, so with it every output is a tree over exactly the sentence's words
    (`delinearize` repairs nothing). The state is read from the prefix with tensor operations, so
    beam search may reorder rows freely.
    """

    def __init__(self, target: Vocabulary, words_per_source: Sequence[int]):
        kinds = [
            "special"
            if i < len(SPECIAL_SYMBOLS)
            else "open"
            if s.startswith("(")
            else "close"
            if s.startswith(")")
            else "slot"
            for i, s in enumerate(target.symbols)
        ]
        labels = {s[1:] for s, k in zip(target.symbols, kinds) if k in ("open", "close")}
        label_id = {label: i for i, label in enumerate(sorted(labels))}
        self.is_open = torch.tensor([k == "open" for k in kinds])
        self.is_close = torch.tensor([k == "close" for k in kinds])
        self.is_slot = torch.tensor([k == "slot" for k in kinds])
        self.delta = self.is_open.long() - self.is_close.long()
        self.label = torch.tensor(
            [
                label_id[s[1:]] if k in ("open", "close") else -1
                for s, k in zip(target.symbols, kinds)
            ]
        )
        self.n_words = torch.as_tensor(list(words_per_source), dtype=torch.long)

    def __call__(
        self, tokens: torch.Tensor, source_index: torch.Tensor, steps_left: torch.Tensor
    ) -> torch.Tensor:
        device = tokens.device
        is_open, is_close, is_slot = (
            t.to(device) for t in (self.is_open, self.is_close, self.is_slot)
        )
        label = self.label.to(device)
        n = self.n_words.to(device)[source_index]
        rows = tokens.size(0)
        written = tokens[:, 1:].clamp(0, len(label) - 1)  # the prefix after bos
        if written.size(1) == 0:
            depth = used = torch.zeros(rows, dtype=torch.long, device=device)
            inner = torch.full((rows,), -1, dtype=torch.long, device=device)
            has_word = torch.zeros(rows, dtype=torch.bool, device=device)
            started = False
        else:
            depths = self.delta.to(device)[written].cumsum(1)
            slots = is_slot[written].long().cumsum(1)
            depth, used = depths[:, -1], slots[:, -1]
            # The innermost open constituent: the last opening bracket that reached
            # today's depth.
            where = torch.arange(written.size(1), device=device).expand_as(written)
            opened = is_open[written] & (depths == depth[:, None])
            last = torch.where(opened, where, -1).max(dim=1).values
            found = last >= 0
            at = last.clamp(min=0)[:, None]
            inner = torch.where(found, label[written.gather(1, at)].squeeze(1), -1)
            has_word = found & (used > slots.gather(1, at).squeeze(1))
            started = True
        need = (n - used) + depth + 1  # slots, closing brackets and eos still to write
        words_left = used < n
        inside = depth > 0
        may_open = (inside | (not started)) & words_left & (need + 2 <= steps_left)
        may_close = inside & has_word & ((depth > 1) | (used == n))
        allowed = (
            (words_left & inside)[:, None] & is_slot[None]
            | may_open[:, None] & is_open[None]
            | may_close[:, None] & is_close[None] & (label[None] == inner[:, None])
        )
        allowed[:, EOS_ID] = (
            torch.full_like(inside, started) & ~inside & (used == n) & (depth == 0)
        )
        return allowed


def parse_sentences(
    model: Transformer,
    vocabularies: ParserVocabularies,
    sentences: Sequence[Sequence[str]],
    *,
    beam_size: int = PAPER_BEAM,
    alpha: float = PAPER_ALPHA,
    extra_length: int = PAPER_EXTRA_LENGTH,
    constrained: bool = True,
    batch_tokens: int = 4000,
    precision: str = "fp32",
    progress: Callable[[int], object] | None = None,
) -> list[str]:
    """The linearized tree the model writes for each sentence (a list of words), in order.

    Section 6.3's search by default: beam 21, alpha 0.3, up to the input length + 300 symbols
    (clamped to the model's positions). Beam 1 is greedy decoding. Sentences are sorted by length
    and packed into batches of about `batch_tokens` source tokens times the beam. `progress`, when
    given, is called with the number of sentences each batch parsed (a progress bar's `update`).
    """
    outputs = [""] * len(sentences)
    encoded = [vocabularies.source.encode(words) for words in sentences]
    longest = model.config.max_len - SRC_SPECIALS
    if any(len(ids) > longest for ids in encoded):
        raise ValueError(
            f"a sentence of {max(map(len, encoded))} words exceeds the model's {longest} source "
            "positions: build the model with a larger max_len (`parser_max_len`)"
        )
    wanted = [i for i, ids in enumerate(encoded) if ids]
    if progress is not None and len(wanted) < len(sentences):
        progress(len(sentences) - len(wanted))  # empty sentences: nothing to parse
    order = sorted(wanted, key=lambda i: len(encoded[i]))
    widths = [(len(ids) + SRC_SPECIALS) * beam_size for ids in encoded]
    device = next(model.parameters()).device
    c = model.config
    for batch in pack_by_tokens(order, [widths], batch_tokens):
        src = collate_sources([encoded[i] for i in batch], c.pad_id, c.eos_id).to(device)
        hook = (
            TreeConstraint(vocabularies.target, [len(encoded[i]) for i in batch])
            if constrained
            else None
        )
        with (
            autocast_context(device, precision),
            attention_kernels.for_varying_shapes(device),
        ):
            out = beam_search(
                model,
                src,
                beam_size=beam_size,
                alpha=alpha,
                max_len_a=1.0,
                max_len_b=extra_length,
                allowed_tokens=hook,
            )
        for i, row in zip(batch, out.tolist()):
            outputs[i] = " ".join(vocabularies.target.decode(row[1:]))
        if progress is not None:
            progress(len(batch))
    return outputs


@dataclass
class ParseRun:
    """One decoding of a set of gold trees: the lines, the trees read back, and their score."""

    name: str
    beam_size: int
    constrained: bool
    lines: list[str]
    parses: list[Delinearized]
    score: BracketScore
    seconds: float

    def summary(self, gold: Sequence[Tree]) -> dict:
        """The numbers of the report: F1, precision, recall, exact and invalid trees, evalb's
        second summary (F1 on the sentences of at most 40 words), F1 by length."""
        return {
            "beam_size": self.beam_size,
            "constrained": self.constrained,
            **self.score.to_dict(),
            **_short_sentences(gold, self.parses),
            "f1_by_length": f1_by_length(gold, self.parses),
            "symbols_per_output": sum(len(x.split()) for x in self.lines)
            / max(1, len(self.lines)),
            "seconds": round(self.seconds, 1),
        }


def evaluate_parser(
    model: Transformer,
    vocabularies: ParserVocabularies,
    gold: Sequence[Tree],
    *,
    beam_size: int = PAPER_BEAM,
    constrained: bool = True,
    **decoding,
) -> ParseRun:
    """Parse the gold trees' sentences and score the parses against them (`corpus_score`)."""
    started = time.perf_counter()
    lines = parse_sentences(
        model,
        vocabularies,
        [t.leaves() for t in gold],
        beam_size=beam_size,
        constrained=constrained,
        **decoding,
    )
    parses = [delinearize(line, t.leaves()) for line, t in zip(lines, gold)]
    return ParseRun(
        f"{'greedy' if beam_size == 1 else f'beam {beam_size}'}, "
        f"{'constrained' if constrained else 'unconstrained'}",
        beam_size,
        constrained,
        lines,
        parses,
        corpus_score(gold, parses),
        time.perf_counter() - started,
    )


def choose_search(
    model: Transformer,
    vocabularies: ParserVocabularies,
    dev_trees: Sequence[Tree],
    beams: Sequence[int] = (1, PAPER_BEAM),
    **decoding,
) -> tuple[dict[str, ParseRun], ParseRun]:
    """Parse the development trees with each beam size, constrained to valid trees, and pick the
    search with the highest F1 there: (every run by name, the chosen run). The test split is never
    read here, so the chapter scores it once with the choice. `decoding`: `parse_sentences`'
    other options (alpha, progress, ...)."""
    runs = {
        run.name: run
        for run in (
            evaluate_parser(
                model,
                vocabularies,
                dev_trees,
                beam_size=beam,
                constrained=True,
                **decoding,
            )
            for beam in beams
        )
    }
    return runs, max(runs.values(), key=lambda run: run.score.f1)

"""The parser's two vocabularies: the linearization's symbols for the target, words (rare ones read
as a class of their spelling) for the source, with the model's four special ids first in both.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Sequence

from nltk import Tree

from ...data.batching import EncodedPairs
from ...runtime.records import parse_json
from .linearization import linearize

# The model's special ids (TransformerConfig's pad 0, bos 1, eos 2, unk 3) come first in both
# vocabularies, so the parser is the translation model with other embeddings and nothing else.
SPECIAL_SYMBOLS = ("<pad>", "<s>", "</s>", "<unk>")


PAD_ID, BOS_ID, EOS_ID, UNK_ID = range(4)


_SUFFIXES = ("ing", "ed", "ly", "ion", "er", "est", "al", "ity", "ies", "s", "y")


class Vocabulary:
    """Symbols and their ids, the model's four specials first; unknown symbols read as ``<unk>``."""

    def __init__(self, symbols: Iterable[str]):
        self.symbols = tuple(symbols)
        if self.symbols[:4] != SPECIAL_SYMBOLS:
            raise ValueError(f"a vocabulary starts with {SPECIAL_SYMBOLS}")
        self.index = {symbol: i for i, symbol in enumerate(self.symbols)}
        if len(self.index) != len(self.symbols):
            raise ValueError("a vocabulary lists each symbol once")

    def __len__(self) -> int:
        return len(self.symbols)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Vocabulary) and self.symbols == other.symbols

    def encode(self, symbols: Iterable[str]) -> list[int]:
        return [self.index.get(s, UNK_ID) for s in symbols]

    def decode(self, ids: Iterable[int]) -> list[str]:
        """The symbols up to the first eos, specials left out (a model may write ``<unk>``)."""
        out = []
        for i in ids:
            i = int(i)
            if i == EOS_ID:
                break
            if i >= len(SPECIAL_SYMBOLS):
                out.append(self.symbols[i])
        return out


def tree_vocabulary(trees: Iterable[Tree], *, tags: bool = False) -> Vocabulary:
    """The target vocabulary: the linearization's own symbols, some 60 instead of a shared
    vocabulary's thousands, each one id (a shared word-piece vocabulary splits ``(NP`` in two).

    Word slots (``XX``, or the tags with tags=True) come first, then ``(L`` and ``)L`` for every label,
    most frequent first; a label always brings both of its brackets.
    """
    slots: Counter = Counter()
    labels: Counter = Counter()
    for tree in trees:
        for token in linearize(tree, tags=tags).split():
            if token.startswith("("):
                labels[token[1:]] += 1
            elif not token.startswith(")"):
                slots[token] += 1
    ordered = lambda c: sorted(c, key=lambda s: (-c[s], s))
    brackets = [b for label in ordered(labels) for b in ("(" + label, ")" + label)]
    return Vocabulary([*SPECIAL_SYMBOLS, *ordered(slots), *brackets])


def unknown_word_class(word: str) -> str:
    """The class a rare word is read as: its shape (capitals, digits, hyphen) and suffix, so an
    unseen "Reebok" or "1,500" still tells the parser it is probably a proper noun or a number."""
    shape = (
        "CAP"
        if word[:1].isupper()
        else "NUM"
        if word[:1].isdigit()
        else "LOW"
        if word[:1].islower()
        else "SYM"
    )
    if any(ch.isdigit() for ch in word) and shape != "NUM":
        shape += "-NUM"
    if "-" in word:
        shape += "-DASH"
    suffix = next(
        (s for s in _SUFFIXES if word.lower().endswith(s) and len(word) > len(s) + 2), ""
    )
    return f"<unk-{shape}{'-' + suffix if suffix else ''}>"


class WordVocabulary(Vocabulary):
    """The source vocabulary: training words seen at least `min_count` times, and unknown-word
    classes (`unknown_word_class`) learned from the rarer training words, which the model therefore
    sees read the way unseen words of the test set will be."""

    def encode(self, words: Iterable[str]) -> list[int]:
        return [
            self.index.get(w, self.index.get(unknown_word_class(w), UNK_ID))
            for w in words
        ]


def word_vocabulary(
    sentences: Iterable[Sequence[str]], *, min_count: int = 2
) -> WordVocabulary:
    """The source vocabulary of the training sentences (lists of words)."""
    counts = Counter(w for words in sentences for w in words)
    frequent = sorted(
        (w for w, n in counts.items() if n >= min_count), key=lambda w: (-counts[w], w)
    )
    classes = Counter(unknown_word_class(w) for w, n in counts.items() if n < min_count)
    return WordVocabulary(
        [*SPECIAL_SYMBOLS, *sorted(classes, key=lambda c: (-classes[c], c)), *frequent]
    )


@dataclass(frozen=True)
class ParserVocabularies:
    """The parser's two vocabularies; what `fit` stores in its checkpoints as the tokenizer."""

    source: WordVocabulary
    target: Vocabulary
    tags: bool = False

    @property
    def sizes(self) -> tuple[int, int]:
        """(source, target): separate embeddings, as `fit`'s vocab_size takes them."""
        return len(self.source), len(self.target)

    def to_bytes(self) -> bytes:
        return json.dumps(
            {
                "source": self.source.symbols,
                "target": self.target.symbols,
                "tags": self.tags,
            }
        ).encode("utf-8")

    @classmethod
    def from_bytes(cls, data: bytes) -> "ParserVocabularies":
        d = parse_json(
            data,
            "a parser checkpoint's vocabularies",
            fix="the checkpoint is damaged: train the parser again",
        )
        return cls(WordVocabulary(d["source"]), Vocabulary(d["target"]), d["tags"])

    @classmethod
    def from_trees(
        cls, trees: Sequence[Tree], *, min_count: int = 2, tags: bool = False
    ) -> "ParserVocabularies":
        """Both vocabularies from the training trees only."""
        return cls(
            word_vocabulary((t.leaves() for t in trees), min_count=min_count),
            tree_vocabulary(trees, tags=tags),
            tags,
        )

    def encode(self, trees: Sequence[Tree]) -> EncodedPairs:
        """(words, linearized tree) pairs as ids; the collate functions add eos, bos."""
        return EncodedPairs(
            [self.source.encode(t.leaves()) for t in trees],
            [self.target.encode(linearize(t, tags=self.tags).split()) for t in trees],
        )

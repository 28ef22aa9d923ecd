"""Trees as sequences: constituency parsing as translation (paper section 6.3).

The paper parses English with the translation model unchanged, following Vinyals et al. (2015),
"Grammar as a foreign language": the source is the sentence, the target is its parse tree written
out depth first as one line of tokens. This module holds everything that is specific to trees; the
model, training (`fit`) and beam search are the translation ones. The parser's own parts: a target
vocabulary of the linearization's symbols and a source vocabulary of words, with separate
embeddings (`ParserVocabularies`); a constraint that lets the search write valid trees only
(`TreeConstraint`, a hook of `beam_search`); and the report beside two baselines
(`report_parser`, `train_and_report`).

Conventions of the linearization (`linearize`). The paper's text does not say which symbols fill the
word slots; the authors' released code (tensor2tensor, ``data_generators/wsj_parsing.py``,
``words_and_tags_from_wsj_tree``) writes each word's part-of-speech tag, strips the TOP bracket and
labels every closing bracket (``S NP DT NN /NP VP VBD /VP /S``), with separate source and target
vocabularies (``wsj_source.vocab``, ``wsj_target.vocab``, of word pieces there). Chapter 07's parser
is that linearization (``tags=True``); ``tags=False`` writes ``XX`` in every slot, as Vinyals et al.
did, and the chapter trains it as a variant.

- An opening bracket carries its label, ``(NP``, and so does a closing one, ``)NP`` (tensor2tensor
  writes ``NP`` and ``/NP``): the decoder always knows which constituent it is closing.
- Words are *not* written in the target (the decoder would have to copy them); each word is one
  slot, holding its part-of-speech tag (``tags=True``) or ``XX``. Vinyals et al. replaced the tags
  by ``XX`` because the F1 score does not count them and dropping them helped them.
- Before linearizing, `clean_tree` applies the usual Penn Treebank preprocessing: the empty top
  bracket (or TOP / ROOT) goes, empty elements (``-NONE-`` traces) and the constituents left empty
  without them go, and function tags and indices are cut (``NP-SBJ-1`` -> ``NP``).
- The source vocabulary is words (seen at least twice in training; rarer ones as a class of their
  spelling, `unknown_word_class`), not word pieces; the target vocabulary is the linearization's
  own symbols (`tree_vocabulary`).

``(S (NP (NNP John)) (VP (VBZ has) (NP (DT a) (NN dog))) (. .))`` becomes, with tags,
``(S (NP NNP )NP (VP VBZ (NP DT NN )NP )VP . )S``, and without,
``(S (NP XX )NP (VP XX (NP XX XX )NP )VP XX )S``; `delinearize` puts the words back in the slots.
A model's output need not be a tree; the repair rule is stated in `delinearize`.

The score (`bracket_score`) is labelled bracket F1 as evalb computes it with Collins's parameter
file, COLLINS.prm, the setting behind the WSJ numbers of Table 4: punctuation (the tags
``, : `` '' .``) is deleted from both trees before spans are counted, by the gold tree's tags (a
parser's predicted tags may differ), TOP / ROOT brackets are not counted, nor are part-of-speech
brackets, PRT counts as ADVP, and brackets are matched as a multiset of (label, first word, last
word). `corpus_scores` gives evalb's two summaries: all sentences, and those of at most 40 words.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
import time
import zipfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Iterable, Sequence

import numpy as np
import torch
from nltk import Tree

from ..data.batching import SRC_SPECIALS, EncodedPairs, collate_sources, pack_by_tokens
from ..model.config import TransformerConfig
from ..model.decoding import beam_search
from ..model.transformer import Transformer
from ..runtime.precision import autocast_context
from ..training.checkpoint import load_checkpoint
from ..training.fit import Fitted, fit
from ..training.settings import TrainSettings

WORD_SLOT = "XX"
EMPTY_ELEMENT = "-NONE-"
# COLLINS.prm: DELETE_LABEL TOP, -NONE-, and these punctuation tags; EQ_LABEL ADVP PRT.
PUNCTUATION_TAGS = frozenset({",", ":", "``", "''", "."})
UNCOUNTED_LABELS = frozenset({"", "TOP", "ROOT"})
EQUIVALENT_LABELS = {"PRT": "ADVP"}
# The repaired output of a model gets this root when it is not one constituent (never counted).
REPAIR_ROOT = "TOP"

_FUNCTION_TAG = re.compile(r"[-=]")


# ------------------------------------------------------------------------------------------ reading
def _top_level_brackets(text: str, where: str) -> list[str]:
    """The top-level ``( ... )`` groups of a .mrg file: one per tree."""
    groups, depth, start = [], 0, 0
    for index, char in enumerate(text):
        if char == "(":
            if depth == 0:
                start = index
            depth += 1
        elif char == ")":
            depth -= 1
            if depth < 0:
                raise ValueError(
                    f"{where}: a ')' at character {index} closes nothing; the file is not a bracketed treebank"
                )
            if depth == 0:
                groups.append(text[start : index + 1])
    if depth:
        raise ValueError(
            f"{where}: {depth} bracket(s) left open at the end of the file; is it truncated?"
        )
    return groups


def _drop_top(tree: Tree) -> Tree:
    """The Treebank's unlabelled outer bracket ``( (S ...) )`` (or TOP / ROOT) holds one tree: return it."""
    while (
        isinstance(tree, Tree)
        and tree.label() in UNCOUNTED_LABELS
        and len(tree) == 1
        and isinstance(tree[0], Tree)
    ):
        tree = tree[0]
    return tree


def parse_bracketed(text: str, where: str = "text") -> list[Tree]:
    """Every tree of a bracketed text (a .mrg file), without its outer empty bracket."""
    return [
        _drop_top(Tree.fromstring(group)) for group in _top_level_brackets(text, where)
    ]


def read_treebank(path: str | os.PathLike) -> dict[str, list[Tree]]:
    """The parsed files of a treebank: {file id: its trees, in order}, files sorted by name.

    `path` is NLTK's Penn Treebank sample (``treebank.zip``, whose ``combined/*.mrg`` are read) or a
    folder searched recursively for ``.mrg`` files, such as the LDC release's ``parsed/mrg/wsj``.
    The file id is the file's stem (``wsj_0001``): the split (`split_by_file`) goes by it. Trees are
    parsed with `nltk.Tree.fromstring`; NLTK's `BracketParseCorpusReader` is not used because recent
    NLTK releases refuse corpus roots outside NLTK's own data folders, such as a zip under AT_DATA_DIR.
    """
    path = Path(path)
    files: dict[str, list[Tree]] = {}
    if path.is_file() and zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            names = [
                n
                for n in archive.namelist()
                if n.endswith(".mrg") and PurePosixPath(n).parent.name == "combined"
            ]
            for name in sorted(names):
                files[PurePosixPath(name).stem] = parse_bracketed(
                    archive.read(name).decode("utf-8"), name
                )
    elif path.is_dir():
        for name in sorted(path.rglob("*.mrg")):
            files[name.stem] = parse_bracketed(
                name.read_text(encoding="utf-8"), name.name
            )
    else:
        raise FileNotFoundError(
            f"no treebank at {path}: give NLTK's treebank.zip or a folder of .mrg files"
        )
    if not files:
        raise ValueError(
            f"{path} holds no .mrg files (expected combined/*.mrg in a zip, or *.mrg under a folder)"
        )
    return dict(sorted(files.items()))


def split_by_file(file_ids: Iterable[str]) -> dict[str, list[str]]:
    """Train / dev / test file ids, whole files apart, so that no article is on both sides.

    With the full WSJ (sections 02 to 23 present, section = the two digits after ``wsj_``), the
    standard split: train 02-21, dev 22, test 23, the setting of Table 4. Otherwise (NLTK's sample
    holds sections 00 and 01 only) the files in name order: the last tenth is the test set, the tenth
    before it the dev set, the rest training (for the sample: wsj_0001-0159 / 0160-0179 / 0180-0199).
    """
    ids = sorted(set(file_ids))
    if len(ids) < 3:
        raise ValueError(
            f"{len(ids)} file(s) cannot be split into train, dev and test: at least 3 are needed"
        )
    sections = {}
    for fid in ids:
        match = re.fullmatch(r"wsj_(\d\d)\d\d", fid)
        if match:
            sections[fid] = int(match.group(1))
    if len(sections) == len(ids) and {s for s in range(2, 24)} <= set(sections.values()):
        return {
            "train": [f for f in ids if 2 <= sections[f] <= 21],
            "dev": [f for f in ids if sections[f] == 22],
            "test": [f for f in ids if sections[f] == 23],
        }
    tenth = max(1, round(len(ids) / 10))
    return {
        "train": ids[: -2 * tenth],
        "dev": ids[-2 * tenth : -tenth],
        "test": ids[-tenth:],
    }


# ------------------------------------------------------------------------------------------ cleaning
def strip_function_tags(label: str) -> str:
    """``NP-SBJ-1`` -> ``NP``, ``PP=2`` -> ``PP``; labels that start with '-' (``-NONE-``, ``-LRB-``) are kept."""
    if label.startswith("-"):
        return label
    return _FUNCTION_TAG.split(label, maxsplit=1)[0] or label


def is_preterminal(tree) -> bool:
    """A part-of-speech node: one child, a word."""
    return isinstance(tree, Tree) and len(tree) == 1 and isinstance(tree[0], str)


def clean_tree(tree: Tree) -> Tree | None:
    """The tree as parsers see it: no outer bracket, no empty elements, no function tags.

    Returns None when nothing is left (a tree of empty elements only). Raises ValueError for a node
    that mixes words and constituents, which no treebank tree does.
    """
    tree = _drop_top(tree)
    if is_preterminal(tree):
        return None if tree.label() == EMPTY_ELEMENT else Tree(tree.label(), [tree[0]])
    if any(isinstance(child, str) for child in tree):
        raise ValueError(
            f"node {tree.label()!r} has a word among its constituents; every word needs a tag: {tree}"
        )
    children = [c for c in (clean_tree(child) for child in tree) if c is not None]
    if not children:
        return None
    return Tree(strip_function_tags(tree.label()), children)


def with_slot_tags(tree: Tree) -> Tree:
    """The tree with every part-of-speech tag replaced by ``XX`` (what `delinearize` of an XX line gives)."""
    if is_preterminal(tree):
        return Tree(WORD_SLOT, [tree[0]])
    return Tree(tree.label(), [with_slot_tags(child) for child in tree])


# ------------------------------------------------------------------------------------------ sequences
def linearize(tree: Tree, *, tags: bool = False) -> str:
    """The target line of a tree: labelled brackets, and one slot per word holding its tag
    (tags=True, as the authors' code writes it) or ``XX`` (tags=False, as Vinyals et al. did).

    Raises ValueError when the tree's root is a bare word or tag: a sentence must be a constituent.
    """
    if not isinstance(tree, Tree) or is_preterminal(tree):
        raise ValueError(
            f"linearize needs a tree whose root is a constituent, got {tree!r}"
        )
    out: list[str] = []

    def walk(node: Tree) -> None:
        if is_preterminal(node):
            out.append(node.label() if tags else WORD_SLOT)
            return
        if any(isinstance(child, str) for child in node):
            raise ValueError(
                f"node {node.label()!r} has a word among its constituents: {node}"
            )
        out.append("(" + node.label())
        for child in node:
            walk(child)
        out.append(")" + node.label())

    walk(tree)
    return " ".join(out)


@dataclass(frozen=True)
class Delinearized:
    """A tree read back from a line, and what had to be repaired (empty when the line was a valid tree)."""

    tree: Tree
    repairs: tuple[str, ...] = ()

    @property
    def valid(self) -> bool:
        return not self.repairs


def delinearize(sequence: str, words: Sequence[str]) -> Delinearized:
    """Read a linearized tree back, putting `words` into its word slots in order.

    Tokens are split on white space: ``(LABEL`` opens a constituent, ``)`` or ``)LABEL`` closes one,
    anything else is a word slot whose text becomes the word's tag (``XX``, or a real tag).

    A model may write a line that is no tree. The repair rule, applied left to right, keeps every
    bracket it can and never invents a labelled one:

    1. a closing bracket closes the innermost open constituent, whatever label it carries (a
       different label is recorded); with nothing open it is dropped;
    2. a word slot beyond the last word is dropped; a constituent that ends up with no word is dropped;
    3. constituents still open at the end are closed; words with no slot are attached, tagged ``XX``,
       after the last placed word: at the end of the last top-level item when it is a phrase, else
       at the top level, so the leaves are always `words` in order;
    4. when the result is not one constituent (several, or none), a ``TOP`` root, which the score
       does not count, holds them.

    The line counts as an invalid tree when any rule fired; `Delinearized.repairs` says which.
    """
    words = list(words)
    repairs: list[str] = []
    stack: list[tuple[str, list]] = []  # open constituents: (label, children)
    roots: list = []
    used = 0

    def attach(node) -> None:
        (stack[-1][1] if stack else roots).append(node)

    def close() -> None:
        label, children = stack.pop()
        if children:
            attach(Tree(label, children))
        else:
            repairs.append(f"dropped the empty constituent {label}")

    for token in sequence.split():
        if token.startswith("("):
            label = token[1:]
            if not label:
                repairs.append("dropped an opening bracket without a label")
                continue
            stack.append((label, []))
        elif token.startswith(")"):
            if not stack:
                repairs.append(f"dropped {token}: nothing open to close")
                continue
            if token[1:] and token[1:] != stack[-1][0]:
                repairs.append(f"{token} closed {stack[-1][0]}")
            close()
        elif used < len(words):
            attach(Tree(token, [words[used]]))
            used += 1
        else:
            repairs.append(
                f"dropped the word slot {token}: all {len(words)} words are placed"
            )
    if stack:
        repairs.append(f"closed {len(stack)} constituent(s) left open")
        while stack:
            close()
    if used < len(words):
        repairs.append(f"attached {len(words) - used} word(s) without a slot")
        missing = [Tree(WORD_SLOT, [word]) for word in words[used:]]
        # They follow every placed word: at the end of the last top-level item when it is a
        # phrase, else as top-level items of their own (never before a bare word slot).
        if roots and not is_preterminal(roots[-1]):
            roots[-1].extend(missing)
        else:
            roots.extend(missing)
    if len(roots) == 1 and not is_preterminal(roots[0]):
        return Delinearized(roots[0], _summarize(repairs))
    if roots:  # a single word slot, or several top-level items
        repairs.append(f"put {len(roots)} top-level item(s) under {REPAIR_ROOT}")
    else:
        repairs.append("the line holds no constituent and there are no words")
    return Delinearized(Tree(REPAIR_ROOT, roots), _summarize(repairs))


def _summarize(repairs: list[str]) -> tuple[str, ...]:
    """Repeated repairs once each, with their count (an untrained model may close hundreds of nothings)."""
    counts = Counter(repairs)
    return tuple(
        text if counts[text] == 1 else f"{text} (x{counts[text]})"
        for text in dict.fromkeys(repairs)
    )


# ------------------------------------------------------------------------------------------ scoring
def _count_label(label: str) -> str | None:
    """The label evalb compares, or None for a bracket it does not count."""
    label = strip_function_tags(label)
    if label in UNCOUNTED_LABELS:
        return None
    return EQUIVALENT_LABELS.get(label, label)


def _tags(tree: Tree) -> list[str]:
    return [label for _, label in tree.pos()]


def labelled_brackets(tree: Tree, deleted: Sequence[bool] | None = None) -> Counter:
    """The multiset of (label, start, end) that evalb counts; spans in words, end exclusive.

    `deleted` marks the words to leave out (punctuation, by default the tree's own tags in
    PUNCTUATION_TAGS); spans are counted over the remaining words, and a constituent left with none
    is not counted. Part-of-speech brackets and TOP / ROOT are not counted.
    """
    if deleted is None:
        deleted = [tag in PUNCTUATION_TAGS for tag in _tags(tree)]
    kept_before = [0]
    for gone in deleted:
        kept_before.append(kept_before[-1] + (not gone))
    found: Counter = Counter()

    def walk(node: Tree, start: int) -> int:
        if is_preterminal(node):
            return start + 1
        end = start
        for child in node:
            if isinstance(child, str):
                raise ValueError(
                    f"node {node.label()!r} has a word among its constituents: {node}"
                )
            end = walk(child, end)
        label = _count_label(node.label())
        first, last = kept_before[start], kept_before[end]
        if label is not None and last > first:
            found[(label, first, last)] += 1
        return end

    if len(deleted) != len(tree.leaves()):
        raise ValueError(
            f"{len(deleted)} deletion marks for a tree of {len(tree.leaves())} words"
        )
    walk(tree, 0)
    return found


@dataclass(frozen=True)
class BracketScore:
    """Bracket counts summed over sentences; precision, recall and F1 in percent, as evalb prints them.

    Attributes:
        matched: test brackets that match a gold bracket (label and span).
        gold, test: brackets counted in the gold and the test trees.
        crossing: test brackets that cross a gold bracket (overlap it without nesting).
        sentences: sentences scored.
        invalid: test lines that were no tree and had to be repaired (`delinearize`).
        exact: sentences whose brackets all match, none missing, none extra.
    """

    matched: int = 0
    gold: int = 0
    test: int = 0
    crossing: int = 0
    sentences: int = 0
    invalid: int = 0
    exact: int = 0

    @property
    def precision(self) -> float:
        return 100.0 * self.matched / self.test if self.test else 0.0

    @property
    def recall(self) -> float:
        return 100.0 * self.matched / self.gold if self.gold else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    def __add__(self, other: "BracketScore") -> "BracketScore":
        if not isinstance(other, BracketScore):
            return NotImplemented
        return BracketScore(
            *(getattr(self, f) + getattr(other, f) for f in self.__dataclass_fields__)
        )

    def to_dict(self) -> dict:
        counts = {f: getattr(self, f) for f in self.__dataclass_fields__}
        return {
            **counts,
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
        }


def _crosses(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[0] < a[1] < b[1] or b[0] < a[0] < b[1] < a[1]


def bracket_score(gold: Tree, test: Tree, *, invalid: bool = False) -> BracketScore:
    """One sentence scored as evalb with COLLINS.prm scores it.

    Punctuation is read from the *gold* tree's tags and deleted from both trees: a parser's
    predicted tags may differ from the gold ones (one that writes ``XX`` has none of its own), and
    evalb requires the two trees to agree on which words are deleted. Both trees must hold the same words (evalb's "words unmatch" error otherwise).
    """
    gold_words, test_words = gold.leaves(), test.leaves()
    if gold_words != test_words:
        where = next(
            (i for i, (g, t) in enumerate(zip(gold_words, test_words)) if g != t),
            min(len(gold_words), len(test_words)),
        )
        raise ValueError(
            f"the trees hold different words ({len(gold_words)} gold, {len(test_words)} test; first "
            f"difference at word {where}): score a parse of the gold sentence"
        )
    deleted = [tag in PUNCTUATION_TAGS for tag in _tags(gold)]
    g, t = labelled_brackets(gold, deleted), labelled_brackets(test, deleted)
    matched = sum((g & t).values())
    gold_spans = {(s, e) for _, s, e in g}
    crossing = sum(
        n
        for (_, s, e), n in t.items()
        if any(_crosses((s, e), span) for span in gold_spans)
    )
    n_gold, n_test = sum(g.values()), sum(t.values())
    return BracketScore(
        matched=matched,
        gold=n_gold,
        test=n_test,
        crossing=crossing,
        sentences=1,
        invalid=int(invalid),
        exact=int(matched == n_gold == n_test),
    )


def paired_f1_bootstrap(
    gold: Sequence[Tree],
    first: Sequence[Tree | Delinearized],
    second: Sequence[Tree | Delinearized],
    *,
    samples: int = 2000,
    seed: int = 0,
) -> dict:
    """Corpus F1 of two parsers on the same sentences and a paired bootstrap of their difference
    (second minus first): sentences are resampled with replacement, and each resample's F1 is
    computed from its summed bracket counts, as `corpus_score` does. Returns both F1s with their
    95% percentile intervals, the difference with its interval, and a two-sided p-value (twice the
    share of resamples on the far side of zero)."""
    if not len(gold) == len(first) == len(second) > 0:
        raise ValueError(
            f"one parse per gold tree is needed: {len(gold)} gold, {len(first)} and "
            f"{len(second)} parses"
        )

    def counts(parses) -> np.ndarray:
        rows = []
        for g, t in zip(gold, parses):
            tree = t.tree if isinstance(t, Delinearized) else t
            b = bracket_score(g, tree)
            rows.append((b.matched, b.gold, b.test))
        return np.array(rows, dtype=np.float64)

    def f1(c: np.ndarray) -> np.ndarray:  # c: (..., 3) summed counts
        matched, n_gold, n_test = c[..., 0], c[..., 1], c[..., 2]
        return 100.0 * 2 * matched / np.maximum(n_gold + n_test, 1e-12)

    a, b = counts(first), counts(second)
    rng = np.random.default_rng(seed)
    n = len(gold)
    weights = rng.multinomial(n, np.full(n, 1 / n), size=samples).astype(np.float64)
    fa, fb = f1(weights @ a), f1(weights @ b)
    diff = fb - fa
    point = float(f1(b.sum(0)) - f1(a.sum(0)))
    p_value = min(1.0, 2 * min(float(np.mean(diff <= 0)), float(np.mean(diff >= 0))))
    return {
        "first": {
            "f1": float(f1(a.sum(0))),
            "ci95": np.quantile(fa, [0.025, 0.975]).tolist(),
        },
        "second": {
            "f1": float(f1(b.sum(0))),
            "ci95": np.quantile(fb, [0.025, 0.975]).tolist(),
        },
        "difference": point,
        "difference_ci95": np.quantile(diff, [0.025, 0.975]).tolist(),
        "p_value": p_value,
        "samples": samples,
        "sentences": n,
    }


def corpus_score(
    gold: Sequence[Tree], test: Sequence[Tree | Delinearized]
) -> BracketScore:
    """Bracket counts summed over a corpus (evalb's "All" line); F1 from the sums, not a mean of sentences.

    `test` items may be `Delinearized` results: a repaired line is scored as repaired, and counted in
    `invalid` (evalb itself would skip such a sentence; Vinyals et al. scored the repaired trees).
    """
    if len(gold) != len(test):
        raise ValueError(
            f"{len(gold)} gold trees but {len(test)} test trees: they must pair sentence by sentence"
        )
    total = BracketScore()
    for g, t in zip(gold, test):
        if isinstance(t, Delinearized):
            total = total + bracket_score(g, t.tree, invalid=not t.valid)
        else:
            total = total + bracket_score(g, t)
    return total


# evalb's second summary: sentences of at most 40 words, counted as COLLINS.prm counts a sentence's
# length (DELETE_LABEL_FOR_LENGTH -NONE-: punctuation counts, empty elements, already cleaned, do not).
EVALB_CUTOFF = 40


def corpus_scores(
    gold: Sequence[Tree], test: Sequence[Tree | Delinearized], cutoff: int = EVALB_CUTOFF
) -> dict[str, BracketScore]:
    """evalb's two summaries: {"all": every sentence, "<=40": sentences of at most `cutoff` words}."""
    short = [i for i, g in enumerate(gold) if len(g.leaves()) <= cutoff]
    return {
        "all": corpus_score(gold, test),
        f"<={cutoff}": corpus_score([gold[i] for i in short], [test[i] for i in short]),
    }


def _short_sentences(
    gold: Sequence[Tree], test: Sequence[Tree | Delinearized]
) -> dict[str, float | int]:
    """evalb's second summary as report keys: {"f1_le40": F1, "sentences_le40": sentences}."""
    short = corpus_scores(gold, test)[f"<={EVALB_CUTOFF}"]
    return {"f1_le40": short.f1, "sentences_le40": short.sentences}


# ------------------------------------------------------------------------------------------ vocabularies
# The model's special ids (TransformerConfig's pad 0, bos 1, eos 2, unk 3) come first in both
# vocabularies, so the parser is the translation model with other embeddings and nothing else.
SPECIAL_SYMBOLS = ("<pad>", "<s>", "</s>", "<unk>")
PAD_ID, BOS_ID, EOS_ID, UNK_ID = range(4)
# Section 6.3's decoding: beam 21, alpha 0.3, outputs up to the input length + 300.
PAPER_BEAM, PAPER_ALPHA, PAPER_EXTRA_LENGTH = 21, 0.3, 300
# Sentence lengths of the F1-by-length table (the last bin is open).
LENGTH_BINS = ((1, 10), (11, 20), (21, 30), (31, 40), (41, None))
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
        d = json.loads(bytes(data).decode("utf-8"))
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


# ------------------------------------------------------------------------------------------ the constraint
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
            # The innermost open constituent: the last opening bracket that reached today's depth.
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


# ------------------------------------------------------------------------------------------ parsing
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
) -> list[str]:
    """The linearized tree the model writes for each sentence (a list of words), in order.

    Section 6.3's search by default: beam 21, alpha 0.3, up to the input length + 300 symbols
    (clamped to the model's positions). Beam 1 is greedy decoding. Sentences are sorted by length
    and packed into batches of about `batch_tokens` source tokens times the beam.
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
        with autocast_context(device, precision):
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
    name: str | None = None,
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
    name = name or (
        f"{'greedy' if beam_size == 1 else f'beam {beam_size}'}, "
        f"{'constrained' if constrained else 'unconstrained'}"
    )
    return ParseRun(
        name,
        beam_size,
        constrained,
        lines,
        parses,
        corpus_score(gold, parses),
        time.perf_counter() - started,
    )


def f1_by_length(
    gold: Sequence[Tree], parses: Sequence[Tree | Delinearized], bins=LENGTH_BINS
) -> dict[str, dict]:
    """{"1-10": {sentences, invalid, f1}, ...}: longer sentences have more brackets to miss."""
    table = {}
    for low, high in bins:
        chosen = [
            i for i, t in enumerate(gold) if low <= len(t.leaves()) <= (high or 10**9)
        ]
        if chosen:
            part = corpus_score([gold[i] for i in chosen], [parses[i] for i in chosen])
            table[f"{low}-{high}" if high else f"{low}+"] = {
                "sentences": part.sentences,
                "invalid": part.invalid,
                "f1": part.f1,
            }
    return table


# ------------------------------------------------------------------------------------------ baselines
def most_frequent_labels(train_trees: Sequence[Tree]) -> tuple[str, str]:
    """(the commonest root label, the commonest label below the root) of the training trees."""
    roots = Counter(t.label() for t in train_trees)
    inner = Counter(
        t[p].label()
        for t in train_trees
        for p in t.treepositions()
        if p and isinstance(t[p], Tree) and not is_preterminal(t[p])
    )
    return roots.most_common(1)[0][0], (inner or roots).most_common(1)[0][0]


def flat_tree(words: Sequence[str], root: str = "S") -> Tree:
    """Every word directly under one root: it scores the root bracket only."""
    return Tree(root, [Tree(WORD_SLOT, [w]) for w in words])


def right_branching_tree(
    words: Sequence[str], root: str = "S", label: str = "NP"
) -> Tree:
    """(root w1 (label w2 (label w3 ... (label w_n-1 w_n)))): English leans right, so this is the
    classic floor a parser must clear."""
    node: Tree | None = None
    for word in reversed(words):
        leaf = Tree(WORD_SLOT, [word])
        node = leaf if node is None else Tree(label, [leaf, node])
    if node is None or is_preterminal(node):
        return Tree(root, [node] if node is not None else [])
    node.set_label(root)
    return node


def baselines(gold: Sequence[Tree], train_trees: Sequence[Tree]) -> dict[str, list[Tree]]:
    """The two floors, on the gold trees' sentences, with the training trees' commonest labels."""
    root, label = most_frequent_labels(train_trees)
    return {
        f"right-branching ({root} over {label}s)": [
            right_branching_tree(t.leaves(), root, label) for t in gold
        ],
        f"flat ({root})": [flat_tree(t.leaves(), root) for t in gold],
    }


def write_trees(path: str | os.PathLike, trees: Iterable[Tree | Delinearized]) -> Path:
    """One bracketed tree per line, in order, as evalb reads them."""
    lines = [
        (t.tree if isinstance(t, Delinearized) else t).pformat(margin=sys.maxsize)
        for t in trees
    ]
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


# ------------------------------------------------------------------------------------------ training
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
    show_progress: bool = False,
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
        show_progress=show_progress,
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


EVALB_CONVENTIONS = (
    "labelled bracket F1 with evalb's COLLINS.prm conventions: punctuation deleted by the gold "
    "tags, TOP and part-of-speech brackets not counted, PRT = ADVP; invalid outputs repaired by "
    "delinearize and scored"
)


def choose_search(
    model: Transformer,
    vocabularies: ParserVocabularies,
    dev_trees: Sequence[Tree],
    beams: Sequence[int] = (1, PAPER_BEAM),
) -> tuple[dict[str, ParseRun], ParseRun]:
    """Parse the development trees with each beam size, constrained to valid trees, and pick the
    search with the highest F1 there: (every run by name, the chosen run). The test split is never
    read here, so the chapter scores it once with the choice."""
    runs = {
        run.name: run
        for run in (
            evaluate_parser(
                model, vocabularies, dev_trees, beam_size=beam, constrained=True
            )
            for beam in beams
        )
    }
    return runs, max(runs.values(), key=lambda run: run.score.f1)


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


def train_and_report(
    config: TransformerConfig,
    data: ParsingData,
    settings: TrainSettings,
    run_dir: str | os.PathLike,
    *,
    device: torch.device | str = "cpu",
    results_dir: str | os.PathLike | None = None,
    **report_options,
) -> tuple[Fitted, dict]:
    """The chapter's one call: train (`train_parser`), then `report_parser` on the test split."""
    started = time.perf_counter()
    fitted = train_parser(config, data, settings, run_dir, device=device)
    trained = time.perf_counter() - started
    record = report_parser(fitted.model, data, results_dir=results_dir, **report_options)
    record["training"] = {
        "train_trees": len(data.trees["train"]),
        "steps": fitted.result.progress.step,
        "epochs": fitted.trainer.epochs_done(),
        "dev_nll": fitted.result.valid.get("nll") if fitted.result.valid else None,
        "seconds": round(trained, 1),
        "source_vocabulary": len(data.vocabularies.source),
        "target_vocabulary": len(data.vocabularies.target),
    }
    return fitted, record

"""Trees as sequences: constituency parsing as translation (paper section 6.3).

The paper parses English with the translation model unchanged, following Vinyals et al. (2015),
"Grammar as a foreign language": the source is the sentence, the target is its parse tree written
out depth first as one line of tokens. This module holds everything that is specific to trees; the
model, the tokenizer, training and beam search are the translation ones.

Conventions of the linearization (`linearize`), those of Vinyals et al.:

- An opening bracket carries its label, ``(NP``, and so does a closing one, ``)NP``: the decoder
  always knows which constituent it is closing.
- Words are *not* written in the target (the decoder would have to copy them); each word is one
  slot, ``XX``. Vinyals et al. replaced the part-of-speech tags by ``XX`` too, because the F1
  score does not count them and dropping them helped; ``tags=True`` writes the tags instead.
- Before linearizing, `clean_tree` applies the usual Penn Treebank preprocessing: the empty top
  bracket (or TOP / ROOT) goes, empty elements (``-NONE-`` traces) and the constituents left empty
  without them go, and function tags and indices are cut (``NP-SBJ-1`` -> ``NP``).

``(S (NP (NNP John)) (VP (VBZ has) (NP (DT a) (NN dog))) (. .))`` becomes
``(S (NP XX )NP (VP XX (NP XX XX )NP )VP XX )S``, and `delinearize` puts the words back in the
slots. A model's output need not be a tree; the repair rule is stated in `delinearize`.

The score (`bracket_score`) is labelled bracket F1 as evalb computes it with Collins's parameter
file, COLLINS.prm, the setting behind the WSJ numbers of Table 4: punctuation (the tags
``, : `` '' .``) is deleted from both trees before spans are counted, TOP / ROOT brackets are not
counted, nor are part-of-speech brackets, PRT counts as ADVP, and brackets are matched as a
multiset of (label, first word, last word).
"""

from __future__ import annotations

import os
import re
import zipfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Iterable, Sequence

from nltk import Tree

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
    """The target line of a tree: labelled brackets, one ``XX`` per word (or its tag with tags=True).

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

    Punctuation is read from the *gold* tree's tags and deleted from both trees: a model that writes
    ``XX`` for every tag has no tags of its own, and evalb requires the two trees to agree on which
    words are deleted. Both trees must hold the same words (evalb's "words unmatch" error otherwise).
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

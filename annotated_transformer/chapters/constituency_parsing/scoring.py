"""Labelled bracket F1 as evalb computes it with COLLINS.prm, its second summary (sentences of at most
40 words), the paired bootstrap between two parsers, and F1 by sentence length.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from nltk import Tree

from .linearization import Delinearized
from .treebank import UNCOUNTED_LABELS, is_preterminal, strip_function_tags

# COLLINS.prm: DELETE_LABEL TOP, -NONE-, and these punctuation tags; EQ_LABEL ADVP PRT.
PUNCTUATION_TAGS = frozenset({",", ":", "``", "''", "."})


EQUIVALENT_LABELS = {"PRT": "ADVP"}


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
    gold: Sequence[Tree], test: Sequence[Tree | Delinearized]
) -> dict[str, BracketScore]:
    """evalb's two summaries: {"all": every sentence, "<=40": sentences of at most 40 words}."""
    short = [i for i, g in enumerate(gold) if len(g.leaves()) <= EVALB_CUTOFF]
    return {
        "all": corpus_score(gold, test),
        f"<={EVALB_CUTOFF}": corpus_score(
            [gold[i] for i in short], [test[i] for i in short]
        ),
    }


def _short_sentences(
    gold: Sequence[Tree], test: Sequence[Tree | Delinearized]
) -> dict[str, float | int]:
    """evalb's second summary as report keys: {"f1_le40": F1, "sentences_le40": sentences}."""
    short = corpus_scores(gold, test)[f"<={EVALB_CUTOFF}"]
    return {"f1_le40": short.f1, "sentences_le40": short.sentences}


# Sentence lengths of the F1-by-length table (the last bin is open).
LENGTH_BINS = ((1, 10), (11, 20), (21, 30), (31, 40), (41, None))


def f1_by_length(
    gold: Sequence[Tree], parses: Sequence[Tree | Delinearized]
) -> dict[str, dict]:
    """{"1-10": {sentences, invalid, f1}, ...}: longer sentences have more brackets to miss."""
    table = {}
    for low, high in LENGTH_BINS:
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


EVALB_CONVENTIONS = (
    "labelled bracket F1 with evalb's COLLINS.prm conventions: punctuation deleted by the gold "
    "tags, TOP and part-of-speech brackets not counted, PRT = ADVP; invalid outputs repaired by "
    "delinearize and scored"
)

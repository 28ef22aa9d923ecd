"""The floors a parser must clear: the right-branching tree with the commonest labels of the
training trees, and the flat tree that puts every word under the root.
"""

from __future__ import annotations

from collections import Counter
from typing import Sequence

from nltk import Tree

from .linearization import WORD_SLOT
from .treebank import is_preterminal


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

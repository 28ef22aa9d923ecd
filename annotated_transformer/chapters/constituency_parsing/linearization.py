"""A tree as one line of symbols and back: labelled brackets with a tag (or ``XX``) in each word
slot, and the repair rule that turns any line a model writes into a tree over the sentence's words.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Sequence

from nltk import Tree

from .treebank import is_preterminal

WORD_SLOT = "XX"


# The repaired output of a model gets this root when it is not one constituent (never counted).
REPAIR_ROOT = "TOP"


def _count(n: int, noun: str) -> str:
    """ "1 word", "2 words": a repair as a reader reads it."""
    return f"{n} {noun}{'s' * (n != 1)}"


def with_slot_tags(tree: Tree) -> Tree:
    """The tree with every part-of-speech tag replaced by ``XX`` (what `delinearize` of an XX line gives)."""
    if is_preterminal(tree):
        return Tree(WORD_SLOT, [tree[0]])
    return Tree(tree.label(), [with_slot_tags(child) for child in tree])


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

    Tokens are split on white space: ``(LABEL`` opens a constituent, ``)`` or
    ``)LABEL`` closes one, anything else is a word slot whose text becomes the word's
    tag (``XX``, or a real tag).

    A model may write a line that is no tree. The repair rule, applied left to right,
    keeps every bracket it can and never invents a labelled one:

    1. a closing bracket closes the innermost open constituent, whatever label it
       carries (a different label is recorded); with nothing open it is dropped;
    2. a word slot beyond the last word is dropped; a constituent that ends up with no
       word is dropped;
    3. constituents still open at the end are closed; words with no slot are attached,
       tagged ``XX``, after the last placed word: at the end of the last top-level item
       when it is a phrase, else at the top level, so the leaves are always `words` in
       order;
    4. when the result is not one constituent (several, or none), a ``TOP`` root, which
       the score does not count, holds them.

    The line counts as an invalid tree when any rule fired; `Delinearized.repairs` says
    which.
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
        repairs.append(f"closed {_count(len(stack), 'constituent')} left open")
        while stack:
            close()
    if used < len(words):
        repairs.append(f"attached {_count(len(words) - used, 'word')} without a slot")
        missing = [Tree(WORD_SLOT, [word]) for word in words[used:]]
        # They follow every placed word: at the end of the last top-level item when
        # it is a phrase, else as top-level items of their own (never before a bare
        # word slot).
        if roots and not is_preterminal(roots[-1]):
            roots[-1].extend(missing)
        else:
            roots.extend(missing)
    if len(roots) == 1 and not is_preterminal(roots[0]):
        return Delinearized(roots[0], _summarize(repairs))
    if roots:  # a single word slot, or several top-level items
        repairs.append(f"put {_count(len(roots), 'top-level item')} under {REPAIR_ROOT}")
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

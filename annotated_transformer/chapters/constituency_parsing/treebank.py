"""Reading the Penn Treebank: .mrg files or NLTK's zip, the standard split by file, and the
cleaning every parser applies (no outer bracket, no empty elements, no function tags).
"""

from __future__ import annotations

import os
import re
import zipfile
from pathlib import Path, PurePosixPath
from typing import Iterable

from nltk import Tree

from ...data.textfiles import text_lines

EMPTY_ELEMENT = "-NONE-"
# Brackets a treebank wraps a sentence in, dropped by cleaning and never counted by evalb.
UNCOUNTED_LABELS = frozenset({"", "TOP", "ROOT"})


_FUNCTION_TAG = re.compile(r"[-=]")


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


def _read_text(source, name: str) -> str:
    """A .mrg file's text, read by the package's one reader of text (strict UTF-8, lines that
    end in LF or CR LF, an error naming the file and line), each line ending in LF."""
    return "".join(line + "\n" for line in text_lines(source, name))


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
                with archive.open(name) as member:
                    text = _read_text(member, f"{path}:{name}")
                files[PurePosixPath(name).stem] = parse_bracketed(text, name)
    elif path.is_dir():
        for name in sorted(path.rglob("*.mrg")):
            files[name.stem] = parse_bracketed(_read_text(name, str(name)), name.name)
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

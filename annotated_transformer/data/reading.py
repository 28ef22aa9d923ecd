"""Parallel corpora as aligned sentence pairs, with the pairs a model cannot learn from dropped and counted.

Real corpora hold empty lines, stray whitespace, the odd undecodable byte and a few sentences far longer
than the rest. Each of those would crash or skew training much later and far from its cause, so reading
drops such a pair here, counts it by reason and logs the counts; only a difference in line counts
between the two files is an error, because then no pair's alignment can be trusted.
"""

from __future__ import annotations

import itertools
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from .locate import split_files
from .registry import corpus_info
from .textfiles import raw_lines

logger = logging.getLogger(__name__)


@dataclass
class ParallelCorpus:
    """Aligned sentence pairs of one split, after dropping the pairs we cannot or should not train on."""

    name: str  # "multi30k/train"
    src_lang: str
    tgt_lang: str
    src: list[str]
    tgt: list[str]
    skipped: dict[str, int]  # {"empty": n, "over_long": n, "undecodable": n}
    path: Path  # folder the files were read from
    src_path: Path
    tgt_path: Path

    def __len__(self) -> int:
        return len(self.src)

    def __getitem__(self, index: int) -> tuple[str, str]:
        return self.src[index], self.tgt[index]

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(zip(self.src, self.tgt))


def _count_rest(lines: Iterator[bytes]) -> int:
    return sum(1 for _ in lines)


def read_parallel_files(
    src_path: str | os.PathLike,
    tgt_path: str | os.PathLike,
    *,
    name: str | None = None,
    src_lang: str = "src",
    tgt_lang: str = "tgt",
    max_words: int | None = None,
) -> ParallelCorpus:
    """Read two line-aligned files (plain or gzipped) into a ParallelCorpus.

    Whitespace around each sentence is stripped. A pair is skipped and counted, never passed on to crash
    something later, when either side is empty, has more than `max_words` whitespace-separated words, or
    is not valid UTF-8. (`max_words` counts words of the raw sentence, before tokenization; the model's
    `max_len` counts subword positions.) Files whose line counts differ raise ValueError.
    """
    if max_words is not None and max_words < 1:
        raise ValueError(f"max_words must be >= 1 or None, got {max_words!r}")
    src_path, tgt_path = Path(src_path), Path(tgt_path)
    name = name or f"{src_path.name}|{tgt_path.name}"
    skipped = {"empty": 0, "over_long": 0, "undecodable": 0}
    sources: list[str] = []
    targets: list[str] = []

    src_lines, tgt_lines = raw_lines(src_path), raw_lines(tgt_path)
    count = 0
    for count, (src_raw, tgt_raw) in enumerate(
        itertools.zip_longest(src_lines, tgt_lines), start=1
    ):
        if src_raw is None or tgt_raw is None:
            # One file ended early: count both to say by how much.
            n_src = count - 1 + (src_raw is not None) + _count_rest(src_lines)
            n_tgt = count - 1 + (tgt_raw is not None) + _count_rest(tgt_lines)
            raise ValueError(
                f"{src_path} has {n_src} lines but {tgt_path} has {n_tgt}: line i of one must translate line i "
                "of the other; re-fetch the pair or fix the files"
            )
        try:
            src_text = src_raw.decode("utf-8").strip().lstrip("\ufeff").strip()
            tgt_text = tgt_raw.decode("utf-8").strip().lstrip("\ufeff").strip()
        except UnicodeDecodeError:
            skipped["undecodable"] += 1
            continue
        if not src_text or not tgt_text:
            skipped["empty"] += 1
            continue
        if max_words is not None and (
            len(src_text.split()) > max_words or len(tgt_text.split()) > max_words
        ):
            skipped["over_long"] += 1
            continue
        sources.append(src_text)
        targets.append(tgt_text)

    message = (
        f"skipped {skipped['empty']} empty, {skipped['over_long']} over-long, "
        f"{skipped['undecodable']} undecodable pairs of {name}"
    )
    # Empty lines are common and harmless (Multi30k's training split has one): only pairs lost to
    # length or encoding are worth a warning on a reader's page.
    lost = skipped["over_long"] + skipped["undecodable"]
    logger.log(logging.WARNING if lost else logging.INFO, message)
    return ParallelCorpus(
        name=name,
        src_lang=src_lang,
        tgt_lang=tgt_lang,
        src=sources,
        tgt=targets,
        skipped=skipped,
        path=src_path.parent,
        src_path=src_path,
        tgt_path=tgt_path,
    )


def load_parallel(
    corpus: str,
    split: str,
    src_lang: str | None = None,
    tgt_lang: str | None = None,
    data_dir: str | os.PathLike | None = None,
    max_words: int | None = None,
    *,
    download: bool = True,
) -> ParallelCorpus:
    """Load one split of a parallel corpus (languages default to the corpus's usual direction), found as
    `locate` says; pairs with a side over `max_words` words are skipped.

    Example: ``load_parallel("multi30k", "train")`` -> 29,000 English -> German pairs.
    """
    info = corpus_info(corpus)
    split = info.canonical_split(split)
    src_lang, tgt_lang = info.direction(src_lang, tgt_lang)
    src_path, tgt_path = split_files(
        info.name, split, src_lang, tgt_lang, data_dir, download=download
    )
    return read_parallel_files(
        src_path,
        tgt_path,
        name=f"{info.name}/{split}",
        src_lang=src_lang,
        tgt_lang=tgt_lang,
        max_words=max_words,
    )

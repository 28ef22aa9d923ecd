"""Parallel corpora as aligned sentence pairs, with the pairs a model cannot learn from dropped and counted.

Real corpora hold empty lines, stray whitespace and a few sentences far longer than the rest. Each of
those would crash or skew training much later and far from its cause, so reading drops such a pair
here when asked (`drop_empty`, `max_words`), counts it by reason and logs the counts. Without
`drop_empty` an empty line is an error naming the file and line: a test set scored on fewer pairs
than its files hold, with translations that no longer pair with the source lines, is not the test
set. A difference in line counts between the two files is an error, because then no pair's alignment
can be trusted, and so is a line that is not UTF-8 (`textfiles.text_lines`): dropping it would score
or train on part of a file saved in another encoding.
"""

from __future__ import annotations

import itertools
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from .corpora import corpus_info, split_files
from .textfiles import text_lines

logger = logging.getLogger(__name__)


@dataclass
class ParallelCorpus:
    """Aligned sentence pairs of one split, after dropping the pairs we cannot or should not train on."""

    name: str  # "multi30k/train"
    src_lang: str
    tgt_lang: str
    src: list[str]
    tgt: list[str]
    skipped: dict[str, int]  # {"empty": n, "over_long": n}: pairs dropped as asked
    path: Path  # folder the files were read from
    src_path: Path
    tgt_path: Path

    def __len__(self) -> int:
        return len(self.src)

    def __getitem__(self, index: int) -> tuple[str, str]:
        return self.src[index], self.tgt[index]

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(zip(self.src, self.tgt))


def read_parallel_files(
    src_path: str | os.PathLike,
    tgt_path: str | os.PathLike,
    *,
    name: str | None = None,
    src_lang: str = "src",
    tgt_lang: str = "tgt",
    max_words: int | None = None,
    drop_empty: bool = False,
) -> ParallelCorpus:
    """Read two line-aligned files (plain or gzipped, UTF-8) into a ParallelCorpus.

    Whitespace around each sentence is stripped. A pair is skipped and counted, never passed on to crash
    something later, when either side has more than `max_words` whitespace-separated words, or, with
    `drop_empty`, is empty. (`max_words` counts words of the raw sentence, before tokenization; the
    model's `max_len` counts subword positions.) An empty side without `drop_empty`, a line that is not
    UTF-8, and files whose line counts differ raise ValueError.
    """
    if max_words is not None and max_words < 1:
        raise ValueError(f"max_words must be >= 1 or None, got {max_words!r}")
    src_path, tgt_path = Path(src_path), Path(tgt_path)
    name = name or f"{src_path.name}|{tgt_path.name}"
    skipped = {"empty": 0, "over_long": 0}
    sources: list[str] = []
    targets: list[str] = []

    src_lines, tgt_lines = text_lines(src_path), text_lines(tgt_path)
    count = 0
    for count, (src_raw, tgt_raw) in enumerate(
        itertools.zip_longest(src_lines, tgt_lines), start=1
    ):
        if src_raw is None or tgt_raw is None:
            # One file ended early: count both to say by how much.
            n_src = count - 1 + (src_raw is not None) + sum(1 for _ in src_lines)
            n_tgt = count - 1 + (tgt_raw is not None) + sum(1 for _ in tgt_lines)
            raise ValueError(
                f"{src_path} has {n_src} lines but {tgt_path} has {n_tgt}: line i of one must translate line i "
                "of the other; re-fetch the pair or fix the files"
            )
        src_text = src_raw.strip().lstrip("\ufeff").strip()
        tgt_text = tgt_raw.strip().lstrip("\ufeff").strip()
        if not src_text or not tgt_text:
            if not drop_empty:
                empty = src_path if not src_text else tgt_path
                raise ValueError(
                    f"{empty}: line {count} is empty, so it pairs with no sentence of "
                    f"{tgt_path if empty == src_path else src_path}: remove the pair from both "
                    "files (or fill it in)"
                )
            skipped["empty"] += 1
            continue
        if max_words is not None and (
            len(src_text.split()) > max_words or len(tgt_text.split()) > max_words
        ):
            skipped["over_long"] += 1
            continue
        sources.append(src_text)
        targets.append(tgt_text)

    message = f"skipped {skipped['empty']} empty, {skipped['over_long']} over-long pairs of {name}"
    # Empty lines are common and harmless in training text (WMT14's sample has one): only pairs
    # lost to length are worth a warning on a reader's page.
    logger.log(logging.WARNING if skipped["over_long"] else logging.INFO, message)
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
    drop_empty: bool = False,
) -> ParallelCorpus:
    """Load one split of a parallel corpus (languages default to the corpus's usual direction), found as
    `corpora` says; pairs with a side over `max_words` words are skipped, and with `drop_empty` the
    pairs with an empty side (else they are an error).

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
        drop_empty=drop_empty,
    )

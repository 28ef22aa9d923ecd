"""Corpus text files, plain or gzipped, read as byte lines split on b"\\n" only.

The staged copies are gzipped (``<split>.<lang>.gz``) while downloads keep the publisher's format, so
every lookup accepts either name and every reader detects gzip from the bytes rather than the name.
Lines are split on b"\\n" alone because str.splitlines would also split on U+2028 or \\x85 inside a
sentence and silently shift every later pair out of alignment.
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import BinaryIO, Iterator


def find_plain_or_gz(directory: Path, name: str) -> Path | None:
    """The file `name` in `directory`, as `name.gz` or `name`, or None when neither is there.

    Both at once is an error: they may hold different text (an edited copy beside the original),
    and reading one of them quietly would train on text the user did not mean.
    """
    found = [c for c in (directory / f"{name}.gz", directory / name) if c.is_file()]
    if len(found) == 2:
        raise ValueError(
            f"{found[1]} and {found[0]} are both there and may differ: keep only the one to "
            "read (delete or rename the other)"
        )
    return found[0] if found else None


def open_maybe_gzip(path: Path) -> BinaryIO:
    with open(path, "rb") as probe:
        magic = probe.read(2)
    return gzip.open(path, "rb") if magic == b"\x1f\x8b" else open(path, "rb")  # type: ignore[return-value]


def raw_lines(path: Path) -> Iterator[bytes]:
    """The lines of `path` as bytes, without their b"\\n"; a truncated gzip is a ValueError saying what to do."""
    try:
        with open_maybe_gzip(path) as handle:
            for line in handle:
                yield line.rstrip(b"\n")
    except (EOFError, gzip.BadGzipFile) as error:
        raise ValueError(
            f"{path} is a damaged gzip file ({error}): delete it so it is fetched again, or replace it"
        ) from error

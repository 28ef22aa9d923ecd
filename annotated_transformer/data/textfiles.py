"""Text files, plain or gzipped, read as lines split on b"\\n" only and decoded strictly as UTF-8.

The staged copies are gzipped (``<split>.<lang>.gz``) while downloads keep the publisher's format, so
every lookup accepts either name and every reader detects gzip from the bytes rather than the name.
Lines are split on b"\\n" alone because str.splitlines would also split on U+2028 or \\x85 inside a
sentence and silently shift every later pair out of alignment.

`text_lines` (a file) and `decoded_lines` (bytes already read, such as standard input) are the one
door through which the package reads text a user gives it: a corpus, a file to translate, sentences
to score attention on. A line that is not UTF-8 is never skipped or replaced: it is a ValueError of
one line naming the file, the line, the byte and the fix, and says UTF-16 when the bytes look like
it (a UTF-16 byte-order mark, or a NUL in every other byte), since UTF-16 text would otherwise pass
as lines of letters and NULs.
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path
from typing import BinaryIO, Iterable, Iterator


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


UTF8_BOM = b"\xef\xbb\xbf"
UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


def _looks_utf16(raw: bytes) -> bool:
    """A NUL in (nearly) every other byte: ASCII text saved as UTF-16, with or without a BOM."""
    for half in (raw[0::2], raw[1::2]):
        if half and half.count(0) * 10 >= len(half) * 8:
            return True
    return False


def _fix(name: str, encoding: str, kind: str) -> str:
    """The command that converts the text: `kind` is "plain", "gzip" or "stream" (no file)."""
    convert = f"iconv -f {encoding} -t utf-8"
    out = f"{Path(name).name}.utf8"
    if kind == "gzip":
        return f"zcat {name} | {convert} | gzip > {out}.gz"
    if kind == "stream":
        return f"pipe it through {convert}"
    return f"{convert} {name} > {out}"


def not_utf8_error(
    name: str, number: int, offset: int, raw: bytes, at: int, *, kind: str = "plain"
) -> ValueError:
    """The one-line error for line `number` (1-based) of `name`, which starts at byte `offset` of
    the text and holds a byte that is not UTF-8 text at `at` of `raw` (the line's bytes); `kind`
    as `_fix` takes it."""
    where = f"{name}: line {number}, byte {offset + at} (0x{raw[at]:02x})"
    bom = number == 1 and raw.startswith(UTF16_BOMS)
    if bom or _looks_utf16(raw):
        why = (
            "starts with a UTF-16 byte-order mark"
            if bom
            else "has a NUL in every other byte"
        )
        return ValueError(
            f"{where}: the text is UTF-16 (it {why}), not UTF-8: convert it to UTF-8, "
            f"e.g. {_fix(name, 'utf-16', kind)}"
        )
    if raw[at] == 0:
        return ValueError(
            f"{where}: a NUL byte, which no text holds (a binary or damaged file?): give "
            "UTF-8 text, or remove the NUL bytes"
        )
    return ValueError(
        f"{where} is not UTF-8 (cp1252 or Latin-1 text, perhaps): convert it to UTF-8, "
        f"e.g. {_fix(name, 'cp1252', kind)}"
    )


def _decode(raw_lines_: Iterable[bytes], name: str, kind: str) -> Iterator[str]:
    offset = 0  # of the line's first byte in the text
    for number, raw in enumerate(raw_lines_, start=1):
        skip = len(UTF8_BOM) if number == 1 and raw.startswith(UTF8_BOM) else 0
        nul = raw.find(b"\0", skip)
        try:
            text = raw[skip:].decode("utf-8")
        except UnicodeDecodeError as error:
            at = skip + error.start
            if 0 <= nul < at:
                at = nul
            raise not_utf8_error(name, number, offset, raw, at, kind=kind) from error
        if nul >= 0:
            raise not_utf8_error(name, number, offset, raw, nul, kind=kind)
        yield text[:-1] if text.endswith("\r") else text
        offset += len(raw) + 1


def _is_gzip(path: Path) -> bool:
    with open(path, "rb") as probe:
        return probe.read(2) == b"\x1f\x8b"


def text_lines(path: str | os.PathLike) -> Iterator[str]:
    """The lines of the text file `path` (plain or gzipped), strictly UTF-8, without their line
    ends (b"\\n", or b"\\r\\n"); a UTF-8 byte-order mark at the start is dropped. Any line that
    is not UTF-8 text (or holds a NUL byte) is a ValueError naming the file, line and byte."""
    path = Path(path)
    return _decode(raw_lines(path), str(path), "gzip" if _is_gzip(path) else "plain")


def decoded_lines(raw: bytes, name: str) -> list[str]:
    """`text_lines` for bytes already read (standard input): `name` is what the error calls them."""
    parts = raw.split(b"\n")
    if parts and parts[-1] == b"":
        parts.pop()  # the newline that ends the last line
    return list(_decode(parts, name, "stream"))

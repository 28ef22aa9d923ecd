"""The one reader of text: a path, a gzip file, a pipe or standard input, read once as lines of UTF-8.

Every text the package reads from a user or a corpus comes through `text_lines`: a corpus file,
the sentences `translate` is given (a file, ``/dev/stdin``, a FIFO, a shell's ``<(...)``, or the
standard input stream itself, or bytes already in memory as a stream), sentences to score
attention on, a treebank's .mrg files; `raw_lines` gives the lines as bytes to the one caller that copies them byte for byte (a checksummed selection of lines).

A source is opened once and read once, front to back: gzip is told from its first two bytes
(the staged copies are ``<split>.<lang>.gz`` while downloads keep the publisher's format, so
never from the name), and those two bytes are handed back to the reader instead of reopening
the path, which on a pipe would find it already drained. Lines end at b"\\n" or b"\\r\\n" and
nowhere else: str.splitlines would also split at U+2028 or \\x85 inside a sentence and silently
shift every later pair out of alignment. What cannot be read as such lines is a `TextInputError`
(a ValueError) of one line naming the source, the line, the byte and the fix, never a line
skipped, replaced or run together:

- a byte that is not UTF-8 text, or a NUL (UTF-16 is named as such when the bytes look like it:
  a UTF-16 byte-order mark, or a NUL in every other byte, since it would otherwise pass as lines
  of letters and NULs);
- a carriage return that ends no line (old Mac line ends, b"\\r" alone, would otherwise read as
  one single line);
- gzip data that is damaged or cut short.

A UTF-8 byte-order mark at the very start is dropped.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import stat
import zlib
from pathlib import Path
from typing import BinaryIO, Iterable, Iterator

GZIP_MAGIC = b"\x1f\x8b"
UTF8_BOM = b"\xef\xbb\xbf"
UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


class TextInputError(ValueError):
    """Bytes that are not lines of UTF-8 text: one line naming the source, the place and the fix."""


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


Source = str | os.PathLike | BinaryIO


class _Rejoined(io.RawIOBase):
    """The bytes already read from the front of a stream, then the rest of the stream: what
    reading it once looks like to a reader that starts after the gzip check."""

    def __init__(self, head: bytes, rest: BinaryIO):
        self._head = head
        self._rest = rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self._head:
            size = min(len(buffer), len(self._head))
            buffer[:size] = self._head[:size]
            self._head = self._head[size:]
            return size
        return self._rest.readinto(buffer)


def _front(handle: BinaryIO, size: int = len(GZIP_MAGIC)) -> bytes:
    """The first `size` bytes (fewer only at the end of the stream: a pipe may give them one by one)."""
    head = b""
    while len(head) < size and (more := handle.read(size - len(head))):
        head += more
    return head


def _is_regular_file(handle: BinaryIO) -> bool:
    # io.UnsupportedOperation (an OSError and a ValueError): no file behind the stream.
    try:
        return stat.S_ISREG(os.fstat(handle.fileno()).st_mode)
    except (OSError, AttributeError, ValueError):
        return False


def _shown(name: str) -> str:
    """A source's name as an error prints it: as it is, or quoted when it holds a line break or
    another unprintable character (the error stays one line)."""
    return name if name.isprintable() else ascii(name)


@contextlib.contextmanager
def _opened(
    source: Source, name: str | None
) -> Iterator[tuple[Iterator[bytes], str, str]]:
    """(its lines, each with its line end; its name; its kind) of `source`, opened once (a path,
    closed after) or read from where it stands (a binary stream, left open); kind is "plain",
    "gzip", "stream" or "gzip-stream", for the fix an error suggests. Damaged gzip met while
    the lines are read is a `TextInputError`."""
    owned = isinstance(source, (str, os.PathLike))
    if owned:
        name = name or os.fspath(source)
    elif name is None:
        name = str(getattr(source, "name", "the text"))
    name = _shown(str(name))
    handle: BinaryIO = open(source, "rb") if owned else source  # type: ignore[arg-type]
    try:
        head = _front(handle)
        gzipped = head == GZIP_MAGIC
        kind = (
            ("gzip" if gzipped else "plain")
            if owned and _is_regular_file(handle)  # a command to fix it can name the file
            else ("gzip-stream" if gzipped else "stream")
        )
        stream = io.BufferedReader(_Rejoined(head, handle), buffer_size=1 << 16)
        lines = gzip.GzipFile(fileobj=stream, mode="rb") if gzipped else stream
        try:
            yield iter(lines), name, kind
        except (EOFError, gzip.BadGzipFile, zlib.error) as error:
            why = " ".join(str(error).split()) or type(error).__name__
            what = "a damaged gzip file" if kind == "gzip" else "damaged gzip data"
            fix = (
                "delete it so it is fetched again, or replace it"
                if kind == "gzip"
                else "give the whole, undamaged file"
            )
            raise TextInputError(f"{name} is {what} ({why}): {fix}") from error
    finally:
        if owned:
            handle.close()


def raw_lines(path: str | os.PathLike) -> Iterator[bytes]:
    """The lines of `path` (plain or gzipped) as bytes, without their b"\\n" (a b"\\r" before it
    is kept: the bytes as they are); damaged gzip is a `TextInputError`."""
    with _opened(path, None) as (lines, _, _):
        for line in lines:
            yield line[:-1] if line[-1:] == b"\n" else line


def _looks_utf16(raw: bytes) -> bool:
    """A NUL in (nearly) every other byte: ASCII text saved as UTF-16, with or without a BOM."""
    for half in (raw[0::2], raw[1::2]):
        if half and half.count(0) * 10 >= len(half) * 8:
            return True
    return False


def _fix(name: str, kind: str, convert: str, suffix: str) -> str:
    """The command that passes the text through the filter `convert`, for a source of `kind`
    (as `_opened` says)."""
    out = f"{Path(name).name}.{suffix}"
    return {
        "gzip": f"zcat {name} | {convert} | gzip > {out}.gz",
        "gzip-stream": f"pipe it through zcat | {convert}",
        "stream": f"pipe it through {convert}",
    }.get(kind, f"{convert} < {name} > {out}")


def not_utf8_error(
    name: str, number: int, offset: int, raw: bytes, at: int, *, kind: str = "plain"
) -> TextInputError:
    """The one-line error for line `number` (1-based) of `name`, which starts at byte `offset` of
    the text and holds a byte that is not UTF-8 text at `at` of `raw` (the line's bytes)."""
    where = f"{name}: line {number}, byte {offset + at} (0x{raw[at]:02x})"
    bom = number == 1 and raw.startswith(UTF16_BOMS)
    if bom or _looks_utf16(raw):
        why = (
            "starts with a UTF-16 byte-order mark"
            if bom
            else "has a NUL in every other byte"
        )
        return TextInputError(
            f"{where}: the text is UTF-16 (it {why}), not UTF-8: convert it to UTF-8, "
            f"e.g. {_fix(name, kind, 'iconv -f utf-16 -t utf-8', 'utf8')}"
        )
    if raw[at] == 0:
        return TextInputError(
            f"{where}: a NUL byte, which no text holds (a binary or damaged file?): give "
            "UTF-8 text, or remove the NUL bytes"
        )
    return TextInputError(
        f"{where} is not UTF-8 (cp1252 or Latin-1 text, perhaps): convert it to UTF-8, "
        f"e.g. {_fix(name, kind, 'iconv -f cp1252 -t utf-8', 'utf8')}"
    )


def bare_cr_error(name: str, number: int, at: int, kind: str) -> TextInputError:
    """The one-line error for a b"\\r" at byte `at` of the text, in line `number`, that no
    b"\\n" follows."""
    fix = _fix(name, kind, "tr '\\r' '\\n'", "unix")
    return TextInputError(
        f"{name}: line {number}, byte {at}: a carriage return (\\r) that no line feed "
        "follows; lines must end in \\n or \\r\\n (a file with old Mac line ends is otherwise "
        f"read as one line): convert the line ends, e.g. {fix}"
    )


def _decode(lines: Iterable[bytes], name: str, kind: str) -> Iterator[str]:
    offset = 0  # of the line's first byte in the text
    for number, raw in enumerate(lines, start=1):
        if raw[-1:] == b"\n":
            body = raw[:-2] if raw[-2:-1] == b"\r" else raw[:-1]
        else:
            body = raw
        skip = 0
        if number == 1 and body.startswith(UTF8_BOM):
            if raw == UTF8_BOM:
                return  # a byte-order mark and nothing else: no text, no line
            skip = len(UTF8_BOM)
        nul = body.find(b"\0")  # (find: faster here than `in`)
        try:
            text = body[skip:].decode("utf-8") if skip else body.decode("utf-8")
        except UnicodeDecodeError as error:
            at = skip + error.start
            if 0 <= nul < at:
                at = nul
            raise not_utf8_error(name, number, offset, body, at, kind=kind) from error
        if nul >= 0:
            raise not_utf8_error(name, number, offset, body, nul, kind=kind)
        carriage_return = body.find(b"\r")
        if carriage_return >= 0:
            raise bare_cr_error(name, number, offset + carriage_return, kind)
        yield text
        offset += len(raw)


def text_lines(source: Source, name: str | None = None) -> Iterator[str]:
    """The lines of `source`, without their line ends (b"\\n" or b"\\r\\n"), read once as a stream.

    `source` is a path (a file, plain or gzipped, ``/dev/stdin``, a FIFO, a shell's ``<(...)``),
    opened once and closed at the end, or a binary stream (``sys.stdin.buffer``, a zip member),
    read from where it stands and left open. `name` is what errors call it (default: the path,
    or the stream's name). Text that is not strictly UTF-8 (or holds a NUL byte), a carriage
    return that ends no line, and damaged gzip data are each a `TextInputError` of one line
    naming the source, the line and the byte. Nothing is opened before the first line is asked
    for.
    """
    with _opened(source, name) as (lines, shown, kind):
        yield from _decode(lines, shown, kind)

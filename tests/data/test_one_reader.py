"""The one reader of text (`data.textfiles.text_lines`): a file, gzip told by its bytes, a pipe, a
FIFO or a stream, each read once; lines end at \\n or \\r\\n only; anything else is one line naming
the source and the place, never another exception."""

from __future__ import annotations

import gzip
import io
import zlib

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from annotated_transformer.chapters.constituency_parsing.treebank import read_treebank
from annotated_transformer.data.reading import read_parallel_files
from annotated_transformer.data.textfiles import (
    TextInputError,
    raw_lines,
    text_lines,
)
from tests.support.pipes import feed_fifo

LINES = b"Two dogs play.\nA man reads.\nA girl sits.\n"


def _decoded(raw: bytes, name: str) -> list[str]:
    return list(text_lines(io.BytesIO(raw), name))


def refusal(source, name: str | None = None) -> str:
    with pytest.raises(TextInputError) as raised:
        list(text_lines(source, name))
    message = str(raised.value)
    assert "\n" not in message and "\r" not in message
    return message


# ------------------------------------------------------------------------------------------ read once
@pytest.mark.parametrize("gzipped", [False, True])
def test_a_fifo_is_read_once_with_every_line_plain_or_gzipped(tmp_path, gzipped):
    fifo = tmp_path / "sentences"
    done = feed_fifo(fifo, gzip.compress(LINES) if gzipped else LINES)
    try:
        assert list(text_lines(fifo)) == LINES.decode().splitlines()
    finally:
        done.set()


def test_a_stream_gives_its_lines_gzipped_or_not_and_is_left_open():
    stream = io.BytesIO(gzip.compress(LINES))
    assert list(text_lines(stream, "standard input")) == LINES.decode().splitlines()
    assert not stream.closed
    assert _decoded(b"\x1f", "standard input") == ["\x1f"]  # one byte of the magic: text


def test_gzip_is_told_by_its_bytes_not_its_name(tmp_path):
    disguised = tmp_path / "sentences.txt"
    disguised.write_bytes(gzip.compress(LINES))
    assert list(text_lines(disguised)) == LINES.decode().splitlines()
    assert list(raw_lines(disguised)) == LINES.splitlines()


# ------------------------------------------------------------------------------------------ line ends
@pytest.mark.parametrize(
    "data, line, byte",
    [
        (b"One.\rTwo.\rThree.\r", 1, 4),  # old Mac line ends: read as one line before
        (b"One.\r\nTwo.\rThree.\r\n", 2, 10),  # a stray one inside a line
        (b"One.\nTwo.\r", 2, 9),  # the last line, with no line feed after it
    ],
)
@pytest.mark.parametrize("gzipped", [False, True])
def test_a_carriage_return_that_ends_no_line_is_refused_naming_file_and_line(
    tmp_path, data, line, byte, gzipped
):
    path = tmp_path / ("mac.txt.gz" if gzipped else "mac.txt")
    path.write_bytes(gzip.compress(data) if gzipped else data)
    message = refusal(path)
    assert message.startswith(f"{path}: line {line}, byte {byte}: a carriage return")
    assert ("zcat" in message) == gzipped and "tr '\\r' '\\n'" in message


def test_a_corpus_with_old_mac_line_ends_is_refused_not_read_as_one_pair(tmp_path):
    (tmp_path / "a.en").write_bytes(b"One.\rTwo.\r")
    (tmp_path / "a.de").write_bytes(b"Eins.\rZwei.\r")
    with pytest.raises(ValueError, match=r"a\.en: line 1, byte 4: a carriage return"):
        read_parallel_files(tmp_path / "a.en", tmp_path / "a.de")


def test_crlf_and_lf_lines_read_alike():
    assert _decoded(b"a\r\nb\n\r\nc", "x") == ["a", "b", "", "c"]


# ------------------------------------------------------------------------------------------ not UTF-8
def test_a_stream_not_in_utf8_names_its_line_and_byte_and_a_fix_for_a_stream():
    message = refusal(io.BytesIO(gzip.compress(b"ok\nno \x92\n")), "standard input")
    assert message.startswith("standard input: line 2, byte 6 (0x92) is not UTF-8")
    assert message.endswith("pipe it through zcat | iconv -f cp1252 -t utf-8")


# ------------------------------------------------------------------------------------------ gzip
def _damaged(data: bytes) -> bytes:
    flipped = bytearray(data)
    for at in range(12, 30):
        flipped[at] ^= 0xFF
    return bytes(flipped)


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[: len(data) // 2],  # cut short
        lambda data: data[:-4] + b"\0\0\0\0",  # wrong length in the trailer
        _damaged,  # a corrupt deflate stream: zlib.error before
    ],
    ids=["truncated", "trailer", "corrupt"],
)
def test_damaged_gzip_is_one_line_naming_the_file(tmp_path, damage):
    path = tmp_path / "s.gz"
    path.write_bytes(
        damage(gzip.compress(b"".join(b"line %d\n" % i for i in range(200))))
    )
    message = refusal(path)
    assert message.startswith(f"{path} is a damaged gzip file (")
    with pytest.raises(TextInputError, match="is damaged gzip data .*undamaged file"):
        list(text_lines(io.BytesIO(path.read_bytes()), "standard input"))


# ------------------------------------------------------------------------------------------ treebank
def test_a_treebank_file_not_in_utf8_names_the_file_and_line(tmp_path):
    (tmp_path / "wsj_0001.mrg").write_bytes(b"( (S (NP (NN a)) (VP (VB b))) )\n")
    assert len(read_treebank(tmp_path)["wsj_0001"]) == 1
    (tmp_path / "wsj_0002.mrg").write_bytes(b"( (S (NP (NN a))\n (VP (VB \xe9))) )\n")
    with pytest.raises(TextInputError, match=r"wsj_0002\.mrg: line 2, byte 26 \(0xe9\)"):
        read_treebank(tmp_path)


# ------------------------------------------------------------------------------------------ property
def expected_lines(data: bytes) -> list[str] | None:
    """Python's own reading of the bytes, or None where the reader must refuse them: gzip (by
    its magic) decompressed, a strict UTF-8 decode (one leading BOM dropped), split on \\n with a
    \\r before it dropped; refused: bytes that do not decompress or decode, a NUL, a lone \\r."""
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error):
            return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    text = text.removeprefix("\ufeff")
    if "\0" in text or "\r" in text.replace("\r\n", ""):
        return None
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


PIECES = st.sampled_from(
    [
        b"\n",
        b"\r\n",
        b"\r",
        b"\0",
        b"\xef\xbb\xbf",
        b"\xff\xfe",
        b"\xe4",
        b"\xc3",
        b"\x85",
    ]
    + ["ä", "\u2028", "\x85", "€", "\U0001f600", "a b"]
)
TEXTY = st.lists(
    st.one_of(PIECES, st.text(max_size=5)).map(
        lambda piece: piece if isinstance(piece, bytes) else piece.encode()
    ),
    max_size=12,
).map(b"".join)
ANY_BYTES = st.one_of(
    st.binary(max_size=64),
    TEXTY,
    TEXTY.map(gzip.compress),
    st.tuples(TEXTY.map(gzip.compress), st.integers(0, 40)).map(
        lambda cut: cut[0][: len(cut[0]) - cut[1]]
    ),
    st.tuples(TEXTY.map(gzip.compress), st.integers(0, 200), st.integers(1, 255)).map(
        lambda hit: (
            hit[0][: hit[1]]
            + bytes([hit[0][hit[1]] ^ hit[2]] if hit[1] < len(hit[0]) else b"")
            + hit[0][hit[1] + 1 :]
        )
    ),
)
EXAMPLES = 400


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=ANY_BYTES)
@example(data=b"One.\rTwo.\r")
@example(data=b"\xef\xbb\xbfa\r\n\r\nb")
def test_any_bytes_read_as_pythons_own_lines_or_refused_in_one_line(tmp_path, data):
    path = tmp_path / "any"
    path.write_bytes(data)
    expected = expected_lines(data)
    try:
        got = list(text_lines(path))
    except TextInputError as error:
        assert expected is None, (data, str(error))
        kinds = ("damaged gzip", "carriage return", "UTF-16", "NUL", "not UTF-8")
        event(f"refused: {next(k for k in kinds if k in str(error))}")
        assert "\n" not in str(error) and str(error).startswith(str(path))
    else:
        assert got == expected, data
        event("read")

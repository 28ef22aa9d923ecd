"""Text files are read as UTF-8 or refused in one line that names the file, the line, the byte and
the fix; no line is dropped unless the caller asks, and then it is counted."""

from __future__ import annotations

import gzip
import io
import re
from pathlib import Path

import pytest

from annotated_transformer.data import tokenizer_for_corpus
from annotated_transformer.data.reading import load_parallel, read_parallel_files
from annotated_transformer.data.textfiles import text_lines

ENGLISH = ["Two dogs play in the snow.", "A man rides a bike.", "A girl reads a book."]
GERMAN = ["Zwei Hunde spielen im Schnee.", "Ein Mann fährt Rad.", "Ein Mädchen liest."]


def _decoded(raw: bytes, name: str) -> list[str]:
    return list(text_lines(io.BytesIO(raw), name))


def write(path: Path, data: bytes, gzipped: bool = False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(data) if gzipped else data)
    return path


def utf8(lines: list[str]) -> bytes:
    return "".join(line + "\n" for line in lines).encode("utf-8")


def refusal(path_a: Path, path_b: Path) -> str:
    with pytest.raises(ValueError) as raised:
        read_parallel_files(path_a, path_b)
    message = str(raised.value)
    assert "\n" not in message
    return message


# ------------------------------------------------------------------------------------------ not UTF-8
@pytest.mark.parametrize("gzipped", [False, True])
def test_a_cp1252_line_refuses_the_pair_naming_file_line_byte_and_the_fix(
    tmp_path, gzipped
):
    german = ["Zwei Hunde spielen.", "Ein Mann liest.", "Ein Mädchen liest."]
    data = b"".join(line.encode("cp1252") + b"\n" for line in german)
    src = write(tmp_path / "test.en", utf8(ENGLISH))
    tgt = write(tmp_path / ("test.de.gz" if gzipped else "test.de"), data, gzipped)
    message = refusal(src, tgt)
    # "Ein Mädchen": line 3, the ä at byte 5 of the line, after the first two lines' bytes.
    offset = len(data.split(b"\n")[0]) + 1 + len(data.split(b"\n")[1]) + 1 + 5
    assert message.startswith(f"{tgt}: line 3, byte {offset} (0xe4) is not UTF-8")
    assert (
        "convert it to UTF-8, e.g." in message and "iconv -f cp1252 -t utf-8" in message
    )
    assert ("zcat" in message) == gzipped
    assert "UTF-16" not in message


@pytest.mark.parametrize(
    "encoding, why",
    [
        ("utf-16", "byte-order mark"),  # with its BOM
        ("utf-16-le", "NUL in every other byte"),
        ("utf-16-be", "NUL in every other byte"),
    ],
)
def test_a_utf16_file_is_named_utf16_not_read_as_letters_and_nuls(
    tmp_path, encoding, why
):
    src = write(
        tmp_path / "train.en", "".join(s + "\n" for s in ENGLISH).encode(encoding)
    )
    tgt = write(tmp_path / "train.de", utf8(GERMAN))
    message = refusal(src, tgt)
    assert message.startswith(f"{src}: line 1, byte ")
    assert f"UTF-16 (it {'starts with a UTF-16' if 'mark' in why else 'has a'} {why}" in (
        message
    )
    assert "iconv -f utf-16 -t utf-8" in message


def test_a_nul_byte_in_utf8_text_is_refused_as_not_text(tmp_path):
    src = write(tmp_path / "a.en", b"One line.\nTwo\x00lines.\nThree.\n")
    tgt = write(tmp_path / "a.de", utf8(GERMAN))
    message = refusal(src, tgt)
    assert message.startswith(f"{src}: line 2, byte 13 (0x00): a NUL byte")
    assert "UTF-16" not in message


def test_standard_input_that_is_not_utf8_is_refused_by_that_name():
    with pytest.raises(
        ValueError,
        match=r"^standard input: line 2, byte 6 \(0xfc\) .*pipe it through iconv -f cp1252",
    ):
        _decoded(b"Gut.\nM\xfcde\n", "standard input")
    assert _decoded("Müde.\n\nGut.".encode(), "standard input") == [
        "Müde.",
        "",
        "Gut.",
    ]


def test_utf8_text_reads_whole_with_bom_crlf_and_line_separators_inside_lines(tmp_path):
    raw = b"\xef\xbb\xbf" + "Zwei\u2028Hunde\r\nM\u00fcde\x85.\r\n\nEnde".encode()
    path = write(tmp_path / "plain.txt", raw)
    assert list(text_lines(path)) == ["Zwei\u2028Hunde", "Müde\x85.", "", "Ende"]
    assert list(text_lines(write(tmp_path / "z.gz", raw, gzipped=True))) == list(
        text_lines(path)
    )


def test_training_a_tokenizer_on_utf16_files_says_utf16_not_vocab_size(tmp_path):
    folder = tmp_path / "data" / "multi30k"
    write(folder / "train.en", "".join(s + "\n" for s in ENGLISH * 20).encode("utf-16"))
    write(folder / "train.de", utf8(GERMAN * 20))
    with pytest.raises(ValueError) as raised:
        tokenizer_for_corpus(
            "multi30k",
            60,
            data_dir=tmp_path / "data",
            cache_dir=tmp_path / "cache",
            download=False,
        )
    assert re.match(
        rf"{re.escape(str(folder / 'train.en'))}: line 1, .*UTF-16", str(raised.value)
    )


# ------------------------------------------------------------------------------------------ empty lines
def test_an_empty_test_line_is_refused_naming_its_file_and_line(tmp_path):
    folder = tmp_path / "multi30k"
    write(folder / "test_2016_flickr.en", utf8(ENGLISH))
    write(folder / "test_2016_flickr.de", utf8([GERMAN[0], "  ", GERMAN[2]]))
    with pytest.raises(ValueError) as raised:
        load_parallel("multi30k", "test", data_dir=tmp_path)
    assert str(raised.value).startswith(
        f"{folder / 'test_2016_flickr.de'}: line 2 is empty, so it pairs with no sentence of "
        f"{folder / 'test_2016_flickr.en'}"
    )


def test_empty_lines_are_dropped_only_when_asked_and_then_counted(tmp_path):
    src = write(tmp_path / "s.txt", utf8(["", ENGLISH[1], ENGLISH[2]]))
    tgt = write(tmp_path / "t.txt", utf8(GERMAN))
    with pytest.raises(ValueError, match=r"s\.txt: line 1 is empty"):
        read_parallel_files(src, tgt)
    kept = read_parallel_files(src, tgt, drop_empty=True)
    assert list(kept) == list(zip(ENGLISH[1:], GERMAN[1:]))
    assert kept.skipped == {"empty": 1, "over_long": 0}

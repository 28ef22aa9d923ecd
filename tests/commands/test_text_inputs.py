"""The commands read the text a user gives them as UTF-8 or stop in one line naming the file, the
line, the byte and the fix (the traceback behind --debug), and no line of a test set is dropped, so
line i of the sources, the references and the translations stay one pair."""

from __future__ import annotations

import gzip
import io
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from annotated_transformer.cli import main
from annotated_transformer.evaluation import scoring
from tests.support.pipes import feed_fifo
from tests.support.tiny_checkpoint import write_tiny_checkpoint

GERMAN = "ein mann hund katze rennt sitzt im auf der park".split()
ENGLISH = "a man dog cat runs sits in on the park".split()


def write_corpus(root: Path, lines: int) -> Path:
    """A Multi30k-shaped folder whose test split holds `lines` English -> German pairs."""
    folder = root / "multi30k"
    folder.mkdir(parents=True)
    for lang, words in (("en", ENGLISH), ("de", GERMAN)):
        (folder / f"test_2016_flickr.{lang}").write_text(
            "".join(f"{words[i % 10]} {words[(3 * i + 1) % 10]}\n" for i in range(lines))
        )
    return root


def error_line(capsys) -> str:
    """The one line a command printed for a user's mistake, with no traceback."""
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    return [line for line in err.splitlines() if line.startswith("error:")][-1]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    """A tiny untrained English -> German model: enough to load, nothing here needs it to translate well."""
    return write_tiny_checkpoint(tmp_path_factory.mktemp("model") / "model.pt")


@pytest.fixture
def offline(tmp_path, monkeypatch):
    monkeypatch.setenv("AT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("AT_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("AT_OFFLINE", "1")
    monkeypatch.delenv("AT_DATA_DIR", raising=False)
    monkeypatch.delenv("AT_DEBUG", raising=False)


def translate_args(checkpoint: Path, *extra: str) -> list[str]:
    return [
        "translate",
        "--checkpoint",
        str(checkpoint),
        "--beam",
        "1",
        "--max-len-b",
        "3",
        "--device",
        "cpu",
        *extra,
    ]


# ------------------------------------------------------------------------------------------ translate
@pytest.mark.parametrize(
    "encoding, says",
    [
        ("cp1252", r"line 2, byte 41 \(0xfc\) is not UTF-8 .*iconv -f cp1252 -t utf-8"),
        ("utf-16", r"line 1, byte 0 \(0xff\): the text is UTF-16 .*iconv -f utf-16"),
        ("utf-16-le", r"line 1, byte 1 \(0x00\): the text is UTF-16 .*iconv -f utf-16"),
    ],
)
def test_translate_refuses_an_input_file_not_in_utf8_in_one_line_and_writes_nothing(
    checkpoint, tmp_path, offline, capsys, encoding, says
):
    source = tmp_path / "in.txt"
    source.write_bytes(
        "A dog runs in the park.\nA man is tired: müde.\n".encode(encoding)
    )
    output = tmp_path / "out.txt"
    assert (
        main(translate_args(checkpoint, "--input", str(source), "--output", str(output)))
        == 1
    )
    line = error_line(capsys)
    assert line.startswith(f"error: {source}: ")
    assert re.search(says, line), line
    assert not output.exists()


def test_translate_shows_the_traceback_of_an_encoding_error_under_debug(
    checkpoint, tmp_path, offline
):
    source = tmp_path / "in.txt"
    source.write_bytes("Caf\u00e9 au lait.\n".encode("cp1252"))
    with pytest.raises(ValueError, match=r"line 1, byte 3 \(0xe9\)") as raised:
        main(["--debug", *translate_args(checkpoint, "--input", str(source))])
    assert isinstance(raised.value.__cause__, UnicodeDecodeError)


def test_translate_reads_standard_input_as_utf8_one_output_line_per_input_line(
    checkpoint, offline, monkeypatch, capsys
):
    raw = b"\xef\xbb\xbfA dog runs.\r\n\r\nA man sits.\r\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(raw)))
    seen = []
    real = scoring.translate

    def recording(model, tokenizer, lines, *args, **kwargs):
        seen.extend(lines)
        return real(model, tokenizer, lines, *args, **kwargs)

    monkeypatch.setattr("annotated_transformer.commands.translate.translate", recording)
    assert main(translate_args(checkpoint)) == 0
    assert seen == ["A dog runs.", "", "A man sits."]  # no BOM, no carriage return
    assert len(capsys.readouterr().out.split("\n")) == 3 + 1

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"ok\nno \x92\n")))
    assert main(translate_args(checkpoint)) == 1
    assert error_line(capsys).startswith(
        "error: standard input: line 2, byte 6 (0x92) is not UTF-8"
    )


# ------------------------------------------------------------------------------------------ evaluate
def evaluate_args(checkpoint: Path, data: Path, hypotheses: Path) -> list[str]:
    return [
        "evaluate",
        "--checkpoint",
        str(checkpoint),
        "--profile",
        "cpu",
        "--data-dir",
        str(data),
        "--device",
        "cpu",
        "--beam",
        "1",
        "--hypotheses",
        str(hypotheses),
    ]


def test_evaluate_refuses_a_test_set_with_an_empty_reference_naming_file_and_line(
    checkpoint, tmp_path, offline, capsys
):
    data = write_corpus(tmp_path / "data", 6)
    references = data / "multi30k" / "test_2016_flickr.de"
    lines = references.read_text().splitlines()
    references.write_text("\n".join(lines[:3] + [""] + lines[4:]) + "\n")
    hypotheses = tmp_path / "hyp.txt"
    assert main(evaluate_args(checkpoint, data, hypotheses)) == 1
    assert error_line(capsys).startswith(
        f"error: {references}: line 4 is empty, so it pairs with no sentence of "
        f"{data / 'multi30k' / 'test_2016_flickr.en'}"
    )
    assert not hypotheses.exists()


def test_evaluate_refuses_a_cp1252_test_set_instead_of_scoring_part_of_it(
    checkpoint, tmp_path, offline, capsys
):
    data = write_corpus(tmp_path / "data", 6)
    references = data / "multi30k" / "test_2016_flickr.de"
    references.write_bytes(references.read_bytes() + "Mädchen\n".encode("cp1252"))
    sources = data / "multi30k" / "test_2016_flickr.en"
    sources.write_bytes(sources.read_bytes() + b"girl\n")
    assert main(evaluate_args(checkpoint, data, tmp_path / "hyp.txt")) == 1
    line = error_line(capsys)
    assert line.startswith(f"error: {references}: line 7, byte ") and "(0xe4)" in line


def test_evaluate_refuses_references_with_old_mac_line_ends_naming_file_and_line(
    checkpoint, tmp_path, offline, capsys
):
    data = write_corpus(tmp_path / "data", 6)
    references = data / "multi30k" / "test_2016_flickr.de"
    references.write_bytes(references.read_bytes().replace(b"\n", b"\r"))
    hypotheses = tmp_path / "hyp.txt"
    assert main(evaluate_args(checkpoint, data, hypotheses)) == 1
    line = error_line(capsys)
    # Read as one line before, and refused as 1 line against 6, which said nothing of why.
    assert line.startswith(f"error: {references}: line 1, byte "), line
    assert "a carriage return (\\r) that no line feed follows" in line
    assert not hypotheses.exists()


def test_evaluate_writes_one_hypothesis_line_per_source_line_whatever_the_translation(
    checkpoint, tmp_path, offline, monkeypatch, capsys
):
    data = write_corpus(tmp_path / "data", 5)
    german = GERMAN
    monkeypatch.setattr(
        scoring,
        "translate",
        lambda model, tokenizer, sources, *a, **k: [
            f"{german[i]}\n{german[i + 1]}\u2028ende" for i in range(len(sources))
        ],
    )
    hypotheses = tmp_path / "hyp.txt"
    assert main(evaluate_args(checkpoint, data, hypotheses)) == 0
    written = hypotheses.read_text(encoding="utf-8").splitlines()
    sources = (data / "multi30k" / "test_2016_flickr.en").read_text().splitlines()
    assert len(written) == len(sources) == 5
    assert written[0] == f"{german[0]} {german[1]} ende"
    assert '"sentences": 5' in capsys.readouterr().out


# ------------------------------------------------------------------------------------------ pipes
THREE = b"A dog runs.\nA man sits.\nA girl reads.\n"


def test_translate_reads_a_fifo_once_and_translates_every_line(
    checkpoint, tmp_path, offline, capsys
):
    fifo = tmp_path / "sentences"
    done = feed_fifo(fifo, THREE)
    try:
        assert main(translate_args(checkpoint, "--input", str(fifo))) == 0
    finally:
        done.set()
    assert len(capsys.readouterr().out.splitlines()) == 3


@pytest.mark.slow  # a process of its own: a few seconds each
@pytest.mark.parametrize(
    "how",
    ["--input /dev/stdin fed by a pipe", "--input <(...)"],
)
def test_translate_keeps_every_line_of_a_pipe(checkpoint, offline, how):
    command = [
        sys.executable,
        "-m",
        "annotated_transformer",
        *translate_args(checkpoint),
    ]
    if how.startswith("--input /dev/stdin"):
        done = subprocess.run(
            [*command, "--input", "/dev/stdin"], input=THREE, capture_output=True
        )
    else:
        done = subprocess.run(
            [
                "bash",
                "-c",
                f'{shlex.join(command)} --input <(printf "%s" "$1")',
                "-",
                THREE,
            ],
            capture_output=True,
        )
    assert done.returncode == 0, done.stderr.decode()
    assert len(done.stdout.decode().splitlines()) == 3


# ------------------------------------------------------------------------------------------ damage
def test_translate_refuses_old_mac_line_ends_naming_the_line(
    checkpoint, tmp_path, offline, capsys
):
    source = tmp_path / "mac.txt"
    source.write_bytes(THREE.replace(b"\n", b"\r"))
    output = tmp_path / "out.txt"
    assert (
        main(translate_args(checkpoint, "--input", str(source), "--output", str(output)))
        == 1
    )
    assert error_line(capsys).startswith(
        f"error: {source}: line 1, byte 11: a carriage return (\\r) that no line feed follows"
    )
    assert not output.exists()


@pytest.mark.parametrize("damage", ["truncated", "corrupt"])
def test_translate_refuses_damaged_gzip_input_in_one_line(
    checkpoint, tmp_path, offline, capsys, damage
):
    data = gzip.compress(THREE * 20)
    source = tmp_path / "in.gz"
    if damage == "truncated":
        source.write_bytes(data[: len(data) // 2])
    else:  # a corrupt deflate stream: a zlib.error and its traceback before
        source.write_bytes(data[:12] + bytes(b ^ 0xFF for b in data[12:30]) + data[30:])
    assert main(translate_args(checkpoint, "--input", str(source))) == 1
    assert error_line(capsys).startswith(f"error: {source} is a damaged gzip file (")

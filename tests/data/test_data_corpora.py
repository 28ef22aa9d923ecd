"""Corpus loaders: where files are found, how downloads stay safe, how bad input is handled.

Every test runs with the network blocked (the fetch seam raises) and with a private cache directory; tests
that need the staged corpora read $AT_DATA_DIR as the session started with it and skip when it is unset.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import logging
import os
import tarfile
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from annotated_transformer.data import corpora
from annotated_transformer.data.corpora import (
    ArchiveMembers,
    ChecksumError,
    CorpusInfo,
    DataNotFoundError,
    corpus_path,
    download_file,
    treebank_zip_path,
    verify_checksums,
)
from annotated_transformer.data.reading import load_parallel, read_parallel_files

STAGED_DATA_DIR = os.environ.get("AT_DATA_DIR")
needs_staged_data = pytest.mark.skipif(
    not STAGED_DATA_DIR, reason="AT_DATA_DIR is unset: see the README's data section"
)


@pytest.fixture(autouse=True)
def offline_and_private_cache(monkeypatch, tmp_path):
    """No test may reach the network or a user's real cache; tests opt back in to what they need."""
    monkeypatch.delenv("AT_DATA_DIR", raising=False)
    monkeypatch.delenv("AT_OFFLINE", raising=False)
    monkeypatch.setenv("AT_CACHE_DIR", str(tmp_path / "cache"))

    def no_network(url, timeout):
        raise urllib.error.URLError("network blocked in tests")

    monkeypatch.setattr(corpora, "_open_url", no_network)


def write_lines(path: Path, lines: list[bytes], gzipped: bool | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = b"".join(line + b"\n" for line in lines)
    if gzipped if gzipped is not None else path.suffix == ".gz":
        data = gzip.compress(data)
    path.write_bytes(data)
    return path


def serve_files(monkeypatch, files_by_url_name: dict[str, Path]) -> list[str]:
    """Answer fetches from local files chosen by the URL's last component, through real file:// URLs."""
    fetched: list[str] = []
    real_open = urllib.request.urlopen

    def fake_open(url, timeout):
        fetched.append(url)
        local = files_by_url_name.get(url.rsplit("/", 1)[1])
        if local is None:
            raise urllib.error.URLError(f"no such test file: {url}")
        return real_open(local.resolve().as_uri(), timeout=timeout)

    monkeypatch.setattr(corpora, "_open_url", fake_open)
    return fetched


# ---------------------------------------------------------------------------------------------- errors
def test_missing_files_error_names_all_three_ways():
    with pytest.raises(DataNotFoundError) as caught:
        load_parallel("multi30k", "train")
    message = str(caught.value)
    assert (
        "no Multi30k files" in message and "train.en" in message and "train.de" in message
    )
    assert "$AT_DATA_DIR/multi30k (AT_DATA_DIR is unset)" in message
    assert (
        "pass --data-dir (or data_dir= in Python), set AT_DATA_DIR, or connect to the network to download them"
        in message
    )
    assert "network blocked in tests" in message  # the download's own reason is kept
    assert isinstance(caught.value, FileNotFoundError)


def test_missing_files_with_downloads_off_never_fetches(monkeypatch, tmp_path):
    monkeypatch.setenv("AT_OFFLINE", "1")
    monkeypatch.setenv("AT_DATA_DIR", str(tmp_path / "empty"))
    fetched = serve_files(monkeypatch, {})
    with pytest.raises(
        DataNotFoundError, match=r"downloads are off .*set AT_DATA_DIR"
    ) as caught:
        load_parallel("wmt14", "newstest2013")
    assert fetched == []
    assert f"(AT_DATA_DIR={tmp_path / 'empty'})" in str(caught.value)


def test_an_explicit_data_dir_is_used_alone(monkeypatch, tmp_path):
    make_tiny_multi30k(tmp_path / "env" / "multi30k", "env")
    monkeypatch.setenv("AT_DATA_DIR", str(tmp_path / "env"))
    fetched = serve_files(monkeypatch, {})
    (tmp_path / "mine").mkdir()
    with pytest.raises(
        DataNotFoundError,
        match=r"val\.en, val\.de, plain or \.gz\) under --data-dir .*mine",
    ) as caught:
        load_parallel(
            "multi30k", "val", data_dir=tmp_path / "mine"
        )  # the split is in $AT_DATA_DIR, not here
    assert fetched == [] and "leave --data-dir out" in str(caught.value)


def test_mismatched_line_counts_name_both_files(tmp_path):
    src = write_lines(tmp_path / "multi30k" / "train.en.gz", [b"one", b"two", b"three"])
    tgt = write_lines(tmp_path / "multi30k" / "train.de", [b"eins", b"zwei"])
    with pytest.raises(ValueError) as caught:
        load_parallel("multi30k", "train", data_dir=tmp_path)
    message = str(caught.value)
    assert f"{src} has 3 lines but {tgt} has 2" in message


def test_longer_target_file_is_reported_too(tmp_path):
    write_lines(tmp_path / "a.txt", [b"x"])
    write_lines(tmp_path / "b.txt", [b"y", b"z", b"w", b"v"])
    with pytest.raises(ValueError, match=r"a.txt has 1 lines but .*b.txt has 4"):
        read_parallel_files(tmp_path / "a.txt", tmp_path / "b.txt")


def test_empty_and_over_long_pairs_are_skipped_counted_and_logged_when_asked(
    tmp_path, caplog
):
    english = [
        b"  A dog runs.  ",
        b"",
        b"   ",
        b"one two three four five six",
        b"Ok.\t",
    ]
    german = [b"Ein Hund rennt.", b"Leer.", b"Auch leer.", b"kurz", b"\tGut."]
    write_lines(tmp_path / "multi30k" / "train.en.gz", english)
    write_lines(tmp_path / "multi30k" / "train.de.gz", german)
    with caplog.at_level(logging.WARNING, logger="annotated_transformer.data.reading"):
        corpus = load_parallel(
            "multi30k", "train", data_dir=tmp_path, max_words=5, drop_empty=True
        )
    assert corpus.src == ["A dog runs.", "Ok."]  # stray whitespace stripped
    assert corpus.tgt == ["Ein Hund rennt.", "Gut."]
    assert corpus.skipped == {"empty": 2, "over_long": 1}
    assert "skipped 2 empty, 1 over-long pairs of multi30k/train" in caplog.text
    assert corpus.name == "multi30k/train" and corpus.path == tmp_path / "multi30k"
    assert list(corpus) == list(zip(corpus.src, corpus.tgt)) and corpus[1] == (
        "Ok.",
        "Gut.",
    )


def test_over_long_counts_words_on_either_side(tmp_path):
    write_lines(tmp_path / "s.txt", [b"a b c d e", b"a b c", b"a b"])
    write_lines(tmp_path / "t.txt", [b"x", b"x y z", b"v w x y z"])
    corpus = read_parallel_files(tmp_path / "s.txt", tmp_path / "t.txt", max_words=3)
    assert corpus.src == ["a b c"] and corpus.skipped["over_long"] == 2
    with pytest.raises(ValueError, match="max_words must be >= 1"):
        read_parallel_files(tmp_path / "s.txt", tmp_path / "t.txt", max_words=0)


def test_unicode_line_separators_do_not_break_alignment(tmp_path):
    # U+2028 and U+0085 are line breaks to str.splitlines; a file's lines end at b"\n" only.
    write_lines(tmp_path / "s.txt", ["a\u2028b".encode(), "c\x85d".encode(), b"e"])
    write_lines(tmp_path / "t.txt", [b"1", b"2", b"3"])
    corpus = read_parallel_files(tmp_path / "s.txt", tmp_path / "t.txt")
    assert corpus.src == ["a\u2028b", "c\x85d", "e"] and corpus.tgt == ["1", "2", "3"]


def test_damaged_gzip_is_a_clear_error(tmp_path):
    good = gzip.compress(b"a\nb\n")
    (tmp_path / "s.gz").write_bytes(good[: len(good) // 2])
    write_lines(tmp_path / "t.txt", [b"1", b"2"])
    with pytest.raises(ValueError, match="damaged gzip file .*delete it"):
        read_parallel_files(tmp_path / "s.gz", tmp_path / "t.txt")


@pytest.mark.parametrize(
    "call, pattern",
    [
        (
            lambda: load_parallel("europarl", "train"),
            "unknown corpus 'europarl'; choose one of: multi30k",
        ),
        (
            lambda: load_parallel("multi30k", "test2017"),
            "Multi30k has no split 'test2017'; choose one of",
        ),
        (
            lambda: load_parallel("multi30k", "train", src_lang="fr"),
            "Multi30k has no language 'fr'",
        ),
        (lambda: load_parallel("multi30k", "train", "en", "en"), "both 'en'"),
    ],
)
def test_bad_arguments_say_what_is_allowed(call, pattern):
    with pytest.raises(ValueError, match=pattern):
        call()


# ---------------------------------------------------------------------------------------------- resolution
def make_tiny_multi30k(folder: Path, word: str) -> None:
    write_lines(folder / "val.en.gz", [word.encode()])
    write_lines(folder / "val.de.gz", [b"x"])


def test_resolution_order_explicit_then_env_then_cache(monkeypatch, tmp_path):
    make_tiny_multi30k(tmp_path / "explicit" / "multi30k", "explicit")
    make_tiny_multi30k(tmp_path / "env" / "multi30k", "env")
    make_tiny_multi30k(tmp_path / "cache" / "multi30k", "cache")
    monkeypatch.setenv("AT_DATA_DIR", str(tmp_path / "env"))
    assert load_parallel("multi30k", "val", data_dir=tmp_path / "explicit").src == [
        "explicit"
    ]
    assert load_parallel(
        "multi30k", "val", data_dir=tmp_path / "explicit" / "multi30k"
    ).src == ["explicit"]
    assert load_parallel("multi30k", "val").src == ["env"]
    monkeypatch.delenv("AT_DATA_DIR")
    assert load_parallel("multi30k", "valid").src == [
        "cache"
    ]  # "valid" is an alias of "val"
    assert corpus_path("multi30k", "val") == tmp_path / "cache" / "multi30k"


def test_direction_defaults_and_reversal(tmp_path):
    write_lines(tmp_path / "iwslt14" / "test.de", [b"hallo ."])
    write_lines(tmp_path / "iwslt14" / "test.en", [b"hello ."])
    default = load_parallel("iwslt14", "test", data_dir=tmp_path)
    assert (default.src_lang, default.tgt_lang, default.src) == (
        "de",
        "en",
        ["hallo ."],
    )  # IWSLT14 is DE->EN
    reverse = load_parallel("iwslt14", "test", src_lang="en", data_dir=tmp_path)
    assert (reverse.src_lang, reverse.tgt_lang, reverse.src) == ("en", "de", ["hello ."])


# ---------------------------------------------------------------------------------------------- downloads
def use_real_urlopen(monkeypatch) -> None:
    real_open = urllib.request.urlopen
    monkeypatch.setattr(
        corpora, "_open_url", lambda url, timeout: real_open(url, timeout=timeout)
    )


def test_download_via_file_url_checks_sha256(monkeypatch, tmp_path):
    payload = tmp_path / "remote.bin"
    payload.write_bytes(b"some bytes\n" * 1000)
    good = hashlib.sha256(payload.read_bytes()).hexdigest()
    use_real_urlopen(monkeypatch)
    dest = download_file(payload.as_uri(), tmp_path / "cache" / "file.bin", good)
    assert dest.read_bytes() == payload.read_bytes()
    assert sorted(p.name for p in dest.parent.iterdir()) == [
        "file.bin"
    ]  # no temp file left


def test_checksum_mismatch_raises_and_leaves_no_file(monkeypatch, tmp_path):
    payload = tmp_path / "remote.bin"
    payload.write_bytes(b"changed upstream")
    use_real_urlopen(monkeypatch)
    target = tmp_path / "cache"
    with pytest.raises(
        ChecksumError, match="checksum mismatch .*expected sha256 0{64}, got .*not saved"
    ):
        download_file(payload.as_uri(), target / "file.bin", "0" * 64)
    assert list(target.iterdir()) == []


def test_interrupted_download_leaves_no_file(monkeypatch, tmp_path):
    class CutConnection(io.BytesIO):
        def read(self, size=-1):
            if self.tell() > 0:
                raise ConnectionResetError("connection cut")
            return super().read(4)

    monkeypatch.setattr(
        corpora, "_open_url", lambda url, timeout: CutConnection(b"partial data")
    )
    with pytest.raises(ConnectionResetError):
        download_file("https://example.invalid/f", tmp_path / "f", None)
    assert list(tmp_path.iterdir()) == []


@needs_staged_data
def test_missing_split_is_downloaded_into_cache_once(monkeypatch, tmp_path):
    staged = Path(STAGED_DATA_DIR) / "multi30k"
    fetched = serve_files(
        monkeypatch, {name: staged / name for name in ("val.en.gz", "val.de.gz")}
    )
    corpus = load_parallel("multi30k", "val")
    assert len(corpus) == 1014 and corpus.path == tmp_path / "cache" / "multi30k"
    assert [url.rsplit("/", 1)[1] for url in fetched] == ["val.en.gz", "val.de.gz"]
    assert all(
        url.startswith("https://github.com/multi30k/dataset/raw/a3d2e0d")
        for url in fetched
    )
    assert verify_checksums("multi30k", corpus.path) == {
        "val.de.gz": True,
        "val.en.gz": True,
    }
    load_parallel("multi30k", "val")
    assert len(fetched) == 2  # the second call reads the cache


@needs_staged_data
def test_plain_text_download_and_rebuilt_filtered_newstest(monkeypatch, tmp_path):
    """WMT14 test sets are served as plain text; the filtered newstest2014 is cut from the full one and
    must reproduce the staged file's text exactly (its sha256 is checked on the way)."""
    staged = Path(STAGED_DATA_DIR) / "wmt14"
    remote = tmp_path / "remote"
    files = {}
    for lang in ("en", "de"):
        files[f"newstest2014.{lang}"] = remote / f"newstest2014.{lang}"
        write_lines(
            files[f"newstest2014.{lang}"],
            gzip.decompress((staged / f"newstest2014.{lang}.gz").read_bytes()).split(
                b"\n"
            )[:-1],
        )
    serve_files(monkeypatch, files)
    rebuilt = load_parallel("wmt14", "test")  # alias of newstest2014_filtered
    staged_filtered = load_parallel(
        "wmt14", "newstest2014_filtered", data_dir=STAGED_DATA_DIR
    )
    assert rebuilt.name == "wmt14/newstest2014_filtered" and len(rebuilt) == 2737
    assert (rebuilt.src, rebuilt.tgt) == (staged_filtered.src, staged_filtered.tgt)
    cache = tmp_path / "cache" / "wmt14"
    assert (
        all(verify_checksums("wmt14", cache).values())
        and len(verify_checksums("wmt14", cache)) == 4
    )


def make_tgz(path: Path, members: dict[str, bytes]) -> str:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_archive_members_are_extracted_and_concatenated(monkeypatch, tmp_path):
    """The WMT14 full training set is built this way from statmt.org's three archives."""
    sha_a = make_tgz(
        tmp_path / "a.tgz",
        {"training/a.de-en.en": b"a1\na2\n", "training/a.de-en.de": b"A1\nA2\n"},
    )
    sha_b = make_tgz(
        tmp_path / "b.tgz", {"b.de-en.en": b"b1", "b.de-en.de": b"B1\n", "README": b"x"}
    )
    fake = CorpusInfo(
        name="fakewmt",
        title="FakeWMT",
        languages=("en", "de"),
        default_direction=("en", "de"),
        splits={"train": "train"},
        training_splits=("train",),
        sources={
            f"train.{lang}": ArchiveMembers(
                (
                    ("https://example.invalid/a.tgz", sha_a, f"training/a.de-en.{lang}"),
                    ("https://example.invalid/b.tgz", sha_b, f"b.de-en.{lang}"),
                )
            )
            for lang in ("en", "de")
        },
    )
    monkeypatch.setitem(corpora.CORPORA, "fakewmt", fake)
    fetched = serve_files(
        monkeypatch, {"a.tgz": tmp_path / "a.tgz", "b.tgz": tmp_path / "b.tgz"}
    )
    corpus = load_parallel("fakewmt", "train")
    assert corpus.src == [
        "a1",
        "a2",
        "b1",
    ]  # b's last line had no newline: it still gets its own line
    assert corpus.tgt == ["A1", "A2", "B1"]
    assert len(fetched) == 2  # each archive fetched once for both languages


def test_wrong_archive_checksum_saves_nothing(monkeypatch, tmp_path):
    make_tgz(tmp_path / "a.tgz", {"a.en": b"x\n", "a.de": b"y\n"})
    fake = CorpusInfo(
        name="fakewmt",
        title="FakeWMT",
        languages=("en", "de"),
        default_direction=("en", "de"),
        splits={"train": "train"},
        training_splits=("train",),
        sources={
            f"train.{l}": ArchiveMembers(
                (("https://example.invalid/a.tgz", "f" * 64, f"a.{l}"),)
            )
            for l in ("en", "de")
        },
    )
    monkeypatch.setitem(corpora.CORPORA, "fakewmt", fake)
    serve_files(monkeypatch, {"a.tgz": tmp_path / "a.tgz"})
    with pytest.raises(ChecksumError):
        load_parallel("fakewmt", "train")
    leftovers = [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]
    assert leftovers == []


def test_file_without_a_source_is_not_fetched_and_the_error_says_so(monkeypatch):
    fake = CorpusInfo(
        name="nosource",
        title="NoSource",
        languages=("en", "de"),
        default_direction=("en", "de"),
        splits={"train": "train"},
        training_splits=("train",),
    )
    monkeypatch.setitem(corpora.CORPORA, "nosource", fake)
    fetched = serve_files(monkeypatch, {})
    with pytest.raises(DataNotFoundError) as caught:
        load_parallel("nosource", "train")
    assert fetched == []
    assert str(caught.value).endswith(
        "train.en, train.de has no download source: pass --data-dir (or data_dir= in Python) or set AT_DATA_DIR"
    )


def test_registry_downloads_from_the_commits_source_md_names():
    sources = {name: info.sources for name, info in corpora.CORPORA.items()}
    assert sources["multi30k"]["train.en.gz"].url.endswith(
        "multi30k/dataset/raw/a3d2e0d26b56f3846f66a952536ffed4e401d05a/data/task1/raw/train.en.gz"
    )
    assert sources["iwslt14"]["test.de"].url.endswith(
        "bf28dae8a4c71e1f3f3fcb51e989fab905886f44/data/test.de-en.de"
    )
    assert (
        sources["iwslt14"]["train.de"].sha256 is None
    )  # never staged: no checksum published
    assert sources["wmt14"]["train_sample.en"].url.endswith(
        "97111d97551c24857076a4102eabdb468b35cff4/data/src-train.txt"
    )
    assert sources["ptb_sample"]["treebank.zip"].sha256.startswith("9da92d76")
    checked = [
        s
        for info in sources.values()
        for s in info.values()
        if isinstance(s, corpora.Download) and s.sha256
    ]
    assert len(checked) == 6 + 4 + 6 + 1  # every staged file's download is checksummed


# ---------------------------------------------------------------------------------------------- staged data
@needs_staged_data
def test_multi30k_has_the_published_split_sizes():
    sizes = {}
    for split in ("train", "val", "test_2016_flickr"):
        corpus = load_parallel("multi30k", split, data_dir=STAGED_DATA_DIR)
        assert corpus.skipped == {"empty": 0, "over_long": 0}
        assert all(s == s.strip() and t == t.strip() for s, t in corpus)
        sizes[split] = len(corpus)
    assert sizes == {"train": 29_000, "val": 1_014, "test_2016_flickr": 1_000}


@needs_staged_data
def test_multi30k_found_through_at_data_dir(monkeypatch):
    monkeypatch.setenv("AT_DATA_DIR", STAGED_DATA_DIR)
    corpus = load_parallel("multi30k", "test", src_lang="de")
    assert (len(corpus), corpus.src_lang, corpus.tgt_lang) == (1000, "de", "en")


@needs_staged_data
def test_staged_files_match_source_md_checksums():
    for corpus in ("multi30k", "iwslt14", "wmt14", "ptb_sample"):
        results = verify_checksums(corpus, Path(STAGED_DATA_DIR) / corpus)
        assert results and all(results.values()), (corpus, results)


@needs_staged_data
def test_wmt14_sample_drops_its_one_empty_line_and_treebank_resolves():
    sample = load_parallel(
        "wmt14", "train_sample", data_dir=STAGED_DATA_DIR, drop_empty=True
    )
    assert len(sample) == 9_999 and sample.skipped["empty"] == 1
    assert treebank_zip_path(STAGED_DATA_DIR).name == "treebank.zip"
    assert treebank_zip_path(STAGED_DATA_DIR).is_file()

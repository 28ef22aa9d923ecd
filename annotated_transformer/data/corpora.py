"""Parallel corpora: where their files live, how to fetch them safely, how to read them robustly.

A corpus split is looked for, in this order, under an explicit ``data_dir``, under
``$AT_DATA_DIR/<corpus>/``, in the download cache (``$AT_CACHE_DIR`` or ``~/.cache/annotated_transformer``),
and finally downloaded into that cache: from the raw GitHub URL of the commit each ``SOURCE.md`` names,
written to a temporary file, checked against the sha256 below and only then moved into place, so a cut
connection or a changed upstream file never leaves a half or wrong file behind. When all of that fails
the one error says so and names the three ways out.

Text files may be plain or gzipped (detected from the bytes, not the name): the staged copies are
``<split>.<lang>.gz``, downloads keep the publisher's format.
"""
from __future__ import annotations

import gzip
import hashlib
import itertools
import logging
import os
import tarfile
import tempfile
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Literal

from tqdm import tqdm

logger = logging.getLogger(__name__)

# --------------------------------------------------------------------------------------------------
# Checksums, copied from each corpus's SOURCE.md: the sha256 of the staged file and, where the publisher
# serves plain text (we gzipped the staged copy), of the decompressed text too, which is what a download
# gets. The WMT14 training archives are not staged; their sha256 are the ones tensorflow/datasets
# records for the same URLs (tensorflow_datasets/url_checksums/wmt14_translate.txt).
# --------------------------------------------------------------------------------------------------
FILE_SHA256: dict[str, str] = {
    # multi30k: the publisher serves the .gz files themselves.
    "multi30k/train.en.gz": "d79cfa999dd4c51d2cb42499b6796d5a882c3a8a961923c25a898c90f8bbd56f",
    "multi30k/train.de.gz": "726e39b2fa9eb9ffb6dc763fb35a179f80fae06ffc5d28b6ace5faa883de28a6",
    "multi30k/val.en.gz": "14f7d25ddd868909a9213e361768460edcacdd6ab9d1e77b92560dc10c10dc28",
    "multi30k/val.de.gz": "f0cba2f995189cf5770f29a8a9a537a3ad3f51657ad873405082ff6863a5e75a",
    "multi30k/test_2016_flickr.en.gz": "611d361c6334bc7246101d48097c13cf5c4413c5befc793cc629934359d532d9",
    "multi30k/test_2016_flickr.de.gz": "9204244e408ccb38d2a55cfcd344df15005fc42a07a6e55ca6c52b6ababb8cc8",
    # iwslt14: staged .gz, and the repository's plain text.
    "iwslt14/test.de.gz": "cc0cda8676ae4f4227df68479636d0d8dbde9d7b2c0de14aba7de412efaa3f5d",
    "iwslt14/test.de": "b899a137e81dc3e3c34f5a2cf16c09880ab33b8d22252483ff9c049b2a34e203",
    "iwslt14/test.en.gz": "ea26c2c9a15278a0929fa6ba67626cc7c248527d99d554f3bf8422da89f30127",
    "iwslt14/test.en": "1685cc2a0c169051b66957d7f56056341161dc4617a849b649e84cdac5b73e24",
    "iwslt14/valid.de.gz": "ecf6a9df51de72fc1b797f625ec507ea2a113a5aa8834dbd655cde4e096ede0a",
    "iwslt14/valid.de": "d58e159cedc9227553ab506bf6113b72eb19ee97631c1b7bdcf5a205ce1dda0d",
    "iwslt14/valid.en.gz": "0000512f2d68da42a01aa9323760788e3db9365bec4e4ce476a544ae8b1f8e3e",
    "iwslt14/valid.en": "d9d971e784e37316ece31d9d8e33c2feeaae8543329dfcb8486f07568aea8ce8",
    # wmt14: staged .gz, and plain text as served.
    "wmt14/newstest2013.en.gz": "162df22a4c495e32b7039463d27085e20ffff94b816f57a96ede3b1d92ddfa3e",
    "wmt14/newstest2013.en": "ace268a1d9724ca76f6d8e5c720ffdc08f01bdce45630ed8b269dc7918e1c16e",
    "wmt14/newstest2013.de.gz": "f3b87352620b54bc2bb2e314ee11595af4af957389d254303708b701a0893b5d",
    "wmt14/newstest2013.de": "d7ea35ab91ff3709e03ad9cb6bf5b4f2cc775cd2d72efd5254c4aec5e69663ca",
    "wmt14/newstest2014.en.gz": "c9d36aa995abde6b41abebef6411be4f1ecc2f520f04dd6e382a232c34b36ff6",
    "wmt14/newstest2014.en": "7294bccf2879a97b3706b95c9595f1459617a8ee7130d5d8581c910e69736971",
    "wmt14/newstest2014.de.gz": "20b141a4dfe4c78a991f9999174f8f378565ea479ebaef056a68b16d23b74702",
    "wmt14/newstest2014.de": "ae5d110486bc33d7175e9e28c7d0051eb3e5fcd2166dd93371089852c091a20e",
    "wmt14/newstest2014_filtered.en.gz": "a8a2f0c8ac2c6be02c5031720d5770f46cbb10cb687fe30661d4f0b1d8603fe1",
    "wmt14/newstest2014_filtered.en": "18db2323feae45b4b9e7d3b400d3ee3740f03a4da50046c07e3c255b9985a3f9",
    "wmt14/newstest2014_filtered.de.gz": "c8355a26763b4da9d7bd328f5d15179a3ecadd3ee14781ca1456b4805cd62826",
    "wmt14/newstest2014_filtered.de": "48fad9e043d7e8e89c06fa8203283501166e4f4a059f6cf08d9a4d6674a19fd8",
    "wmt14/newstest2014_filtered.lines.txt": "05447db7010bc39971c335228700ae03aa2529d504dbc9fdff8bb1e9d1a5b706",
    "wmt14/train_sample.en.gz": "5d2bc2823e40ec3c91a8b9ae1c64726a2971a5228fa3b3155710b8adc247a33c",
    "wmt14/train_sample.en": "a4deafe1eb225d98f196ad87e90eec8494a729690c06e0186ee9d2793667a0d2",
    "wmt14/train_sample.de.gz": "31b69fac5e44e57420df1ce8b3d287219dd6826ec1963d69ecf4fb14db696379",
    "wmt14/train_sample.de": "fe1f824a189baa650eec46269e66eef07f7304ba7572598ebbe61c55eeff7d01",
    "wmt14/training-parallel-europarl-v7.tgz": "0224c7c710c8a063dfd893b0cc0830202d61f4c75c17eb8e31836103d27d96e7",
    "wmt14/training-parallel-commoncrawl.tgz": "c7a74e2ea01ac6c920123108627e35278d4ccb5701e15428ffa34de86fa3a9e5",
    "wmt14/training-parallel-nc-v9.tgz": "cb8953f292298e6877ae433c98912b927cb0766b303f4540512ddd286c748485",
    # ptb_sample: the zip nltk.download("treebank") fetches.
    "ptb_sample/treebank.zip": "9da92d76c3666cfb6cddeaed0f7e86b344cce0f0928a286d439e555f19c37399",
}

_MULTI30K_RAW = "https://github.com/multi30k/dataset/raw/a3d2e0d26b56f3846f66a952536ffed4e401d05a/data/task1/raw/"
_IWSLT14_RAW = "https://github.com/pcyin/pytorch_nmt/raw/bf28dae8a4c71e1f3f3fcb51e989fab905886f44/data/"
_OPUS_TESTSETS_RAW = (
    "https://github.com/Helsinki-NLP/OPUS-MT-testsets/raw/ac0f19c0be3cb4e0d9450fcb2d7a9847c4bdd180/testsets/en-de/"
)
_OPENNMT_RAW = "https://github.com/OpenNMT/OpenNMT-py/raw/97111d97551c24857076a4102eabdb468b35cff4/data/"
_NLTK_DATA_RAW = "https://github.com/nltk/nltk_data/raw/5db857e6f7df11eabb5e5665836db9ec8df07e28/packages/corpora/"
# The WMT14 shared task's EN-DE training data (about 4.5M pairs), as fairseq's prepare-wmt14en2de.sh --icml17.
_WMT14_ARCHIVES = {
    "europarl": ("https://www.statmt.org/wmt13/training-parallel-europarl-v7.tgz", "training/europarl-v7.de-en"),
    "commoncrawl": ("https://www.statmt.org/wmt13/training-parallel-commoncrawl.tgz", "commoncrawl.de-en"),
    "news_commentary": ("https://www.statmt.org/wmt14/training-parallel-nc-v9.tgz", "training/news-commentary-v9.de-en"),
}

# newstest2014_filtered = these 1-based lines of the full newstest2014, in this order (from
# newstest2014_filtered.lines.txt, run-length encoded): the filtered set is only published as SGML inside
# WMT's test-filtered.tgz, so a download rebuilds it from the full set and checks the text's sha256.
NEWSTEST2014_FILTERED_LINES = (
    "2222-2230 1774-1810 2132-2142 1136-1144 1644-1673 1472-1490 786-796 1183-1225 1109-1135 1960-1979 818-854 "
    "2698-2710 195-220 2520-2526 2686-2697 2945-2954 1523-1535 1956-1959 1367-1378 2487-2501 1057-1079 2338-2360 "
    "1429-1435 2089-2095 105-124 2775-2842 912-926 1980-1984 2601-2613 1730-1773 1179-1182 466-508 2209-2221 "
    "322-363 169-194 1247-1250 1636-1643 979-996 2990-3003 403-440 612-629 2331-2337 2983-2989 2096-2111 "
    "2447-2465 2538-2554 1251-1273 1844-1848 1603-1616 2403-2446 805-817 1-25 1536-1553 2565-2578 1080-1100 "
    "2743-2748 2391-2402 797-804 2843-2857 1274-1283 884-893 125-141 2749-2774 2466-2486 1862-1879 1926-1955 "
    "2658-2685 1385-1428 678-686 2315-2323 2637-2641 383-395 509-515 221-248 660-664 1284-1366 2858-2886 "
    "2143-2163 1145-1178 1040-1056 2930-2944 946-949 377-382 2555-2564 2502-2519 1829-1843 2887-2911 665-670 "
    "1849-1861 441-465 2579-2596 2642-2657 2372-2390 149-161 40-104 904-911 1466-1471 304-321 2361-2371 "
    "1899-1925 396-402 2164-2167 249-303 2112-2121 2633-2636 2721-2728 1379-1384 560-581 734-743 1491-1522 "
    "671-677 2527-2537 538-547 2711-2720 997-1000 894-903 2190-2208 548-559 1569-1602 2298-2309 950-969 "
    "2016-2042 2122-2131 364-376 927-945 720-733 2955-2982 649-659 1674-1681 2310-2314 1030-1039 2597-2600 "
    "1811-1828 2614-2632 1011-1029 26-39 142-148 516-537 1880-1898 2324-2330 2168-2189 1985-2015 687-719 "
    "1682-1729 855-865 2729-2742 1617-1635 1456-1465 2912-2929 2043-2088"
)


# --------------------------------------------------------------------------------------------------
# How a missing file is made: fetched as is, cut out of another file, or pulled out of archives.
# --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Download:
    """A file fetched byte for byte from `url`; `sha256=None` only where no checksum is published."""

    url: str
    sha256: str | None


@dataclass(frozen=True)
class LineSelection:
    """A file made of chosen lines ("a-b c ..." 1-based, inclusive) of another file of the same corpus."""

    source: str
    line_ranges: str
    sha256: str


@dataclass(frozen=True)
class ArchiveMembers:
    """The concatenation of members of tar.gz archives: (archive url, archive sha256, member path) each."""

    parts: tuple[tuple[str, str, str], ...]


Source = Download | LineSelection | ArchiveMembers


@dataclass(frozen=True)
class CorpusInfo:
    """What the loaders know about one corpus: its splits, languages and where each file comes from."""

    name: str  # folder name under $AT_DATA_DIR and the cache
    title: str  # for messages ("no Multi30k files ...")
    languages: tuple[str, ...]
    default_direction: tuple[str, str] | None  # (src, tgt) when the caller names none
    splits: dict[str, str]  # split -> file stem; files are "<stem>.<lang>" (optionally .gz)
    training_splits: tuple[str, ...]  # the only splits a tokenizer may be trained on
    aliases: dict[str, str] = field(default_factory=dict)
    sources: dict[str, Source] = field(default_factory=dict)  # local file name -> how to make it
    extra_files: tuple[str, ...] = ()  # non-parallel files (the treebank zip)

    def canonical_split(self, split: str) -> str:
        """Map an alias ("valid", "test") to the split's real name, or raise naming the choices."""
        split = self.aliases.get(split, split)
        if split not in self.splits:
            choices = sorted(self.splits) + sorted(f"{a} (= {s})" for a, s in self.aliases.items())
            raise ValueError(f"{self.title} has no split {split!r}; choose one of: {', '.join(choices)}")
        return split


def _download(corpus: str, remote_name: str, local_name: str | None = None, base: str = "") -> tuple[str, Download]:
    """Registry helper: (local file name, Download) with the sha256 looked up in FILE_SHA256."""
    local_name = local_name or remote_name
    return local_name, Download(base + remote_name, FILE_SHA256.get(f"{corpus}/{local_name}"))


def _wmt14_train(lang: str) -> ArchiveMembers:
    parts = []
    for url, member_stem in _WMT14_ARCHIVES.values():
        archive_name = url.rsplit("/", 1)[1]
        parts.append((url, FILE_SHA256[f"wmt14/{archive_name}"], f"{member_stem}.{lang}"))
    return ArchiveMembers(tuple(parts))


CORPORA: dict[str, CorpusInfo] = {
    "multi30k": CorpusInfo(
        name="multi30k",
        title="Multi30k",
        languages=("en", "de"),
        default_direction=("en", "de"),
        splits={"train": "train", "val": "val", "test_2016_flickr": "test_2016_flickr"},
        training_splits=("train",),
        aliases={"valid": "val", "dev": "val", "test": "test_2016_flickr"},
        sources=dict(
            _download("multi30k", f"{stem}.{lang}.gz", base=_MULTI30K_RAW)
            for stem in ("train", "val", "test_2016_flickr")
            for lang in ("en", "de")
        ),
    ),
    "iwslt14": CorpusInfo(
        name="iwslt14",
        title="IWSLT14",
        languages=("de", "en"),
        default_direction=("de", "en"),
        splits={"train": "train", "valid": "valid", "test": "test"},
        training_splits=("train",),
        aliases={"val": "valid", "dev": "valid"},
        sources=dict(
            # No checksum is published for the training text (it was never staged); see SOURCE.md.
            _download("iwslt14", f"{stem}.de-en.{lang}", f"{stem}.{lang}", base=_IWSLT14_RAW)
            for stem in ("train", "valid", "test")
            for lang in ("de", "en")
        ),
    ),
    "wmt14": CorpusInfo(
        name="wmt14",
        title="WMT14",
        languages=("en", "de"),
        default_direction=("en", "de"),
        splits={
            "train": "train",
            "train_sample": "train_sample",
            "newstest2013": "newstest2013",
            "newstest2014": "newstest2014",
            "newstest2014_filtered": "newstest2014_filtered",
        },
        training_splits=("train", "train_sample"),
        # "test" is the filtered set most papers of the Transformer's time report on (sacreBLEU's wmt14).
        aliases={"valid": "newstest2013", "val": "newstest2013", "dev": "newstest2013", "test": "newstest2014_filtered"},
        sources={
            **dict(
                _download("wmt14", f"{stem}.{lang}", base=_OPUS_TESTSETS_RAW)
                for stem in ("newstest2013", "newstest2014")
                for lang in ("en", "de")
            ),
            **dict(_download("wmt14", f"{side}-train.txt", f"train_sample.{lang}", base=_OPENNMT_RAW)
                   for side, lang in (("src", "en"), ("tgt", "de"))),
            **{
                f"newstest2014_filtered.{lang}": LineSelection(
                    f"newstest2014.{lang}", NEWSTEST2014_FILTERED_LINES, FILE_SHA256[f"wmt14/newstest2014_filtered.{lang}"]
                )
                for lang in ("en", "de")
            },
            "train.en": _wmt14_train("en"),
            "train.de": _wmt14_train("de"),
        },
    ),
    "ptb_sample": CorpusInfo(
        name="ptb_sample",
        title="Penn Treebank sample",
        languages=(),
        default_direction=None,
        splits={},
        training_splits=(),
        sources=dict([_download("ptb_sample", "treebank.zip", base=_NLTK_DATA_RAW)]),
        extra_files=("treebank.zip",),
    ),
}


# --------------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------------
class DataNotFoundError(FileNotFoundError):
    """A corpus's files are in none of the places we look, and could not be downloaded."""


class ChecksumError(ValueError):
    """A downloaded file is not the one SOURCE.md describes; nothing was saved."""


# --------------------------------------------------------------------------------------------------
# Places
# --------------------------------------------------------------------------------------------------
def cache_dir() -> Path:
    """Where downloads and trained tokenizers go: $AT_CACHE_DIR, else ~/.cache/annotated_transformer."""
    configured = os.environ.get("AT_CACHE_DIR")
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "annotated_transformer"


def _downloads_allowed(download: bool) -> bool:
    return download and os.environ.get("AT_OFFLINE", "").strip().lower() not in ("1", "true", "yes")


def _corpus_info(corpus: str) -> CorpusInfo:
    try:
        return CORPORA[corpus.lower()]
    except KeyError:
        raise ValueError(f"unknown corpus {corpus!r}; choose one of: {', '.join(CORPORA)}") from None


def _candidate_dirs(info: CorpusInfo, data_dir: str | os.PathLike | None) -> list[Path]:
    """Folders to search, in resolution order; data_dir may be the data root or the corpus folder itself."""
    dirs = []
    if data_dir is not None:
        root = Path(data_dir).expanduser()
        dirs += [root / info.name, root]
    env_dir = os.environ.get("AT_DATA_DIR")
    if env_dir:
        dirs.append(Path(env_dir).expanduser() / info.name)
    dirs.append(cache_dir() / info.name)
    return dirs


def _existing(directory: Path, name: str) -> Path | None:
    """The file `name` in `directory`, gzipped or not (text files are staged as .gz)."""
    for candidate in (directory / f"{name}.gz", directory / name):
        if candidate.is_file():
            return candidate
    return None


def _wanted_files(info: CorpusInfo, split: str | None, langs: tuple[str, ...]) -> list[str]:
    if split is None:
        return list(info.extra_files)
    stem = info.splits[split]
    return [f"{stem}.{lang}" for lang in langs]


def _resolve(
    info: CorpusInfo,
    names: list[str],
    data_dir: str | os.PathLike | None,
    download: bool,
    what: str,
) -> list[Path]:
    """Paths of `names`, all from one folder: search the folders in order, else download into the cache."""
    for directory in _candidate_dirs(info, data_dir):
        found = [_existing(directory, name) for name in names]
        if all(found):
            return found  # type: ignore[return-value]

    target = cache_dir() / info.name
    failure = "downloads are off (download=False or AT_OFFLINE=1)"
    if _downloads_allowed(download):
        try:
            for name in names:
                _materialize(info, name, target)
            return [_existing(target, name) for name in names]  # type: ignore[misc]
        except (OSError, tarfile.TarError) as error:  # URLError is an OSError; ChecksumError is not caught
            failure = f"the download failed ({type(error).__name__}: {error})"

    env_dir = os.environ.get("AT_DATA_DIR")
    env_text = f"(AT_DATA_DIR={env_dir})" if env_dir else "(AT_DATA_DIR is unset)"
    places = []
    if data_dir is not None:
        places.append(f"data_dir={os.fspath(data_dir)}")
    places.append(f"$AT_DATA_DIR/{info.name} {env_text}")
    places.append(f"the download cache {target}")
    raise DataNotFoundError(
        f"no {info.title} files for {what} ({', '.join(names)}, plain or .gz) under {', '.join(places[:-1])} "
        f"or in {places[-1]}; "
        f"{failure}: pass data_dir=..., set AT_DATA_DIR, or connect to the network to download them"
    )


def corpus_path(
    corpus: str, split: str | None = None, data_dir: str | os.PathLike | None = None, *, download: bool = True
) -> Path:
    """The folder holding `split`'s files (or, for split=None, the corpus's non-parallel files, e.g. the
    treebank zip; for parallel corpora split=None means the first training split)."""
    info = _corpus_info(corpus)
    if split is None and not info.extra_files:
        split = info.training_splits[0]
    if split is not None:
        split = info.canonical_split(split)
    names = _wanted_files(info, split, info.languages)
    return _resolve(info, names, data_dir, download, f"split {split!r}" if split else "its files")[0].parent


def treebank_zip_path(data_dir: str | os.PathLike | None = None, *, download: bool = True) -> Path:
    """Path of the Penn Treebank sample zip (NLTK's treebank.zip), for the parsing chapter."""
    return corpus_path("ptb_sample", data_dir=data_dir, download=download) / "treebank.zip"


def split_files(
    corpus: str,
    split: str,
    src_lang: str | None = None,
    tgt_lang: str | None = None,
    data_dir: str | os.PathLike | None = None,
    *,
    download: bool = True,
) -> tuple[Path, Path]:
    """(source file, target file) of a split, resolved as the module docstring says."""
    info = _corpus_info(corpus)
    split = info.canonical_split(split)
    src_lang, tgt_lang = _direction(info, src_lang, tgt_lang)
    src, tgt = _resolve(info, _wanted_files(info, split, (src_lang, tgt_lang)), data_dir, download, f"split {split!r}")
    return src, tgt


def _direction(info: CorpusInfo, src_lang: str | None, tgt_lang: str | None) -> tuple[str, str]:
    """Fill in the missing language(s): the other language of the corpus, else its usual direction."""
    if src_lang is None and tgt_lang is None:
        if info.default_direction is None:
            raise ValueError(f"{info.title} is not a parallel corpus")
        return info.default_direction
    others = {lang: [other for other in info.languages if other != lang] for lang in info.languages}
    if src_lang is None:
        src_lang = (others.get(tgt_lang) or [None])[0]  # type: ignore[arg-type]
    if tgt_lang is None:
        tgt_lang = (others.get(src_lang) or [None])[0]
    for lang in (src_lang, tgt_lang):
        if lang not in info.languages:
            raise ValueError(f"{info.title} has no language {lang!r}; it has {', '.join(info.languages) or 'none'}")
    if src_lang == tgt_lang:
        raise ValueError(f"source and target language are both {src_lang!r}; pick two different ones")
    return src_lang, tgt_lang  # type: ignore[return-value]


# --------------------------------------------------------------------------------------------------
# Downloads: temp file in the destination folder, sha256 while streaming, os.replace only when it matches.
# --------------------------------------------------------------------------------------------------
def _open_url(url: str, timeout: float):
    """Open a URL for reading (file:// works too, which the tests use); a seam tests may replace."""
    return urllib.request.urlopen(url, timeout=timeout)


def _sha256_of(path: Path, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def _atomic_write(dest: Path, fill, expected_sha256: str | None, origin: str, *, warn_unchecked: bool = True) -> Path:
    """Run fill(binary_handle) into a temp file next to dest; keep it only if its sha256 is the expected one
    (None: keep it, and say so unless the inputs were checked already)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
    tmp = Path(tmp_name)
    try:
        digest = hashlib.sha256()

        class _HashingWriter:
            def __init__(self, handle):
                self.handle = handle

            def write(self, data: bytes) -> int:
                digest.update(data)
                return self.handle.write(data)

        with os.fdopen(fd, "wb") as handle:
            fill(_HashingWriter(handle))
            handle.flush()
            os.fsync(handle.fileno())
        actual = digest.hexdigest()
        if expected_sha256 is None and warn_unchecked:
            logger.warning("%s has no published checksum; saved it as %s with sha256 %s", origin, dest, actual)
        elif expected_sha256 is not None and actual != expected_sha256:
            raise ChecksumError(
                f"checksum mismatch for {origin}: expected sha256 {expected_sha256}, got {actual}; the file was "
                f"not saved. Retry (the transfer may have been cut), or fetch it by hand, compare with SOURCE.md "
                f"and pass data_dir=..."
            )
        os.replace(tmp, dest)
        return dest
    finally:
        tmp.unlink(missing_ok=True)


def download_file(url: str, dest: str | os.PathLike, sha256: str | None, *, timeout: float = 60.0) -> Path:
    """Fetch url into dest atomically; raise ChecksumError (leaving nothing behind) if sha256 differs."""
    dest = Path(dest)
    logger.info("downloading %s -> %s", url, dest)

    def fill(out) -> None:
        with _open_url(url, timeout) as response:
            size = getattr(response, "headers", {}).get("Content-Length")
            # The WMT14 archives are 1.6 GB together: show progress on a terminal (tqdm stays quiet elsewhere).
            with tqdm(total=int(size) if size else None, unit="B", unit_scale=True, desc=dest.name, disable=None) as bar:
                while block := response.read(1 << 20):
                    out.write(block)
                    bar.update(len(block))

    return _atomic_write(dest, fill, sha256, url)


def _materialize(info: CorpusInfo, name: str, target: Path) -> Path:
    """Make file `name` of corpus `info` exist in `target` (the cache), however its source says."""
    existing = _existing(target, name)
    if existing is not None:
        return existing
    source = info.sources.get(name) or info.sources.get(f"{name}.gz")
    if source is None:
        raise DataNotFoundError(f"{info.title} file {name} has no download source; pass data_dir=... or set AT_DATA_DIR")
    local_name = name if name in info.sources else f"{name}.gz"
    dest = target / local_name
    if isinstance(source, Download):
        return download_file(source.url, dest, source.sha256)
    if isinstance(source, LineSelection):
        return _select_lines(info, source, dest, target)
    return _extract_archive_members(info, source, dest, target)


def _parse_line_ranges(spec: str) -> list[int]:
    numbers = []
    for part in spec.split():
        first, _, last = part.partition("-")
        numbers.extend(range(int(first), int(last or first) + 1))
    return numbers


def _select_lines(info: CorpusInfo, selection: LineSelection, dest: Path, target: Path) -> Path:
    source_path = _materialize(info, selection.source, target)
    lines = list(_raw_lines(source_path))

    def fill(out) -> None:
        for number in _parse_line_ranges(selection.line_ranges):
            out.write(lines[number - 1] + b"\n")

    return _atomic_write(dest, fill, selection.sha256, f"{dest.name} (lines of {source_path.name})")


def _extract_archive_members(info: CorpusInfo, members: ArchiveMembers, dest: Path, target: Path) -> Path:
    archive_dir = target / "archives"
    wanted_by_archive = []
    for url, sha256, member in members.parts:
        archive = archive_dir / url.rsplit("/", 1)[1]
        if not archive.is_file():
            download_file(url, archive, sha256)
        wanted_by_archive.append((archive, member))

    def fill(out) -> None:
        for archive, member in wanted_by_archive:
            found = False
            # Stream mode: one sequential pass, no random access into a 1 GB gzip.
            with tarfile.open(archive, "r|gz") as tar:
                for entry in tar:
                    if entry.name.lstrip("./") != member:
                        continue
                    extracted = tar.extractfile(entry)
                    if extracted is None:
                        break
                    last = b"\n"
                    while block := extracted.read(1 << 20):
                        out.write(block)
                        last = block[-1:]
                    if last != b"\n":  # keep the next member's first line on a line of its own
                        out.write(b"\n")
                    found = True
                    break
            if not found:
                raise tarfile.TarError(f"{archive.name} has no member {member}; delete it so it is fetched again")

    # The archives were checked; their concatenated members have no published checksum of their own.
    return _atomic_write(dest, fill, None, f"{dest.name} (from {len(members.parts)} archives)", warn_unchecked=False)


def verify_checksums(corpus: str, directory: str | os.PathLike) -> dict[str, bool]:
    """For each file of `directory` whose sha256 we know: does it match? (Why: to trust a staged copy.)"""
    info = _corpus_info(corpus)
    results = {}
    for path in sorted(Path(directory).iterdir()):
        expected = FILE_SHA256.get(f"{info.name}/{path.name}")
        if expected is not None and path.is_file():
            results[path.name] = _sha256_of(path) == expected
    return results


# --------------------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------------------
def _open_maybe_gzip(path: Path):
    with open(path, "rb") as probe:
        magic = probe.read(2)
    return gzip.open(path, "rb") if magic == b"\x1f\x8b" else open(path, "rb")


def _raw_lines(path: Path) -> Iterator[bytes]:
    """Lines as bytes, split on b"\\n" only: str.splitlines would also split on U+2028 or \\x85 inside a
    sentence and silently shift every later pair out of alignment."""
    try:
        with _open_maybe_gzip(path) as handle:
            for line in handle:
                yield line.rstrip(b"\n")
    except (EOFError, gzip.BadGzipFile) as error:
        raise ValueError(
            f"{path} is a damaged gzip file ({error}): delete it so it is fetched again, or replace it"
        ) from error


def _count_rest(lines: Iterator[bytes]) -> int:
    return sum(1 for _ in lines)


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


def read_parallel_files(
    src_path: str | os.PathLike,
    tgt_path: str | os.PathLike,
    *,
    name: str | None = None,
    src_lang: str = "src",
    tgt_lang: str = "tgt",
    max_len: int | None = None,
    length_unit: Literal["words", "chars"] = "words",
) -> ParallelCorpus:
    """Read two line-aligned files (plain or gzipped) into a ParallelCorpus.

    Whitespace around each sentence is stripped. A pair is skipped and counted, never passed on to crash
    something later, when either side is empty, longer than max_len (words or chars), or not valid UTF-8.
    Files whose line counts differ raise ValueError: the alignment cannot be trusted at all.
    """
    if length_unit not in ("words", "chars"):
        raise ValueError(f"length_unit must be 'words' or 'chars', got {length_unit!r}")
    if max_len is not None and max_len < 1:
        raise ValueError(f"max_len must be >= 1 or None, got {max_len!r}")
    src_path, tgt_path = Path(src_path), Path(tgt_path)
    name = name or f"{src_path.name}|{tgt_path.name}"
    skipped = {"empty": 0, "over_long": 0, "undecodable": 0}
    sources: list[str] = []
    targets: list[str] = []

    def measure(text: str) -> int:
        return len(text.split()) if length_unit == "words" else len(text)

    src_lines, tgt_lines = _raw_lines(src_path), _raw_lines(tgt_path)
    count = 0
    for count, (src_raw, tgt_raw) in enumerate(itertools.zip_longest(src_lines, tgt_lines), start=1):
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
        if max_len is not None and (measure(src_text) > max_len or measure(tgt_text) > max_len):
            skipped["over_long"] += 1
            continue
        sources.append(src_text)
        targets.append(tgt_text)

    message = (
        f"skipped {skipped['empty']} empty, {skipped['over_long']} over-long, "
        f"{skipped['undecodable']} undecodable pairs of {name}"
    )
    logger.log(logging.WARNING if any(skipped.values()) else logging.DEBUG, message)
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
    max_len: int | None = None,
    *,
    length_unit: Literal["words", "chars"] = "words",
    download: bool = True,
) -> ParallelCorpus:
    """Load one split of a parallel corpus (languages default to the corpus's usual direction).

    Example: ``load_parallel("multi30k", "train")`` -> 29,000 English -> German pairs.
    """
    info = _corpus_info(corpus)
    split = info.canonical_split(split)
    src_lang, tgt_lang = _direction(info, src_lang, tgt_lang)
    src_path, tgt_path = split_files(info.name, split, src_lang, tgt_lang, data_dir, download=download)
    return read_parallel_files(
        src_path,
        tgt_path,
        name=f"{info.name}/{split}",
        src_lang=src_lang,
        tgt_lang=tgt_lang,
        max_len=max_len,
        length_unit=length_unit,
    )

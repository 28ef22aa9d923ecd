"""Where a corpus's files come from and where a split's files are found: the one module every loader asks.

The facts: every corpus the loaders know (`CORPORA`), its splits and languages, and how each file is
made when it is missing (fetched from a URL at a fixed commit, cut out of another file, or pulled out of
archives), with the sha256 of every staged file, so a reader audits what is fetched from where in one
table.

The search: an explicit data dir (``--data-dir`` / ``data_dir=``) is used alone: a split missing from it
is an error naming the files, never quietly read from elsewhere, so one run cannot mix two data
folders. Without one, a split is looked for under ``$AT_DATA_DIR/<corpus>/``, then in the download cache
(``$AT_CACHE_DIR`` or ``~/.cache/annotated_transformer``), and is finally made in that cache unless
downloads are off (``download=False`` or ``AT_OFFLINE=1``). Both files of a pair always come from one
folder. When every place fails, the one error names the places searched, why the download did not
help, and the ways out.

The download: a cut connection or a changed upstream file must never leave a half or wrong file where
the loaders would trust it, so every file is written through `files.atomic_write` and hashed while it
streams; a sha256 that differs from the table's raises ChecksumError inside the write, and nothing is
moved into place. The WMT14 archives are 1.6 GB together, hence the progress bar (tqdm draws it only
on a terminal). URLs are opened with urllib, which also reads file:// URLs: a local mirror works, and
the tests stay offline by replacing the one seam, `_open_url`.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tarfile
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Callable

from tqdm import tqdm

from ..runtime.files import atomic_write, cache_dir
from .textfiles import find_plain_or_gz, raw_lines

logger = logging.getLogger(__name__)


# ---------------------------------------------------------------------------------- the facts
# Checksums, copied from each corpus's SOURCE.md: the sha256 of the staged file and, where the publisher
# serves plain text (we gzipped the staged copy), of the decompressed text too, which is what a download
# gets. The WMT14 training archives are not staged; their sha256 are the ones tensorflow/datasets
# records for the same URLs (tensorflow_datasets/url_checksums/wmt14_translate.txt).
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
_OPUS_TESTSETS_RAW = "https://github.com/Helsinki-NLP/OPUS-MT-testsets/raw/ac0f19c0be3cb4e0d9450fcb2d7a9847c4bdd180/testsets/en-de/"
_OPENNMT_RAW = "https://github.com/OpenNMT/OpenNMT-py/raw/97111d97551c24857076a4102eabdb468b35cff4/data/"
_NLTK_DATA_RAW = "https://github.com/nltk/nltk_data/raw/5db857e6f7df11eabb5e5665836db9ec8df07e28/packages/corpora/"
# The WMT14 shared task's EN-DE training data (about 4.5M pairs), as fairseq's prepare-wmt14en2de.sh --icml17.
_WMT14_ARCHIVES = {
    "europarl": (
        "https://www.statmt.org/wmt13/training-parallel-europarl-v7.tgz",
        "training/europarl-v7.de-en",
    ),
    "commoncrawl": (
        "https://www.statmt.org/wmt13/training-parallel-commoncrawl.tgz",
        "commoncrawl.de-en",
    ),
    "news_commentary": (
        "https://www.statmt.org/wmt14/training-parallel-nc-v9.tgz",
        "training/news-commentary-v9.de-en",
    ),
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


# How a missing file is made: fetched as is, cut out of another file, or pulled out of archives.
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
    # split -> file stem; files are "<stem>.<lang>" (optionally .gz)
    splits: dict[str, str]
    training_splits: tuple[str, ...]  # the only splits a tokenizer may be trained on
    aliases: dict[str, str] = field(default_factory=dict)
    # local file name -> how to make it
    sources: dict[str, Source] = field(default_factory=dict)
    extra_files: tuple[str, ...] = ()  # non-parallel files (the treebank zip)

    def canonical_split(self, split: str) -> str:
        """Map an alias ("valid", "test") to the split's real name, or raise naming the choices."""
        split = self.aliases.get(split, split)
        if split not in self.splits:
            choices = sorted(self.splits) + sorted(
                f"{a} (= {s})" for a, s in self.aliases.items()
            )
            raise ValueError(
                f"{self.title} has no split {split!r}; choose one of: {', '.join(choices)}"
            )
        return split

    def direction(self, src_lang: str | None, tgt_lang: str | None) -> tuple[str, str]:
        """Fill in the missing language(s): the other language of the corpus, else its usual direction."""
        if src_lang is None and tgt_lang is None:
            if self.default_direction is None:
                raise ValueError(f"{self.title} is not a parallel corpus")
            return self.default_direction
        others = {
            lang: [other for other in self.languages if other != lang]
            for lang in self.languages
        }
        if src_lang is None:
            src_lang = (others.get(tgt_lang) or [None])[0]  # type: ignore[arg-type]
        if tgt_lang is None:
            tgt_lang = (others.get(src_lang) or [None])[0]
        for lang in (src_lang, tgt_lang):
            if lang not in self.languages:
                raise ValueError(
                    f"{self.title} has no language {lang!r}; it has {', '.join(self.languages) or 'none'}"
                )
        if src_lang == tgt_lang:
            raise ValueError(
                f"source and target language are both {src_lang!r}; pick two different ones"
            )
        return src_lang, tgt_lang  # type: ignore[return-value]

    def source_for(self, name: str) -> tuple[str, Source] | None:
        """(local file name, how to make it) for file `name`, which may be registered plain or as .gz."""
        for local_name in (name, f"{name}.gz"):
            if local_name in self.sources:
                return local_name, self.sources[local_name]
        return None


def _download(
    corpus: str, remote_name: str, local_name: str | None = None, base: str = ""
) -> tuple[str, Download]:
    """Registry helper: (local file name, Download) with the sha256 looked up in FILE_SHA256."""
    local_name = local_name or remote_name
    return local_name, Download(
        base + remote_name, FILE_SHA256.get(f"{corpus}/{local_name}")
    )


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
            _download(
                "iwslt14", f"{stem}.de-en.{lang}", f"{stem}.{lang}", base=_IWSLT14_RAW
            )
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
        aliases={
            "valid": "newstest2013",
            "val": "newstest2013",
            "dev": "newstest2013",
            "test": "newstest2014_filtered",
        },
        sources={
            **dict(
                _download("wmt14", f"{stem}.{lang}", base=_OPUS_TESTSETS_RAW)
                for stem in ("newstest2013", "newstest2014")
                for lang in ("en", "de")
            ),
            **dict(
                _download(
                    "wmt14",
                    f"{side}-train.txt",
                    f"train_sample.{lang}",
                    base=_OPENNMT_RAW,
                )
                for side, lang in (("src", "en"), ("tgt", "de"))
            ),
            **{
                f"newstest2014_filtered.{lang}": LineSelection(
                    f"newstest2014.{lang}",
                    NEWSTEST2014_FILTERED_LINES,
                    FILE_SHA256[f"wmt14/newstest2014_filtered.{lang}"],
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


def corpus_info(corpus: str) -> CorpusInfo:
    """The `CORPORA` entry of `corpus` (case-insensitive), or a ValueError naming the known corpora."""
    try:
        return CORPORA[corpus.lower()]
    except KeyError:
        raise ValueError(
            f"unknown corpus {corpus!r}; choose one of: {', '.join(CORPORA)}"
        ) from None


# ---------------------------------------------------------------------------------- the download
class ChecksumError(ValueError):
    """A downloaded file is not the one SOURCE.md describes; nothing was saved."""


def _open_url(url: str, timeout: float):
    """Open a URL for reading (file:// too); the seam tests replace to stay offline."""
    return urllib.request.urlopen(url, timeout=timeout)


def sha256_of(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    """Hex sha256 of a file, read in chunks (the WMT14 archives do not fit comfortably in memory)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


class _HashingWriter:
    """A write-only handle that feeds every block to a digest on its way to the file."""

    def __init__(self, handle: BinaryIO, digest):
        self.handle = handle
        self.digest = digest

    def write(self, data: bytes) -> int:
        self.digest.update(data)
        return self.handle.write(data)


def _write_checked(
    dest: Path,
    fill: Callable[[_HashingWriter], None],
    expected_sha256: str | None,
    origin: str,
    *,
    warn_unchecked: bool = True,
) -> Path:
    """Atomically write dest with fill(handle), keeping it only if its sha256 is the expected one
    (None: keep it, and say so unless the inputs were checked already)."""
    digest = hashlib.sha256()

    def fill_and_check(handle: BinaryIO) -> None:
        fill(_HashingWriter(handle, digest))
        actual = digest.hexdigest()
        if expected_sha256 is not None and actual != expected_sha256:
            raise ChecksumError(
                f"checksum mismatch for {origin}: expected sha256 {expected_sha256}, got {actual}; the file was "
                "not saved. Retry (the transfer may have been cut), or fetch it by hand, compare with SOURCE.md "
                "and pass --data-dir (or data_dir= in Python) or set AT_DATA_DIR"
            )

    atomic_write(dest, fill_and_check)
    if expected_sha256 is None and warn_unchecked:
        logger.warning(
            "%s has no published checksum; saved it as %s with sha256 %s",
            origin,
            dest,
            digest.hexdigest(),
        )
    return dest


def download_file(
    url: str, dest: str | os.PathLike, sha256: str | None, *, timeout: float = 60.0
) -> Path:
    """Fetch url into dest atomically; raise ChecksumError (leaving nothing behind) if sha256 differs."""
    dest = Path(dest)
    logger.info("downloading %s -> %s", url, dest)

    def fill(out: _HashingWriter) -> None:
        with _open_url(url, timeout) as response:
            size = getattr(response, "headers", {}).get("Content-Length")
            with tqdm(
                total=int(size) if size else None,
                unit="B",
                unit_scale=True,
                desc=dest.name,
                disable=None,
            ) as bar:
                while block := response.read(1 << 20):
                    out.write(block)
                    bar.update(len(block))

    return _write_checked(dest, fill, sha256, url)


def make_file(info: CorpusInfo, name: str, folder: Path) -> Path:
    """Make file `name` of corpus `info` exist in `folder` (the cache), however its source says."""
    existing = find_plain_or_gz(folder, name)
    if existing is not None:
        return existing
    found = info.source_for(name)
    if found is None:
        raise FileNotFoundError(f"{info.title} file {name} has no download source")
    local_name, source = found
    dest = folder / local_name
    if isinstance(source, Download):
        return download_file(source.url, dest, source.sha256)
    if isinstance(source, LineSelection):
        return _select_lines(info, source, dest, folder)
    return _extract_archive_members(source, dest, folder)


def _parse_line_ranges(spec: str) -> list[int]:
    numbers = []
    for part in spec.split():
        first, _, last = part.partition("-")
        numbers.extend(range(int(first), int(last or first) + 1))
    return numbers


def _select_lines(
    info: CorpusInfo, selection: LineSelection, dest: Path, folder: Path
) -> Path:
    source_path = make_file(info, selection.source, folder)
    lines = list(raw_lines(source_path))

    def fill(out: _HashingWriter) -> None:
        for number in _parse_line_ranges(selection.line_ranges):
            out.write(lines[number - 1] + b"\n")

    return _write_checked(
        dest, fill, selection.sha256, f"{dest.name} (lines of {source_path.name})"
    )


def _extract_archive_members(members: ArchiveMembers, dest: Path, folder: Path) -> Path:
    archive_dir = folder / "archives"
    wanted_by_archive = []
    for url, sha256, member in members.parts:
        archive = archive_dir / url.rsplit("/", 1)[1]
        if not archive.is_file():
            download_file(url, archive, sha256)
        wanted_by_archive.append((archive, member))

    def fill(out: _HashingWriter) -> None:
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
                    # keep the next member's first line on a line of its own
                    if last != b"\n":
                        out.write(b"\n")
                    found = True
                    break
            if not found:
                raise tarfile.TarError(
                    f"{archive.name} has no member {member}; delete it so it is fetched again"
                )

    # The archives were checked; their concatenated members have no published checksum of their own.
    return _write_checked(
        dest,
        fill,
        None,
        f"{dest.name} (from {len(members.parts)} archives)",
        warn_unchecked=False,
    )


def verify_checksums(corpus: str, directory: str | os.PathLike) -> dict[str, bool]:
    """For each file of `directory` whose sha256 we know: does it match? (Why: to trust a staged copy.)"""
    info = corpus_info(corpus)
    results = {}
    for path in sorted(Path(directory).iterdir()):
        expected = FILE_SHA256.get(f"{info.name}/{path.name}")
        if expected is not None and path.is_file():
            results[path.name] = sha256_of(path) == expected
    return results


# ---------------------------------------------------------------------------------- the search
class DataNotFoundError(FileNotFoundError):
    """A corpus's files are in none of the places we look, and could not be downloaded."""


def _find(
    info: CorpusInfo,
    names: list[str],
    data_dir: str | os.PathLike | None,
    download: bool,
    what: str,
) -> list[Path]:
    """Paths of `names`, all from one folder: the first folder that holds them all, else made in
    the cache, else one DataNotFoundError saying where it looked, why, and the ways out."""
    if data_dir is not None:  # data_dir may be the data root or the corpus folder itself
        folders = [Path(data_dir).expanduser() / info.name, Path(data_dir).expanduser()]
    else:
        env_dir = os.environ.get("AT_DATA_DIR")
        folders = [Path(env_dir).expanduser() / info.name] if env_dir else []
        folders.append(cache_dir() / info.name)
    for folder in folders:
        found = [find_plain_or_gz(folder, name) for name in names]
        if all(found):
            return found  # type: ignore[return-value]
    files = f"no {info.title} files for {what} ({', '.join(names)}, plain or .gz)"
    if data_dir is not None:
        raise DataNotFoundError(
            f"{files} under --data-dir {os.fspath(data_dir)} (looked in "
            f"{folders[0]} and {folders[1]}): fix the path, or leave --data-dir out to use "
            "$AT_DATA_DIR or the download cache"
        )
    target = folders[-1]
    offline = os.environ.get("AT_OFFLINE", "").strip().lower() in ("1", "true", "yes")
    unsourced = [name for name in names if info.source_for(name) is None]
    ways_out = (
        "pass --data-dir (or data_dir= in Python), set AT_DATA_DIR, or connect to the "
        "network to download them"
    )
    if unsourced:
        failure = f"{', '.join(unsourced)} has no download source"
        ways_out = "pass --data-dir (or data_dir= in Python) or set AT_DATA_DIR"
    elif not download or offline:
        failure = "downloads are off (download=False or AT_OFFLINE=1)"
    else:
        try:
            return [make_file(info, name, target) for name in names]
        except (OSError, tarfile.TarError) as error:  # URLError too; not ChecksumError
            failure = f"the download failed ({type(error).__name__}: {error})"
    env_dir = os.environ.get("AT_DATA_DIR")
    env_text = f"(AT_DATA_DIR={env_dir})" if env_dir else "(AT_DATA_DIR is unset)"
    raise DataNotFoundError(
        f"{files} under $AT_DATA_DIR/{info.name} {env_text} or in the download cache {target}; "
        f"{failure}: {ways_out}"
    )


def _split_names(info: CorpusInfo, split: str, langs) -> list[str]:
    return [f"{info.splits[split]}.{lang}" for lang in langs]


def corpus_path(
    corpus: str,
    split: str | None = None,
    data_dir: str | os.PathLike | None = None,
    *,
    download: bool = True,
) -> Path:
    """The folder holding `split`'s files (or, for split=None, the corpus's non-parallel files, e.g. the
    treebank zip; for parallel corpora split=None means the first training split)."""
    info = corpus_info(corpus)
    if split is None and info.extra_files:
        names, what = list(info.extra_files), "its files"
    else:
        split = info.canonical_split(info.training_splits[0] if split is None else split)
        names, what = _split_names(info, split, info.languages), f"split {split!r}"
    return _find(info, names, data_dir, download, what)[0].parent


def treebank_zip_path(
    data_dir: str | os.PathLike | None = None, *, download: bool = True
) -> Path:
    """Path of the Penn Treebank sample zip (NLTK's treebank.zip), for the parsing chapter."""
    return (
        corpus_path("ptb_sample", data_dir=data_dir, download=download) / "treebank.zip"
    )


def split_files(
    corpus: str,
    split: str,
    src_lang: str | None = None,
    tgt_lang: str | None = None,
    data_dir: str | os.PathLike | None = None,
    *,
    download: bool = True,
) -> tuple[Path, Path]:
    """(source file, target file) of a split, found as the module docstring says."""
    info = corpus_info(corpus)
    split = info.canonical_split(split)
    src_lang, tgt_lang = info.direction(src_lang, tgt_lang)
    names = _split_names(info, split, (src_lang, tgt_lang))
    src, tgt = _find(info, names, data_dir, download, f"split {split!r}")
    return src, tgt

"""Where a corpus's files are taken from, so that every loader agrees on one order and one error.

An explicit data dir (``--data-dir`` / ``data_dir=``) is used alone: a split missing from it is an
error naming the files, never quietly read from elsewhere, so one run cannot mix two data folders.
Without one, a split is looked for under ``$AT_DATA_DIR/<corpus>/``, then in the download cache (``$AT_CACHE_DIR`` or
``~/.cache/annotated_transformer``), and is finally made in that cache (see `fetch`) unless downloads
are off (``download=False`` or ``AT_OFFLINE=1``). Both files of a pair always come from one folder, so
a pair is never mixed from two copies. When every place fails, the one error names the places searched,
why the download did not help, and the ways out.
"""

from __future__ import annotations

import os
import tarfile
from pathlib import Path

from ..runtime.files import cache_dir
from .fetch import make_file
from .registry import CorpusInfo, corpus_info
from .textfiles import find_plain_or_gz


class DataNotFoundError(FileNotFoundError):
    """A corpus's files are in none of the places we look, and could not be downloaded."""


def _downloads_allowed(download: bool) -> bool:
    return download and os.environ.get("AT_OFFLINE", "").strip().lower() not in (
        "1",
        "true",
        "yes",
    )


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


def _wanted_files(
    info: CorpusInfo, split: str | None, langs: tuple[str, ...]
) -> list[str]:
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
    """Paths of `names`, all from one folder: search the folders in order, else make them in the cache."""
    if data_dir is not None:
        root = Path(data_dir).expanduser()
        for directory in (root / info.name, root):
            found = [find_plain_or_gz(directory, name) for name in names]
            if all(found):
                return found  # type: ignore[return-value]
        raise DataNotFoundError(
            f"no {info.title} files for {what} ({', '.join(names)}, plain or .gz) under --data-dir "
            f"{os.fspath(data_dir)} (looked in {root / info.name} and {root}): fix the path, or leave "
            "--data-dir out to use $AT_DATA_DIR or the download cache"
        )
    for directory in _candidate_dirs(info, None):
        found = [find_plain_or_gz(directory, name) for name in names]
        if all(found):
            return found  # type: ignore[return-value]

    target = cache_dir() / info.name
    unsourced = [name for name in names if info.source_for(name) is None]
    ways_out = "pass --data-dir (or data_dir= in Python), set AT_DATA_DIR, or connect to the network to download them"
    if unsourced:
        failure = f"{', '.join(unsourced)} has no download source"
        ways_out = "pass --data-dir (or data_dir= in Python) or set AT_DATA_DIR"
    elif not _downloads_allowed(download):
        failure = "downloads are off (download=False or AT_OFFLINE=1)"
    else:
        try:
            for name in names:
                make_file(info, name, target)
            return [find_plain_or_gz(target, name) for name in names]  # type: ignore[misc]
        except (
            OSError,
            tarfile.TarError,
        ) as error:  # URLError is an OSError; ChecksumError is not caught
            failure = f"the download failed ({type(error).__name__}: {error})"

    env_dir = os.environ.get("AT_DATA_DIR")
    env_text = f"(AT_DATA_DIR={env_dir})" if env_dir else "(AT_DATA_DIR is unset)"
    places = []
    places.append(f"$AT_DATA_DIR/{info.name} {env_text}")
    places.append(f"the download cache {target}")
    raise DataNotFoundError(
        f"no {info.title} files for {what} ({', '.join(names)}, plain or .gz) under {', '.join(places[:-1])} "
        f"or in {places[-1]}; {failure}: {ways_out}"
    )


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
    if split is None and not info.extra_files:
        split = info.training_splits[0]
    if split is not None:
        split = info.canonical_split(split)
    names = _wanted_files(info, split, info.languages)
    return _resolve(
        info, names, data_dir, download, f"split {split!r}" if split else "its files"
    )[0].parent


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
    """(source file, target file) of a split, resolved as the module docstring says."""
    info = corpus_info(corpus)
    split = info.canonical_split(split)
    src_lang, tgt_lang = info.direction(src_lang, tgt_lang)
    src, tgt = _resolve(
        info,
        _wanted_files(info, split, (src_lang, tgt_lang)),
        data_dir,
        download,
        f"split {split!r}",
    )
    return src, tgt

"""Making a missing corpus file in the cache: downloaded, cut out of another file, or pulled out of archives.

A cut connection or a changed upstream file must never leave a half or wrong file where the loaders
would trust it, so every file is written through `files.atomic_write` and hashed while it streams; a
sha256 that differs from the registry's raises ChecksumError inside the write, and nothing is moved
into place. The WMT14 archives are 1.6 GB together, hence the progress bar (tqdm draws it only on a
terminal). URLs are opened with urllib, which also reads file:// URLs: a local mirror works, and the
tests stay offline by replacing the one seam, `_open_url`.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tarfile
import urllib.request
from pathlib import Path
from typing import BinaryIO, Callable

from tqdm import tqdm

from ..runtime.files import atomic_write
from .registry import (
    FILE_SHA256,
    ArchiveMembers,
    CorpusInfo,
    Download,
    LineSelection,
    corpus_info,
)
from .textfiles import find_plain_or_gz, raw_lines

logger = logging.getLogger(__name__)


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
                    if (
                        last != b"\n"
                    ):  # keep the next member's first line on a line of its own
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

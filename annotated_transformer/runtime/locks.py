"""One process per output folder: the training run folder, the book's outputs, the extended runs.

The lock is the OS's (`filelock`), taken without waiting: a second process meant for the same
folder stops at once with the caller's line saying what holds it and what to do, instead of queueing
behind a run of hours or mixing its files into the first one's. It goes with its process, so a
killed run leaves no stale lock to clear by hand; the empty lock file itself stays (removing it
would race with a process that has just opened it).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

from filelock import FileLock, Timeout

from .files import cache_dir, ensure_folder


@contextlib.contextmanager
def folder_lock(
    path: str | os.PathLike, busy: str, error: type[Exception] = ValueError
) -> Iterator[None]:
    """Hold the lock file `path` for the block; raise `error(busy)` at once if another process
    holds it."""
    try:
        held = FileLock(str(path)).acquire(timeout=0)
    except Timeout:
        raise error(busy) from None
    with held:  # released when the block ends
        yield


@contextlib.contextmanager
def output_lock(path: str | os.PathLike, command: str) -> Iterator[None]:
    """Hold the lock of the shared output file `path` (an export or a merge that reads the file,
    then replaces it) for the block, so two commands writing it at once cannot lose each other's
    work: the second stops at once in one line. The lock file lives in the cache, named after the
    file's resolved path, so no lock file is left beside a committed results file."""
    resolved = str(Path(path).resolve())
    name = hashlib.sha256(resolved.encode()).hexdigest()[:20] + ".lock"
    folder = cache_dir() / "locks"
    ensure_folder(folder)
    busy = (
        f"{command}: another command is writing {path} now; run this one again when it is "
        "done (it reads the file and adds to it, so nothing is lost)"
    )
    with folder_lock(folder / name, busy):
        yield

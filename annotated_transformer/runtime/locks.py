"""One process per output folder: the training run folder, the book's outputs, the extended runs.

The lock is the OS's (`filelock`), taken without waiting: a second process meant for the same
folder stops at once with the caller's line saying what holds it and what to do, instead of queueing
behind a run of hours or mixing its files into the first one's. It goes with its process, so a
killed run leaves no stale lock to clear by hand; the empty lock file itself stays (removing it
would race with a process that has just opened it).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from filelock import FileLock, Timeout


@contextlib.contextmanager
def folder_lock(
    path: str | os.PathLike, busy: str, error: type[Exception] = ValueError
) -> Iterator[None]:
    """Hold the lock file `path` for the block; raise `error(busy)` at once if another process
    holds it."""
    lock = FileLock(str(path))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        raise error(busy) from None
    try:
        yield
    finally:
        lock.release()

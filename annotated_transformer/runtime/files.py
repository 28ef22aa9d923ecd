"""Atomic file writes: a reader sees the old file or the new one, never half of either.

Every file the package writes that a later step trusts (checkpoints, tokenizers, downloaded corpora,
results) goes through `atomic_write`: the bytes land in a temporary file in the destination folder,
are flushed to disk, and only then `os.replace` moves them into place. A crash, a full disk or a
second Ctrl-C mid-write leaves the previous file intact and no `.part` file behind. The new file
keeps the permissions of the one it replaces (a new file gets the umask's, as `open` would give it),
and a symlink is written through: its target gets the new bytes, the link stays a link.

`clone_root` is the one place that asks whether the package runs from a clone (results/, the book,
the cache of the web runtime live there) or from an installed copy.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path
from typing import BinaryIO, Callable


def atomic_write(path: str | os.PathLike, fill: Callable[[BinaryIO], None]) -> Path:
    """Call `fill(handle)` on a temporary binary file next to `path`, then move it into place.

    If `fill` raises (a checksum that does not match, say), nothing is moved and the error propagates.
    Returns `path` as given (a symlink's own name, not its target's).
    """
    given = Path(path)
    # A symlink's target is replaced, next to the target, so the link keeps pointing at the file.
    target = Path(os.path.realpath(given)) if given.is_symlink() else given
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    fd, tmp_name = tempfile.mkstemp(
        dir=target.parent, prefix=f".{target.name}.", suffix=".part"
    )
    try:
        with os.fdopen(fd, "wb") as handle:
            fill(handle)
            handle.flush()
            os.fchmod(handle.fileno(), mode)  # mkstemp made it 0600
            os.fsync(handle.fileno())
        os.replace(tmp_name, target)
    finally:
        Path(tmp_name).unlink(missing_ok=True)
    return given


def _umask() -> int:
    """This process's umask: read from /proc where it can be (setting it to read it is racy)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    return atomic_write(path, lambda handle: handle.write(data))


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def remove_partial_writes(folder: str | os.PathLike) -> list[Path]:
    """Delete the temporary files of `atomic_write`s that a killed process left in `folder`.

    Only safe while no other process writes there: callers hold the folder's lock.
    """
    folder = Path(folder)
    if not folder.is_dir():
        return []
    leftovers = [path for path in folder.glob(".*.part") if path.is_file()]
    for path in leftovers:
        path.unlink(missing_ok=True)
    return leftovers


PACKAGE_DIR = Path(__file__).resolve().parents[1]  # annotated_transformer/


def clone_root() -> Path | None:
    """The clone this package was imported from (it holds pyproject.toml and book/), or None for an
    installed copy (a wheel, Colab)."""
    candidate = PACKAGE_DIR.parent
    if (candidate / "pyproject.toml").is_file() and (candidate / "book").is_dir():
        return candidate
    return None


def cache_dir() -> Path:
    """Where downloads, trained tokenizers and measured choices go: $AT_CACHE_DIR, else
    ~/.cache/annotated_transformer."""
    configured = os.environ.get("AT_CACHE_DIR")
    return (
        Path(configured).expanduser()
        if configured
        else Path.home() / ".cache" / "annotated_transformer"
    )

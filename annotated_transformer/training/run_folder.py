"""A run folder belongs to one run: the numbers read from it must be that run's numbers.

Snapshots are pruned and averaged by name, so a second run written into a folder that already holds
one would average the first run's snapshots and report their BLEU as its own. `claim_run_folder`
therefore refuses to start a fresh run where one exists (unless asked to clear it), refuses to
"resume" where there is nothing to resume, and holds a lock file so that two processes never write
into one folder. The lock is an OS lock (`filelock`): it disappears with its process, so a killed run
never leaves the folder locked. Temporary files of writes a killed process left half done are removed.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
from pathlib import Path
from typing import Iterator

from filelock import FileLock, Timeout

from ..runtime.files import remove_partial_writes
from .checkpoint import RESUME_NAME, SNAPSHOT_DIR, list_snapshots

logger = logging.getLogger(__name__)

LOCK_NAME = ".lock"
METRICS_NAME = "metrics.jsonl"
# Everything a run writes into its folder; --overwrite removes exactly these.
RUN_FILES = (RESUME_NAME, METRICS_NAME, "averaged.pt", "test_translations.txt")


class RunFolderError(ValueError):
    """The run folder cannot be used as asked (it holds another run, nothing to resume, or is busy)."""


def holds_a_run(out_dir: Path) -> bool:
    return (
        (out_dir / RESUME_NAME).exists()
        or (out_dir / METRICS_NAME).exists()
        or bool(list_snapshots(out_dir))
    )


def clear_run(out_dir: Path) -> None:
    """Remove the files of the run in `out_dir` (and nothing else that may live there)."""
    for name in RUN_FILES:
        (out_dir / name).unlink(missing_ok=True)
    snapshots = out_dir / SNAPSHOT_DIR
    if snapshots.is_dir():
        shutil.rmtree(snapshots)


@contextlib.contextmanager
def claim_run_folder(
    out_dir: str | Path, *, resume: bool, overwrite: bool = False
) -> Iterator[Path]:
    """Hold `out_dir` for one run while the block runs.

    resume: continue the run in `out_dir` (its last.pt must exist).
    overwrite: clear the run in `out_dir` first (only without resume).

    Raises:
        RunFolderError: another process holds the folder; a fresh run would mix with an existing one;
            resume finds no last.pt; or both resume and overwrite were asked for.
    """
    out_dir = Path(out_dir)
    if resume and overwrite:
        raise RunFolderError(
            "--resume continues the run in the folder and --overwrite deletes it: pass one of them"
        )
    out_dir.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(out_dir / LOCK_NAME))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        raise RunFolderError(
            f"another process is training into {out_dir} (it holds {out_dir / LOCK_NAME}): wait for it to "
            "finish, or pass another --out"
        ) from None
    try:
        removed = remove_partial_writes(out_dir) + remove_partial_writes(
            out_dir / SNAPSHOT_DIR
        )
        if removed:
            logger.info(
                "removed %d unfinished writes of an earlier process in %s",
                len(removed),
                out_dir,
            )
        if resume and not (out_dir / RESUME_NAME).is_file():
            raise RunFolderError(
                f"nothing to resume in {out_dir}: it has no {RESUME_NAME}. Check --out, or leave out --resume "
                "to start a new run there"
            )
        if not resume and holds_a_run(out_dir):
            if not overwrite:
                raise RunFolderError(
                    f"{out_dir} already holds a run ({len(list_snapshots(out_dir))} snapshots): continue it with "
                    "--resume, start afresh with --overwrite (deletes that run's files), or pass another --out"
                )
            clear_run(out_dir)
        yield out_dir
    finally:
        lock.release()

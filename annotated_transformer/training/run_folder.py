"""A run folder belongs to one run: the numbers read from it must be that run's numbers.

Snapshots are pruned and averaged by name, so a second run written into a folder that already holds
one would average the first run's snapshots and report their BLEU as its own. `claim_run_folder`
therefore refuses to start a fresh run where one exists (unless asked to clear it), refuses to
"resume" where there is nothing to resume, and holds a lock file so that two processes never write
into one folder. The lock is an OS lock (`filelock`): it disappears with its process, so a killed run
never leaves the folder locked. The claim marks the folder as `train`'s (`ownership.mark_made_by`)
before anything is written into it; temporary files of writes a killed process left half done are
removed only from a folder that was already marked so, never from a folder of the user's.

Asked to overwrite, the claim moves nothing by itself: the caller checks everything it can first
(data, tokenizer, settings) and then calls `RunFolder.clear_old_run`, which moves the files a run
writes (`RUN_FILES`, the snapshots `checkpoints/step_*.pt`, the `evaluation_*.json` records of
`evaluate`) aside into `replaced/<UTC time>/` in the folder, and leaves a file of the user's where it
is. Nothing is deleted: a command deletes only what it made in this very call (`set_aside`).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from ..runtime.files import move_aside, remove_empty_folder, remove_partial_writes
from ..runtime.locks import folder_lock
from ..runtime.ownership import LOCK_NAME, made_by, mark_made_by
from ..runtime.records import read_json
from .checkpoint import RESUME_NAME, SNAPSHOT_DIR, list_snapshots

logger = logging.getLogger(__name__)

METRICS_NAME = "metrics.jsonl"
RESULTS_NAME = "results.json"  # the run's scores, filed with the run (pipeline.run)
AVERAGED_NAME = "averaged.pt"  # the run's model: the mean of its last snapshots
TRANSLATIONS_NAME = "test_translations.txt"  # that model's test translations
# Everything a run writes into its folder besides its snapshots; --overwrite moves exactly these.
RUN_FILES = (
    RESUME_NAME,
    METRICS_NAME,
    AVERAGED_NAME,
    TRANSLATIONS_NAME,
    RESULTS_NAME,
)
EVALUATION_PATTERN = "evaluation_*.json"  # what `evaluate` files with a run
# where a run's old files go, one folder per time they were set aside
ASIDE_DIR = "replaced"


class RunFolderError(ValueError):
    """The run folder cannot be used as asked (it holds another run, nothing to resume, or is busy)."""


def holds_a_run(out_dir: Path) -> bool:
    return any((out_dir / name).exists() for name in RUN_FILES) or bool(
        list_snapshots(out_dir)
    )


def set_aside(out_dir: Path, paths: list[Path]) -> Path | None:
    """Move `paths` (files inside `out_dir`) to `out_dir/replaced/<UTC time>/`, keeping their place
    relative to `out_dir`; returns that folder (None when there was nothing to move)."""
    paths = [p for p in paths if p.is_file()]
    if not paths:
        return None
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")
    aside = out_dir / ASIDE_DIR / stamp
    for path in paths:
        move_aside(path, aside / path.relative_to(out_dir))
    return aside


def clear_run(out_dir: Path) -> list[Path]:
    """Move the files of the run in `out_dir` aside (`set_aside`), and nothing else that lives
    there; returns where they were."""
    doomed = [out_dir / name for name in RUN_FILES if (out_dir / name).is_file()]
    doomed += [
        path for path in list_snapshots(out_dir) if path.parent == out_dir / SNAPSHOT_DIR
    ]
    doomed += [
        path
        for path in sorted(out_dir.glob(EVALUATION_PATTERN))
        if _is_results_record(path)
    ]
    aside = set_aside(out_dir, doomed)
    if aside is not None:
        logger.info(
            "moved the old run's %d files in %s aside to %s (delete them when you no longer "
            "need them)",
            len(doomed),
            out_dir,
            aside,
        )
    remove_empty_folder(out_dir / SNAPSHOT_DIR)  # kept when it holds a file of the user's
    return doomed


def _is_results_record(path: Path) -> bool:
    try:
        record = read_json(path, "result")
    except (OSError, ValueError):
        return False
    return isinstance(record, dict) and "metrics" in record and "provenance" in record


@dataclass
class RunFolder:
    """A folder claimed for one run. With overwrite, the old run is still there until the caller,
    having checked what it can, calls `clear_old_run`."""

    path: Path
    overwrite: bool = False

    def clear_old_run(self) -> list[Path]:
        """Move the old run's files aside (only with overwrite; once); returns where they were."""
        if not self.overwrite:
            return []
        self.overwrite = False
        return clear_run(self.path)


def _nothing_to_resume(out_dir: Path) -> RunFolderError:
    return RunFolderError(
        f"nothing to resume in {out_dir}: it has no {RESUME_NAME}. Check --out, or leave out "
        "--resume to start a new run there"
    )


@contextlib.contextmanager
def claim_run_folder(
    out_dir: str | Path, *, resume: bool, overwrite: bool = False
) -> Iterator[RunFolder]:
    """Hold `out_dir` for one run while the block runs.

    resume: continue the run in `out_dir` (its last.pt must exist).
    overwrite: a run already in `out_dir` may be replaced (only without resume); its files go
        when the caller calls `clear_old_run()` on the yielded `RunFolder`, after its checks.

    Raises:
        RunFolderError: another process holds the folder; a fresh run would mix with an existing one;
            resume finds no last.pt; or both resume and overwrite were asked for.
    """
    out_dir = Path(out_dir)
    if resume and overwrite:
        raise RunFolderError(
            "--resume continues the run in the folder and --overwrite sets it aside: pass one of them"
        )
    if resume and not (out_dir / RESUME_NAME).is_file():  # checked again under the lock
        raise _nothing_to_resume(out_dir)
    own = made_by(out_dir, "train")  # before this claim marks it
    mark_made_by(out_dir, "train")
    busy = (
        f"another process is training into {out_dir} (it holds {out_dir / LOCK_NAME}): wait for it to "
        "finish, or pass another --out"
    )
    with folder_lock(out_dir / LOCK_NAME, busy, RunFolderError):
        removed = (
            remove_partial_writes(out_dir) + remove_partial_writes(out_dir / SNAPSHOT_DIR)
            if own
            else []
        )
        if removed:
            logger.info(
                "removed %d unfinished writes of an earlier process in %s",
                len(removed),
                out_dir,
            )
        if resume and not (out_dir / RESUME_NAME).is_file():
            raise _nothing_to_resume(out_dir)
        replacing = not resume and holds_a_run(out_dir)
        if replacing and not overwrite:
            raise RunFolderError(
                f"{out_dir} already holds a run ({len(list_snapshots(out_dir))} snapshots): continue it with "
                "--resume, start afresh with --overwrite (moves that run's files aside), or pass another --out"
            )
        yield RunFolder(out_dir, overwrite=replacing)

"""A run folder is one model in every command: its derived files name the snapshots they came from.

`averaged.pt` (its `averaged_from`), `results.json` (the test scores' `averaged_checkpoints`) and
`test_translations.txt` (written with that results file) are made from the run's last snapshots,
`average_last` of them (the run's own profile's, as `pipeline.load_for_evaluation` averages a run
folder). When newer snapshots land and the derived files are not refreshed (`train --no-eval`, a
Ctrl-C, a failure), they no longer describe the folder's model: `set_aside_stale` moves them to
`replaced/<UTC time>/` (nothing is deleted), and a command handed such an `averaged.pt` refuses it
(`check_current`) instead of translating with a model that is not the run's.
"""

from __future__ import annotations

import logging
from pathlib import Path

from ..runtime.records import read_json
from .checkpoint import list_snapshots, load_checkpoint
from .run_folder import AVERAGED_NAME, RESULTS_NAME, TRANSLATIONS_NAME, set_aside

logger = logging.getLogger(__name__)

DEFAULT_AVERAGE_LAST = 5  # for snapshots that record no profile


def run_average_last(out_dir: str | Path) -> int:
    """How many snapshots the run's model averages: its profile's `average_last`."""
    snapshots = list_snapshots(out_dir)
    if not snapshots:
        return DEFAULT_AVERAGE_LAST
    stored = load_checkpoint(snapshots[-1], mmap=True).get("profile")
    return (stored or {}).get("average_last") or DEFAULT_AVERAGE_LAST


def current_sources(out_dir: str | Path, last: int | None = None) -> list[str]:
    """The names of the snapshots the run's model averages now (the newest `last` of them)."""
    last = run_average_last(out_dir) if last is None else last
    return [p.name for p in list_snapshots(out_dir)[-last:]]


def sources_of(path: Path) -> list[str] | None:
    """The snapshots a derived file says it came from (None: it does not say)."""
    try:
        if path.name == AVERAGED_NAME:
            found = load_checkpoint(path, mmap=True).get("averaged_from")
        elif path.name == RESULTS_NAME:
            record = read_json(path, "result")
            found = record["metrics"]["test"]["averaged_checkpoints"]
        elif path.name == TRANSLATIONS_NAME:  # written with results.json, goes with it
            return sources_of(path.parent / RESULTS_NAME)
        else:
            return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return list(found) if isinstance(found, (list, tuple)) else None


def stale_files(out_dir: str | Path) -> list[Path]:
    """The derived files of the run in `out_dir` that do not describe its current model."""
    out_dir = Path(out_dir)
    if not list_snapshots(out_dir):
        return []  # a folder that keeps no snapshots: its averaged.pt is all there is
    current = current_sources(out_dir)
    return [
        out_dir / name
        for name in (AVERAGED_NAME, RESULTS_NAME, TRANSLATIONS_NAME)
        if (out_dir / name).is_file() and sources_of(out_dir / name) != current
    ]


def set_aside_stale(out_dir: str | Path) -> Path | None:
    """Move the stale derived files of a run aside; returns where (None: all were current)."""
    out_dir = Path(out_dir)
    stale = stale_files(out_dir)
    aside = set_aside(out_dir, stale)
    if aside is not None:
        logger.warning(
            "%s no longer describe the run's last %d snapshots: moved aside to %s "
            "(refresh them with `evaluate --checkpoint %s` or `average --run %s`)",
            ", ".join(p.name for p in stale),
            len(current_sources(out_dir)),
            aside,
            out_dir,
            out_dir,
        )
    return aside


def check_current(path: str | Path, checkpoint: dict) -> None:
    """Refuse an `averaged.pt` of a run folder whose snapshots have moved on since it was made."""
    path = Path(path)
    out_dir = path.parent
    if path.name != AVERAGED_NAME or not list_snapshots(out_dir):
        return
    made_from = checkpoint.get("averaged_from")
    current = current_sources(out_dir)
    if made_from is not None and list(made_from) == current:
        return
    raise ValueError(
        f"{path} averages {', '.join(made_from or ['snapshots it does not name'])}, but the "
        f"run's last snapshots are now {', '.join(current)}: it is not the run's model; refresh it "
        f"with `average --run {out_dir}`, or pass the run folder {out_dir}"
    )

"""Results files: every number the book shows is written by the run that made it, with provenance.

A results file is

    {"schema": 1, "name": ..., "profile": ..., "metrics": {...}, "config": {...} | null,
     "wall_time_s": ... | null, "run_folder": ... | null, "provenance": {"git_commit",
     "git_dirty", "torch", "python", "device", "device_name", "date", ...}}

Where it goes is the rule that keeps numbers with the run that made them: a training run files its
results in its own run folder (`pipeline.run`); only the book, or a command given `--publish`, writes
`results/<profile>/<name>.json`, the files the book and the README read. A published file records
its run folder, and `check_replaceable` refuses to replace a committed file of another run (the
`gpu` and `paper` results are committed because CI cannot rerun them; `smoke` and `cpu` are
git-ignored and regenerated). This module only writes and reads the files; the introduction's
summary of them is `book/summary.py`, and what the paper reports is `paper.py`.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

import torch

from ..runtime.devices import device_name, resolve_device
from ..runtime.files import atomic_write_text, clone_root
from ..runtime.ownership import relative_to_clone
from ..runtime.records import read_json, read_record, record_text

SCHEMA_VERSION = 1
RESULTS_ENV = "AT_RESULTS_DIR"
# The book's run folder of a profile (chapter 04 trains it, 05 and 08 read it), as the book
# runner sets it for the chapters' kernels (book/runner.py); a chapter run by hand uses the clone's.
BOOK_RUN_ENV = "AT_BOOK_RUN_DIR"
# Set in the kernel of a chapter run by hand (Jupyter, Colab, papermill without the book's runner,
# by `book.by_hand`): its results and chapter 04's run go under `runs/by-hand/`, beside what the
# book's runner published, never over it.
BY_HAND_ENV = "AT_BY_HAND"
BY_HAND_FOLDER = Path("runs") / "by-hand"
BY_HAND_DIR_ENV = "AT_BY_HAND_DIR"  # another place for them
# The results records of a schema of their own (runtime.records), by name; any other is a "result".
RECORD_KINDS = {"book_run": "book_run"}


def record_kind(name: str) -> str:
    """The kind of record (`runtime.records.SCHEMAS`) the results file `name` is."""
    return RECORD_KINDS.get(name, "result")


def repo_root() -> Path | None:
    """The clone this package was imported from, or None for an installed copy (e.g. Colab)."""
    return clone_root()


def results_root(root: str | os.PathLike | None = None) -> Path:
    """Where results live: `root`, else $AT_RESULTS_DIR, else in a chapter run by hand
    `by_hand_root()/results`, else the clone's results/ (else ./results)."""
    if root is not None:
        return Path(root)
    if os.environ.get(RESULTS_ENV):
        return Path(os.environ[RESULTS_ENV])
    if by_hand():
        return by_hand_root() / "results"
    return published_results_root()


def published_results_root() -> Path:
    """What the book's runner publishes and the pages read: the clone's results/ (./results in an
    installed copy), whatever a chapter run by hand writes to."""
    repo = repo_root()
    return (repo / "results") if repo is not None else Path.cwd() / "results"


def by_hand() -> bool:
    """True in the kernel of a chapter run by hand (not started by the book's runner)."""
    return os.environ.get(BY_HAND_ENV, "") not in ("", "0")


def by_hand_root() -> Path:
    """Where chapters run by hand write: $AT_BY_HAND_DIR, else `runs/by-hand/` in the clone (in
    the working directory for an installed copy, as in Colab)."""
    if os.environ.get(BY_HAND_DIR_ENV):
        return Path(os.environ[BY_HAND_DIR_ENV]).expanduser()
    return (repo_root() or Path.cwd()) / BY_HAND_FOLDER


def book_run_dir(profile_name: str) -> Path:
    """The run folder chapter 04 trains and chapters 05 and 08 read: $AT_BOOK_RUN_DIR (set by
    the book runner, e.g. under a `--param` run's own --output-dir), else in a chapter run by hand
    `by_hand_root()/book-<profile>`, else the published one (`published_book_run_dir`)."""
    if os.environ.get(BOOK_RUN_ENV):
        return Path(os.environ[BOOK_RUN_ENV])
    if by_hand():
        return by_hand_root() / f"book-{profile_name}"
    return published_book_run_dir(profile_name)


def book_run_dirs(profile_name: str) -> list[Path]:
    """Where a chapter that reads chapter 04's model looks, in order: `book_run_dir`, and in a
    chapter run by hand then the book's published run folder."""
    folders = [book_run_dir(profile_name)]
    published = published_book_run_dir(profile_name)
    if published not in folders and by_hand() and not os.environ.get(BOOK_RUN_ENV):
        folders.append(published)
    return folders


def published_book_run_dir(profile_name: str) -> Path:
    """The book's own run folder of `profile_name`: `runs/book-<profile>` in the clone (else in
    the working directory)."""
    return (repo_root() or Path.cwd()) / "runs" / f"book-{profile_name}"


def committed_root() -> Path | None:
    """The clone's results/, where tuning sweeps and calibrations are committed (None in an
    installed copy): what a chapter reads its choices from, whatever $AT_RESULTS_DIR says."""
    root = clone_root()
    return None if root is None else root / "results"


def check_name(name: str, what: str = "result name") -> str:
    """`name` when it is a plain file stem (no folder, not hidden, no odd characters); `what`
    says in the error where the name came from (a flag)."""
    if (
        not isinstance(name, str)
        or not name
        or name.startswith(".")
        or name.endswith(".json")
        or any(c in name for c in "/\\\0")
        or not name.isprintable()
    ):
        raise ValueError(
            f"{what} must be a plain file stem like 'translation' (no folder, no .json), "
            f"got {name!r}"
        )
    return name


def results_path(name: str, profile: str, root: str | os.PathLike | None = None) -> Path:
    """`<results root>/<profile>/<name>.json`; names are plain words so paths stay portable."""
    check_name(name)
    if not profile or any(c in profile for c in "/\\"):
        raise ValueError(f"profile must be a plain word like 'cpu', got {profile!r}")
    return results_root(root) / profile / f"{name}.json"


# ----------------------------------------------------------------------------------------------
# Provenance


def _git(*args: str) -> str | None:
    repo = repo_root()
    if repo is None:
        return None
    try:
        out = subprocess.run(
            ["git", *args], cwd=repo, capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def is_committed(path: str | os.PathLike) -> bool:
    """Whether `path` is a file git tracks in this clone (False outside a clone or its tree)."""
    path = Path(path)
    repo = repo_root()
    if repo is None or not path.is_file():
        return False
    try:
        path.resolve().relative_to(repo.resolve())
    except ValueError:
        return False
    return _git("ls-files", "--error-unmatch", "--", str(path.resolve())) is not None


def check_replaceable(
    path: str | os.PathLike, run_folder: str | os.PathLike | None
) -> None:
    """Refuse to replace a committed results file that another run made (or that does not say
    which run made it): such a file is a number the README or the book quotes."""
    path = Path(path)
    if not is_committed(path):
        return
    try:
        theirs = read_json(path, "result").get("run_folder")
    except (OSError, ValueError, AttributeError):
        theirs = None
    mine = _folder_text(run_folder)
    if theirs is None or mine is None or theirs != mine:
        made_by = f"the run in {theirs}" if theirs else "another run"
        raise ValueError(
            f"{path} is a committed result of {made_by}: publish under another name "
            "(--results-name, or evaluate --name) or into another results root "
            f"(${RESULTS_ENV}, or book --results-dir), or leave out --publish"
        )


def _folder_text(folder: str | os.PathLike | None) -> str | None:
    """A run folder as a results file records it (`relative_to_clone`: a committed file then
    names no path of the machine that wrote it)."""
    return None if folder is None else relative_to_clone(folder)


def run_folder_of_record(record: dict) -> Path | None:
    """The run folder a results record names, as a path on this machine (see `_folder_text`)."""
    folder = record.get("run_folder")
    if not folder:
        return None
    path = Path(folder)
    clone = repo_root()
    return path if path.is_absolute() or clone is None else clone / path


MAX_CHANGED_FILES = 20


def provenance(device: Any = None) -> dict:
    """Who made a number: git commit (whether the tree had edits, and to which tracked files),
    torch, the device's type and hardware (`device` None: what "auto" picks), date (UTC)."""
    resolved = resolve_device(str(device) if device is not None else "auto")
    commit = _git("rev-parse", "HEAD")
    dirty, changed = None, []
    if commit is not None:
        status = _git("status", "--porcelain", "--untracked-files=no")
        dirty = bool(status) if status is not None else None
        changed = [
            line.split(maxsplit=1)[-1]
            for line in (status or "").splitlines()
            if line.strip()
        ]
    return {
        "git_commit": commit,
        "git_dirty": dirty,
        # which tracked files differed from the commit, so a reader can tell what the edits were
        "git_changed_files": changed[:MAX_CHANGED_FILES],
        "git_changed_count": len(changed),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
        "device": resolved.type,
        "device_name": device_name(resolved),
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }


# ----------------------------------------------------------------------------------------------
# Writing and reading


def _jsonable(value: Any) -> Any:
    """numpy and torch scalars, paths and dataclasses become plain JSON values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if hasattr(value, "tolist"):  # numpy arrays and scalars, torch tensors
        return value.tolist()
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    raise TypeError(
        f"cannot write {type(value).__name__} to a results file; convert it to numbers or strings"
    )


def _config_dict(config: Any) -> dict | None:
    if config is None or isinstance(config, dict):
        return config
    if hasattr(config, "to_dict"):
        return config.to_dict()
    if dataclasses.is_dataclass(config):
        return dataclasses.asdict(config)
    raise TypeError(f"config must be a dict or a dataclass, got {type(config).__name__}")


def write_result(
    name: str,
    metrics: dict,
    *,
    profile: str,
    config: Any = None,
    wall_time_s: float | None = None,
    device: Any = None,
    root: str | os.PathLike | None = None,
    path: str | os.PathLike | None = None,
    run_folder: str | os.PathLike | None = None,
) -> Path:
    """Write `results/<profile>/<name>.json` (or `path`) atomically, stamped with `provenance(device)`.

    Args:
        name: the file stem (e.g. "translation"); see `summary.CLAIMS` for names the summary reads.
        metrics: the numbers, nested dicts allowed (e.g. {"bleu_tokenized": 27.1, "rows": {...}}).
        profile: the profile that produced them; keeps CI numbers apart from GPU ones.
        config: the model or run configuration (a dict or a dataclass), for reproducing the run.
        device: the device used ("cpu", "cuda", a torch.device; None: what "auto" picks).
        root: results root (default: `results_root()`).
        path: write here instead (a run folder's own results file).
        run_folder: the run the numbers come from, recorded (resolved) as "run_folder".
    """
    if not isinstance(metrics, dict):
        raise TypeError(f"metrics must be a dict, got {type(metrics).__name__}")
    path = Path(path) if path is not None else results_path(name, profile, root)
    record = {
        "schema": SCHEMA_VERSION,
        "name": name,
        "profile": profile,
        "metrics": metrics,
        "config": _config_dict(config),
        "wall_time_s": wall_time_s,
        "run_folder": _folder_text(run_folder),
        "provenance": provenance(device),
    }
    text = record_text(record, record_kind(name), path, indent=2, default=_jsonable)
    return atomic_write_text(path, text + "\n")


def read_result(
    name: str, profile: str, root: str | os.PathLike | None = None
) -> dict | None:
    """The record written by `write_result`, or None when that run has not happened yet."""
    path = results_path(name, profile, root)
    if not path.is_file():
        return None
    return read_record(path, record_kind(name))


def list_results(profile: str, root: str | os.PathLike | None = None) -> list[dict]:
    """Every results record of `profile`, sorted by name."""
    folder = results_root(root) / profile
    if not folder.is_dir():
        return []
    records = (read_result(p.stem, profile, root) for p in sorted(folder.glob("*.json")))
    return [r for r in records if r is not None]


def describe_provenance(record: dict) -> str:
    """'measured on NVIDIA H100 80GB HBM3 on 2025-01-31 at commit 1a2b3c4' for a results record."""
    prov = record.get("provenance") or {}
    where = prov.get("device_name") or prov.get("device") or "an unknown device"
    date = (prov.get("date") or "an unknown date")[:10]
    commit = prov.get("git_commit")
    text = f"measured on {where} on {date}"
    if commit:
        text += f" at commit {commit[:7]}" + uncommitted_changes(prov)
    return text


def uncommitted_changes(prov: dict) -> str:
    """How the code that made a record differed from its commit, in words ("" when it did not):
    the files, when the record lists them, else that the record does not list them."""
    if not prov.get("git_dirty"):
        return ""
    files = prov.get("git_changed_files")
    if not files:
        return " plus local changes that the record does not list"
    count = prov.get("git_changed_count", len(files))
    named = ", ".join(files[:3]) + (f" and {count - 3} more" if count > 3 else "")
    noun = "file" if count == 1 else "files"
    return f" plus local changes to {count} {noun} ({named})"

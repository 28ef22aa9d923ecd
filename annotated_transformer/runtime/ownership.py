"""Every folder that a command made has one owner, and only its owner writes inside it.

A folder says who made it by a file that only its maker writes:

- a training run folder (`train`, chapters 04 and 05): `metrics.jsonl`, `last.pt` or a snapshot
  `checkpoints/step_*.pt` (training/run_folder.py);
- a Table 3 extended run (`table3`): `table3_run.json`;
- a parser extended run (`parser-curve`): `parser_run.json`;
- the book's results folder of a profile (`book`): `book_run.json`, whose chapter entries list the
  results files each chapter wrote (key "results");
- a built site (`book`): Sphinx's `.buildinfo` (`files.SITE_MARKER`).

`check_output` is the one rule every command applies to each of its outputs before any work: an
output inside a folder that something else made is refused in one line, naming the owner and where
to write instead. The maker's own documented writes are passed as `mine` (`evaluate`'s
`evaluation_<corpus>_<split>.json` in the run folder it scores, `average --run R`'s
`R/averaged.pt`). `--publish` writes into the book's results folder by design, so there the rule
is by name: a file that the book's record says a chapter wrote, and the record itself, are the
book's.

This module sits at the bottom of the layers, so the marker names are spelled here; a test holds
them to the modules that write them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from .files import SITE_MARKER, clone_root
from .records import read_json

# What marks a training run folder (training/run_folder.py, training/checkpoint.py).
RUN_MARKERS = ("metrics.jsonl", "last.pt")
SNAPSHOT_GLOB = "checkpoints/step_*.pt"
TABLE3_MARKER = "table3_run.json"  # experiments/table3_extended.PLAN_NAME
PARSER_MARKER = "parser_run.json"  # experiments/parsing_extended.PLAN_NAME
BOOK_MARKER = "book_run.json"  # book/runner.RECORD + ".json"

# What a command's output is called when it is put beside a folder, not into it.
BESIDE = {
    "translate": "translations",
    "evaluate": "evaluations",
    "average": "averages",
    "export-onnx": "onnx",
    "attention": "attention",
}


class OwnedFolderError(ValueError):
    """An output inside a folder that another command made (one line: owner and where instead)."""


@dataclass(frozen=True)
class Owner:
    """Who made `folder`: `maker` (a command), `kind` in words, `evidence` (the file saying so)."""

    folder: Path
    maker: str
    kind: str
    evidence: str


def owner_of_folder(folder: str | os.PathLike) -> Owner | None:
    """The owner of `folder` itself, from the files in it; None for a folder nobody owns."""
    folder = Path(folder)
    if not folder.is_dir():
        return None
    for marker in RUN_MARKERS:
        if (folder / marker).is_file():
            return Owner(folder, "train", "the run folder", marker)
    snapshots = sorted(folder.glob(SNAPSHOT_GLOB))
    if snapshots:
        return Owner(
            folder,
            "train",
            "the run folder",
            snapshots[-1].relative_to(folder).as_posix(),
        )
    if (folder / TABLE3_MARKER).is_file():
        return Owner(folder, "table3", "the Table 3 extended run", TABLE3_MARKER)
    if (folder / PARSER_MARKER).is_file():
        return Owner(folder, "parser-curve", "the parser's extended run", PARSER_MARKER)
    if (folder / BOOK_MARKER).is_file():
        return Owner(folder, "book", "the book's results folder", BOOK_MARKER)
    if (folder / SITE_MARKER).is_file():
        return Owner(folder, "book", "the site", SITE_MARKER)
    return None


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path.expanduser()))


def owner_of(path: str | os.PathLike, *, itself: bool = False) -> Owner | None:
    """The nearest owned folder that holds `path` (after following symlinks); with `itself`, `path`
    may be that folder (an output folder such as export-onnx's --out)."""
    real = _real(Path(path))
    folders = [real] if itself else []
    folders += list(real.parents)
    for folder in folders:
        owner = owner_of_folder(folder)
        if owner is not None:
            return owner
    return None


def shown(path: Path) -> str:
    """A path as a message shows it: relative to the working folder when inside it."""
    try:
        return str(path.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def book_chapter_of(path: str | os.PathLike) -> str | None:
    """The chapter that the book's record (`book_run.json` beside `path`) says wrote `path`
    ("the book's record itself" for the record), else None."""
    path = _real(Path(path))
    record_path = path.parent / BOOK_MARKER
    if not record_path.is_file():
        return None
    if path.name == BOOK_MARKER:
        return "the book's record itself"
    try:
        record = read_json(record_path, "book_run")
        chapters = record["metrics"]["chapters"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    for chapter, entry in sorted(chapters.items()):
        for name in (entry or {}).get("results") or []:
            if name == path.name:
                return f"chapter {chapter}"
    return None


def check_output(
    flag: str,
    path: str | os.PathLike | None,
    *,
    command: str,
    mine: Iterable[str | os.PathLike] = (),
    folder: bool = False,
    publish: bool = False,
) -> None:
    """Refuse, in one line, an output that belongs to another command's folder.

    flag: how the user named the output ("--output"); path: the output (None: not asked for);
    command: the command writing it; mine: outputs the command documents as its own inside a
    folder it did not make; folder: the output is a folder the command fills (it may not be an
    owned folder either); publish: `--publish` into the book's results folder, where only the
    names the book's chapters wrote are the book's.
    """
    if path is None:
        return
    path = Path(path)
    real = _real(path)
    if real in {_real(Path(p)) for p in mine}:
        return
    if publish:
        chapter = book_chapter_of(real)
        if chapter is not None:
            raise OwnedFolderError(
                f"{flag} {shown(path)} is the book's: {chapter} wrote it (see "
                f"{shown(real.parent / BOOK_MARKER)}), and only `book` replaces it; publish "
                f"under another name ({flag.split()[-1]}), or into another results root (AT_RESULTS_DIR)"
            )
        return
    owner = owner_of(path, itself=folder)
    if owner is None:
        return
    where = _real(owner.folder)
    beside = where.parent / f"{where.name}-{BESIDE.get(command, command)}"
    inside = real.relative_to(where) if real != where else Path()
    instead = beside / inside if folder else beside / real.name
    raise OwnedFolderError(
        f"{flag} {shown(path)}: {shown(owner.folder)} is {owner.kind} of `{owner.maker}` "
        f"(it holds {owner.evidence}), and only `{owner.maker}` writes inside it: write "
        f"{flag} outside it, e.g. {shown(instead)}"
    )


def check_own_folder(flag: str, path: str | os.PathLike, *, command: str) -> None:
    """Refuse, in one line, a folder that a command makes and continues (`train --out`, `table3
    --out`, `parser-curve --out`) where it is another command's folder or lies inside one; a new
    or plain folder, or one that `command` made (to continue or set aside), passes."""
    owner = owner_of(path, itself=True)
    if owner is None or (
        owner.maker == command and _real(owner.folder) == _real(Path(path))
    ):
        return
    check_output(flag, path, command=command, folder=True)


def check_export(
    path: str | os.PathLike | None,
    *,
    command: str,
    run_dir: str | os.PathLike | None = None,
) -> None:
    """Refuse, in one line and before any training, an extended run's `--export` that lies
    inside the run folder it reads (`run_dir`) or inside a folder another command made."""
    if path is None:
        return
    if run_dir is not None and _real(Path(path)).is_relative_to(_real(Path(run_dir))):
        raise OwnedFolderError(
            f"--export {shown(Path(path))} lies inside the run folder {shown(Path(run_dir))}, "
            "whose files it reads; export to a path outside it"
        )
    check_output("--export", path, command=command)


def relative_to_clone(path: str | os.PathLike) -> str:
    """A path as a record names it: relative to the clone when inside it, else absolute."""
    resolved = Path(path).resolve()
    clone = clone_root()
    if clone is not None and resolved.is_relative_to(clone.resolve()):
        return resolved.relative_to(clone.resolve()).as_posix()
    return str(resolved)

"""Every folder that a command made has one owner, and only its owner writes inside it.

A folder says who made it by a file that only its maker writes:

- a training run folder (`train`, chapters 04 and 05): `metrics.jsonl`, `last.pt` or a snapshot
  `checkpoints/step_*.pt` (training/run_folder.py);
- a Table 3 extended run (`table3`): `table3_run.json`;
- a parser extended run (`parser-curve`): `parser_run.json`;
- the book's results folder of a profile (`book`): `book_run.json`, whose chapter entries list the
  results files each chapter wrote (key "results");
- a built site (`book`): Sphinx's `.buildinfo` (`files.SITE_MARKER`);
- an ONNX export (`export-onnx`): `model.json` that reads as an export's description;
- a folder a command claimed (`mark_made_by`; a run folder's claim, `claim_run_folder`):
  `.made-by`, naming the command, written when it takes the folder and before it writes anything
  else there, so a folder whose first run was killed early is still its own.

`check_output` is the one rule every command applies to each of its outputs before any work: an
output inside a folder that something else made is refused in one line, naming the owner and where
to write instead. The maker's own documented writes are passed as `mine` (`evaluate`'s
`evaluation_<corpus>_<split>.json` in the run folder it scores, `average --run R`'s
`R/averaged.pt`). `--publish` writes into the book's results folder by design, so there the rule
is by name: a file that the book's record says a chapter wrote, and the record itself, are the
book's.

`check_own_folder` is the claim of a folder that a command makes and fills (`train --out`,
`export-onnx --out`, `average --run`'s run, `table3 --out`, `parser-curve --out`, `book
--output-dir`), also one rule,
checked before anything is moved, deleted or trained: no folder above it may be owned by anyone
(a run folder inside a run folder, or inside a Table 3 run's job, is refused naming the owner),
the folder itself is new, empty or the command's own, and a folder holding files the command did
not make is refused, in one line, with every file left as it was. Leftovers of a killed write
(`.*.part`) are removed only in a folder marked as the command's own (`made_by`).

This module sits at the bottom of the layers, so the marker names are written here; a test holds
them to the modules that write them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from .collisions import real_path
from .files import SITE_MARKER, atomic_write_text, clone_root
from .records import read_json, read_record

# What marks a training run folder (training/run_folder.py, training/checkpoint.py).
RUN_MARKERS = ("metrics.jsonl", "last.pt")
SNAPSHOT_GLOB = "checkpoints/step_*.pt"
TABLE3_MARKER = "table3_run.json"  # chapters/model_variations/extended.PLAN_NAME
PARSER_MARKER = "parser_run.json"  # chapters/constituency_parsing/extended.PLAN_NAME
BOOK_MARKER = "book_run.json"  # book/runner.RECORD + ".json"
EXPORT_MARKER = "model.json"  # web/onnx_export.MODEL_FILE, an "onnx_model" record
CLAIM_MARKER = ".made-by"  # a claimed folder: the command that claimed it, one line
# The empty lock file that train, table3 and parser-curve take in the folder they fill (through
# training/run_folder): all that a run killed as it started may leave.
LOCK_NAME = ".lock"

# What each command's folder is called in a message.
KINDS = {
    "train": "the run folder",
    "table3": "the Table 3 extended run",
    "parser-curve": "the parser's extended run",
    "book": "the book's results folder",
    "export-onnx": "the ONNX export",
}

# The one file that marks a folder of each other kind: (marker, its maker, the folder in words).
_MARKERS = (
    (TABLE3_MARKER, "table3", KINDS["table3"]),
    (PARSER_MARKER, "parser-curve", KINDS["parser-curve"]),
    (BOOK_MARKER, "book", KINDS["book"]),
    (SITE_MARKER, "book", "the site"),
)

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
            return Owner(folder, "train", KINDS["train"], marker)
    snapshots = sorted(folder.glob(SNAPSHOT_GLOB))
    if snapshots:
        evidence = snapshots[-1].relative_to(folder).as_posix()
        return Owner(folder, "train", KINDS["train"], evidence)
    for marker, maker, kind in _MARKERS:
        if (folder / marker).is_file():
            return Owner(folder, maker, kind, marker)
    if _is_export(folder / EXPORT_MARKER):
        return Owner(folder, "export-onnx", KINDS["export-onnx"], EXPORT_MARKER)
    maker = _claimed_by(folder)
    if maker is not None:
        return Owner(folder, maker, KINDS.get(maker, "the folder"), CLAIM_MARKER)
    return None


def _is_export(path: Path) -> bool:
    if not path.is_file():
        return False
    try:
        read_record(path, "onnx_model")
    except (OSError, ValueError):
        return False
    return True


def _claimed_by(folder: Path) -> str | None:
    try:
        text = (folder / CLAIM_MARKER).read_text(encoding="utf-8")
    except (OSError, ValueError):
        return None
    lines = text.split("\n")
    return lines[0].strip() or None


def made_by(folder: str | os.PathLike, command: str) -> bool:
    """Whether `folder` is marked as `command`'s own (its markers, or its claim)."""
    owner = owner_of_folder(folder)
    return owner is not None and owner.maker == command


def mark_made_by(folder: str | os.PathLike, command: str) -> None:
    """Make `folder` (when missing) and mark it as `command`'s (`CLAIM_MARKER`) where nothing marks
    it yet; called when the command takes the folder, after `check_own_folder` passed and before
    it writes. A folder already marked (as this command's, or another's) is left as it is."""
    if owner_of_folder(folder) is None:  # (the writer makes a missing folder)
        atomic_write_text(Path(folder) / CLAIM_MARKER, f"{command}\n")


def shown(path: Path) -> str:
    """A path as a message shows it: relative to the working folder when inside it."""
    try:
        return str(path.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def book_chapter_of(path: str | os.PathLike) -> str | None:
    """The chapter that the book's record (`book_run.json` beside `path`) says wrote `path`
    ("the book's record itself" for the record), else None."""
    path = real_path(path)
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
    maker: str | None = None,
) -> None:
    """Refuse, in one line, an output (`path` as `flag` names it; None: not asked for) that
    belongs to another command's folder. `mine`: outputs `command` documents as its own inside a
    folder it did not make; `folder`: the output is a folder the command fills (it may not be an
    owned folder either); `publish`: `--publish` into the book's results folder, where only the
    names the book's chapters wrote are the book's; `maker`: an owner the output may lie in (the
    command's own folders: `book --results-dir` inside its --output-dir)."""
    if path is None:
        return
    path = Path(path)
    real = real_path(path)
    if real in {real_path(p) for p in mine}:
        # the maker's documented write, in a folder that no one above may own
        above = owner_above(real.parent)
        if above is not None:
            raise _refusal(flag, path, above, command=command, folder=False)
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
    owner = owner_above(path, itself=folder)
    if owner is None or owner.maker == maker:
        return
    raise _refusal(flag, path, owner, command=command, folder=folder)


def _refusal(
    flag: str,
    path: Path,
    owner: Owner,
    *,
    command: str,
    folder: bool,
    fix: str | None = None,
) -> OwnedFolderError:
    """The one line refusing `path` inside (or as) `owner`'s folder; `fix`: what to do instead
    (default: write the output outside it, beside the folder)."""
    real = real_path(path)
    where = real_path(owner.folder)
    beside = where.parent / f"{where.name}-{BESIDE.get(command, command)}"
    inside = real.relative_to(where) if real != where else Path()
    instead = beside / inside if folder else beside / real.name
    fix = fix or f"write {flag} outside it, e.g. {shown(instead)}"
    return OwnedFolderError(
        f"{flag} {shown(path)}: {shown(owner.folder)} is {owner.kind} of `{owner.maker}` "
        f"(it holds {owner.evidence}), and only `{owner.maker}` writes inside it: {fix}"
    )


def _empty_lock(entry: Path) -> bool:
    return (
        entry.name == LOCK_NAME
        and entry.is_file()
        and not entry.is_symlink()
        and entry.stat().st_size == 0
    )


def owner_above(path: str | os.PathLike, *, itself: bool = False) -> Owner | None:
    """The nearest owned folder strictly above `path` (after following symlinks), else None; with
    `itself`, `path` may be that folder (an output folder such as export-onnx's --out)."""
    real = real_path(path)
    for folder in [real, *real.parents] if itself else real.parents:
        owner = owner_of_folder(folder)
        if owner is not None:
            return owner
    return None


def check_own_folder(
    flag: str,
    path: str | os.PathLike,
    *,
    command: str,
    maker: str | None = None,
    fix: str | None = None,
    made: Callable[[Path], bool] | None = None,
    mark: str | None = None,
) -> None:
    """The claim of a folder that a command makes and fills (the module's docstring says the
    rule); a new or empty folder, or one that `maker` (default: `command`; `average --run`
    claims `train`'s) made, passes. `fix`: what the refusal of an owned folder says to do instead
    (default: a folder outside it). `made`: which entries of an unmarked folder are the command's
    own (`book`'s output folder, filled before it was marked). `mark`: the one file that marks the
    folder as the maker's, where it makes folders of other kinds too (`book --output-dir`'s claim
    is `CLAIM_MARKER`, not a Sphinx site's `.buildinfo`)."""
    maker = maker or command
    path = Path(path)
    above = owner_above(path)
    if above is not None:
        raise _refusal(flag, path, above, command=command, folder=True, fix=fix)
    owner = owner_of_folder(real_path(path))
    if owner is not None and owner.maker == maker and mark not in (None, owner.evidence):
        owner = None  # the maker's folder of another kind: its files are not this claim's
    if owner is not None:
        if owner.maker == maker:
            return
        raise _refusal(flag, path, owner, command=command, folder=True, fix=fix)
    real = real_path(path)
    if not real.is_dir():
        return  # new (or a file, which the command names as such)
    theirs = sorted(
        entry.name
        for entry in real.iterdir()
        if not _empty_lock(entry) and not (made is not None and made(entry))
    )
    if theirs:
        shown_names = ", ".join(theirs[:3]) + (", ..." if len(theirs) > 3 else "")
        raise OwnedFolderError(
            f"{flag} {shown(path)} holds files `{maker}` did not make ({shown_names}; no "
            f"{CLAIM_MARKER} or other mark of `{maker}`'s): nothing in it was touched; name a "
            "new or empty folder, or move those files"
        )


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
    if run_dir is not None and real_path(path).is_relative_to(real_path(run_dir)):
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

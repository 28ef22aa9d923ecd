"""A profile's book run committed to the repository, because CI cannot rerun it (the `gpu` book on
an H100): its layout, the importer that fills it from runs returned by a GPU machine, and what the
site and the introduction read of it.

The layout, `results/book_<profile>/` (`results/book_gpu/` for the `gpu` book):

    book_run.json            the runner's record (`runner._record_chapter`), merged chapter by
                             chapter over the runs that ran them: each entry its status, wall
                             time, date, commit, device and the results files it wrote, and the
                             notebook below; "imports" in its metrics lists the runs imported
    notebooks/NN_name.ipynb  each chapter's executed notebook as papermill wrote it (the running
                             machine's clone path made repo-relative)
    <results files>          what the chapters wrote into `results/<profile>/` (attention.json,
                             model.json, ...), at the top, as `results/book_cpu/` holds them
    README.md                written by hand, once there are results to describe

`python -m annotated_transformer book --import-run RUN --profile gpu` fills it. RUN is the folder
that `scripts/gpu/run.py --out RUN chapters NN ...` wrote on the GPU machine (or a tarball of it),
holding `_build/executed/<profile>/book/NN_*.ipynb` and `results/<profile>/` with `book_run.json`. Each
chapter the run's record says succeeded is taken whole (its notebook, the results files it wrote,
its record entry), so chapters run on different occasions accumulate; a chapter whose committed entry
is newer than the run's is refused and stays as it is; nothing is ever deleted. `results/<profile>/`
itself is left alone: it keeps the profile's other committed records (`results/gpu/` the recipe and
sweep runs). One function, `_checked_run`, decides what a run may hold before anything is written:
regular files and folders inside it only (a folder as strictly as a tarball), the record's chapters
and notebooks the book's own, results files with plain results names (`_results_name_problem`: never
a committed file no chapter wrote, such as the hand-written README.md); anything else refuses the
whole import in one line. What is taken is published together (`runtime.files.publication`), so an
interrupt leaves all of it or none.

What reads it: the site (`site.stage_site`) adds each committed profile's notebooks as a part of
its own, at `<profile>/NN_name` (`gpu/01_attention`), for every profile but the executing one;
the introduction's run table sets the committed run's times beside the executing run's
(`summary.book_run_table`); its reproduction summary reads a committed profile's results here
first, then in `results/<profile>/` (`summary.result_folders`); the runner's progress lines take a
chapter's expected time from here (`progress.expected_times`).
"""

from __future__ import annotations

import datetime as _dt
import os
import re
import stat
import tarfile
import zlib
from collections import Counter
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Callable

from ..evaluation import results
from ..runtime.files import (
    atomic_write_text,
    publication,
    scratch_folder,
    unpack_tarball,
)
from ..runtime.records import json_text, read_json, read_record, record_text
from .chapters import (
    Log,
    _print,
    _shown,
    book_root,
    digest_of_source,
    discover_chapters,
)

RECORD = "book_run"
# Profiles whose results are committed (CI cannot rerun them); the summary and the site show them
# beside the executing one.
COMMITTED_PROFILES = ("gpu", "paper")
NOTEBOOKS = "notebooks"
NOTEBOOK_GLOB = "[0-9][0-9]_*.ipynb"
# Files of a run's results folder that are not what a chapter wrote.
NOT_RESULTS = ("book_run.json", ".book.lock")
# A results file is attributed to the chapter that published it when its modification time lies
# this close to the chapter's end (`date` in its entry), for records without a "results" list.
_SLACK_S = 30.0


def folder_name(profile: str) -> str:
    """`book_gpu`: the results root's folder of `profile`'s committed book run."""
    results.check_name(profile, "profile")
    return f"book_{profile}"


def run_folder(profile: str, results_dir: str | os.PathLike | None = None) -> Path:
    """`<results root>/book_<profile>/` (the clone's `results/book_gpu/` by default)."""
    return results.results_root(results_dir) / folder_name(profile)


def read_run(profile: str, results_dir: str | os.PathLike | None = None) -> dict | None:
    """The committed record of `profile`'s book run, or None when there is none."""
    return results.read_result(RECORD, folder_name(profile), results_dir)


def chapter_totals(chapters: dict) -> tuple[dict, float]:
    """A book run record's {"chapters": entries in chapter order, "ok": whether all succeeded}
    and its wall time: the sum of its good chapters' times, whichever invocations or machines
    ran them (a run of one chapter does not make the book that chapter's time). The runner's
    record and an import's are totalled alike."""
    chapters = dict(sorted(chapters.items()))
    good = [e for e in chapters.values() if e.get("status") == "ok"]
    seconds = sum(float(e.get("wall_time_s") or 0) for e in good)
    return {"chapters": chapters, "ok": len(good) == len(chapters)}, round(seconds, 2)


def notebooks(profile: str, results_dir: str | os.PathLike | None = None) -> list[Path]:
    """The committed run's executed notebooks, in chapter order (none: an empty list)."""
    folder = run_folder(profile, results_dir) / NOTEBOOKS
    return sorted(folder.glob(NOTEBOOK_GLOB)) if folder.is_dir() else []


# ----------------------------------------------------------------------------------------------
# What a record says of its hardware and of one chapter


def entry_device(entry: dict, record: dict) -> tuple[str, str]:
    """(device type, hardware name) of a chapter's entry; entries written before the runner
    recorded them take the record's provenance (the device of its last chapter)."""
    prov = record.get("provenance") or {}
    kind = entry.get("device") or prov.get("device") or ""
    name = entry.get("device_name") or prov.get("device_name") or kind
    return str(kind), str(name)


def hardware(record: dict, chapters: list[str] | None = None) -> str:
    """The hardware of a book run ("NVIDIA H100 80GB HBM3"; two names joined by "and" when its
    chapters ran on different machines), over `chapters` (default: every entry)."""
    entries = record.get("metrics", {}).get("chapters", {})
    names = []
    for name, entry in entries.items():
        if chapters is None or name in chapters:
            device = entry_device(entry, record)[1]
            if device and device not in names:
                names.append(device)
    if not names:
        prov = record.get("provenance") or {}
        names = [prov.get("device_name") or prov.get("device") or "unknown hardware"]
    return " and ".join(names)


def _phrase(kind: str, name: str) -> str:
    """ "one GPU (NVIDIA H100 80GB HBM3)", "2 GPUs (NVIDIA A100)", or the CPU's name."""
    if kind != "cuda":
        return name
    many = re.fullmatch(r"(\d+) x (.+)", name)
    return f"{many[1]} GPUs ({many[2]})" if many else f"one GPU ({name})"


def part_caption(profile: str, record: dict | None, chapters: list[str]) -> str:
    """The site's caption of a committed run's part: "The book on one GPU (NVIDIA H100 80GB HBM3)"."""
    if record is None:
        return f"The book's {profile} run"
    entries = record.get("metrics", {}).get("chapters", {})
    phrases = []
    for name in chapters:
        if name in entries:
            phrase = _phrase(*entry_device(entries[name], record))
            if phrase not in phrases:
                phrases.append(phrase)
    return (
        "The book on " + " and ".join(phrases) if phrases else f"The book's {profile} run"
    )


def page_note(
    profile: str,
    chapter: str,
    record: dict | None,
    executing: str,
    same_source: bool | None = None,
) -> str:
    """The note at the top of a committed run's page: first, one line saying that the page is the
    executed notebook of the profile's run on its machine and how its text stands to this site's
    chapter of the same name (`same_source`: whether the run executed the chapter's source as it
    is now; None when that cannot be told); then where, when, at which commit and in how long the
    chapter ran."""
    entry = (record or {}).get("metrics", {}).get("chapters", {}).get(chapter)
    folder = f"results/{folder_name(profile)}/"
    machine = entry_device(entry, record)[1] if entry and record else ""
    text = {
        True: "whose text is this site's chapter of the same name",
        False: "whose text, an earlier version of the chapter, differs from this site's "
        "chapter of the same name",
        None: "whose text may differ from this site's chapter of the same name",
    }[same_source]
    first = (
        f"This page is the executed notebook of the `{profile}` profile's book run"
        + (f" on **{machine}**" if machine else "")
        + f", {text} ([its page in the `{executing}` run](../book/{chapter}.ipynb))."
    )
    if entry is None:
        ran = f"Its entry is missing from `{folder}book_run.json`."
    else:
        commit = (entry.get("git_commit") or "")[:7]
        dirty = results.uncommitted_changes(entry)
        ran = (
            f"It ran in **{entry.get('wall_time_s', 0):,.1f} s** on "
            f"{(entry.get('date') or '')[:10]}"
            + (f" at commit `{commit}`{dirty}" if commit else "")
            + f", by `python -m annotated_transformer book --profile {profile}`, and is "
            f"committed in `{folder}`."
        )
    return f":::{{note}}\n{first}\n\n{ran}\n:::"


# The heading of a chapter's last section: what its run found, read back from its results record.
CLOSING_HEADING = "## What this run shows"


def _chapter_package(chapter: str) -> str | None:
    """The package a chapter takes its results record and sentences from: its folder of
    `chapters/`, named as the chapter's file without its number (None for one with no record)."""
    import importlib.util

    package = f"{__package__.rsplit('.', 1)[0]}.chapters.{chapter.split('_', 1)[-1]}"
    return package if importlib.util.find_spec(f"{package}.record") else None


def closing_section(
    profile: str,
    chapter: str,
    results_dir: str | os.PathLike | None = None,
    root: str | os.PathLike | None = None,
) -> str | None:
    """The closing section of a committed run's chapter, as Markdown: `CLOSING_HEADING`, then what
    the chapter's `sentences.closing` says of the run's own results record (in
    `results/book_<profile>/`). None when the chapter names no such package or the run left no
    record of it."""
    import importlib

    package = _chapter_package(chapter)
    if package is None:
        return None
    record_module = importlib.import_module(f"{package}.record")
    sentences = importlib.import_module(f"{package}.sentences")
    found = record_module.read(folder_name(profile), results_dir)
    if found is None:
        return None
    return (
        f"{CLOSING_HEADING}\n\nWhat this run found, read back from its results record "
        f"(`results/{folder_name(profile)}/{record_module.RESULTS_NAME}.json`):\n\n"
        + sentences.closing(found)
    )


# ----------------------------------------------------------------------------------------------
# What an import reads and writes: the one check of a returned run, before anything is written

# What a chapter's results file may be called (relative to results/<profile>/): plain names in
# plain folders, of the kinds the chapters write.
RESULTS_SUFFIXES = (".json", ".jsonl", ".txt", ".csv", ".tsv")
_PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_FIX = (
    "import the folder that `scripts/gpu/run.py --out RUN chapters NN ...` wrote, or a tarball "
    "of it, as the runner wrote it"
)


def _folder_members(folder: Path) -> list[tuple[str, str]]:
    """(name relative to `folder`, kind) of everything in it, links not followed: kind "file",
    "folder", or what else the entry is."""
    found = []

    def refuse(error: OSError) -> None:
        raise error

    for parent, subfolders, files in os.walk(folder, onerror=refuse):
        for name in subfolders + files:
            path = Path(parent, name)
            mode = path.lstat().st_mode
            if stat.S_ISREG(mode):
                kind = "file"
            elif stat.S_ISDIR(mode):
                kind = "folder"
            elif stat.S_ISLNK(mode):
                kind = f"symbolic link to {os.readlink(path)!r}"
            else:
                kind = "device, pipe or socket"
            found.append((path.relative_to(folder).as_posix(), kind))
    return found


def _tar_members(tar: tarfile.TarFile) -> list[tuple[str, str]]:
    """(name, kind) of a tarball's members, as `_folder_members` names a folder's entries."""
    found = []
    for member in tar.getmembers():
        if member.isfile():
            kind = "file"
        elif member.isdir():
            kind = "folder"
        elif member.issym() or member.islnk():
            link = "symbolic" if member.issym() else "hard"
            kind = f"{link} link to {member.linkname!r}"
        else:
            kind = "device, pipe or socket"
        found.append((member.name, kind))
    return found


def _member_problem(
    name: str, kind: str, files: Counter, notebooks: PurePosixPath, book: set[str]
) -> str | None:
    """Why an entry of a returned run may not be unpacked or read, or None. `files`: how often
    each file name occurs in the run; `notebooks`: the folder of its executed chapters."""
    rel = PurePosixPath(name)
    if name.startswith("/"):
        return "an absolute path"
    if ".." in rel.parts:
        return "a path that climbs out of the run ('..')"
    if kind not in ("file", "folder"):
        return f"a {kind}, not a regular file or folder"
    if kind == "file" and not rel.parts:
        return "a file without a name"
    if any(parent in files for parent in rel.parents):
        return "inside a file of the run"
    if kind == "folder" and rel in files:
        return "both a file and a folder of the run"
    if kind == "file" and files[rel] > 1:
        return "in the run twice"
    if (
        kind == "file"
        and rel.parent == notebooks
        and (rel.suffix != ".ipynb" or rel.stem not in book)
    ):
        return f"not the notebook of a chapter of the book ({', '.join(sorted(book))})"
    return None


def _results_name_problem(name: str, target: Path, owned: set[str]) -> str | None:
    """Why `name` may not be a chapter's results file taken into `target` (`owned`: the files
    the committed record says its chapters wrote), or None: the one rule of what an import may
    write besides the notebooks and the record."""
    rel = PurePosixPath(name)
    if (
        not rel.parts
        or rel.as_posix() != name
        or not all(_PLAIN_NAME.fullmatch(part) for part in rel.parts)
    ):
        return "not a plain relative name (letters, digits, '_', '-' and '.', in folders)"
    if rel.parts[0] == NOTEBOOKS or name in NOT_RESULTS:
        return "a file of the layout, not a results file"
    if rel.suffix not in RESULTS_SUFFIXES:
        return "not a results file (" + ", ".join(f"*{s}" for s in RESULTS_SUFFIXES) + ")"
    dest = target / rel
    folders = [target / p for p in reversed(rel.parents[:-1])]
    if any(path.is_symlink() for path in [*folders, dest]):
        return f"a link of {_shown(target)}, or below one"
    if any(path.exists() and not path.is_dir() for path in folders):
        return f"below {rel.parent} of {_shown(target)}, which is not a folder"
    if dest.exists() and not dest.is_file():
        return f"a folder of {_shown(target)}"
    if dest.exists() and name not in owned:
        return f"a file of {_shown(target)} that no chapter wrote (written by hand)"
    return None


def _owned(committed: dict | None) -> set[str]:
    """The results files the committed record says its chapters wrote."""
    entries = ((committed or {}).get("metrics") or {}).get("chapters") or {}
    return {name for entry in entries.values() for name in entry.get("results") or []}


def _checked_run(
    source: Path, profile: str, target: Path, committed: dict | None, stack: ExitStack
) -> tuple[Path, dict]:
    """The returned run in `source` (a folder, or a tarball unpacked to a temporary folder) and
    its record, once the whole of it is what an import may take: every entry a regular file or
    folder inside it (no link, device, absolute path or '..'; a tarball unpacked with tarfile's
    "data" filter besides), the record at results/<profile>/book_run.json, every notebook and
    every chapter the record names one of the book's chapters (book/NN_name.py), every results
    file it lists a plain results name (`_results_name_problem`). Anything else refuses the
    whole import in one line (ValueError) before anything is written."""

    def refuse(why: str) -> ValueError:
        return ValueError(f"{_shown(source)}: {why}; nothing imported ({_FIX})")

    if not source.exists():
        raise FileNotFoundError(f"{source}: no such tarball or folder ({_FIX})")
    tar = None
    try:
        if source.is_dir():
            members = _folder_members(source)
        elif source.is_file() and tarfile.is_tarfile(source):
            tar = stack.enter_context(tarfile.open(source))
            members = _tar_members(tar)
        else:
            raise ValueError(
                f"{source} is neither a folder nor a tarball of a book run "
                "(scripts/gpu/run.py --out RUN chapters NN ... writes one)"
            )
    except (tarfile.TarError, EOFError, zlib.error) as error:
        raise refuse(f"not a whole tarball ({error})") from None
    book = {path.stem for path in discover_chapters()}
    notebooks = PurePosixPath("_build", "executed", profile, "book")
    files = Counter(PurePosixPath(name) for name, kind in members if kind == "file")
    for name, kind in members:
        why = _member_problem(name, kind, files, notebooks, book)
        if why:
            raise refuse(f"{name!r} is {why}")
    base = source
    if tar is not None:
        base = stack.enter_context(scratch_folder("book-run-"))
        try:
            unpack_tarball(tar, base)
        except (tarfile.TarError, EOFError, zlib.error) as error:
            member = getattr(error, "tarinfo", None)  # refused by the filter
            if member is not None:
                raise refuse(f"{member.name!r} is refused ({error})") from None
            raise refuse(f"not a whole tarball ({error})") from None
    incoming = _read_incoming_run(base, source, profile)
    owned = _owned(committed)
    for chapter, entry in incoming["metrics"]["chapters"].items():
        if chapter not in book:
            raise refuse(
                f"its record names a chapter {chapter!r} that is not one of the book's "
                f"(book/NN_name.py: {', '.join(sorted(book))})"
            )
        for name in entry.get("results") or []:
            why = _results_name_problem(name, target, owned)
            if why:
                raise refuse(
                    f"{chapter}: its record names a results file {name!r}, {why}"
                )
    return base, incoming


# ----------------------------------------------------------------------------------------------
# Importing a returned run


@dataclass
class ImportReport:
    """What `import_run` did, chapter by chapter, and the files it wrote."""

    target: Path
    imported: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # "NN_name: why"
    skipped: list[str] = field(default_factory=list)  # "NN_name: why" (not a good run)
    written: list[Path] = field(default_factory=list)
    unattributed: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.refused


def _date(text: str | None) -> _dt.datetime:
    try:
        date = _dt.datetime.fromisoformat(text or "")
    except ValueError:
        return _dt.datetime.min.replace(tzinfo=_dt.timezone.utc)
    return date if date.tzinfo else date.replace(tzinfo=_dt.timezone.utc)


def _machine_root(entries: dict) -> str | None:
    """The running machine's clone, read off an entry's absolute notebook path
    (`<clone>/_build/executed/...`), so that its pages name repo-relative paths."""
    for entry in entries.values():
        path = str(entry.get("notebook") or "")
        if path.startswith("/") and "/_build/" in path:
            return path.split("/_build/", 1)[0]
    return None


def _scrubbed(text: str, clone: str | None) -> str:
    return text.replace(clone.rstrip("/") + "/", "") if clone else text


def _scrubbed_copy(src: Path, scratch: Path, clone: str | None) -> Path:
    """A text results file with the machine's clone path made repo-relative (in `scratch`), or
    `src` itself when it is binary or names no such path."""
    try:
        text = src.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return src
    scrubbed = _scrubbed(text, clone)
    return src if scrubbed == text else atomic_write_text(scratch, scrubbed)


def _notebook_text(path: Path, chapter: str, dest: str, clone: str | None) -> str:
    """The executed notebook as committed: papermill's input and output paths name the chapter's
    source and the committed copy (not the whole source notebook and the machine's staging path),
    and the machine's clone path is made repo-relative."""
    import nbformat

    nb = nbformat.read(str(path), as_version=4)
    paper = nb.metadata.get("papermill")
    if isinstance(paper, dict):
        paper["input_path"] = f"book/{chapter}.py"
        paper["output_path"] = dest
    return _scrubbed(nbformat.writes(nb), clone)


def _results_of(
    entries: dict,
    chosen: list[str],
    source_results: Path,
    baseline: Path,
    takeable: Callable[[str], bool],
) -> tuple[dict[str, list[str]], list[str]]:
    """{chapter: results files it wrote} for the `chosen` chapters, and the files of the run's
    results folder that no chapter of its record can be said to have written. An entry's own
    "results" list (the runner records it; `_checked_run` checked its names) is taken as it is;
    for older entries a `takeable` file that differs from the results root's own copy is given to
    the chapter that ended nearest its modification time (a chapter not chosen keeps its files
    out of the import)."""
    listed = {
        chapter: list(entry["results"])
        for chapter, entry in entries.items()
        if isinstance(entry.get("results"), list)
    }
    files = {c: list(listed.get(c, [])) for c in chosen}
    guessed = [c for c in entries if c not in listed and entries[c].get("date")]
    unattributed: list[str] = []
    if not any(c in guessed for c in chosen) or not source_results.is_dir():
        return files, unattributed
    claimed = {f for names in listed.values() for f in names}
    for path in sorted(p for p in source_results.rglob("*") if p.is_file()):
        rel = path.relative_to(source_results).as_posix()
        if rel in claimed or not takeable(rel):
            continue
        mine = baseline / rel
        if mine.is_file() and mine.read_bytes() == path.read_bytes():
            continue  # the results root's own file, as the running machine had it
        mtime = path.stat().st_mtime
        best = None
        for chapter in guessed:
            end = _date(entries[chapter].get("date")).timestamp()
            start = end - float(entries[chapter].get("wall_time_s") or 0)
            if start - _SLACK_S <= mtime <= end + _SLACK_S:
                if best is None or abs(mtime - end) < best[0]:
                    best = (abs(mtime - end), chapter)
        if best is None:
            unattributed.append(rel)
        elif best[1] in files:
            files[best[1]].append(rel)
    return files, unattributed


def _sent_commit(commit: str) -> str:
    """The full hash of `commit` in this clone (ValueError, in one line, when it names none)."""
    import subprocess

    try:
        return subprocess.run(
            ["git", "rev-parse", "--verify", f"{commit}^{{commit}}"],
            cwd=book_root(),
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        raise ValueError(
            f"--commit {commit}: no such commit in this clone; give the commit whose tree the "
            "GPU machine ran"
        ) from None


def _source_at(commit: str, chapter: str) -> str | None:
    """The digest the runner records (`source_sha256`) of book/<chapter>.py at `commit`."""
    import subprocess

    shown = subprocess.run(
        ["git", "show", f"{commit}:book/{chapter}.py"],
        cwd=book_root(),
        capture_output=True,
    )
    if shown.returncode != 0:
        return None
    return digest_of_source(shown.stdout)


def _with_commit(value, recorded: str | None, commit: str, note: str):
    """`value` (a record, or part of one) with every provenance naming `recorded` naming `commit`,
    clean, and the note saying why."""
    if isinstance(value, dict):
        value = {k: _with_commit(v, recorded, commit, note) for k, v in value.items()}
        if "git_commit" in value and value["git_commit"] == recorded:
            value.update(git_commit=commit, git_dirty=False, git_note=note)
        return value
    if isinstance(value, list):
        return [_with_commit(v, recorded, commit, note) for v in value]
    return value


def _read_incoming_run(base: Path, source: Path, profile: str) -> dict:
    """The returned run's `book_run.json`, checked to be a book run of `profile`."""
    record_path = base / "results" / profile / "book_run.json"
    if not record_path.is_file():
        raise FileNotFoundError(
            f"{source} holds no results/{profile}/book_run.json: not a book run of the "
            f"{profile!r} profile (its tarball holds _build/executed/<profile>/ and "
            "results/<profile>/)"
        )
    incoming = read_record(
        record_path,
        "book_run",
        fix="give a tarball that `book` wrote (its results/<profile>/book_run.json)",
    )
    if incoming.get("profile") != profile or "metrics" not in incoming:
        raise ValueError(
            f"{record_path.relative_to(base)} is a record of profile "
            f"{incoming.get('profile')!r}, not {profile!r}: pass --profile {incoming.get('profile')}"
        )
    return incoming


def _verdict(
    chapter: str,
    entry: dict,
    notebook: Path,
    before: dict | None,
    profile: str,
    sent: str | None,
    source: Path,
) -> tuple[str, str]:
    """Whether a returned chapter is taken: ("take", ""), ("unchanged", ""), or ("skipped" or
    "refused", why). Skipped: not a good run of `profile`; refused: a good run that must not
    replace what is committed (an older one, or a source that is not the commit's)."""
    if entry.get("status") != "ok":
        why = f"{entry.get('status')} in this run; its committed entry, if any, stays"
        return "skipped", why
    if not notebook.is_file():
        return "skipped", f"its notebook is not in {_shown(source)}"
    meta = read_json(notebook).get("metadata", {})
    meta = meta.get("annotated_transformer") or {}
    if meta.get("profile") != profile or meta.get("status") != "ok":
        return "skipped", (
            f"its notebook is not a good run of {profile!r} "
            f"(profile {meta.get('profile')!r}, status {meta.get('status')!r})"
        )
    if sent and meta.get("source_sha256") != _source_at(sent, chapter):
        return (
            "refused",
            f"its source is not book/{chapter}.py of {sent[:7]} (--commit); not taken",
        )
    if before is not None:
        ours, theirs = _date(entry.get("date")), _date(before.get("date"))
        if theirs > ours:
            return "refused", (
                f"the committed entry ({before.get('date')}) is newer than this run's "
                f"({entry.get('date')}); kept"
            )
        if theirs == ours:  # the same run, whatever commit a correction wrote
            return "unchanged", ""
    return "take", ""


def _commit_correction(sent: str | None):
    """`corrected(value, entry)`: `value` (a record or an entry) naming `sent` clean, with a
    `git_note` keeping the commit the machine recorded in `entry`; `value` as it is without
    --commit or where the machine recorded `sent` itself."""

    def corrected(value, entry: dict):
        recorded = entry.get("git_commit")
        if not sent or recorded == sent:
            return value
        note = (
            f"the GPU machine's git metadata was older than its tree and recorded "
            f"{(recorded or 'no commit')[:7]} with local edits; the tree it ran was "
            f"{sent[:7]} (its chapter sources match), set on import"
        )
        return _with_commit(value, recorded, sent, note)

    return corrected


def _log_report(report: ImportReport, log: Log) -> None:
    for chapter in report.imported:
        log(f"import: {chapter} taken into {_shown(report.target)}")
    for chapter in report.unchanged:
        log(f"import: {chapter} already there (same run), left as it is")
    for line in report.skipped:
        log(f"import: skipped {line}")
    for line in report.refused:
        log(f"import: refused {line}")
    for name in report.unattributed:
        log(
            f"import: {name} differs from the results root's copy but no chapter of the record "
            "wrote it; not taken"
        )


def import_run(
    source: str | os.PathLike,
    profile: str = "gpu",
    *,
    results_dir: str | os.PathLike | None = None,
    commit: str | None = None,
    log: Log = _print,
) -> ImportReport:
    """Copy a returned book run of `profile` into `<results root>/book_<profile>/`.

    `source` is a folder from `scripts/gpu/run.py chapters` (or a tarball of one) holding
    `_build/executed/<profile>/book/` and `results/<profile>/book_run.json`. Every chapter whose
    entry says "ok" and whose notebook is there is taken whole: notebook, results files and entry,
    published together. A chapter whose committed entry is newer is refused (kept as it is), one
    with the same date is left unchanged, one that failed or was interrupted is skipped. Nothing in
    the folder is deleted, and `results/<profile>/` is not touched.

    `commit`: the commit whose tree the machine ran, where its git metadata was older than the tree
    (a copy of the working tree with a stale `.git`, as some GPU hosts send it), so the run recorded
    a wrong commit "with local edits". Each chapter's notebook must record the digest of its source
    at `commit` (else the chapter is refused); its entry and results then name `commit`, clean,
    with a `git_note` that keeps the commit the machine recorded.
    """
    source = Path(source)
    sent = _sent_commit(commit) if commit else None
    corrected = _commit_correction(sent)
    target = run_folder(profile, results_dir)
    report = ImportReport(target)
    committed = read_run(profile, results_dir)
    with ExitStack() as stack:
        base, incoming = _checked_run(source, profile, target, committed, stack)
        executed = base / "_build" / "executed" / profile / "book"
        returned = base / "results" / profile
        entries = incoming["metrics"].get("chapters") or {}
        kept = dict((committed or {}).get("metrics", {}).get("chapters", {}))

        chosen = []
        for chapter, entry in sorted(entries.items()):
            notebook = executed / f"{chapter}.ipynb"
            verdict, why = _verdict(
                chapter, entry, notebook, kept.get(chapter), profile, sent, source
            )
            if verdict == "take":
                chosen.append(chapter)
            elif verdict == "unchanged":
                report.unchanged.append(chapter)
            else:
                getattr(report, verdict).append(f"{chapter}: {why}")

        baseline = results.results_root(results_dir) / profile
        owned = _owned(committed)
        files, report.unattributed = _results_of(
            entries,
            chosen,
            returned,
            baseline,
            lambda name: _results_name_problem(name, target, owned) is None,
        )
        for chapter in chosen:
            for name in files[chapter]:
                if not (returned / name).is_file():
                    raise FileNotFoundError(
                        f"{chapter}: its record names results file {name}, which the run "
                        "does not hold; nothing imported"
                    )
        clone = _machine_root(entries)
        prov = incoming.get("provenance") or {}
        now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        scratch = stack.enter_context(scratch_folder("book-import-"))
        with publication() as together:

            def stage(destination: Path, staged: Path) -> None:
                together.add(destination, staged)
                report.written.append(destination)

            for chapter in chosen:
                dest = f"results/{folder_name(profile)}/{NOTEBOOKS}/{chapter}.ipynb"
                text = _notebook_text(executed / f"{chapter}.ipynb", chapter, dest, clone)
                stage(
                    target / NOTEBOOKS / f"{chapter}.ipynb",
                    atomic_write_text(scratch / f"{chapter}.ipynb", text),
                )
                for name in files[chapter]:
                    staged = _scrubbed_copy(
                        returned / name, scratch / "results" / name, clone
                    )
                    if sent and name.endswith(".json"):
                        record = corrected(
                            read_json(staged, "result"),
                            entries[chapter],
                        )
                        staged = atomic_write_text(
                            scratch / "results" / name,
                            json_text(record, target / name, "result", indent=1) + "\n",
                        )
                    stage(target / name, staged)
                entry = corrected(dict(entries[chapter]), entries[chapter])
                kind, name = entry_device(entry, incoming)
                entry.update(
                    notebook=dest,
                    device=kind,
                    device_name=name,
                    git_dirty=entry.get("git_dirty", prov.get("git_dirty")),
                    results=files[chapter],
                    imported=now,
                )
                kept[chapter] = entry
                report.imported.append(chapter)
            if chosen:
                incoming = corrected(incoming, incoming.get("provenance") or {})
                record = _merged(committed, incoming, kept, chosen, source.name, now)
                text = record_text(record, "book_run", target / "book_run.json") + "\n"
                stage(
                    target / "book_run.json",
                    atomic_write_text(scratch / "book_run.json", text),
                )
    _log_report(report, log)
    return report


def _merged(
    committed: dict | None,
    incoming: dict,
    chapters: dict,
    chosen: list[str],
    source_name: str,
    now: str,
) -> dict:
    """The committed record with this run's chapters in it: the runner's format, its provenance
    that of the newest incoming, "wall_time_s" the sum of its good chapters' times, and "imports"
    listing each incoming taken."""
    old = committed or {}
    metrics = dict(old.get("metrics") or {})
    totals, wall_time_s = chapter_totals(chapters)
    prov_old, prov_new = old.get("provenance") or {}, incoming.get("provenance") or {}
    newer = _date(prov_new.get("date")) >= _date(prov_old.get("date"))
    metrics.update(
        totals,
        imports=[
            *(metrics.get("imports") or []),
            {
                "source": source_name,
                "imported": now,
                "chapters": chosen,
                "provenance": prov_new,
            },
        ],
    )
    if newer or "profile" not in metrics:
        metrics["profile"] = incoming["metrics"].get("profile")
    return {
        "schema": incoming.get("schema", results.SCHEMA_VERSION),
        "name": RECORD,
        "profile": incoming["profile"],
        "metrics": metrics,
        "config": None,
        "wall_time_s": wall_time_s,
        "run_folder": None,
        "provenance": prov_new if newer else prov_old,
    }

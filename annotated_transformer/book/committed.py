"""A profile's book run committed to the repository, because CI cannot rerun it (the `gpu` book on
an H100): its layout, the importer that fills it from runs returned by a GPU machine, and what the
site and the introduction read of it.

The layout, `results/book_<profile>/` (`results/book_gpu/` for the `gpu` book):

    book_run.json            the runner's record (`runner._record_chapter`), merged chapter by
                             chapter over the spells that ran them: each entry its status, wall
                             time, date, commit, device and the results files it wrote, and the
                             notebook below; "imports" in its metrics lists the spells imported
    notebooks/NN_name.ipynb  each chapter's executed notebook as papermill wrote it (the running
                             machine's clone path made repo-relative)
    <results files>          what the chapters wrote into `results/<profile>/` (attention.json,
                             model.json, ...), at the top, as `results/book_cpu/` holds them
    README.md                written by hand, once there are results to describe

`python -m annotated_transformer book --import-run RUN --profile gpu` fills it. RUN is what
`scripts/gpu/run_chapters.sh` returns, a tarball (or the folder it unpacks to) holding
`_build/executed/<profile>/book/NN_*.ipynb` and `results/<profile>/` with `book_run.json`. Each
chapter the run's record says succeeded is taken whole (its notebook, the results files it wrote,
its record entry), so chapters run in different spells accumulate; a chapter whose committed entry
is newer than the run's is refused and stays as it is; nothing is ever deleted. `results/<profile>/`
itself is left alone: it keeps the profile's other committed records (`results/gpu/` the recipe and
sweep runs).

What reads it: the site (`site.stage_site`) adds each committed profile's notebooks as a part of
its own, at `<profile>/NN_name` (`gpu/01_attention`), for every profile but the executing one;
the introduction's run table sets the committed run's times beside the executing run's
(`summary.book_run_table`); its reproduction summary reads a committed profile's results here
first, then in `results/<profile>/` (`summary.result_folders`); the runner's progress lines take a
chapter's expected time from here (`progress.expected_times`).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
import tarfile
import tempfile
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from ..evaluation import results
from ..runtime.files import atomic_write_text, publication
from ..runtime.records import read_record, record_text
from .chapters import Log, _print, _shown, book_root, digest_of_source

RECORD = "book_run"
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


def page_note(profile: str, chapter: str, record: dict | None, executing: str) -> str:
    """The line at the top of a committed run's page: where, when, at which commit and in how long
    the chapter ran, and a link to the same chapter as the site's executing profile ran it."""
    entry = (record or {}).get("metrics", {}).get("chapters", {}).get(chapter)
    folder = f"results/{folder_name(profile)}/"
    if entry is None:
        ran = f"its entry is missing from `{folder}book_run.json`"
    else:
        commit = (entry.get("git_commit") or "")[:7]
        dirty = results.uncommitted_changes(entry)
        ran = (
            f"executed on **{entry_device(entry, record)[1]}** in "
            f"**{entry.get('wall_time_s', 0):,.1f} s** on {(entry.get('date') or '')[:10]}"
            + (f" at commit `{commit}`{dirty}" if commit else "")
        )
    return (
        ":::{note}\n"
        f"This page is the `{profile}` run of the chapter: {ran}, by `python -m "
        f"annotated_transformer book --profile {profile}`, and committed in `{folder}`. "
        f"The same chapter as this site's `{executing}` run executed it: "
        f"[its page](../book/{chapter}.ipynb).\n"
        ":::"
    )


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


def _unpacked(source: Path, stack: ExitStack) -> Path:
    """The folder holding `_build/` and `results/`: `source`, or a tarball unpacked to a temporary
    folder (members outside it, links and devices refused: tarfile's "data" filter)."""
    if source.is_dir():
        return source
    if not tarfile.is_tarfile(source):
        raise ValueError(
            f"{source} is neither a folder nor a tarball of a book run "
            "(scripts/gpu/run_chapters.sh packs chapters_NN-NN.tgz)"
        )
    folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="book-run-")))
    with tarfile.open(source) as tar:
        if hasattr(tarfile, "data_filter"):
            tar.extractall(folder, filter="data")
        else:  # a Python before 3.10.12 / 3.11.4: plain files and folders inside it only
            tar.extractall(
                folder,
                members=[
                    m
                    for m in tar.getmembers()
                    if (m.isfile() or m.isdir())
                    and not m.name.startswith("/")
                    and ".." not in PurePosixPath(m.name).parts
                ],
            )
    return folder


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
    entries: dict, chosen: list[str], source_results: Path, baseline: Path
) -> tuple[dict[str, list[str]], list[str]]:
    """{chapter: results files it wrote} for the `chosen` chapters, and the files of the run's
    results folder that no chapter of its record can be said to have written. An entry's own
    "results" list (the runner records it) is taken as it is; for older entries a file that
    differs from the results root's own copy is given to the chapter that ended nearest its
    modification time (a chapter not chosen keeps its files out of the import)."""
    listed: dict[str, list[str]] = {}
    for chapter, entry in entries.items():
        if not isinstance(entry.get("results"), list):
            continue
        listed[chapter] = []
        for name in entry["results"]:
            rel = PurePosixPath(name)
            if (
                rel.is_absolute()
                or ".." in rel.parts
                or not rel.parts
                or rel.parts[0] == NOTEBOOKS
                or rel.as_posix() in NOT_RESULTS
            ):
                raise ValueError(
                    f"{chapter}: its record names a results file {name!r} that is not one of "
                    "its results (outside the folder, or the record or notebooks of the layout)"
                )
            listed[chapter].append(rel.as_posix())
    files = {c: list(listed.get(c, [])) for c in chosen}
    guessed = [c for c in entries if c not in listed and entries[c].get("date")]
    unattributed: list[str] = []
    if not any(c in guessed for c in chosen) or not source_results.is_dir():
        return files, unattributed
    claimed = {f for names in listed.values() for f in names}
    for path in sorted(p for p in source_results.rglob("*") if p.is_file()):
        rel = path.relative_to(source_results).as_posix()
        if path.name in NOT_RESULTS or rel in claimed or rel.split("/")[0] == NOTEBOOKS:
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


def _read_spell(base: Path, source: Path, profile: str) -> dict:
    """The returned run's `book_run.json`, checked to be a book run of `profile`."""
    record_path = base / "results" / profile / "book_run.json"
    if not record_path.is_file():
        raise FileNotFoundError(
            f"{source} holds no results/{profile}/book_run.json: not a book run of the "
            f"{profile!r} profile (its tarball holds _build/executed/<profile>/ and "
            "results/<profile>/)"
        )
    spell = read_record(
        record_path,
        "book_run",
        fix="give a tarball that `book` wrote (its results/<profile>/book_run.json)",
    )
    if spell.get("profile") != profile or "metrics" not in spell:
        raise ValueError(
            f"{record_path.relative_to(base)} is a record of profile "
            f"{spell.get('profile')!r}, not {profile!r}: pass --profile {spell.get('profile')}"
        )
    return spell


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
    meta = json.loads(notebook.read_text(encoding="utf-8")).get("metadata", {})
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

    `source` is a tarball from `scripts/gpu/run_chapters.sh` or a folder holding
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
    with ExitStack() as stack:
        base = _unpacked(source, stack)
        executed = base / "_build" / "executed" / profile / "book"
        returned = base / "results" / profile
        spell = _read_spell(base, source, profile)
        entries = spell["metrics"].get("chapters") or {}
        committed = read_run(profile, results_dir)
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
        files, report.unattributed = _results_of(entries, chosen, returned, baseline)
        clone = _machine_root(entries)
        prov = spell.get("provenance") or {}
        now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        scratch = Path(
            stack.enter_context(tempfile.TemporaryDirectory(prefix="book-import-"))
        )
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
                    if not (returned / name).is_file():
                        raise FileNotFoundError(
                            f"{chapter}: its record names results file {name}, which the run "
                            "does not hold"
                        )
                    staged = _scrubbed_copy(
                        returned / name, scratch / "results" / name, clone
                    )
                    if sent and name.endswith(".json"):
                        record = corrected(
                            json.loads(staged.read_text(encoding="utf-8")),
                            entries[chapter],
                        )
                        staged = atomic_write_text(
                            scratch / "results" / name,
                            json.dumps(record, indent=1) + "\n",
                        )
                    stage(target / name, staged)
                entry = corrected(dict(entries[chapter]), entries[chapter])
                kind, name = entry_device(entry, spell)
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
                spell = corrected(spell, spell.get("provenance") or {})
                record = _merged(committed, spell, kept, chosen, source.name, now)
                text = record_text(record, "book_run", target / "book_run.json") + "\n"
                stage(
                    target / "book_run.json",
                    atomic_write_text(scratch / "book_run.json", text),
                )
    _log_report(report, log)
    return report


def _merged(
    committed: dict | None,
    spell: dict,
    chapters: dict,
    chosen: list[str],
    source_name: str,
    now: str,
) -> dict:
    """The committed record with this run's chapters in it: the runner's format, its provenance
    that of the newest spell, "wall_time_s" the sum of its good chapters' times, and "imports"
    listing each spell taken."""
    old = committed or {}
    metrics = dict(old.get("metrics") or {})
    chapters = dict(sorted(chapters.items()))
    prov_old, prov_new = old.get("provenance") or {}, spell.get("provenance") or {}
    newer = _date(prov_new.get("date")) >= _date(prov_old.get("date"))
    metrics.update(
        chapters=chapters,
        ok=all(e.get("status") == "ok" for e in chapters.values()),
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
        metrics["profile"] = spell["metrics"].get("profile")
    return {
        "schema": spell.get("schema", results.SCHEMA_VERSION),
        "name": RECORD,
        "profile": spell["profile"],
        "metrics": metrics,
        "config": None,
        "wall_time_s": round(
            sum(
                float(e.get("wall_time_s") or 0)
                for e in chapters.values()
                if e.get("status") == "ok"
            ),
            2,
        ),
        "run_folder": None,
        "provenance": prov_new if newer else prov_old,
    }

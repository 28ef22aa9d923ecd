"""The book runner: execute the chapters with papermill, then build the site from what ran.

    python -m annotated_transformer book --profile smoke|cpu|gpu|paper [--chapters 01 02 ...]
                                         [--no-build] [--output-dir DIR]

Chapters are `book/NN_name.py` (jupytext percent format, the source of truth). Each one is
executed with the profile injected into its `parameters` cell, by a kernel running this very
interpreter; the executed copies go to `<output-dir>/executed/<profile>/book/`, next to the
site's configuration, and Jupyter Book renders that folder into `<output-dir>/html`. A failing
cell fails the run and the error names the chapter and the cell. Wall times, status and
provenance go to `results/<profile>/book_run.json`.

A chapter is atomic: it runs into a staging folder (`<output-dir>/.staging/`: its notebook, and a
copy of `results/<profile>/` that its kernel reads and writes), and its executed notebook, its
results and its entry in the record are published together only when it succeeds. A failed or
interrupted chapter leaves the previous good notebook and results in place, keeps its own
notebook in `<output-dir>/failed/<profile>/` for reading, and is recorded as failed (with the
published run it left in place). Two runs on the same output or results refuse each other (a lock,
as run folders have), every output folder is checked before the first chapter, and `--param`
cannot change the profile a run is filed under. The output folder is the book's whole: a new or
empty one, or one the book filled (marked `.made-by`), and inside no folder another command made
(a run folder, a Table 3 or parser run), as the results root is not either; a folder of a
reader's (a Sphinx project, a `_build/` or `html/` site of their own) is refused, untouched.

The book's run folder (the model chapter 04 trains, which chapters 05 and 08 read) is owned by
the profile's book run and written only by its chapter 04 on success. It is `runs/book-<profile>`
in the clone for a run into the clone's results (`<root>/results`); any other run (a `--param`
run, a run with a `--results-dir` of its own) has `runs/book-<profile>` under its --output-dir,
so it never sets the profile's model aside. The runner passes it to the kernels as
$AT_BOOK_RUN_DIR. While chapter 04 runs, the published run waits beside the folder in
`<folder>.published`; when the chapter succeeds, it goes into the new run's `replaced/<time>/`
(nothing is deleted, as with `train --overwrite`); when it fails or is interrupted, the new run
goes to `<folder>.partial` (which the next chapter 04 resumes) and the published run comes back.
A run killed in between is put right by the next book run before its first chapter. Every move
is made holding the folder's training lock (`training.run_folder.LOCK_NAME`): a process training
into it refuses the book in one line, and nothing of it is moved.

What the other chapters derive from the run folder goes beside it, never into it: chapter 08's
ONNX exports (the live page's model, which the site build copies from there) go to
`<folder>-onnx/` (`live_page.exports_dir`: where `export-onnx` points an --out inside a run
folder). Chapter 05 trains nothing: finding no finished run of the profile in the folder, it
refuses in one line naming chapter 04 ("run chapter 04 first: ..."). A chapter run by hand (no
runner: `book.by_hand`) writes under `runs/by-hand/` and reads the reader's run of chapter 04 by
hand, else the book's.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import filecmp
import os
import shutil
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence
from unittest import mock

from ..evaluation import results
from ..profiles import get_profile
from ..runtime.collisions import check_outputs
from ..runtime.devices import resolve_device
from ..runtime.files import (
    atomic_write_text,
    check_can_write,
    check_replaceable_tree,
    copy_tree,
    ensure_folder,
    new_folder,
    point_link,
    publication,
    remove_empty_folder,
    remove_file,
    remove_folder,
    rename,
)
from ..runtime.locks import folder_lock
from ..runtime.ownership import (
    CLAIM_MARKER,
    check_output,
    check_own_folder,
    mark_made_by,
    relative_to_clone,
)
from ..training.run_folder import ASIDE_DIR
from ..training.run_folder import LOCK_NAME as RUN_LOCK_NAME
from ..web import live_page
from .chapters import (
    CHAPTER_GLOB,
    KERNEL_NAME,
    Log,
    _first_line,
    _print,
    _shown,
    _source_digest,
    book_root,
    discover_chapters,
    load_chapter,
    parameters_cell_index,
    select_chapters,
)
from .committed import RECORD, chapter_totals
from .parameters import check_chapter_parameters
from .site import (
    SITE_LISTING,
    SiteBuild,
    build_site,
    check_reader_files,
    stage_site,
)

# Chapters that summarise the others' results run last, so their tables show this run.
SUMMARY_CHAPTERS = ("00_introduction",)
# Parameters the runner sets from its own options: a --param may not set them.
RUNNER_PARAMETERS = {"profile_name": "--profile", "device": "--device"}
LOCK_NAME = ".book.lock"
# The chapters that train the book's run folder: the published run is set beside it while they run.
TRAINING_CHAPTERS = ("04_training",)
PUBLISHED_SUFFIX = ".published"  # the published run, while a training chapter runs
PARTIAL_SUFFIX = ".partial"  # a training chapter's run that failed or was interrupted

# ----------------------------------------------------------------------------------------------
# Executing chapters


@dataclass
class ChapterRun:
    """What happened to one chapter: status "ok" or "failed", wall time, and the error if any."""

    chapter: str
    source: Path
    notebook: Path
    status: str
    wall_time_s: float
    error: str | None = None
    cell_index: int | None = None
    # The files of results/<profile>/ it wrote (relative to that folder), once it is published.
    results: list[str] | None = None
    # The parameters it was given: profile_name, device and the --param ones its cell has.
    parameters: dict | None = None

    def to_dict(self) -> dict:
        entry = {
            "status": self.status,
            "wall_time_s": round(self.wall_time_s, 2),
            "error": self.error,
            "cell_index": self.cell_index,
            # a committed record names no folder of the machine's (a clone under /tmp ran
            # the published `cpu` book)
            "notebook": relative_to_clone(self.notebook),
            "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        }
        if self.parameters is not None:
            entry["parameters"] = self.parameters
        if self.results is not None:
            entry["results"] = self.results
        return entry


def register_kernel(jupyter_dir: str | os.PathLike) -> str:
    """Write a kernelspec named `python3` that runs *this* interpreter, under `jupyter_dir`
    (ipykernel's own spec, as `ipykernel install` writes it).

    Put on JUPYTER_PATH, it shadows any other `python3` kernel, so chapters run in the same
    environment (venv, Colab runtime) as the runner and import the same package.
    """
    from ipykernel.kernelspec import write_kernel_spec

    spec_dir = Path(jupyter_dir) / "kernels" / KERNEL_NAME
    remove_folder(spec_dir)  # an earlier run's
    ensure_folder(spec_dir.parent)
    # --log-level: ipykernel's start-up warnings (TCP without encryption) are noise here.
    write_kernel_spec(
        spec_dir,
        overrides={"metadata": {"debugger": False}},
        extra_arguments=["--log-level=ERROR"],
    )
    return KERNEL_NAME


@contextlib.contextmanager
def book_environment(
    root: Path,
    profile: str,
    jupyter_dir: Path,
    results_dir: Path,
    run_dir: Path | None = None,
):
    """Environment of the chapter kernels, restored afterwards.

    AT_BOOK_BUILD=1 switches `viz.show` to offline HTML; PYTHONPATH makes the kernel import this
    clone's package; AT_RESULTS_DIR sends results where the runner reads them; AT_BOOK_RUN_DIR
    names the book's run folder (`book_run_folder`).
    """

    def prepend(var: str, value: str) -> str:
        old = os.environ.get(var)
        return value if not old else value + os.pathsep + old

    changes = {
        "AT_BOOK_BUILD": "1",
        "AT_PROFILE": profile,
        "AT_RESULTS_DIR": str(results_dir),
        # a runner started from a chapter run by hand: its chapters are the book's, not by hand
        results.BY_HAND_ENV: "0",
        "PYTHONPATH": prepend("PYTHONPATH", str(root)),
        "JUPYTER_PATH": prepend("JUPYTER_PATH", str(jupyter_dir)),
        # ipykernel's debugger otherwise warns about frozen modules on every start.
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
    }
    if run_dir is not None:
        changes[results.BOOK_RUN_ENV] = str(run_dir)
    with mock.patch.dict(os.environ, changes):
        yield


def execute_chapter(
    source: str | os.PathLike,
    output_path: str | os.PathLike,
    *,
    profile: str,
    device: str = "auto",
    parameters: dict | None = None,
    cwd: str | os.PathLike | None = None,
    kernel_name: str = KERNEL_NAME,
    progress=None,
) -> ChapterRun:
    """Run one chapter under papermill and save the executed notebook (also when it fails).

    Call inside `book_environment` (as `run_book` does) so the kernel is this interpreter.
    The chapter's parameters `profile_name` (this `profile`), `device` and `parameters` are
    injected after its `parameters` cell. Never raises for a failing cell: the returned ChapterRun says
    "failed" and its `error` names the chapter, the cell index (in the chapter's own cells,
    markdown included) and the cell's first line. A KeyboardInterrupt propagates.
    `progress`: a `progress.ChapterProgress` told which cell starts.
    """
    import nbformat
    import papermill as pm
    from papermill.exceptions import PapermillExecutionError

    source = Path(source)
    output_path = Path(output_path)
    ensure_folder(output_path.parent)
    name = source.stem
    nb = load_chapter(source)
    try:
        params_index = parameters_cell_index(nb)
    except ValueError as exc:
        return ChapterRun(
            name,
            source,
            output_path,
            "failed",
            0.0,
            f"chapter {name} cannot take a profile: {exc}",
        )
    nb.metadata["annotated_transformer"] = {
        "profile": profile,
        "source": f"book/{source.name}",
        "source_sha256": _source_digest(source),
    }
    params = {"profile_name": profile, "device": device, **(parameters or {})}

    start = time.perf_counter()
    status, error, cell_index = "ok", None, None
    from .engine import ENGINE_NAME

    try:
        pm.execute_notebook(
            nb,
            str(output_path),
            parameters=params,
            kernel_name=kernel_name,
            language="python",
            cwd=str(cwd or source.parent),
            progress_bar=False,
            log_output=False,
            engine_name=ENGINE_NAME,
            progress=progress,
        )
    except PapermillExecutionError as exc:
        status = "failed"
        # papermill counts its injected cell (placed right after the parameters cell).
        cell_index = (
            exc.cell_index - 1 if exc.cell_index > params_index + 1 else exc.cell_index
        )
        error = (
            f"chapter {name} failed in cell {cell_index} (first line: {_first_line(exc.source)!r}): "
            f"{exc.ename}: {exc.evalue}; the executed notebook with the traceback is {output_path}"
        )
    except Exception as exc:  # a dead kernel, a missing kernelspec, a bad parameter
        status = "failed"
        error = f"chapter {name} could not be executed: {type(exc).__name__}: {exc}"
    wall = time.perf_counter() - start

    if output_path.is_file():  # record the outcome in the executed copy, for staging
        executed = nbformat.read(str(output_path), as_version=4)
        executed.metadata.setdefault("annotated_transformer", {}).update(
            {"status": status, "wall_time_s": round(wall, 2)}
        )
        atomic_write_text(output_path, nbformat.writes(executed))
    return ChapterRun(
        name, source, output_path, status, wall, error, cell_index, parameters=params
    )


@dataclass
class BookRun:
    """Outcome of `run_book`: per-chapter runs, where things were written, and the site build."""

    profile: str
    chapters: list[ChapterRun]
    executed_dir: Path
    record: Path
    site: "SiteBuild | None" = None
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(c.status == "ok" for c in self.chapters) and (
            self.site is None or self.site.ok
        )


def _execution_order(chapters: Sequence[Path]) -> list[Path]:
    return sorted(chapters, key=lambda c: (c.stem in SUMMARY_CHAPTERS, c.stem))


def _record_chapter(
    profile: str,
    run: ChapterRun,
    device: str,
    results_dir: Path,
) -> Path:
    """Write this chapter's entry into results/<profile>/book_run.json (others keep theirs).

    The record's wall time and "ok" are `committed.chapter_totals`, as an import counts them.

    A chapter that did not succeed keeps, under "published", the good run whose notebook and
    results are still in place (none when it never succeeded). Each entry names its commit and
    hardware, so that entries of runs on different machines can be merged into one record
    (`committed.import_run`)."""
    old = results.read_result(RECORD, profile, results_dir)
    chapters = dict((old or {}).get("metrics", {}).get("chapters", {}))
    prov = results.provenance(device)
    entry = {
        **run.to_dict(),
        **{
            k: prov.get(k)
            for k in (
                "git_commit",
                "git_dirty",
                "git_changed_files",
                "git_changed_count",
                "device",
                "device_name",
            )
        },
    }
    if run.status != "ok":
        before = chapters.get(run.chapter) or {}
        entry["published"] = (
            before if before.get("status") == "ok" else before.get("published")
        )
    chapters[run.chapter] = entry
    metrics, wall_time_s = chapter_totals(chapters)
    return results.write_result(
        RECORD,
        metrics | {"profile": get_profile(profile).to_dict()},
        profile=profile,
        device=device,
        wall_time_s=wall_time_s,
        root=results_dir,
    )


# ----------------------------------------------------------------------------------------------
# Checks before the first chapter, the lock, and a chapter's staging and publication


def check_parameters(
    parameters: dict | None, output_dir, results_dir, root: Path
) -> None:
    """Refuse a --param that would file a run under a profile it is not: the runner's own
    parameters, and any other one without an output and results folder of the run's own."""
    parameters = parameters or {}
    for name, flag in RUNNER_PARAMETERS.items():
        if name in parameters:
            raise ValueError(
                f"--param {name}=...: the runner sets {name} from {flag}, so that a run is filed "
                f"under the profile it ran; pass {flag} instead"
            )
    if not parameters:
        return
    own_results = results_dir is not None or os.environ.get(results.RESULTS_ENV)
    defaults = {Path(root / "_build").resolve(), Path(root / "results").resolve()}
    given = [Path(p).resolve() for p in (output_dir, results_dir) if p is not None]
    if output_dir is None or not own_results or any(p in defaults for p in given):
        names = ", ".join(f"{k}={v!r}" for k, v in parameters.items())
        raise ValueError(
            f"--param {names} changes what the chapters compute, so the run is not the "
            "profile's: give it an --output-dir and a --results-dir of its own (not _build/ and "
            "results/), or leave out --param"
        )


def check_writable_folder(folder: Path, what: str) -> None:
    """Create `folder` if needed and write a file in it, so a folder that cannot take the
    outputs is named before the first chapter runs, not after it."""
    try:
        check_can_write(folder)
    except OSError as error:
        raise OSError(
            error.errno,
            f"{what} {folder} cannot be written ({error.strerror or error}): fix its "
            "permissions, free space, or pass another folder",
        ) from None


@contextlib.contextmanager
def book_lock(*folders: Path):
    """Hold each folder for this run; another run on the same output or results is refused."""
    with contextlib.ExitStack() as stack:
        for folder in folders:
            busy = (
                f"another book run is writing into {folder} (it holds {folder / LOCK_NAME}): "
                "wait for it to finish, or pass another --output-dir / --results-dir"
            )
            stack.enter_context(folder_lock(folder / LOCK_NAME, busy))
        yield


@contextlib.contextmanager
def deferred_interrupts():
    """Hold a Ctrl-C until the block (a chapter's publication: a few renames) is done, so a
    chapter is published whole or not at all."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught = []
    previous = signal.signal(signal.SIGINT, lambda *a: caught.append(a))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught:
        raise KeyboardInterrupt


def stage_results(results_dir: Path, profile: str, staging: Path) -> Path:
    """A results root for one chapter's kernel: a copy of `results_dir/<profile>/` (what the
    chapter writes is published only when it succeeds) and links to everything else there."""
    staged = staging / "results"
    new_folder(staged)
    if results_dir.is_dir():
        for entry in results_dir.iterdir():
            if entry.name != profile and not entry.name.startswith("."):
                point_link(staged / entry.name, entry.resolve())
    if (results_dir / profile).is_dir():
        copy_tree(
            results_dir / profile,
            staged / profile,
            symlinks=True,
            ignore=shutil.ignore_patterns(LOCK_NAME),
        )
    return staged


def changed_results(
    staged: Path, results_dir: Path, profile: str
) -> list[tuple[Path, Path]]:
    """(destination, staged file) for each file a chapter wrote or changed in its staged copy of
    `results_dir/<profile>/` (the record included, when the runner wrote this chapter's entry)."""
    source, target = staged / profile, results_dir / profile
    if not source.is_dir():
        return []
    changed = []
    for path in sorted(source.rglob("*")):
        if not path.is_file() or path.name == LOCK_NAME:
            continue
        dest = target / path.relative_to(source)
        if not (dest.is_file() and filecmp.cmp(path, dest, shallow=False)):
            changed.append((dest, path))
    return changed


# ----------------------------------------------------------------------------------------------
# The book's run folder


def book_run_folder(
    root: Path, profile: str, output_dir: Path, results_dir: Path
) -> Path:
    """The run folder this book run's chapter 04 trains and chapters 05 and 08 read: the clone's
    `runs/book-<profile>` for a run into the clone's own results, else one under --output-dir
    (a `--param` run always has results of its own, so never the profile's folder)."""
    if Path(results_dir).resolve() == (root / "results").resolve():
        return root / "runs" / f"book-{profile}"
    return Path(output_dir) / "runs" / f"book-{profile}"


def _beside(run_dir: Path, suffix: str) -> Path:
    return run_dir.with_name(run_dir.name + suffix)


@contextlib.contextmanager
def run_folder_lock(run_dir: Path):
    """Hold the run folder's training lock (the one `train` takes) while runs are moved."""
    ensure_folder(run_dir)
    busy = (
        f"another process is training into {run_dir} (it holds {run_dir / RUN_LOCK_NAME}): "
        "wait for it to finish; the book moves nothing of it"
    )
    with folder_lock(run_dir / RUN_LOCK_NAME, busy):
        yield


def _holds_anything(folder: Path) -> bool:
    return folder.is_dir() and any(p.name != RUN_LOCK_NAME for p in folder.iterdir())


def _move_folder(source: Path, target: Path) -> None:
    """Rename `source` to `target` (absent), dropping `source`'s empty lock file on the way."""
    remove_file(source / RUN_LOCK_NAME)
    rename(source, target)


def restore_published_run(run_dir: Path, log: Log = _print) -> None:
    """Put right what a training chapter killed mid-way left (a `.published` run beside the
    folder): the folder's run goes to `.partial`, the published one comes back. Holding the lock."""
    published = _beside(run_dir, PUBLISHED_SUFFIX)
    if not published.is_dir():
        return
    with run_folder_lock(run_dir):
        _return_published(run_dir)
    log(
        f"book: {_shown(run_dir)} holds its published run again (a training chapter was "
        f"killed while it stood aside); the unfinished run is in {_shown(_beside(run_dir, PARTIAL_SUFFIX))}"
    )


def _return_published(run_dir: Path) -> None:
    published = _beside(run_dir, PUBLISHED_SUFFIX)
    partial = _beside(run_dir, PARTIAL_SUFFIX)
    if _holds_anything(run_dir):
        if partial.exists():  # an older unfinished run: kept inside the newer one
            partial_aside = run_dir / ASIDE_DIR / f"partial-{_stamp()}"
            ensure_folder(partial_aside.parent)
            _move_folder(partial, partial_aside)
        rename(run_dir, partial)
    else:
        remove_folder(run_dir)  # only its lock file
    if published.is_dir():
        rename(published, run_dir)


def _stamp() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")


def set_published_run_aside(run_dir: Path) -> None:
    """Before a training chapter: the published run to `.published`, and an unfinished run of
    an earlier try (`.partial`) into the folder, for the chapter to resume. Holding the lock."""
    published = _beside(run_dir, PUBLISHED_SUFFIX)
    partial = _beside(run_dir, PARTIAL_SUFFIX)
    with run_folder_lock(run_dir):
        if _holds_anything(run_dir):
            remove_file(run_dir / RUN_LOCK_NAME)
            rename(run_dir, published)
        if partial.is_dir():
            remove_folder(run_dir)  # at most an empty lock file
            rename(partial, run_dir)


def keep_trained_run(run_dir: Path) -> None:
    """After a training chapter succeeded: the run it trained is the published one; the one
    before goes into its `replaced/<time>/` (with what that one had set aside)."""
    published = _beside(run_dir, PUBLISHED_SUFFIX)
    if not published.is_dir():
        return
    aside = run_dir / ASIDE_DIR
    ensure_folder(aside)
    older = published / ASIDE_DIR
    if older.is_dir():
        for entry in sorted(older.iterdir()):
            if not (aside / entry.name).exists():
                rename(entry, aside / entry.name)
        remove_empty_folder(older)
    _move_folder(published, aside / _stamp())


def return_published_run(run_dir: Path) -> None:
    """After a training chapter failed or was interrupted: its run to `.partial`, the published
    run back into the folder."""
    with run_folder_lock(run_dir):
        _return_published(run_dir)


def run_book(
    profile: str = "cpu",
    *,
    chapters: Iterable[str] | None = None,
    output_dir: str | os.PathLike | None = None,
    device: str = "auto",
    parameters: dict | None = None,
    build: bool = True,
    root: str | os.PathLike | None = None,
    results_dir: str | os.PathLike | None = None,
    log: Log = _print,
    progress_every_s: float = 60.0,
) -> BookRun:
    """Execute the chapters under `profile`, record them, and (if all ran) build the site.

    Args:
        profile: "smoke", "cpu", "gpu" or "paper" (see `annotated_transformer.profiles`).
        chapters: which chapters ("01", "02_model"); None runs all of them.
        output_dir: where executed notebooks and the site go (default `<root>/_build`).
        device: injected as the chapters' `device` parameter ("auto", "cpu", "cuda").
        parameters: further parameters to inject, e.g. {"max_steps": 50}; they need an
            `output_dir` and `results_dir` of their own (`check_parameters`).
        build: build the HTML site after executing.
        root: the book's root (default: this clone).
        results_dir: results root (default: $AT_RESULTS_DIR, else `<root>/results`).
        log: where progress lines go.
        progress_every_s: seconds between the lines that say where a running chapter is.

    A Ctrl-C stops the run after recording the chapter it interrupted; it propagates.
    """
    from .progress import ChapterProgress, expected_times, minutes

    get_profile(profile)  # unknown profiles fail before any work
    root = book_root(root)
    all_chapters = discover_chapters(root)
    selected = _execution_order(select_chapters(all_chapters, chapters))
    if not selected:
        raise FileNotFoundError(
            f"no chapters found under {root / 'book'} (expected {CHAPTER_GLOB})"
        )
    # Each --param is a parameter of a selected chapter, of its default's type; a chapter is
    # given only the ones its parameters cell has.
    takes = check_chapter_parameters(parameters, selected)
    check_parameters(parameters, output_dir, results_dir, root)
    output_dir = Path(output_dir) if output_dir else root / "_build"
    results_dir = _results_root(results_dir, root)
    executed_dir = output_dir / "executed" / profile
    html_dir = output_dir / "html"
    run_dir = book_run_folder(root, profile, output_dir, results_dir)
    _check_outputs(
        profile, selected, output_dir, results_dir, executed_dir, html_dir, build
    )
    mark_made_by(output_dir, "book")
    resolved_device = resolve_device(device)
    expected, expected_from = expected_times(
        profile, results_dir, results.committed_root()
    )

    log(
        f"book: profile {profile}, device {device} ({resolved_device}), {len(selected)} chapter(s), "
        f"executed notebooks in {_shown(executed_dir)}"
        + (
            f"; about {minutes(sum(expected.get(c.stem, 0) for c in selected))}, as "
            f"{expected_from} took"
            if expected
            else ""
        )
    )
    runs: list[ChapterRun] = []
    start = time.perf_counter()
    jupyter_dir = output_dir / "jupyter"
    record = results.results_path(RECORD, profile, results_dir)
    with book_lock(output_dir, results_dir / profile):
        # A training chapter killed before this run left the published run beside its folder;
        # a process training into the folder refuses the run here, before the first chapter.
        restore_published_run(run_dir, log)
        if any(c.stem in TRAINING_CHAPTERS for c in selected):
            with run_folder_lock(run_dir):
                pass
        kernel = register_kernel(jupyter_dir)
        with book_environment(root, profile, jupyter_dir, results_dir, run_dir):
            for number, source in enumerate(selected, 1):
                prefix = f"[{number}/{len(selected)}] {source.stem}"
                took = expected.get(source.stem)
                log(f"{prefix} ..." + (f" (about {minutes(took)})" if took else ""))
                run = None
                try:
                    with ChapterProgress(
                        prefix, log, expected_s=took, every_s=progress_every_s
                    ) as progress:
                        run = _run_chapter(
                            source,
                            profile=profile,
                            device=device,
                            parameters=takes[source.stem],
                            kernel=kernel,
                            output_dir=output_dir,
                            executed_dir=executed_dir,
                            results_dir=results_dir,
                            run_dir=run_dir if source.stem in TRAINING_CHAPTERS else None,
                            progress=progress,
                            record=lambda r, root: _record_chapter(
                                profile, r, resolved_device, root
                            ),
                        )
                except KeyboardInterrupt:
                    log(
                        f"{prefix} interrupted: its previous notebook and results are kept, "
                        f"and {_shown(record)} says so"
                    )
                    raise
                runs.append(run)
                log(f"{prefix} {run.status} in {run.wall_time_s:.1f} s")
                if run.error:
                    log(f"    {run.error}")

        book = BookRun(
            profile, sorted(runs, key=lambda r: r.chapter), executed_dir, record
        )
        failed = [r for r in runs if r.status != "ok"]
        log(
            f"book: {len(runs) - len(failed)} of {len(runs)} chapter(s) ran in "
            f"{time.perf_counter() - start:.1f} s; record in {_shown(record)}"
        )
        if failed:
            log("book: not building the site, because these chapters failed:")
            for r in failed:
                log(f"  - {r.error}")
            return book
        if build:
            book.site = build_book_site(
                executed_dir,
                html_dir,
                profile,
                root=root,
                log=log,
                notes=book.notes,
                results_dir=results_dir,
                exports=live_page.exports_dir(run_dir),
            )
    return book


def _results_root(results_dir: str | os.PathLike | None, root: Path) -> Path:
    """--results-dir, else $AT_RESULTS_DIR, else the clone's `results/`."""
    if results_dir:
        return Path(results_dir)
    if os.environ.get(results.RESULTS_ENV):
        return Path(os.environ[results.RESULTS_ENV])
    return root / "results"


def _check_outputs(
    profile: str,
    selected: list[Path],
    output_dir: Path,
    results_dir: Path,
    executed_dir: Path,
    html_dir: Path,
    build: bool,
) -> None:
    """Every output checked before the first chapter, each failure one line: writable, not an
    input, not someone else's folder that the site build would replace; and every record of the
    profile (the book's record, the results the chapters read) against its schema, so that a
    broken one is named at its own path, not in a chapter's staged copy of it after it ran.

    The output folder is the book's whole (its notebooks, site, staging, kernel and run folder),
    so it is claimed as `train --out` is: new, empty or the book's, and inside no folder that a
    command made; the results root lies inside no other command's folder either."""
    check_outputs(
        [],
        [("the chapter source", c) for c in selected],
        folders=[
            ("the executed notebooks' folder", executed_dir),
            ("the site folder", html_dir),
        ],
    )
    if build:
        check_replaceable_tree(html_dir, SITE_LISTING)
        check_reader_files(html_dir)
    check_own_folder(
        "--output-dir",
        output_dir,
        command="book",
        made=_made_by_the_book,
        mark=CLAIM_MARKER,
    )
    check_output("--results-dir", results_dir, command="book", folder=True, maker="book")
    check_writable_folder(output_dir, "the book's output folder (--output-dir)")
    check_writable_folder(
        results_dir / profile, "the book's results folder (--results-dir)"
    )
    results.list_results(profile, results_dir)


# What the book writes in its output folder (`run_book`, `build_site`, `staged_tree`'s siblings).
OUTPUT_ENTRIES = {
    "executed",
    "html",
    "failed",
    "jupyter",
    "runs",
    ".staging",
    ".doctrees",
    "sphinx-build.log",
    LOCK_NAME,
}


def _made_by_the_book(entry: Path) -> bool:
    """Whether `entry`, in an output folder the book filled before it marked its folders, is the
    book's: one of its names (a site only with the listing its build writes), or the staging of
    one. A reader's own Sphinx build (conf.py, a `_build/` or an `html/` of theirs) is not."""
    if entry.is_symlink():
        return False
    if entry.name == "html":
        return (entry / SITE_LISTING).is_file()
    if entry.name.endswith((".part", ".old")):
        return any(entry.name.startswith(f".{name}.") for name in OUTPUT_ENTRIES)
    return entry.name in OUTPUT_ENTRIES


def build_book_site(
    executed_dir: Path,
    html_dir: Path,
    profile: str,
    *,
    root: Path | None = None,
    log=print,
    notes: list[str] | None = None,
    results_dir: Path | None = None,
    exports: Path | None = None,
) -> SiteBuild:
    """The site from a profile's executed notebooks: the book's sources staged beside them, the
    committed runs of other profiles in `results_dir` (default: the results root) as parts of
    their own, chapter 08's live translation (its export in `exports`, default the one beside
    the clone's `runs/book-<profile>`, and onnxruntime-web), then Jupyter Book. The one way
    `book` and the tests build it, so a test's site is the reader's."""
    notes = notes if notes is not None else []
    if exports is None:
        exports = live_page.exports_dir(book_root(root) / "runs" / f"book-{profile}")
    stage_site(
        executed_dir,
        root=root,
        log=log,
        notes=notes,
        profile=profile,
        results_dir=results_dir,
    )
    for note in live_page.stage_for_site(executed_dir, exports):
        log(f"site: {note}")
        notes.append(note)
    return build_site(executed_dir, html_dir, log=log)


def _run_chapter(
    source: Path,
    *,
    profile: str,
    device: str,
    parameters: dict | None,
    kernel: str,
    output_dir: Path,
    executed_dir: Path,
    results_dir: Path,
    progress,
    record,
    run_dir: Path | None = None,
) -> ChapterRun:
    """One chapter, atomically: executed into its staging folder, then its notebook, results
    and record entry published together when it succeeded; otherwise the previous good ones
    stay and the record says what happened (also for a Ctrl-C, which then propagates).
    `run_dir`: the book's run folder, for a chapter that trains it (`TRAINING_CHAPTERS`): its
    run replaces the published one only when the chapter is published."""
    staging = output_dir / ".staging" / profile / source.stem
    remove_folder(staging)  # an earlier run's, killed before it cleaned up
    new_folder(staging)
    staged_notebook = staging / f"{source.stem}.ipynb"
    published = executed_dir / "book" / f"{source.stem}.ipynb"
    kept = output_dir / "failed" / profile / f"{source.stem}.ipynb"
    staged_env = {results.RESULTS_ENV: str(stage_results(results_dir, profile, staging))}
    environment = mock.patch.dict(os.environ, staged_env)
    environment.start()
    started = time.perf_counter()
    set_aside = trained_run_kept = False
    try:
        if run_dir is not None:
            set_published_run_aside(run_dir)
            set_aside = True
        run = execute_chapter(
            source,
            staged_notebook,
            profile=profile,
            device=device,
            parameters=parameters,
            kernel_name=kernel,
            progress=progress,
        )
        # a results file the kernel read is named where it lives, not staged
        if run.error:
            run.error = run.error.replace(str(staging / "results"), str(results_dir))
        with deferred_interrupts():
            if run.status == "ok":
                run.notebook = published
                # The record's entry (naming the results files the chapter wrote) is written
                # into the staged results, then the notebook, the results and the record are
                # published together.
                try:
                    run.results = [
                        dest.relative_to(results_dir / profile).as_posix()
                        for dest, _ in changed_results(
                            staging / "results", results_dir, profile
                        )
                        if dest != results.results_path(RECORD, profile, results_dir)
                    ]
                    record(run, staging / "results")
                    with publication() as together:
                        for dest, staged in changed_results(
                            staging / "results", results_dir, profile
                        ):
                            together.add(dest, staged)
                        together.add(published, staged_notebook)
                    if run_dir is not None:
                        keep_trained_run(run_dir)
                        trained_run_kept = True
                except OSError as error:  # a full disk: nothing of it was published
                    run.status = "failed"
                    run.error = (
                        f"chapter {source.stem} ran, but its outputs could not be "
                        f"published ({error}); the previous ones are kept"
                    )
                    run.notebook = _keep_failed(staged_notebook, kept, run)
                    with contextlib.suppress(OSError):
                        record(run, results_dir)
            else:
                run.notebook = _keep_failed(staged_notebook, kept, run)
                record(run, results_dir)
        return run
    except KeyboardInterrupt:
        interrupted = ChapterRun(
            source.stem,
            source,
            kept,
            "interrupted",
            time.perf_counter() - started,
            f"chapter {source.stem} was interrupted (Ctrl-C or a signal); the previous good "
            f"notebook and results are kept",
            parameters={
                "profile_name": profile,
                "device": device,
                **(parameters or {}),
            },
        )
        with deferred_interrupts():
            interrupted.notebook = _keep_failed(staged_notebook, kept, interrupted)
            record(interrupted, results_dir)
        raise
    finally:
        if set_aside and not trained_run_kept:
            with deferred_interrupts():
                return_published_run(run_dir)
        environment.stop()
        remove_folder(staging)


def _keep_failed(staged: Path, kept: Path, run: ChapterRun) -> Path:
    """Move a chapter's unpublished notebook (with its traceback) to `kept`, for reading."""
    if not staged.is_file():
        return kept
    ensure_folder(kept.parent)
    rename(staged, kept)
    if run.error:
        run.error = run.error.replace(str(staged), str(kept))
    return kept

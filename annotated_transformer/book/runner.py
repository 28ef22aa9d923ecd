"""The book runner: execute the chapters with papermill, then build the site from what ran.

    python -m annotated_transformer book --profile smoke|cpu|gpu|paper [--chapters 01 02 ...]
                                         [--no-build] [--output-dir DIR]

Chapters are `book/NN_name.py` (jupytext percent format, the source of truth). Each one is
executed with the profile injected into its `parameters` cell, by a kernel running this very
interpreter; the executed copies go to `<output-dir>/executed/<profile>/book/`, next to the
site's configuration, and Jupyter Book renders that folder into `<output-dir>/html`. A failing
cell fails the run and the error names the chapter and the cell. Wall times, status and
provenance go to `results/<profile>/book_run.json`.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

from ..evaluation import results
from ..profiles import get_profile
from ..runtime.devices import resolve_device
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
from .site import SiteBuild, build_site, stage_site

# Chapters that summarise the others' results run last, so their tables show this run.
SUMMARY_CHAPTERS = ("00_introduction",)

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

    def to_dict(self) -> dict:
        return {
            "status": self.status,
            "wall_time_s": round(self.wall_time_s, 2),
            "error": self.error,
            "cell_index": self.cell_index,
            "notebook": str(self.notebook),
            "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        }


class ChapterFailed(RuntimeError):
    """A chapter cell raised; the message names the chapter, the cell and its first line."""


def register_kernel(jupyter_dir: str | os.PathLike) -> str:
    """Write a kernelspec named `python3` that runs *this* interpreter, under `jupyter_dir`.

    Put on JUPYTER_PATH, it shadows any other `python3` kernel, so chapters run in the same
    environment (venv, Colab runtime) as the runner and import the same package.
    """
    spec_dir = Path(jupyter_dir) / "kernels" / KERNEL_NAME
    spec_dir.mkdir(parents=True, exist_ok=True)
    spec = {
        # --log-level: ipykernel's start-up warnings (TCP without encryption) are noise here.
        "argv": [
            sys.executable,
            "-m",
            "ipykernel_launcher",
            "-f",
            "{connection_file}",
            "--log-level=ERROR",
        ],
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
        "metadata": {"debugger": False},
    }
    (spec_dir / "kernel.json").write_text(json.dumps(spec, indent=1))
    return KERNEL_NAME


@contextlib.contextmanager
def book_environment(root: Path, profile: str, jupyter_dir: Path, results_dir: Path):
    """Environment of the chapter kernels, restored afterwards.

    AT_BOOK_BUILD=1 switches `viz.show` to offline HTML; PYTHONPATH makes the kernel import this
    clone's package; AT_RESULTS_DIR sends results where the runner reads them.
    """

    def prepend(var: str, value: str) -> str:
        old = os.environ.get(var)
        return value if not old else value + os.pathsep + old

    changes = {
        "AT_BOOK_BUILD": "1",
        "AT_PROFILE": profile,
        "AT_RESULTS_DIR": str(results_dir),
        "PYTHONPATH": prepend("PYTHONPATH", str(root)),
        "JUPYTER_PATH": prepend("JUPYTER_PATH", str(jupyter_dir)),
        # ipykernel's debugger otherwise warns about frozen modules on every start.
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
    }
    saved = {k: os.environ.get(k) for k in changes}
    os.environ.update(changes)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def execute_chapter(
    source: str | os.PathLike,
    output_path: str | os.PathLike,
    *,
    profile: str,
    device: str = "auto",
    parameters: dict | None = None,
    cwd: str | os.PathLike | None = None,
    kernel_name: str = KERNEL_NAME,
) -> ChapterRun:
    """Run one chapter under papermill and save the executed notebook (also when it fails).

    Call inside `book_environment` (as `run_book` does) so the kernel is this interpreter.
    The chapter's parameters `profile_name` (this `profile`), `device` and `parameters` are
    injected after its `parameters` cell. Never raises for a failing cell: the returned ChapterRun says
    "failed" and its `error` names the chapter, the cell index (in the chapter's own cells,
    markdown included) and the cell's first line.
    """
    import nbformat
    import papermill as pm
    from papermill.exceptions import PapermillExecutionError

    source = Path(source)
    output_path = Path(output_path)
    output_path.parent.mkdir(parents=True, exist_ok=True)
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
        nbformat.write(executed, str(output_path))
    return ChapterRun(name, source, output_path, status, wall, error, cell_index)


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


def _write_book_record(
    profile: str,
    runs: Sequence[ChapterRun],
    device: str,
    results_dir: Path,
    wall_time_s: float,
) -> Path:
    """Merge this run's chapters into results/<profile>/book_run.json (others keep their entry)."""
    old = results.read_result("book_run", profile, results_dir)
    chapters = dict((old or {}).get("metrics", {}).get("chapters", {}))
    commit = results.provenance(device).get("git_commit")
    for r in runs:
        chapters[r.chapter] = {**r.to_dict(), "git_commit": commit}
    chapters = dict(sorted(chapters.items()))
    metrics = {
        "chapters": chapters,
        "ok": all(c.get("status") == "ok" for c in chapters.values()),
        "profile": get_profile(profile).to_dict(),
    }
    return results.write_result(
        "book_run",
        metrics,
        profile=profile,
        device=device,
        wall_time_s=round(wall_time_s, 2),
        root=results_dir,
    )


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
) -> BookRun:
    """Execute the chapters under `profile`, record them, and (if all ran) build the site.

    Args:
        profile: "smoke", "cpu", "gpu" or "paper" (see `annotated_transformer.profiles`).
        chapters: which chapters ("01", "02_model"); None runs all of them.
        output_dir: where executed notebooks and the site go (default `<root>/_build`).
        device: injected as the chapters' `device` parameter ("auto", "cpu", "cuda").
        parameters: further parameters to inject, e.g. {"max_steps": 50}.
        build: build the HTML site after executing.
        root: the book's root (default: this clone).
        results_dir: results root (default: $AT_RESULTS_DIR, else `<root>/results`).
        log: where progress lines go.
    """
    get_profile(profile)  # unknown profiles fail before any work
    root = book_root(root)
    output_dir = Path(output_dir) if output_dir else root / "_build"
    results_dir = (
        Path(results_dir)
        if results_dir
        else (
            Path(os.environ[results.RESULTS_ENV])
            if os.environ.get(results.RESULTS_ENV)
            else root / "results"
        )
    )
    executed_dir = output_dir / "executed" / profile
    all_chapters = discover_chapters(root)
    selected = _execution_order(select_chapters(all_chapters, chapters))
    if not selected:
        raise FileNotFoundError(
            f"no chapters found under {root / 'book'} (expected {CHAPTER_GLOB})"
        )
    resolved_device = resolve_device(device)

    log(
        f"book: profile {profile}, device {device} ({resolved_device}), {len(selected)} chapter(s), "
        f"executed notebooks in {_shown(executed_dir)}"
    )
    runs: list[ChapterRun] = []
    start = time.perf_counter()
    jupyter_dir = output_dir / "jupyter"
    kernel = register_kernel(jupyter_dir)
    record = results.results_path("book_run", profile, results_dir)
    with book_environment(root, profile, jupyter_dir, results_dir):
        for number, source in enumerate(selected, 1):
            prefix = f"[{number}/{len(selected)}] {source.stem}"
            log(f"{prefix} ...")
            run = execute_chapter(
                source,
                executed_dir / "book" / f"{source.stem}.ipynb",
                profile=profile,
                device=device,
                parameters=parameters,
                kernel_name=kernel,
            )
            runs.append(run)
            log(f"{prefix} {run.status} in {run.wall_time_s:.1f} s")
            if run.error:
                log(f"    {run.error}")
            # Written after every chapter so the introduction (run last) sees this run's times.
            record = _write_book_record(
                profile, runs, resolved_device, results_dir, time.perf_counter() - start
            )

    book = BookRun(profile, sorted(runs, key=lambda r: r.chapter), executed_dir, record)
    failed = [r for r in runs if r.status != "ok"]
    log(
        f"book: {len(runs) - len(failed)} of {len(runs)} chapter(s) ran in {time.perf_counter() - start:.1f} s; "
        f"record in {_shown(record)}"
    )
    if failed:
        log("book: not building the site, because these chapters failed:")
        for r in failed:
            log(f"  - {r.error}")
        return book
    if build:
        stage_site(executed_dir, root=root, log=log, notes=book.notes)
        for note in live_page.stage_for_site(
            executed_dir, profile, root
        ):  # chapter 08's model and runtime
            log(f"site: {note}")
            book.notes.append(note)
        book.site = build_site(executed_dir, output_dir / "html", log=log)
    return book

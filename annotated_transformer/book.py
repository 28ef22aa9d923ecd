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

import ast
import contextlib
import datetime as _dt
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from annotated_transformer import live_page, results
from annotated_transformer.devices import resolve_device
from annotated_transformer.profiles import PROFILE_NAMES, get_profile

CHAPTER_GLOB = "[0-9][0-9]_*.py"
KERNEL_NAME = "python3"
# Chapters that summarise the others' results run last, so their tables show this run.
SUMMARY_CHAPTERS = ("00_introduction",)
# Files at the book root that the site needs besides the pages of the toc.
SITE_FILES = ("_config.yml", "references.bib")
# _static: CSS, the chart drawer, Vega; _extra: MathJax, copied to the site's root.
SITE_FOLDERS = ("_static", "_extra")
# Sphinx warnings that mean a page or a file the toc promises is missing.
MISSING_FILE_WARNINGS = re.compile(
    r"nonexisting document|isn't included in any toctree|not included in any toctree|"
    r"file not found|image file not readable|does not exist|unknown document|"
    r"toctree contains reference",
    re.IGNORECASE,
)

Log = Callable[[str], None]


def _print(message: str) -> None:
    print(message, flush=True)


# ----------------------------------------------------------------------------------------------
# Finding and reading chapters

def book_root(root: str | os.PathLike | None = None) -> Path:
    """The folder holding `_config.yml` and `book/`: `root`, else this clone, else the working dir."""
    candidates = [Path(root)] if root is not None else [Path(__file__).resolve().parent.parent, Path.cwd()]
    for candidate in candidates:
        if (candidate / "_config.yml").is_file() and (candidate / "book").is_dir():
            return candidate.resolve()
    raise FileNotFoundError(
        f"no book here: expected _config.yml and book/ in {' or '.join(str(c) for c in candidates)}; "
        "run from a clone of the repository (the book runner needs the chapter sources)"
    )


def discover_chapters(root: str | os.PathLike | None = None) -> list[Path]:
    """Every `book/NN_name.py`, in chapter order."""
    return sorted((book_root(root) / "book").glob(CHAPTER_GLOB))


def select_chapters(chapters: Sequence[Path], wanted: Iterable[str] | None) -> list[Path]:
    """Chapters matching `wanted` ("01", "01_attention" or "book/01_attention.py"); all when None."""
    if not wanted:
        return list(chapters)
    selected = []
    for item in wanted:
        key = Path(item).stem
        matches = [c for c in chapters if c.stem == key or c.stem.split("_", 1)[0] == key]
        if not matches:
            names = ", ".join(c.stem for c in chapters) or "none"
            raise ValueError(f"no chapter matches {item!r}; chapters: {names}")
        selected.extend(m for m in matches if m not in selected)
    return sorted(selected)


def load_chapter(source: str | os.PathLike):
    """The chapter as a notebook, read from its jupytext .py (or an .ipynb)."""
    # The book's tools (jupytext, nbformat, papermill, yaml) come with the `book` extra, not with the
    # package: they are imported where a function needs them, so `import annotated_transformer.book`
    # and the CLI's --help work without them.
    import jupytext

    return jupytext.read(str(source))


def parameters_cell_index(nb) -> int:
    """Index of the cell tagged `parameters`; a chapter without one cannot take a profile."""
    for index, cell in enumerate(nb.cells):
        if "parameters" in cell.get("metadata", {}).get("tags", []):
            return index
    raise ValueError("no cell tagged 'parameters': add `# %% tags=[\"parameters\"]` above the profile knobs")


def _first_line(source: str) -> str:
    for line in source.splitlines():
        if line.strip():
            return line.strip()
    return ""


def _source_digest(source: Path) -> str:
    return hashlib.sha256(source.read_bytes()).hexdigest()[:16]


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
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}", "--log-level=ERROR"],
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
    The run's parameters are `profile`, `device` and `parameters`, injected after the
    chapter's `parameters` cell. Never raises for a failing cell: the returned ChapterRun says
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
        return ChapterRun(name, source, output_path, "failed", 0.0, f"chapter {name} cannot take a profile: {exc}")
    nb.metadata["annotated_transformer"] = {
        "profile": profile,
        "source": f"book/{source.name}",
        "source_sha256": _source_digest(source),
    }
    params = {"profile": profile, "device": device, **(parameters or {})}

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
        cell_index = exc.cell_index - 1 if exc.cell_index > params_index + 1 else exc.cell_index
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
            {"status": status, "wall_time_s": round(wall, 2)})
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
        return all(c.status == "ok" for c in self.chapters) and (self.site is None or self.site.ok)


def _execution_order(chapters: Sequence[Path]) -> list[Path]:
    return sorted(chapters, key=lambda c: (c.stem in SUMMARY_CHAPTERS, c.stem))


def _write_book_record(profile: str, runs: Sequence[ChapterRun], device: str, results_dir: Path,
                       wall_time_s: float) -> Path:
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
    return results.write_result("book_run", metrics, profile=profile, device=device,
                                wall_time_s=round(wall_time_s, 2), root=results_dir)


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
    results_dir = Path(results_dir) if results_dir else (
        Path(os.environ[results.RESULTS_ENV]) if os.environ.get(results.RESULTS_ENV) else root / "results")
    executed_dir = output_dir / "executed" / profile
    all_chapters = discover_chapters(root)
    selected = _execution_order(select_chapters(all_chapters, chapters))
    if not selected:
        raise FileNotFoundError(f"no chapters found under {root / 'book'} (expected {CHAPTER_GLOB})")
    resolved_device = resolve_device(device)

    log(f"book: profile {profile}, device {device} ({resolved_device}), {len(selected)} chapter(s), "
        f"executed notebooks in {_shown(executed_dir)}")
    runs: list[ChapterRun] = []
    start = time.perf_counter()
    jupyter_dir = output_dir / "jupyter"
    kernel = register_kernel(jupyter_dir)
    record = results.results_path("book_run", profile, results_dir)
    with book_environment(root, profile, jupyter_dir, results_dir):
        for number, source in enumerate(selected, 1):
            prefix = f"[{number}/{len(selected)}] {source.stem}"
            log(f"{prefix} ...")
            run = execute_chapter(source, executed_dir / "book" / f"{source.stem}.ipynb", profile=profile,
                                  device=device, parameters=parameters, kernel_name=kernel)
            runs.append(run)
            log(f"{prefix} {run.status} in {run.wall_time_s:.1f} s")
            if run.error:
                log(f"    {run.error}")
            # Written after every chapter so the introduction (run last) sees this run's times.
            record = _write_book_record(profile, runs, resolved_device, results_dir, time.perf_counter() - start)

    book = BookRun(profile, sorted(runs, key=lambda r: r.chapter), executed_dir, record)
    failed = [r for r in runs if r.status != "ok"]
    log(f"book: {len(runs) - len(failed)} of {len(runs)} chapter(s) ran in {time.perf_counter() - start:.1f} s; "
        f"record in {_shown(record)}")
    if failed:
        log("book: not building the site, because these chapters failed:")
        for r in failed:
            log(f"  - {r.error}")
        return book
    if build:
        stage_site(executed_dir, root=root, log=log, notes=book.notes)
        for note in live_page.stage_for_site(executed_dir, profile, root):  # chapter 08's model and runtime
            log(f"site: {note}")
            book.notes.append(note)
        book.site = build_site(executed_dir, output_dir / "html", log=log)
    return book


def _shown(path: Path) -> str:
    """`path` relative to the working directory when it lies below it (shorter, copy-pasteable)."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


# ----------------------------------------------------------------------------------------------
# Staging and building the site

def _toc_files(toc: dict) -> list[str]:
    files = [toc["root"]] if toc.get("root") else []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if "file" in node:
                files.append(node["file"])
            for key in ("parts", "chapters", "sections"):
                for child in node.get(key, []) or []:
                    walk(child)
        elif isinstance(node, list):
            for child in node:
                walk(child)

    walk(toc)
    return files


def _filter_toc(node: Any, keep: Callable[[str], bool]) -> Any:
    """The toc without entries whose file is not kept, and without parts left empty."""
    if isinstance(node, list):
        kept = [_filter_toc(child, keep) for child in node]
        return [k for k in kept if k is not None]
    if isinstance(node, dict):
        if "file" in node and not keep(node["file"]):
            return None
        out = dict(node)
        for key in ("parts", "chapters", "sections"):
            if key in out:
                out[key] = _filter_toc(out[key], keep)
                if not out[key]:
                    del out[key]
                    if "file" not in out:
                        return None
        return out
    return node


def stage_site(
    executed_dir: str | os.PathLike,
    *,
    root: str | os.PathLike | None = None,
    log: Log = _print,
    notes: list[str] | None = None,
) -> Path:
    """Turn `executed_dir` into a Jupyter Book source folder.

    Copies the configuration, references and `_static/` next to the executed notebooks. A toc
    chapter that was never executed under this profile is shown from its source, without
    outputs; one whose source does not exist yet is left out of this build's toc (both are said).
    """
    import jupytext
    import yaml

    root = book_root(root)
    stage = Path(executed_dir)
    (stage / "book").mkdir(parents=True, exist_ok=True)
    notes = notes if notes is not None else []

    for name in SITE_FILES:
        if (root / name).is_file():
            shutil.copy2(root / name, stage / name)
    for folder in SITE_FOLDERS:
        if (root / folder).is_dir():
            shutil.copytree(root / folder, stage / folder, dirs_exist_ok=True)
    # Pictures and other files the chapters link to (not sources: those become notebooks).
    for path in (root / "book").rglob("*"):
        rel = path.relative_to(root / "book")
        if path.is_file() and path.suffix not in (".py", ".ipynb") and not any(
                part in ("__pycache__", ".ipynb_checkpoints") for part in rel.parts):
            (stage / "book" / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, stage / "book" / rel)

    toc = yaml.safe_load((root / "_toc.yml").read_text())
    present = set()
    for entry in _toc_files(toc):
        rel = Path(entry)
        page = root / rel.with_suffix(".md")
        if page.is_file():  # a plain page (references): copied as it is
            (stage / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(page, stage / rel.with_suffix(".md"))
            present.add(entry)
            continue
        executed = stage / rel.with_suffix(".ipynb")
        source = root / rel.with_suffix(".py")
        if not source.is_file():
            notes.append(f"{entry}: listed in _toc.yml but {rel.with_suffix('.py')} does not exist yet; left out")
            continue
        meta = _read_meta(executed) if executed.is_file() else {}
        if meta.get("status") in ("ok", "failed"):  # written by execute_chapter
            if meta["status"] == "failed":
                notes.append(f"{entry}: its last execution failed; the page shows the error")
            if meta.get("source_sha256") != _source_digest(source):
                notes.append(f"{entry}: executed before its source last changed; rerun it to refresh the page")
        else:
            nb = jupytext.read(str(source))
            nb.metadata["annotated_transformer"] = {"status": "not executed", "source": f"book/{source.name}"}
            jupytext.write(nb, str(executed), fmt="ipynb")
            notes.append(f"{entry}: not executed under this profile yet; the site shows it without outputs")
        present.add(entry)
    if toc.get("root") not in present:
        raise FileNotFoundError(f"the book's root page {toc.get('root')} is missing from {stage}")
    settings = repository_settings(root)
    for entry in sorted(present):
        page = stage / Path(entry).with_suffix(".ipynb")
        if page.is_file():
            finish_page(page, f"{entry}.ipynb", settings)
    filtered = _filter_toc(toc, lambda f: f in present)
    (stage / "_toc.yml").write_text(
        "# Generated by annotated_transformer.book from the root _toc.yml: only pages present.\n"
        + yaml.safe_dump(filtered, sort_keys=False))
    for note in notes:
        log(f"site: {note}")
    return stage


# ----------------------------------------------------------------------------------------------
# The repository URL (one place: _config.yml) and the pages' finishing touches

# The install cell's line that names the repository; `book --sync` writes it from _config.yml.
REPOSITORY_LINE = re.compile(r'^(REPOSITORY = )"[^"]*"', re.MULTILINE)
# papermill tags the cell it injects after a chapter's `parameters` cell with this.
INJECTED_TAG = "injected-parameters"


def repository_settings(root: str | os.PathLike | None = None) -> dict:
    """`url`, `branch`, `path_to_book` and `colab_url` from the book's `_config.yml`.

    A fork changes `repository.url` (and `branch`) there; the chapters' install cells (through
    `book --sync`) and the site's Colab links read it from there.
    """
    import yaml

    config = yaml.safe_load((book_root(root) / "_config.yml").read_text()) or {}
    repo = config.get("repository") or {}
    launch = config.get("launch_buttons") or {}
    return {"url": str(repo.get("url", "")).rstrip("/"), "branch": repo.get("branch") or "main",
            "path_to_book": (repo.get("path_to_book") or "").strip("/"),
            "colab_url": str(launch.get("colab_url") or "https://colab.research.google.com").rstrip("/")}


def colab_link(page: str, settings: dict) -> str:
    """The Colab URL of a notebook `page` ("book/01_attention.ipynb") in the configured repository."""
    github = settings["url"].split("github.com/", 1)[-1]
    path = "/".join(p for p in (settings["path_to_book"], page) if p)
    return f"{settings['colab_url']}/github/{github}/blob/{settings['branch']}/{path}"


def set_repository_url(source_text: str, url: str) -> str:
    """`source_text` with its install cell's `REPOSITORY = "..."` line naming `url`."""
    return REPOSITORY_LINE.sub(lambda m: f'{m.group(1)}"{url}"', source_text)


def finish_page(notebook: Path, page: str, settings: dict) -> None:
    """Hide papermill's injected parameters cell (the parameters cell above it already shows the
    knobs) and put an "Open in Colab" link, built from `_config.yml`, under the page's title."""
    import nbformat

    nb = nbformat.read(str(notebook), as_version=4)
    for cell in nb.cells:
        tags = cell.get("metadata", {}).get("tags", [])
        if INJECTED_TAG in tags and "remove-cell" not in tags:
            cell.metadata["tags"] = [*tags, "remove-cell"]
    first = next((c for c in nb.cells if c.cell_type == "markdown"), None)
    if first is not None and "colab.research.google.com" not in first.source and settings["url"]:
        lines = first.source.split("\n")
        title = next((i for i, line in enumerate(lines) if line.startswith("# ")), -1)
        link = f"[Open in Colab]({colab_link(page, settings)})"
        first.source = "\n".join([*lines[: title + 1], "", link, *lines[title + 1 :]])
    nbformat.write(nb, str(notebook))


def _read_meta(notebook: Path) -> dict:
    try:
        return json.loads(notebook.read_text()).get("metadata", {}).get("annotated_transformer", {}) or {}
    except (OSError, json.JSONDecodeError):
        return {}


_SPHINX_BUILD = """
import sys
from pathlib import Path
from jupyter_book.sphinx import build_sphinx
src, out, doctrees = sys.argv[1:4]
# The overrides `jupyter-book build` passes for a whole book.
overrides = {"external_toc_path": (Path(src).resolve() / "_toc.yml").as_posix(), "latex_individualpages": False}
result = build_sphinx(src, out, doctreedir=doctrees, noconfig=True, confoverrides=overrides,
                      path_config=str(Path(src) / "_config.yml"), freshenv=True, builder="html")
sys.exit(result if isinstance(result, int) else 1)
"""


@dataclass
class SiteBuild:
    """Outcome of `build_site`: exit code, Sphinx warnings, the full log and the index page."""

    returncode: int
    warnings: list[str]
    log_path: Path
    index: Path

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and self.index.is_file()

    @property
    def missing_file_warnings(self) -> list[str]:
        return [w for w in self.warnings if MISSING_FILE_WARNINGS.search(w)]


def build_site(stage_dir: str | os.PathLike, html_dir: str | os.PathLike, *, log: Log = _print) -> SiteBuild:
    """Render a staged book folder into `html_dir` with Jupyter Book (Sphinx), offline.

    Runs in a subprocess so Sphinx's global state stays out of the caller; the log is kept
    next to the site (`<html_dir>/../sphinx-build.log`).
    """
    stage_dir, html_dir = Path(stage_dir), Path(html_dir)
    if html_dir.exists():
        shutil.rmtree(html_dir)  # no pages left over from chapters that are gone
    doctrees = html_dir.parent / ".doctrees"
    log_path = html_dir.parent / "sphinx-build.log"
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", _SPHINX_BUILD, str(stage_dir), str(html_dir), str(doctrees)],
        capture_output=True, text=True, env={**os.environ, "NO_COLOR": "1"},
    )
    output = proc.stdout + proc.stderr
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log_path.write_text(output)
    warnings = [line for line in output.splitlines() if "WARNING" in line or "ERROR" in line]
    site = SiteBuild(proc.returncode, warnings, log_path, html_dir / "index.html")
    took = time.perf_counter() - start
    if site.ok:
        log(f"site: built in {took:.1f} s with {len(warnings)} warning(s) (log: {_shown(log_path)})")
        for w in warnings:
            log(f"    {w}")
        log(f"site: open {_shown(site.index)}")
    else:
        tail = "\n".join(output.splitlines()[-20:])
        log(f"site: the build failed (exit {proc.returncode}); log: {_shown(log_path)}\n{tail}")
    return site


# ----------------------------------------------------------------------------------------------
# Keeping the .ipynb twins in step with the .py sources

def sync_notebooks(paths: Iterable[str | os.PathLike] | None = None, *, root: str | os.PathLike | None = None) -> list[Path]:
    """Write each chapter's .ipynb from its .py (the source of truth), without outputs.

    One direction only, unlike `jupytext --sync`, which trusts whichever file is newer. The
    install cell's `REPOSITORY = "..."` line is first set to `_config.yml`'s repository URL.
    """
    import jupytext

    sources = [Path(p) for p in paths] if paths else discover_chapters(root)
    url = repository_settings(root)["url"]
    written = []
    for source in sources:
        if source.suffix != ".py":
            raise ValueError(f"{source} is not a chapter source (book/NN_name.py)")
        text = source.read_text()
        if url and REPOSITORY_LINE.search(text) and set_repository_url(text, url) != text:
            source.write_text(set_repository_url(text, url))  # the URL of _config.yml
        nb = jupytext.read(str(source))
        for index, cell in enumerate(nb.cells):
            cell["id"] = f"cell-{index}"  # stable ids keep diffs of the .ipynb small
            if cell.cell_type == "code":
                cell.outputs, cell.execution_count = [], None
        target = source.with_suffix(".ipynb")
        jupytext.write(nb, str(target), fmt="ipynb")
        written.append(target)
    return written


# ----------------------------------------------------------------------------------------------
# `python -m annotated_transformer book`

def _parse_param(text: str) -> tuple[str, Any]:
    if "=" not in text:
        raise ValueError(f"--param expects NAME=VALUE, got {text!r}")
    name, value = text.split("=", 1)
    try:
        return name.strip(), ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return name.strip(), value  # a bare word is a string


def add_arguments(parser) -> None:
    """Options of the `book` command."""
    parser.add_argument("--profile", default="cpu", choices=PROFILE_NAMES,
                        help="scale of the run (default: cpu); smoke is for CI")
    parser.add_argument("--chapters", nargs="+", metavar="NN",
                        help="run only these chapters, by number or name (default: all)")
    parser.add_argument("--device", default="auto", help="device parameter for the chapters (default: auto)")
    parser.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                        help="extra parameter for every chapter, e.g. --param max_steps=50 (repeatable)")
    parser.add_argument("--no-build", action="store_true", help="execute the chapters but do not build the site")
    parser.add_argument("--output-dir", help="executed notebooks and site (default: _build at the repo root)")
    parser.add_argument("--results-dir", help="results root (default: $AT_RESULTS_DIR, else results/)")
    parser.add_argument("--sync", action="store_true",
                        help="only rewrite book/*.ipynb from book/*.py (no outputs) and exit")


def run(args) -> int:
    """Entry point of `python -m annotated_transformer book`; 0 when every chapter and the site succeed."""
    try:
        if args.sync:
            for path in sync_notebooks(args.chapters and select_chapters(discover_chapters(), args.chapters)):
                _print(f"wrote {_shown(path)}")
            return 0
        parameters = dict(_parse_param(p) for p in args.param)
        book = run_book(args.profile, chapters=args.chapters, output_dir=args.output_dir, device=args.device,
                        parameters=parameters, build=not args.no_build, results_dir=args.results_dir)
    except (ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0 if book.ok else 1

"""Staging and building the site: executed notebooks plus the book's configuration become a Jupyter
Book source folder, then HTML (Sphinx, offline). The repository URL lives in one place, `_config.yml`,
and the pages' Colab links are built from it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..runtime.files import (
    atomic_write_text,
    copy_file_as_is,
    copy_tree,
    ensure_folder,
    new_folder,
    remove_folder,
    staged_tree,
)
from ..runtime.records import read_json
from .chapters import Log, _print, _shown, _source_digest, book_root

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
    profile: str | None = None,
    results_dir: str | os.PathLike | None = None,
) -> Path:
    """Turn `executed_dir` into a Jupyter Book source folder.

    Copies the configuration, references and `_static/` next to the executed notebooks. A toc
    chapter that was never executed under this profile is shown from its source, without
    outputs; one whose source does not exist yet is left out of this build's toc (both are said).
    Given the executing `profile`, the committed book runs of the other profiles
    (`results_dir/book_<profile>/notebooks/`, see `committed`) join the toc after the book's own
    chapters, a part each, at `<profile>/NN_name`; a run with no notebooks adds nothing.
    """
    import jupytext
    import yaml

    root = book_root(root)
    stage = Path(executed_dir)
    ensure_folder(stage / "book")
    notes = notes if notes is not None else []

    for name in SITE_FILES:
        if (root / name).is_file():
            copy_file_as_is(root / name, stage / name)
    for folder in SITE_FOLDERS:
        if (root / folder).is_dir():
            copy_tree(root / folder, stage / folder)
    # Pictures and other files the chapters link to (not sources: those become notebooks).
    copy_tree(
        root / "book",
        stage / "book",
        ignore=shutil.ignore_patterns(
            "*.py", "*.ipynb", "__pycache__", ".ipynb_checkpoints"
        ),
    )

    toc = yaml.safe_load((root / "_toc.yml").read_text())
    present = set()
    for entry in _toc_files(toc):
        rel = Path(entry)
        page = root / rel.with_suffix(".md")
        if page.is_file():  # a plain page (references): copied as it is
            ensure_folder((stage / rel).parent)
            copy_file_as_is(page, stage / rel.with_suffix(".md"))
            present.add(entry)
            continue
        executed = stage / rel.with_suffix(".ipynb")
        source = root / rel.with_suffix(".py")
        if not source.is_file():
            notes.append(
                f"{entry}: listed in _toc.yml but {rel.with_suffix('.py')} does not exist yet; left out"
            )
            continue
        meta = _read_meta(executed) if executed.is_file() else {}
        if meta.get("status") in ("ok", "failed"):  # written by execute_chapter
            if meta["status"] == "failed":
                notes.append(
                    f"{entry}: its last execution failed; the page shows the error"
                )
            if meta.get("source_sha256") != _source_digest(source):
                notes.append(
                    f"{entry}: executed before its source last changed; rerun it to refresh the page"
                )
        else:
            nb = jupytext.read(str(source))
            nb.metadata["annotated_transformer"] = {
                "status": "not executed",
                "source": f"book/{source.name}",
            }
            atomic_write_text(executed, jupytext.writes(nb, fmt="ipynb"))
            notes.append(
                f"{entry}: not executed under this profile yet; the site shows it without outputs"
            )
        present.add(entry)
    if toc.get("root") not in present:
        raise FileNotFoundError(
            f"the book's root page {toc.get('root')} is missing from {stage}"
        )
    settings = repository_settings(root)
    for entry in sorted(present):
        page = stage / Path(entry).with_suffix(".ipynb")
        if page.is_file():
            finish_page(page, f"{entry}.ipynb", settings)
    filtered = _filter_toc(toc, lambda f: f in present)
    if profile is not None:
        parts = stage_committed_runs(
            stage, profile, results_dir, settings, notes, root=root
        )
        if parts:
            filtered = _with_parts(filtered, parts)
    atomic_write_text(
        stage / "_toc.yml",
        "# Generated by annotated_transformer.book from the root _toc.yml: only pages present.\n"
        + yaml.safe_dump(filtered, sort_keys=False),
    )
    for note in notes:
        log(f"site: {note}")
    return stage


def _with_parts(toc: dict, parts: list[dict]) -> dict:
    """`toc` with `parts` after the last part holding a chapter of `book/` (before the back matter)."""
    toc = dict(toc)
    existing = list(toc.get("parts") or [])
    if not existing and toc.get("chapters"):
        existing = [{"chapters": toc.pop("chapters")}]
    book = [
        i
        for i, part in enumerate(existing)
        if any(f.startswith("book/") for f in _toc_files(part))
    ]
    at = book[-1] + 1 if book else len(existing)
    toc["parts"] = existing[:at] + parts + existing[at:]
    return toc


def stage_committed_runs(
    stage: Path,
    profile: str,
    results_dir: str | os.PathLike | None,
    settings: dict,
    notes: list[str],
    *,
    root: str | os.PathLike | None = None,
) -> list[dict]:
    """Copy each committed book run's notebooks (other profiles than `profile`) to
    `stage/<run profile>/`, finished as the book's pages are plus a note of where, when and in how
    long each ran; return their toc parts (none for a run without notebooks)."""
    from . import committed

    parts = []
    for other in committed.COMMITTED_PROFILES:
        if other == profile:
            continue
        folder = stage / other
        remove_folder(folder)  # an earlier build's copies
        pages = committed.notebooks(other, results_dir)
        if not pages:
            continue
        record = committed.read_run(other, results_dir)
        new_folder(folder)
        for notebook in pages:
            chapter = notebook.stem
            page = folder / notebook.name
            copy_file_as_is(notebook, page)
            source = book_root(root) / "book" / f"{chapter}.py"
            digest = _read_meta(page).get("source_sha256")
            same = (
                digest == _source_digest(source) if source.is_file() and digest else None
            )
            if same is False:
                notes.append(
                    f"{other}/{chapter}: the committed {other} run executed an earlier version "
                    "of the chapter's source"
                )
            note = committed.page_note(other, chapter, record, profile, same)
            try:
                closing = committed.closing_section(other, chapter, results_dir, root)
            except (KeyError, TypeError, ValueError) as error:
                closing = None  # a record of an older form
                notes.append(
                    f"{other}/{chapter}: no closing section: the chapter's sentences cannot "
                    f"read the run's record ({type(error).__name__}: {error})"
                )
            finish_page(
                page, f"book/{chapter}.ipynb", settings, note=note, closing=closing
            )
        chapters = [n.stem for n in pages]
        parts.append(
            {
                "caption": committed.part_caption(other, record, chapters),
                "chapters": [{"file": f"{other}/{c}"} for c in chapters],
            }
        )
        notes.append(
            f"{other} run: {len(pages)} committed page(s) from "
            f"{_shown(committed.run_folder(other, results_dir) / committed.NOTEBOOKS)}"
        )
    return parts


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
    return {
        "url": str(repo.get("url", "")).rstrip("/"),
        "branch": repo.get("branch") or "main",
        "path_to_book": (repo.get("path_to_book") or "").strip("/"),
        "colab_url": str(
            launch.get("colab_url") or "https://colab.research.google.com"
        ).rstrip("/"),
    }


def colab_link(page: str, settings: dict) -> str:
    """The Colab URL of a notebook `page` ("book/01_attention.ipynb") in the configured repository."""
    github = settings["url"].split("github.com/", 1)[-1]
    path = "/".join(p for p in (settings["path_to_book"], page) if p)
    return f"{settings['colab_url']}/github/{github}/blob/{settings['branch']}/{path}"


def set_repository_url(source_text: str, url: str) -> str:
    """`source_text` with its install cell's `REPOSITORY = "..."` line naming `url`."""
    return REPOSITORY_LINE.sub(lambda m: f'{m.group(1)}"{url}"', source_text)


# One assignment of a parameters cell: the name, the value, and the comment after it.
_ASSIGNMENT = re.compile(r"^(?P<name>[A-Za-z_]\w*) = (?P<value>.*?)(?P<comment>  #.*)?$")


def shown_parameters(cell: str, injected: str) -> str:
    """The chapter's parameters cell with the values papermill injected in place of its
    defaults, comments kept: the page shows what it ran with (`profile_name = "cpu"`, not the
    `"auto"` a reader running it by hand gets)."""
    values = {}
    for line in injected.splitlines():
        match = _ASSIGNMENT.match(line)
        if match:
            values[match["name"]] = match["value"]
    lines = []
    for line in cell.splitlines():
        match = _ASSIGNMENT.match(line)
        if match and match["name"] in values:
            line = f"{match['name']} = {values[match['name']]}{match['comment'] or ''}"
        lines.append(line)
    return "\n".join(lines)


def finish_page(
    notebook: Path,
    page: str,
    settings: dict,
    *,
    note: str | None = None,
    closing: str | None = None,
) -> None:
    """Hide papermill's injected parameters cell (the parameters cell above it already shows the
    knobs) and put an "Open in Colab" link, built from `_config.yml`, under the page's title
    (`page` is the chapter's notebook in the repository), and `note` under the link. A page whose
    last section is not its closing one (a run of an earlier version of the chapter, whose last
    cell printed where it wrote its record) ends on `closing` (Markdown beginning with that
    section's heading)."""
    import nbformat

    nb = nbformat.read(str(notebook), as_version=4)
    injected = ""
    for cell in nb.cells:
        tags = cell.get("metadata", {}).get("tags", [])
        if INJECTED_TAG in tags:
            injected = cell.source
            if "remove-cell" not in tags:
                cell.metadata["tags"] = [*tags, "remove-cell"]
    for cell in nb.cells:
        if "parameters" in cell.get("metadata", {}).get("tags", []):
            cell.source = shown_parameters(cell.source, injected)
    first = next((c for c in nb.cells if c.cell_type == "markdown"), None)
    added = []
    if (
        first is not None
        and "colab.research.google.com" not in first.source
        and settings["url"]
    ):
        added += ["", f"[Open in Colab]({colab_link(page, settings)})"]
    if first is not None and note and note not in first.source:
        added += ["", note]
    if added:
        lines = first.source.split("\n")
        title = next((i for i, line in enumerate(lines) if line.startswith("# ")), -1)
        first.source = "\n".join([*lines[: title + 1], *added, *lines[title + 1 :]])
    if closing:
        heading = closing.split("\n", 1)[0]
        sections = [
            i
            for i, cell in enumerate(nb.cells)
            if cell.cell_type == "markdown"
            and any(line.startswith("## ") for line in cell.source.split("\n"))
        ]
        last = nb.cells[sections[-1]].source if sections else ""
        if heading not in last.split("\n"):
            nb.cells.append(nbformat.v4.new_markdown_cell(closing))
    atomic_write_text(notebook, nbformat.writes(nb))


def _read_meta(notebook: Path) -> dict:
    try:
        return (
            read_json(notebook).get("metadata", {}).get("annotated_transformer", {}) or {}
        )
    except (OSError, ValueError):
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


# The files a build wrote into the site, one a line, kept in the site: any other file in it is a
# reader's own, which a rebuild (replacing the folder whole) would delete, so the build refuses.
SITE_LISTING = ".site_files"


def reader_files(html_dir: str | os.PathLike) -> list[str]:
    """The files in a built site that its build did not write (relative, sorted): a reader's
    own. None can be told apart in a site built before the build listed its files."""
    html_dir = Path(html_dir)
    listing = html_dir / SITE_LISTING
    if html_dir.is_symlink() or not listing.is_file():
        return []
    built = set(listing.read_text(encoding="utf-8").splitlines()) | {SITE_LISTING}
    found = (p.relative_to(html_dir).as_posix() for p in html_dir.rglob("*"))
    return sorted(
        name for name in found if name not in built and not (html_dir / name).is_dir()
    )


def check_reader_files(html_dir: str | os.PathLike) -> None:
    """Refuse, in one line naming them, to rebuild a site that holds files of a reader's."""
    found = reader_files(html_dir)
    if found:
        shown = ", ".join(found[:5]) + (
            f" and {len(found) - 5} more" if len(found) > 5 else ""
        )
        raise FileExistsError(
            f"{html_dir} holds {len(found)} file(s) its build did not write ({shown}): "
            "rebuilding replaces the folder whole, so move them out of it, or pass another "
            "--output-dir"
        )


def _list_site_files(site: Path) -> None:
    files = sorted(
        p.relative_to(site).as_posix()
        for p in site.rglob("*")
        if p.is_file() or p.is_symlink()
    )
    atomic_write_text(site / SITE_LISTING, "".join(f"{f}\n" for f in files))


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


class _BuildFailed(Exception):
    """Leaves the staged site unpublished (the previous one stays)."""


def build_site(
    stage_dir: str | os.PathLike, html_dir: str | os.PathLike, *, log: Log = _print
) -> SiteBuild:
    """Render a staged book folder into `html_dir` with Jupyter Book (Sphinx), offline.

    Runs in a subprocess so Sphinx's global state stays out of the caller; the log is kept
    next to the site (`<html_dir>/../sphinx-build.log`). The site is built in a staging sibling
    and replaces `html_dir` whole (no pages left over from chapters that are gone) only when the
    build succeeded: a failed or interrupted build leaves the previous site. A folder there that
    is not a site this function built (no `SITE_LISTING`: a Sphinx site of a reader's own has a
    `.buildinfo` too) is refused, not replaced, and so is a site holding files its build did not
    write (`SITE_LISTING` lists those it did).
    """
    stage_dir, html_dir = Path(stage_dir), Path(html_dir)
    check_reader_files(html_dir)
    doctrees = html_dir.parent / ".doctrees"
    log_path = html_dir.parent / "sphinx-build.log"
    start = time.perf_counter()
    try:
        with staged_tree(html_dir, marker=SITE_LISTING) as staging:
            proc = subprocess.run(
                [
                    sys.executable,
                    "-c",
                    _SPHINX_BUILD,
                    str(stage_dir),
                    str(staging),
                    str(doctrees),
                ],
                capture_output=True,
                text=True,
                env={**os.environ, "NO_COLOR": "1"},
            )
            if proc.returncode != 0 or not (staging / "index.html").is_file():
                raise _BuildFailed
            _list_site_files(staging)
    except _BuildFailed:
        pass
    output = proc.stdout + proc.stderr
    atomic_write_text(log_path, output)
    warnings = [
        line for line in output.splitlines() if "WARNING" in line or "ERROR" in line
    ]
    site = SiteBuild(proc.returncode, warnings, log_path, html_dir / "index.html")
    took = time.perf_counter() - start
    if site.ok:
        log(
            f"site: built in {took:.1f} s with {len(warnings)} warning(s) (log: {_shown(log_path)})"
        )
        for w in warnings:
            log(f"    {w}")
        log(f"site: open {_shown(site.index)}")
    else:
        tail = "\n".join(output.splitlines()[-20:])
        log(
            f"site: the build failed (exit {proc.returncode}); log: {_shown(log_path)}\n{tail}"
        )
    return site

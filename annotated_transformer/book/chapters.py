"""Finding and reading the book's chapters: `book/NN_name.py` files (jupytext percent format, the
source of truth), their `parameters` cell, and the digest that tells whether a page is stale."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Callable, Iterable, Sequence

from ..runtime.files import clone_root

CHAPTER_GLOB = "[0-9][0-9]_*.py"
KERNEL_NAME = "python3"

Log = Callable[[str], None]


def _print(message: str) -> None:
    print(message, flush=True)


def book_root(root: str | os.PathLike | None = None) -> Path:
    """The folder holding `_config.yml` and `book/`: `root`, else this clone, else the working dir."""
    candidates = (
        [Path(root)] if root is not None else [clone_root() or Path.cwd(), Path.cwd()]
    )
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
    raise ValueError(
        "no cell tagged 'parameters': add `# %% tags=[\"parameters\"]` above the profile knobs"
    )


def _first_line(source: str) -> str:
    for line in source.splitlines():
        if line.strip():
            return line.strip()
    return ""


def _source_digest(source: Path) -> str:
    return digest_of_source(source.read_bytes())


def digest_of_source(text: bytes) -> str:
    """What an executed notebook records of its chapter's source (`source_sha256`)."""
    return hashlib.sha256(text).hexdigest()[:16]


def _shown(path: Path) -> str:
    """`path` relative to the working directory when it lies below it (shorter, copy-pasteable)."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)

"""Keeping each chapter's .ipynb twin in step with its .py source (the .py wins).

A pair is in step when their cells agree: the same kinds, sources and tags, whatever outputs the
notebook was saved with (Jupyter saves them) and whichever jupytext version wrote the .py's
header (a save through jupytext's contents manager adds its version there). `sync_notebooks`
restores both: the .py without that version line, the .ipynb from the .py without outputs.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Iterable

from ..runtime.files import atomic_write_text
from .chapters import discover_chapters
from .site import REPOSITORY_LINE, repository_settings, set_repository_url

# The line a jupytext save adds to the .py's header; it changes with the jupytext version only.
VERSION_LINE = re.compile(r"^#\s+jupytext_version: .*\n", re.MULTILINE)


class NotebookEdited(ValueError):
    """The .ipynb holds cells its .py lacks and was saved after it: syncing would lose them."""


def cell_signature(cells) -> list[tuple[str, str, tuple[str, ...]]]:
    """What a pair must agree on, cell by cell: kind, source and tags (not outputs, ids or
    execution counts)."""
    return [(c.cell_type, c.source, tuple(c.metadata.get("tags", []))) for c in cells]


def pair_differences(source: str | os.PathLike) -> str | None:
    """None when `book/NN_name.py` and its .ipynb agree cell by cell (`cell_signature`), else
    what differs first, in a few words."""
    import jupytext
    import nbformat

    source = Path(source)
    twin = source.with_suffix(".ipynb")
    if not twin.is_file():
        return f"{twin.name} is missing"
    ours = cell_signature(jupytext.read(str(source)).cells)
    theirs = cell_signature(nbformat.read(str(twin), as_version=4).cells)
    if len(ours) != len(theirs):
        return f"{twin.name} has {len(theirs)} cells, {source.name} {len(ours)}"
    for index, (a, b) in enumerate(zip(ours, theirs)):
        if a != b:
            part = "kind" if a[0] != b[0] else "source" if a[1] != b[1] else "tags"
            return f"cell {index}'s {part} differs"
    return None


def sync_notebooks(
    paths: Iterable[str | os.PathLike] | None = None,
    *,
    root: str | os.PathLike | None = None,
) -> list[Path]:
    """Write each chapter's .ipynb from its .py (the source of truth), without outputs, and drop
    the jupytext version line from the .py's header.

    One direction only, unlike `jupytext --sync`, which trusts whichever file is newer. The
    install cell's `REPOSITORY = "..."` line is first set to `_config.yml`'s repository URL.

    Raises:
        NotebookEdited: a notebook whose cells differ from its .py's was saved after the .py (an
            edit made in Jupyter without the pairing); nothing is written. It names the command
            that takes the notebook's cells into the .py first.
    """
    import jupytext

    sources = [Path(p) for p in paths] if paths else discover_chapters(root)
    for source in sources:
        if source.suffix != ".py":
            raise ValueError(f"{source} is not a chapter source (book/NN_name.py)")
        twin = source.with_suffix(".ipynb")
        differs = twin.is_file() and pair_differences(source)
        if differs and twin.stat().st_mtime > source.stat().st_mtime:
            raise NotebookEdited(
                f"{twin} was saved after {source.name} and {differs}: take its cells into the "
                f"source first (jupytext --to py:percent {twin}), or remove the notebook to "
                "keep the source as it is"
            )
    url = repository_settings(root)["url"]
    written = []
    for source in sources:
        text = source.read_text()
        cleaned = VERSION_LINE.sub("", text)
        if url and REPOSITORY_LINE.search(cleaned):
            cleaned = set_repository_url(cleaned, url)  # the URL of _config.yml
        if cleaned != text:
            atomic_write_text(source, cleaned)
        nb = jupytext.read(str(source))
        for index, cell in enumerate(nb.cells):
            cell["id"] = f"cell-{index}"  # stable ids keep diffs of the .ipynb small
            if cell.cell_type == "code":
                cell.outputs, cell.execution_count = [], None
        target = source.with_suffix(".ipynb")
        atomic_write_text(target, jupytext.writes(nb, fmt="ipynb") + "\n")
        written.append(target)
    return written

"""Keeping each chapter's .ipynb twin in step with its .py source (one direction: the .py wins)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

from .chapters import discover_chapters
from .site import REPOSITORY_LINE, repository_settings, set_repository_url


def sync_notebooks(
    paths: Iterable[str | os.PathLike] | None = None,
    *,
    root: str | os.PathLike | None = None,
) -> list[Path]:
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

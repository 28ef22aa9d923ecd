"""A chapter pair survives Jupyter's habits: a notebook saved with its outputs and a .py written
by jupytext's contents manager (with its version in the header) are still in step, `book --sync`
restores both, and a notebook edited and saved without the pairing is never overwritten."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import jupytext
import nbformat
import pytest

from annotated_transformer.book import sync

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def pair(tmp_path) -> Path:
    """A copy of chapter 02's pair, as committed."""
    for suffix in (".py", ".ipynb"):
        shutil.copy(REPO / "book" / f"02_model{suffix}", tmp_path)
    return tmp_path / "02_model.py"


def _older(path: Path, than: Path) -> None:
    stamp = than.stat().st_mtime - 10
    os.utime(path, (stamp, stamp))


def test_the_committed_pair_is_in_step(pair):
    assert sync.pair_differences(pair) is None


def test_a_notebook_saved_with_outputs_is_in_step_and_sync_clears_them(pair):
    twin = pair.with_suffix(".ipynb")
    nb = nbformat.read(str(twin), as_version=4)
    for count, cell in enumerate(c for c in nb.cells if c.cell_type == "code"):
        cell.execution_count = count + 1
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="ran\n")]
        cell.metadata["execution"] = {"iopub.status.idle": "2026-01-01T00:00:00Z"}
    nbformat.write(nb, str(twin))
    assert sync.pair_differences(pair) is None
    _older(twin, pair)
    sync.sync_notebooks([pair])
    cleared = nbformat.read(str(twin), as_version=4)
    assert all(
        not c.outputs and c.execution_count is None
        for c in cleared.cells
        if c.cell_type == "code"
    )


def test_a_source_saved_through_jupytext_is_in_step_and_sync_drops_its_version(pair):
    committed = pair.read_text()
    notebook = jupytext.read(str(pair.with_suffix(".ipynb")))
    jupytext.write(notebook, str(pair), fmt="py:percent")  # what a paired save writes
    assert "jupytext_version:" in pair.read_text()
    assert sync.pair_differences(pair) is None
    sync.sync_notebooks([pair])
    assert pair.read_text() == committed


def test_a_cell_edited_in_the_source_is_a_drift(pair):
    pair.write_text(
        pair.read_text().replace("import math\n", "import math  # edited\n", 1)
    )
    assert "source differs" in sync.pair_differences(pair)


def test_sync_never_overwrites_a_notebook_edited_after_its_source(pair):
    twin = pair.with_suffix(".ipynb")
    nb = nbformat.read(str(twin), as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("print('a cell of my own')"))
    nbformat.write(nb, str(twin))
    _older(pair, twin)
    before = twin.read_bytes()
    with pytest.raises(sync.NotebookEdited, match="jupytext --to py:percent"):
        sync.sync_notebooks([pair])
    assert twin.read_bytes() == before
    # the way the message names: take the notebook's cells into the source, then sync
    jupytext.write(jupytext.read(str(twin)), str(pair), fmt="py:percent")
    sync.sync_notebooks([pair])
    assert "a cell of my own" in pair.read_text()
    assert "jupytext_version:" not in pair.read_text()
    assert sync.pair_differences(pair) is None

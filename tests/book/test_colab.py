"""A chapter's notebook alone, the way Colab opens it: copied into an empty folder and run in a
Python without the package, its install cell installs the package with the `notebook` extra (from
a local path given in AT_INSTALL_FROM, in place of the repository's URL), and the chapter then
runs to its end under the `smoke` profile, writing only into its own folder."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[2]
CHAPTER = "02_model.ipynb"


def _fresh_python(folder: Path) -> Path:
    """A venv that sees this environment's libraries (torch, altair, ...) through a .pth line,
    but not the package: this environment's own .pth files (its editable install of the package)
    are not read from a folder added that way."""
    subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True, timeout=300)
    python = folder / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    (Path(site) / "libraries_of_the_test_environment.pth").write_text(
        sysconfig.get_paths()["purelib"] + "\n"
    )
    return python


@pytest.mark.slow
@pytest.mark.book
def test_a_chapter_alone_installs_the_package_and_runs_under_smoke(tmp_path):
    python = _fresh_python(tmp_path / "venv")
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("AT_") or k in ("AT_DATA_DIR", "AT_OFFLINE", "AT_CACHE_DIR")
    }
    env.pop("PYTHONPATH", None)
    env["AT_INSTALL_FROM"] = str(REPO)
    missing = subprocess.run(
        [str(python), "-c", "import annotated_transformer"],
        env=env,
        capture_output=True,
        cwd=tmp_path,
    )
    assert missing.returncode != 0, "the fresh Python must not see the package yet"
    assert (
        subprocess.run(
            [str(python), "-c", "import altair, torch, papermill"],
            env=env,
            capture_output=True,
            cwd=tmp_path,
        ).returncode
        == 0
    )

    colab = tmp_path / "content"
    colab.mkdir()
    shutil.copy(REPO / "book" / CHAPTER, colab)
    result = subprocess.run(
        [str(python), "-m", "papermill", CHAPTER, "out.ipynb"]
        + ["-p", "profile_name", "smoke", "-k", "python3", "--cwd", str(colab)],
        cwd=colab,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    installed = subprocess.run(
        [str(python), "-c", "import annotated_transformer as a; print(a.__file__)"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    ).stdout
    assert (
        str(tmp_path / "venv") in installed
    )  # installed there by the chapter's first cell
    nb = nbformat.read(str(colab / "out.ipynb"), as_version=4)
    text = "".join(
        o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs
    )
    assert "Chapter 02, run by hand with the 'smoke' profile." in text
    # it wrote into its own folder only: the clone is not involved
    assert (colab / "runs" / "by-hand" / "results" / "smoke" / "model.json").is_file()
    assert sorted(p.name for p in colab.iterdir()) == [CHAPTER, "out.ipynb", "runs"]

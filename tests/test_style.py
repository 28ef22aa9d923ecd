"""One formatter and one line width for the whole repository (pyproject.toml's [tool.ruff])."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def ruff(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ruff", *args], cwd=REPO, capture_output=True, text=True
    )


@pytest.fixture(scope="module", autouse=True)
def needs_ruff():
    if ruff("--version").returncode != 0 and shutil.which("ruff") is None:
        pytest.skip("ruff is not installed: pip install ruff (the test extra)")


def test_every_python_file_is_formatted():
    result = ruff("format", "--check", ".")
    assert result.returncode == 0, (
        f"run `ruff format .` (then `python -m annotated_transformer book --sync` for chapters):\n"
        f"{result.stdout}{result.stderr}"
    )


def test_lint_finds_nothing():
    result = ruff("check", ".")
    assert result.returncode == 0, (
        f"run `ruff check --fix .`:\n{result.stdout}{result.stderr}"
    )

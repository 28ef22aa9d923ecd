"""The book's progress lines: each chapter's expected time from the last good runs."""

from __future__ import annotations

import json
from pathlib import Path

from annotated_transformer.book.progress import expected_times


def _record(folder: Path, chapters: dict) -> None:
    folder.mkdir(parents=True)
    (folder / "book_run.json").write_text(json.dumps({"metrics": {"chapters": chapters}}))


def test_a_chapter_the_last_run_never_ran_takes_the_committed_time(tmp_path):
    ok = lambda s: {"status": "ok", "wall_time_s": s}  # noqa: E731
    _record(
        tmp_path / "committed" / "book_cpu", {"04_training": ok(1200), "07_x": ok(500)}
    )
    _record(tmp_path / "results" / "cpu", {"07_x": ok(700), "06_y": {"status": "failed"}})
    times, where = expected_times("cpu", tmp_path / "results", tmp_path / "committed")
    assert times == {"04_training": 1200.0, "07_x": 700.0}  # the last run's own time wins
    assert where == "the last run and the committed run"
    only, where = expected_times("cpu", tmp_path / "results", None)
    assert only == {"07_x": 700.0} and where == "the last run"
    assert expected_times("cpu", tmp_path / "nothing", None) == ({}, "")


def test_the_progress_line_names_the_section_and_a_whole_word_cut_of_the_code():
    from annotated_transformer.book.progress import ChapterProgress

    cells = [
        {"cell_type": "code", "source": "import torch"},
        {"cell_type": "markdown", "source": "# Chapter\n\nProse.\n\n## 4.6 The real run\n"},
        {"cell_type": "code", "source": "\n" + "run_dir = (results.repo_root() or cwd) / 'runs' / name"},
        {"cell_type": "markdown", "source": ["Prose.\n", "```bash\n", "# a comment\n", "```\n", "#tag\n"]},
        {"cell_type": "code", "source": "x = 1"},
    ]  # fmt: skip
    said = []
    progress = ChapterProgress("[4/9] 04_training", said.append, expected_s=1080)
    progress.notebook(cells)
    assert progress.sections == [""] + ["4.6 The real run"] * 4
    progress.cell_started(0, cells[0]["source"])
    assert progress.line().endswith("; cell 1 of 5: import torch")
    progress.cell_started(2, cells[2]["source"])
    line = progress.line()
    assert "; cell 3 of 5 in 4.6 The real run: run_dir = (results" in line
    shown = line.split("The real run: ")[1]
    code = cells[2]["source"].strip()
    assert shown.endswith(" …") and len(shown) <= 52  # at most 50 characters of code
    assert code.startswith(shown[:-2]) and code[len(shown) - 2] == " "  # whole words
    assert line.startswith("[4/9] 04_training: 0 s so far of about 18 min")
    progress.cell_started(4, cells[4]["source"])
    assert progress.line().endswith("cell 5 of 5 in 4.6 The real run: x = 1")


def test_a_code_line_with_no_break_past_its_middle_is_cut_at_the_width():
    from annotated_transformer.book.progress import shorten

    name = "x = " + "a" * 70
    assert shorten(name) == name[:50] + " …"
    assert shorten("short line") == "short line"

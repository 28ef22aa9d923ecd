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

"""What the terminal shows while the book runs: how long each chapter is expected to take, and
inside a chapter which cell of how many is running, a line a minute, so `book --profile cpu` is
not silent for the twenty minutes of chapter 04.

Papermill calls its execution manager's `cell_start` before each cell; the book's engine
(`engine.py`) passes that on to a `ChapterProgress`, whose thread prints the line. The
expected times are the wall times of the chapter's last good run under the profile: this results
root's `book_run.json`, else the one committed in `results/book_<profile>/`.
"""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path
from typing import Callable

from ..runtime.records import read_json

RECORD_NAME = "book_run.json"


class ChapterProgress:
    """Cell i of N and the time against the expected one, logged every `every_s` seconds."""

    def __init__(
        self,
        prefix: str,
        log: Callable[[str], None],
        *,
        expected_s: float | None = None,
        every_s: float = 60.0,
    ):
        self.prefix, self.log, self.expected_s, self.every_s = (
            prefix,
            log,
            expected_s,
            every_s,
        )
        self.cells = 0
        # the heading each cell sits under ("" before the first)
        self.sections: list[str] = []
        self.cell: int | None = None
        self.cell_line = ""
        self.started = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, daemon=True)

    def __enter__(self) -> "ChapterProgress":
        self.started = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def notebook(self, cells: list[dict]) -> None:
        """The chapter's cells (nbformat dicts): how many, and each one's section."""
        self.cells = len(cells)
        self.sections = section_of_each_cell(cells)

    def cell_started(self, index: int | None, source: str) -> None:
        self.cell = index
        lines = [line for line in (source or "").splitlines() if line.strip()]
        self.cell_line = shorten(lines[0].strip()) if lines else ""

    def line(self) -> str:
        elapsed = time.monotonic() - self.started
        text = f"{self.prefix}: {minutes(elapsed)} so far"
        if self.expected_s:
            text += f" of about {minutes(self.expected_s)}"
        if self.cell is not None:
            text += f"; cell {self.cell + 1} of {self.cells}"
            section = self.sections[self.cell] if self.cell < len(self.sections) else ""
            if section:
                text += f" in {section}"
            if self.cell_line:
                text += f": {self.cell_line}"
        return text

    def _beat(self) -> None:
        while not self._stop.wait(self.every_s):
            self.log(self.line())


# A Markdown ATX heading: up to three spaces, one to six #'s, a space, the text, optional closing #'s.
_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")


def section_of_each_cell(cells: list[dict]) -> list[str]:
    """For each cell, the last Markdown heading at or before it ("4.4 Training", without the
    #'s), so a progress line says which part of the chapter is running, not just a cell number.
    A `#` line inside a fenced code block is code, not a heading."""
    sections, current = [], ""
    for cell in cells:
        if cell.get("cell_type") == "markdown":
            source = cell.get("source", "")
            text = source if isinstance(source, str) else "".join(source)
            fenced = False
            for line in text.splitlines():
                if _FENCE.match(line):
                    fenced = not fenced
                elif not fenced and (heading := _HEADING.match(line)):
                    current = heading.group(1)
        sections.append(current)
    return sections


def shorten(line: str, width: int = 50) -> str:
    """`line` cut to at most `width` characters with an ellipsis: at the last space, comma or
    opening bracket past the middle, else (one long name or string) at `width` itself."""
    if len(line) <= width:
        return line
    cut = max(line.rfind(c, 0, width) for c in " ,(")
    return line[: cut if cut > width // 2 else width].rstrip(" ,(") + " …"


def minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min"


def good_times(path: Path) -> tuple[dict[str, float], dict] | None:
    """{chapter: seconds} of each chapter's last good run in the book record at `path` (a chapter
    that failed since keeps its published run's time), and the record; None when there is no
    readable record."""
    times = {}
    try:
        record = read_json(path, "book_run")
        for name, entry in record["metrics"]["chapters"].items():
            good = entry if entry.get("status") == "ok" else entry.get("published")
            if isinstance(good, dict) and good.get("wall_time_s"):
                times[name] = float(good["wall_time_s"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return times, record


def expected_times(
    profile: str, results_dir: Path, committed: Path | None
) -> tuple[dict[str, float], str]:
    """{chapter: seconds} of each chapter's last good run, and where they come from: this results
    root's record, and for a chapter it has never run, the committed record."""
    merged: dict[str, float] = {}
    sources = []
    for root, where in ((committed, "the committed run"), (results_dir, "the last run")):
        if root is None:
            continue
        folder = f"book_{profile}" if root is committed else profile
        times = (good_times(Path(root) / folder / RECORD_NAME) or ({}, None))[0]
        if times:
            merged.update(times)  # the last run's own times win over the committed ones
            sources.append(where)
    if not merged:
        return {}, ""
    return merged, " and ".join(reversed(sources)) if len(sources) > 1 else sources[0]

"""Every chapter, the introduction included, ends on its findings: the last section is "What this
run shows", written by a call that reads the chapter's results (no number typed into the prose),
and nothing but references follows it."""

import re
from pathlib import Path

import pytest

BOOK = Path(__file__).resolve().parents[2] / "book"
CHAPTERS = sorted(BOOK.glob("[0-9][0-9]_*.py"))
HEADING = re.compile(r"^# (#+) (.+)$", re.M)


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_the_chapter_ends_on_what_this_run_shows(chapter):
    text = chapter.read_text()
    sections = [(m.start(), len(m.group(1)), m.group(2)) for m in HEADING.finditer(text)]
    level2 = [s for s in sections if s[1] == 2]
    start, _, title = level2[-1]
    assert title == "What this run shows", (chapter.name, title)
    tail = text[start:]
    after = [t for at, _, t in sections if at > start]
    assert all(t.lower().startswith("references") for t in after), after
    cells = tail.split("# %%")[1:]
    code = [c for c in cells if not c.startswith(" [markdown]")]
    # the findings come from a function of the results, not from text typed into a cell
    assert code and all(re.search(r"\w+\.closing\(", c) for c in code), chapter.name

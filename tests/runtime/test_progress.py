"""Progress bars: live where someone watches, absent from a page the book runner executes."""

import io

from annotated_transformer.runtime.progress import BOOK_BUILD_ENV, on_a_page, progress_bar


def test_a_bar_draws_in_a_terminal_and_not_on_an_executed_page(monkeypatch):
    monkeypatch.delenv(BOOK_BUILD_ENV, raising=False)
    out = io.StringIO()
    assert list(progress_bar(range(3), file=out, mininterval=0)) == [0, 1, 2]
    assert not on_a_page() and "3/3" in out.getvalue()
    monkeypatch.setenv(BOOK_BUILD_ENV, "1")
    out = io.StringIO()
    assert list(progress_bar(range(3), file=out)) == [0, 1, 2]
    assert on_a_page() and out.getvalue() == ""

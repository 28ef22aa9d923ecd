"""Progress bars that suit the place they are drawn.

In a terminal, or a notebook someone is running, a long loop shows a live tqdm bar. In a page the
book runner executes (it sets AT_BOOK_BUILD=1), a stored text bar keeps every refresh as a line of
the page, so there the bar is off and the caller leaves one summary line instead.
"""

from __future__ import annotations

import os
import warnings

from tqdm import TqdmWarning

with warnings.catch_warnings():
    # In a notebook without ipywidgets tqdm.auto falls back to a text bar, and says so with a
    # warning that names the reader's own virtualenv: the fallback is what we want anyway.
    warnings.simplefilter("ignore", TqdmWarning)
    from tqdm.auto import tqdm

BOOK_BUILD_ENV = "AT_BOOK_BUILD"


def on_a_page() -> bool:
    """True while the book runner executes this code into a page (AT_BOOK_BUILD=1)."""
    return os.environ.get(BOOK_BUILD_ENV, "") not in ("", "0")


def progress_bar(iterable=None, *, disable: bool = False, **options):
    """A tqdm bar, off on an executed page (see the module's docstring)."""
    return tqdm(iterable, disable=disable or on_a_page(), **options)

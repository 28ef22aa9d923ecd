"""Putting a chart or a table on the page, and exporting a chart to HTML, SVG or PNG.

In Jupyter and Colab `show` uses altair's own renderer. Under the book runner (`AT_BOOK_BUILD=1`)
it emits a small div with the chart's spec inline, drawn by the Vega scripts the site serves from
`_static/vendor/` (see `_static/at-charts.js`): altair's default output loads Vega from a CDN and
draws nothing offline.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any, Iterable

import altair as alt
import pandas as pd

from ..runtime.files import ensure_folder, staged_path
from ..runtime.progress import on_a_page

CHART_CLASS = "at-vega-chart"


EXPORT_FORMATS = ("html", "svg", "png")


def in_book_build() -> bool:
    """True when the book runner executes this notebook (it sets AT_BOOK_BUILD=1)."""
    return on_a_page()


def chart_spec(chart: alt.TopLevelMixin) -> dict:
    """The Vega-Lite spec of `chart`; the builders here bound their data, so the row cap is lifted."""
    with alt.data_transformers.disable_max_rows():
        return chart.to_dict()


def book_html(chart: alt.TopLevelMixin) -> str:
    """A div plus the spec as inline JSON; `_static/at-charts.js` finds it and calls vegaEmbed."""
    chart_id = f"at-chart-{uuid.uuid4().hex[:12]}"
    # "</" inside the JSON would end the script element early.
    spec = json.dumps(chart_spec(chart), separators=(",", ":")).replace("</", "<\\/")
    return (
        f'<div class="{CHART_CLASS}" id="{chart_id}" data-spec="{chart_id}-spec">'
        "<noscript>This chart needs JavaScript.</noscript></div>\n"
        f'<script type="application/json" id="{chart_id}-spec">{spec}</script>\n'
        # Pages loaded after the scripts (or re-rendered) draw at once; others on DOMContentLoaded.
        f"<script>window.atDrawCharts && window.atDrawCharts();</script>"
    )


def mimebundle(chart: alt.TopLevelMixin) -> dict:
    """Output for the book: the offline HTML for the site and a one-line text stand-in.

    (altair's own mimetype, "application/vnd.vegalite.v6.json", is not valid in a notebook file.)
    """
    title = chart_spec(chart).get("title")
    if isinstance(title, dict):
        title = title.get("text")
    return {
        "text/plain": f"<altair chart{': ' + str(title) if title else ''}>",
        "text/html": book_html(chart),
    }


def show(chart: alt.TopLevelMixin) -> None:
    """Display `chart`: offline-ready HTML under the book runner, altair's renderer elsewhere."""
    # deferred: IPython is there in Jupyter, not in every script
    from IPython.display import display

    if in_book_build():
        display(mimebundle(chart), raw=True)
    else:
        with alt.data_transformers.disable_max_rows():
            display(chart)


def export_format(path: Path, named: str | None = None) -> str:
    """The format a picture written to `path` takes from its suffix (one of EXPORT_FORMATS), its
    folder checked to exist; anything else is one line naming `named` (default the path)."""
    named = named or str(path)
    fmt = path.suffix.lstrip(".").lower()
    if fmt not in EXPORT_FORMATS:
        raise ValueError(
            f"{named}: unknown format {path.suffix or '(none)'!r}; "
            f"end the name in {', '.join('.' + f for f in EXPORT_FORMATS)}"
        )
    if not path.parent.is_dir():
        raise FileNotFoundError(f"{named}: the folder {path.parent} does not exist")
    return fmt


def export(
    chart: alt.TopLevelMixin,
    path_stem: str | os.PathLike,
    formats: Iterable[str] = EXPORT_FORMATS,
    *,
    scale: float = 2.0,
) -> dict[str, Path]:
    """Write `chart` as `<path_stem>.html/.svg/.png` with vl-convert, all offline.

    The HTML inlines the Vega libraries (no remote script), the SVG is vector, the PNG is
    rendered at `scale` times the chart's size.

    Returns:
        {format: path written}.
    """
    stem = Path(path_stem)
    ensure_folder(stem.parent)
    written: dict[str, Path] = {}
    with alt.data_transformers.disable_max_rows():
        for fmt in formats:
            path = stem.with_name(f"{stem.name}.{fmt}")
            if fmt not in EXPORT_FORMATS:
                raise ValueError(
                    f"unknown export format {fmt!r}; choose from {', '.join(EXPORT_FORMATS)}"
                )
            with staged_path(path) as staged:
                if fmt == "html":
                    chart.save(staged, format="html", inline=True)
                elif fmt == "svg":
                    chart.save(staged, format="svg")
                else:
                    chart.save(staged, format="png", scale_factor=scale)
            written[fmt] = path
    return written


TABLE_CLASS = "at-summary"


def table_html(df: pd.DataFrame, na_rep: str = "", **formats: str) -> str:
    """`df` as a compact HTML table; `formats` maps column names to format strings ("{:.2f}").

    Missing values print as `na_rep`. The site's stylesheet lets a wide table scroll sideways
    instead of being clipped.
    """
    styled = df.copy()
    for column, fmt in formats.items():
        styled[column] = styled[column].map(lambda v, f=fmt: _formatted(v, f, na_rep))
    # A reader's table: yes and no rather than Python's True and False, and headers in words
    # (a column named in snake_case reads with spaces).
    styled = styled.map(
        lambda v: {True: "yes", False: "no"}.get(v, v) if _is_bool(v) else v
    )
    styled.columns = [reader_header(c) for c in styled.columns]
    table = styled.to_html(index=False, classes=TABLE_CLASS, border=0, na_rep=na_rep)
    return f'<div class="at-table">{table}</div>'


def reader_header(column: Any) -> str:
    """A column name as a reader sees it: "valid_ppl" -> "valid ppl"."""
    return str(column).replace("_", " ")


def _is_bool(value: Any) -> bool:
    import numpy as np

    return isinstance(value, (bool, np.bool_))


def _formatted(value: Any, fmt: str, na_rep: str) -> str:
    """A cell in `fmt`; text (e.g. "n/a" in a numeric column) and missing values as they are."""
    if isinstance(value, str):
        return value
    try:
        missing = bool(pd.isna(value))
    except (TypeError, ValueError):  # lists, tuples: never "missing"
        missing = False
    return na_rep if missing else fmt.format(value)


def show_table(df: pd.DataFrame, na_rep: str = "", **formats: str) -> None:
    """Display `df` as `table_html` does: one line in a chapter instead of a styling block."""
    from IPython.display import HTML, display

    display(HTML(table_html(df, na_rep=na_rep, **formats)))


SOURCE_CLASS = "at-source"
# How far a wrapped line of source hangs under its own first character: one indentation level.
SOURCE_HANG = 4


def source_html(source: str) -> str:
    """`source` highlighted as Python (the site's Pygments classes), one block per line with a
    hanging indent: a line wider than the column wraps under its own indentation plus
    `SOURCE_HANG` characters, never back at column 0, so the code's shape survives the wrap.

    The lines are blocks with no newline characters between them, so a reader's copy (the
    browser's innerText) has one newline a line; an empty line keeps its height with a space.
    """
    from html import escape

    try:
        from pygments import highlight
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import PythonLexer
    except ImportError:  # no Pygments: the same layout, unhighlighted
        body = [escape(line) for line in source.splitlines()]
    else:
        html = highlight(source, PythonLexer(stripnl=False), HtmlFormatter(nowrap=True))
        body = html.splitlines()
    lines = []
    for text, html_line in zip(source.splitlines(), body):
        hang = len(text) - len(text.lstrip(" ")) + SOURCE_HANG
        style = f"display:block;padding-left:{hang}ch;text-indent:-{hang}ch"
        lines.append(f'<span style="{style}">{html_line or " "}</span>')
    pre_style = "white-space:pre-wrap;overflow-wrap:anywhere"
    return (
        f'<div class="{SOURCE_CLASS} highlight-python notranslate"><div class="highlight">'
        f'<pre style="{pre_style}">{"".join(lines)}</pre></div></div>'
    )


def show_source(obj: Any) -> None:
    """The package's own source of a function, method or class, as a reader would open it.

    In Jupyter and Colab a Markdown code block; on the book's pages `source_html`, whose long
    lines wrap under their own indentation instead of at column 0."""
    import inspect

    from IPython.display import HTML, Markdown, display

    source = inspect.getsource(obj).rstrip()
    if in_book_build():
        display(HTML(source_html(source)))
    else:
        display(Markdown(f"```python\n{source}\n```"))

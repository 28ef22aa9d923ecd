"""The package's source on a page: a wrapped line continues under its own indentation, never at
column 0, and the text a reader copies is the source."""

import html
import inspect
import re

from annotated_transformer.viz import display

LINE = re.compile(
    r'<span style="display:block;padding-left:(\d+)ch;text-indent:-(\d+)ch">'
)


def _lines(page: str) -> list[tuple[int, int, str]]:
    pre = page[page.index("<pre") : page.rindex("</pre>")]
    parts = LINE.split(pre)[1:]
    found = []
    for pad, indent, body in zip(parts[0::3], parts[1::3], parts[2::3]):
        text = html.unescape(re.sub(r"<[^>]+>", "", body))
        found.append((int(pad), int(indent), text))
    return found


def test_each_line_hangs_under_its_own_indentation():
    source = inspect.getsource(display.source_html).rstrip()
    lines = _lines(display.source_html(source))
    assert len(lines) == len(source.splitlines())
    for (pad, indent, _), text in zip(lines, source.splitlines()):
        own = len(text) - len(text.lstrip(" "))
        assert pad == indent == own + display.SOURCE_HANG


def test_the_copied_text_is_the_source():
    source = 'def f(x):\n    """A <docstring> & more."""\n\n    return x  # done'
    lines = _lines(display.source_html(source))
    copied = "\n".join(text for _, _, text in lines)
    assert copied.replace("\n \n", "\n\n") == source  # an empty line holds one space
    assert "\n" not in display.source_html(source).split("<pre", 1)[1]


def test_the_block_wraps_instead_of_scrolling():
    page = display.source_html("x = 1")
    assert "white-space:pre-wrap" in page and display.SOURCE_CLASS in page

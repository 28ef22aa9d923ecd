"""Numbers as the chapters' sentences and tables write them, in one place so that every chapter
writes an interval and a signed difference the same way."""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd


def plus_minus(value: float, half_width: float | None, digits: int = 2) -> str:
    """A score beside the half-width of its 95% interval, "36.13 ± 1.20"; the bare score when there
    is no interval (None, NaN or pandas' NA)."""
    if half_width is None or pd.isna(half_width):
        return f"{value:.{digits}f}"
    return f"{value:.{digits}f} ± {half_width:.{digits}f}"


def signed(value: float) -> str:
    """`value` to two decimals with its sign, and a zero as "0.00" (not "-0.00" or "+0.00")."""
    text = f"{value:+.2f}"
    return "0.00" if text in ("+0.00", "-0.00") else text


def file_size(size: int) -> str:
    """A file's size in the unit that gives it a digit before the point: "12.7 MB", "24 kB",
    "318 bytes" (a small file printed in MB reads "0.00 MB", as if empty)."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if size >= scale:
            return f"{size / scale:.{1 if size < 100 * scale else 0}f} {unit}"
    return f"{size:,} byte{'s' * (size != 1)}"


def gap(a: float, b: float, digits: int = 1) -> str:
    """`a - b` as the difference of the two numbers as printed, without its sign: beside 50.6
    and 9.6 it reads 41.0, never the 41.1 of the unrounded 50.64 - 9.56 that a reader cannot
    get back from the page."""
    shown = round(float(f"{a:.{digits}f}") - float(f"{b:.{digits}f}"), digits)
    return f"{abs(shown):.{digits}f}"


def listed(items: Sequence[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    return f"{', '.join(items[:-1])} and {items[-1]}"


def plural(n: int, word: str, many: str | None = None) -> str:
    """ "1 head", "3 heads", "2 batches" (a word ending in s takes es), `many` where it is its own."""
    if n == 1:
        return f"{n:,} {word}"
    return f"{n:,} {many or (word + 'es' if word.endswith('s') else word + 's')}"


def capitalized(text: str) -> str:
    """`text` with its first letter capitalized and the rest as it is ("The XX variant")."""
    return text[:1].upper() + text[1:]


class Phrases:
    """A chapter's phrase table (its `phrases` module): one template a key, rendered with a
    verdict's fields (`str.format`), so that what a chapter found and how it is said stay apart.
    A key the table lacks, or a field its template names that the verdict lacks, is a KeyError
    naming it."""

    def __init__(self, table: Mapping[str, str]):
        self.table = {key: " ".join(text.split()) for key, text in table.items()}

    def __call__(self, key: str, verdict: Any = None, **fields: Any) -> str:
        template = self.table.get(key)
        if template is None:
            raise KeyError(f"the phrase table has no phrase {key!r}")
        values = {**_fields(verdict), **fields}
        for _, name, _, _ in string.Formatter().parse(template):
            field = (name or "").split(".")[0].split("[")[0]
            if field and field not in values:
                raise KeyError(f"phrase {key!r} names {field!r}, which it was not given")
        return template.format(**values)


def _fields(verdict: Any) -> dict:
    if verdict is None:
        return {}
    if isinstance(verdict, Mapping):
        return dict(verdict)
    return {name: getattr(verdict, name) for name in verdict.__dataclass_fields__}

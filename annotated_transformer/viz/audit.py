"""Reading the charts a page carries, to check that each reads at a glance.

The book's charts travel as Vega-Lite specs inside the executed notebooks (`display.book_html`).
`page_specs` finds them again; `series_collisions` names the series of one chart that a reader
cannot tell apart: two values of a colour field drawn in the same colour with the same stroke,
which happens when a categorical field has more values than its palette has colours (Vega-Lite
cycles the palette) and nothing else (a dash, a shape) tells them apart, or when an explicit
range repeats a colour.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterator

from ..runtime.records import parse_json, read_json

# Sizes of Vega's categorical schemes the book may use; Vega-Lite's default for a nominal
# colour is "tableau10".
SCHEME_SIZES = {
    "tableau10": 10,
    "category10": 10,
    "tableau20": 20,
    "category20": 20,
    "category20b": 20,
    "category20c": 20,
    "set1": 9,
    "set2": 8,
    "set3": 12,
    "dark2": 8,
    "paired": 12,
    "pastel1": 9,
    "pastel2": 8,
    "accent": 8,
    "observable10": 10,
}
DEFAULT_SCHEME = "tableau10"
# Vega-Lite's default strokeDash range: [[1, 0], [4, 2], [2, 1], [1, 1], [1, 2, 4, 2]].
DEFAULT_DASHES = 5
# The default shape range: circle, square, cross, diamond, triangle-up, triangle-down, ...
DEFAULT_SHAPES = 8
SERIES_MARKS = {
    "line",
    "point",
    "circle",
    "square",
    "trail",
    "area",
    "bar",
    "tick",
    "rule",
}

_SPEC = re.compile(
    r'<script type="application/json" id="[^"]+-spec">(.*?)</script>', re.S
)


def page_specs(notebook: str | Path) -> list[tuple[int, dict]]:
    """(cell index, Vega-Lite spec) of every chart in an executed notebook's outputs."""
    cells = read_json(notebook)["cells"]
    found = []
    for index, cell in enumerate(cells):
        for output in cell.get("outputs", []):
            html = output.get("data", {}).get("text/html", "")
            html = "".join(html) if isinstance(html, list) else html
            for text in _SPEC.findall(html):
                spec = text.replace("<\\/", "</")
                found.append(
                    (index, parse_json(spec, f"{notebook} cell {index}'s chart"))
                )
    return found


def _units(
    spec: dict, inherited: dict | None = None, scope: tuple = ()
) -> Iterator[tuple[dict, dict, tuple]]:
    """(unit spec, the data it draws, its colour scope) of every mark in a (layered,
    concatenated, faceted) spec. Vega-Lite shares a colour scale across layers and concatenated
    views unless `resolve` makes it independent; units of one scope share one scale."""
    data = spec.get("data") or inherited or {}
    independent = (spec.get("resolve") or {}).get("scale", {}).get(
        "color"
    ) == "independent"
    for key in ("layer", "concat", "hconcat", "vconcat"):
        for i, child in enumerate(spec.get(key, [])):
            yield from _units(child, data, scope + ((key, i),) if independent else scope)
    if "spec" in spec:
        yield from _units(spec["spec"], data, scope)
    if "mark" in spec:
        yield spec, data, scope


def _mark_type(unit: dict) -> str:
    mark = unit["mark"]
    return mark.get("type", "") if isinstance(mark, dict) else mark


def _values(data: dict, datasets: dict) -> list[dict]:
    if "values" in data:
        return list(data["values"])
    if "name" in data:
        return list(datasets.get(data["name"], []))
    return []


def _domain(encoding: dict, rows: list[dict]) -> list:
    """The values a channel's field takes, in Vega-Lite's default (sorted) order, or its explicit
    scale domain."""
    scale = encoding.get("scale") or {}
    if isinstance(scale.get("domain"), list):
        return list(scale["domain"])
    field = encoding.get("field")
    values = {row.get(field) for row in rows if field in row}
    return sorted(values, key=lambda v: (v is None, str(v)))


def _palette(encoding: dict) -> list | int:
    """The colours a categorical colour channel cycles through: its explicit range, or the
    size of its scheme."""
    scale = encoding.get("scale") or {}
    if isinstance(scale.get("range"), list):
        return list(scale["range"])
    scheme = scale.get("scheme", DEFAULT_SCHEME)
    if isinstance(scheme, dict):
        scheme = scheme.get("name", DEFAULT_SCHEME)
    return SCHEME_SIZES.get(scheme, 10)


def _cycle(channel: dict | None, default_size: int) -> int | list | None:
    """How the other channel on the same field separates series: its range or its size."""
    if channel is None:
        return None
    scale = channel.get("scale") or {}
    if isinstance(scale.get("range"), list):
        return [json.dumps(v) for v in scale["range"]]
    return default_size


def _style(index: int, style) -> Any:
    if style is None:
        return None
    if isinstance(style, list):
        return style[index % len(style)]
    return index % style


def series_collisions(spec: dict) -> list[str]:
    """The pairs of series in `spec` drawn alike (same colour, same dash and shape), one line
    each, naming the chart's title and the two values; [] when every series is distinct. The
    values of a colour field are pooled over every unit that shares its scale."""
    datasets = spec.get("datasets", {})
    title = spec.get("title")
    title = title.get("text") if isinstance(title, dict) else title
    scales: dict[tuple, dict] = {}
    for unit, data, scope in _units(spec):
        encoding = unit.get("encoding", {})
        colour = encoding.get("color")
        if _mark_type(unit) not in SERIES_MARKS or not isinstance(colour, dict):
            continue
        if colour.get("type") not in ("nominal", "ordinal") or "field" not in colour:
            continue
        field = colour["field"]
        shared = scales.setdefault(
            (scope, field),
            {"colour": colour, "values": [], "dashes": [], "shapes": []},
        )
        shared["values"] += _domain(colour, _values(data, datasets))
        for name, default, key in (
            ("strokeDash", DEFAULT_DASHES, "dashes"),
            ("shape", DEFAULT_SHAPES, "shapes"),
        ):
            other = encoding.get(name)
            same = isinstance(other, dict) and other.get("field") == field
            shared[key].append(_cycle(other, default) if same else None)
    found = []
    for (_, field), shared in scales.items():
        colour = shared["colour"]
        explicit = (colour.get("scale") or {}).get("domain")
        domain = (
            list(explicit)
            if isinstance(explicit, list)
            else sorted(set(shared["values"]), key=lambda v: (v is None, str(v)))
        )
        palette = _palette(colour)
        # a dash or shape separates series only where every unit of the scale draws it
        dashes = shared["dashes"][0] if None not in shared["dashes"] else None
        shapes = shared["shapes"][0] if None not in shared["shapes"] else None
        seen: dict[tuple, Any] = {}
        for i, value in enumerate(domain):
            colour_i = (
                palette[i % len(palette)] if isinstance(palette, list) else i % palette
            )
            key = (json.dumps(colour_i), _style(i, dashes), _style(i, shapes))
            if key in seen:
                found.append(
                    f"{title or 'a chart'}: {field} {seen[key]!r} and {value!r} share colour "
                    f"{colour_i} and stroke"
                )
            else:
                seen[key] = value
    return found

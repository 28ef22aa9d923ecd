"""Reading the charts a page carries, to check that each reads at a glance.

The book's charts travel as Vega-Lite specs inside the executed notebooks (`display.book_html`).
`page_specs` finds them again; `series_collisions` names the series of one chart that a reader
cannot tell apart: two values of a colour field drawn in the same colour with the same stroke,
which happens when a categorical field has more values than its palette has colours (Vega-Lite
cycles the palette) and nothing else (a dash, a shape) tells them apart, or when an explicit
range repeats a colour. `chart_faults` adds the other ways a reader loses a series: two drawn at
exactly the same places (`hidden_series`), an error bar that stands at no point
(`detached_intervals`), and two legends of one title (`repeated_legends`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterator

from annotated_transformer.runtime.records import parse_json, read_json

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


def _series_units(spec: dict) -> Iterator[tuple[dict, dict, tuple, dict, dict]]:
    """(unit, data, scope, encoding, colour) of every unit whose series a categorical
    colour field tells apart."""
    for unit, data, scope in _units(spec):
        encoding = unit.get("encoding", {})
        colour = encoding.get("color")
        if _mark_type(unit) not in SERIES_MARKS or not isinstance(colour, dict):
            continue
        if colour.get("type") in ("nominal", "ordinal") and "field" in colour:
            yield unit, data, scope, encoding, colour


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
    for _, data, scope, encoding, colour in _series_units(spec):
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


# ---------------------------------------------------------------------------------------------
# Series drawn on top of each other, intervals away from their points, a legend given twice

POSITIONS = ("x", "x2", "y", "y2", "xOffset", "yOffset")


def _title(spec: dict) -> str:
    """The chart's title, else its first panel's, for naming it in a fault."""
    title = spec.get("title")
    title = title.get("text") if isinstance(title, dict) else title
    if isinstance(title, list):
        title = " ".join(title)
    if not title:
        for key in ("layer", "concat", "hconcat", "vconcat"):
            for child in spec.get(key, []):
                found = _title(child)
                if found != "a chart":
                    return found
    return title or "a chart"


def _position(channel: Any, row: dict) -> Any:
    """Where `channel` puts `row`: the row's value of its field, else its constant."""
    if isinstance(channel, dict) and "field" in channel:
        return row.get(channel["field"])
    if isinstance(channel, dict):
        return json.dumps(channel.get("value", channel.get("datum")))
    return row.get(str(channel).split(":")[0]) if isinstance(channel, str) else None


def _drawn_as_given(unit: dict) -> bool:
    """Whether the unit draws its data's rows where their fields say: no transform but filters
    (a filter only hides rows) and no aggregate, bin or time unit on a position."""
    transforms = unit.get("transform", [])
    if any(set(t) - {"filter"} for t in transforms):
        return False
    encoding = unit.get("encoding", {})
    return not any(
        isinstance(encoding.get(c), dict)
        and {"aggregate", "bin", "timeUnit"} & set(encoding[c])
        for c in POSITIONS
    )


def hidden_series(spec: dict) -> list[str]:
    """The pairs of series of one mark drawn at exactly the same places, so that the one drawn
    last hides the other whatever their colours (two heads' attention lines to the same words):
    one line each, naming the chart's title and the two values."""
    datasets = spec.get("datasets", {})
    found = []
    for unit, data, _, encoding, colour in _series_units(spec):
        if not _drawn_as_given(unit):
            continue
        channels = [encoding[c] for c in POSITIONS if c in encoding]
        places: dict[Any, set] = {}
        for row in _values(data, datasets):
            key = row.get(colour["field"])
            places.setdefault(key, set()).add(
                tuple(json.dumps(_position(c, row)) for c in channels)
            )
        # a dash on the same field lets the line beneath show through: two series with different
        # dashes at the same places are both seen
        dash = encoding.get("strokeDash")
        dashed = isinstance(dash, dict) and dash.get("field") == colour["field"]
        order = _domain(dash, _values(data, datasets)) if dashed else []
        styles = _cycle(dash, DEFAULT_DASHES) if dashed else None
        seen: dict[tuple, Any] = {}
        for value in sorted(places, key=lambda v: (v is None, str(v))):
            style = (
                _style(order.index(value), styles) if dashed and value in order else None
            )
            drawn = (frozenset(places[value]), style)
            if drawn in seen:
                found.append(
                    f"{_title(spec)}: {colour['field']} {seen[drawn]!r} and {value!r} are "
                    "drawn at the same places: the one drawn last hides the other"
                )
            else:
                seen[drawn] = value
    return found


POINT_MARKS = {"point", "circle", "square"}


def _layers(spec: dict, inherited: dict | None = None) -> Iterator[tuple[dict, dict]]:
    """(layered spec, the data it inherits) of every layer chart inside `spec`."""
    data = spec.get("data") or inherited or {}
    if "layer" in spec:
        yield spec, data
    for key in ("layer", "concat", "hconcat", "vconcat"):
        for child in spec.get(key, []):
            yield from _layers(child, data)
    if "spec" in spec:
        yield from _layers(spec["spec"], data)


def detached_intervals(spec: dict, tolerance: float = 1e-9) -> list[str]:
    """The error bars of a layered chart (rules from y to y2) that stand at no point of the same
    chart: each bar must be drawn at a point's x, spanning that point's y. One line per bar."""
    datasets = spec.get("datasets", {})
    found = []
    for layered, data in _layers(spec):
        points, bars = [], []
        for unit, unit_data, _ in _units(layered, data):
            encoding = unit.get("encoding", {})
            mark = unit["mark"]
            kind = _mark_type(unit)
            with_points = kind in POINT_MARKS or (
                kind == "line" and isinstance(mark, dict) and mark.get("point")
            )
            rows = _values(unit_data, datasets)
            if with_points and "x" in encoding and "y" in encoding:
                points += [
                    (_position(encoding["x"], r), _position(encoding["y"], r))
                    for r in rows
                ]
            elif kind == "rule" and {"x", "y", "y2"} <= set(encoding):
                bars += [
                    tuple(_position(encoding[c], r) for c in ("x", "y", "y2"))
                    for r in rows
                ]
        if not points:
            continue

        def near(a, b) -> bool:
            try:
                return abs(float(a) - float(b)) <= tolerance * max(1.0, abs(float(b)))
            except (TypeError, ValueError):
                return a == b

        for x, low, high in bars:
            low, high = sorted((low, high), key=lambda v: (v is None, v))
            if not any(
                near(x, px) and py is not None and low <= py <= high for px, py in points
            ):
                found.append(
                    f"{_title(spec)}: the interval {low:g} to {high:g} at x = {x:g} is "
                    "drawn at no point"
                )
    return found


def _vega_legends(node: Any, group: tuple = ()) -> Iterator[tuple[tuple, Any]]:
    """(the group it is drawn in, title) of every legend of a compiled Vega spec."""
    if isinstance(node, dict):
        for legend in node.get("legends") or []:
            yield group, legend.get("title")
        for i, mark in enumerate(node.get("marks") or []):
            yield from _vega_legends(mark, group + (i,))


def repeated_legends(spec: dict) -> list[str]:
    """Legends of one chart that share a title, as Vega-Lite compiles the spec: a colour and a
    shape on the same field whose scales are resolved differently are keyed twice, and a reader
    cannot tell which key is which. One line per repeated title."""
    import vl_convert

    version = re.search(r"/v(\d+\.\d+)", spec.get("$schema", ""))
    supported = vl_convert.get_vegalite_versions()
    vega = vl_convert.vegalite_to_vega(
        spec,
        **({"vl_version": version[1]} if version and version[1] in supported else {}),
    )
    vega = parse_json(vega, "the compiled chart") if isinstance(vega, str) else vega
    titles = [
        json.dumps(title)
        for _, title in _vega_legends(vega)
        if title not in (None, "", [])
    ]
    return [
        f"{_title(spec)}: {title_count} legends are titled {title}"
        for title, title_count in ((t, titles.count(t)) for t in dict.fromkeys(titles))
        if title_count > 1
    ]


def chart_faults(spec: dict) -> list[str]:
    """Everything that keeps a reader from telling a chart's series apart: series drawn alike
    (`series_collisions`), series drawn on top of each other (`hidden_series`), an error bar at no
    point (`detached_intervals`) and a legend given twice (`repeated_legends`)."""
    return (
        series_collisions(spec)
        + hidden_series(spec)
        + detached_intervals(spec)
        + repeated_legends(spec)
    )

"""The package's doors: every JSON text it reads goes through one codec (runtime/records.py:
strict, bounded, one line per refusal), so no other module may call the json module's parsers."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "annotated_transformer"

# The modules allowed to parse JSON themselves, and why: the one list.
JSON_PARSERS_ALLOWED = {
    "runtime/records.py": "the codec itself (parse_json, read_json, read_lines)",
}
# What parses JSON: the json module's parsers, and other JSON libraries (imported at all).
JSON_PARSING_NAMES = {"load", "loads", "JSONDecoder", "decoder", "scanner"}
OTHER_JSON_LIBRARIES = {"simplejson", "orjson", "ujson", "rapidjson", "ijson"}


def json_parsing(source: str) -> list[str]:
    """Where `source` parses JSON itself: "line 12: json.loads", one entry per use."""
    tree = ast.parse(source)
    aliases = set()  # the names the json module is bound to
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]
                if top in OTHER_JSON_LIBRARIES:
                    found.append(f"line {node.lineno}: import {alias.name}")
                elif alias.name == "json":
                    aliases.add(alias.asname or "json")
                elif top == "json":  # import json.decoder
                    found.append(f"line {node.lineno}: import {alias.name}")
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            top = node.module.split(".")[0]
            if top in OTHER_JSON_LIBRARIES or node.module.startswith("json."):
                found.append(f"line {node.lineno}: from {node.module} import ...")
            elif node.module == "json":
                for alias in node.names:
                    if alias.name in JSON_PARSING_NAMES or alias.name == "*":
                        found.append(f"line {node.lineno}: from json import {alias.name}")
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
            and node.attr in JSON_PARSING_NAMES
        ):
            found.append(f"line {node.lineno}: {node.value.id}.{node.attr}")
    return sorted(found, key=lambda entry: int(entry.split(":")[0].split()[1]))


def modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_only_the_codec_parses_json(path):
    name = path.relative_to(PACKAGE).as_posix()
    if name in JSON_PARSERS_ALLOWED:
        return
    found = json_parsing(path.read_text(encoding="utf-8"))
    assert not found, (
        f"{name} parses JSON itself ({'; '.join(found)}): read through "
        "runtime.records (read_json, read_lines, parse_json, read_record), the package's one "
        "strict JSON codec, or add the module to JSON_PARSERS_ALLOWED here with the reason"
    )


def test_the_allowed_modules_exist_and_are_few():
    assert len(JSON_PARSERS_ALLOWED) <= 2
    for name in JSON_PARSERS_ALLOWED:
        assert (PACKAGE / name).is_file(), f"{name} is allowed but no longer exists"


@pytest.mark.parametrize(
    "source",
    [
        "import json\njson.loads(text)\n",
        "import json\nvalue = json.load(handle)\n",
        "import json as j\nparse = j.loads\n",
        "import json\ndecoder = json.JSONDecoder()\n",
        "from json import loads\n",
        "from json import JSONDecoder as D\n",
        "from json.decoder import JSONDecoder\n",
        "import json.decoder\n",
        "import orjson\n",
    ],
)
def test_the_scan_sees_each_way_of_parsing(source):
    assert json_parsing(source), source


def test_the_scan_lets_writing_and_strings_be():
    source = (
        "import json\ntext = json.dumps({'a': 1})\nname = 'json.loads'\n"
        "from json import dumps\nclass Loads: pass\nrecord.loads(text)\n"
    )
    assert json_parsing(source) == []

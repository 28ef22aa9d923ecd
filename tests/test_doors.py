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


# ------------------------------------------------------------------------------------------ writing
# The modules allowed to write, move or delete files themselves, and why: the one list. Every
# other module writes through runtime/files.py (staged atomic writes, moves, removals, folders).
FILE_WRITERS_ALLOWED = {
    "runtime/files.py": "the writer itself (atomic_write and the moves, removals and folders)",
}
# What changes files: Path methods, and the os, shutil, tempfile and torch functions, by name.
PATH_MUTATORS = {
    "write_text",
    "write_bytes",
    "unlink",
    "rmdir",
    "mkdir",
    "symlink_to",
    "hardlink_to",
    "touch",
    "chmod",
    "extractall",
}
# Path.rename/replace take one path; pandas' rename and dataclasses' replace take keywords, and
# str.replace two strings: one positional argument and no keyword is a file being moved.
PATH_MOVERS = {"rename", "replace"}
MODULE_MUTATORS = {
    "os": {
        "replace", "rename", "renames", "remove", "unlink", "rmdir", "removedirs",
        "makedirs", "mkdir", "symlink", "link", "truncate", "chmod",
    },
    "tempfile": {
        "TemporaryDirectory", "TemporaryFile", "NamedTemporaryFile", "mkstemp", "mkdtemp",
    },
    "shutil": {"move", "rmtree", "copy", "copy2", "copytree", "copyfile", "copyfileobj"},
    "torch": {"save"},
}  # fmt: skip
WRITE_MODE = set("wax+")


def _mode(call: ast.Call, position: int) -> str | None:
    """The literal mode of an open() call: the argument at `position`, or mode=."""
    for keyword in call.keywords:
        if keyword.arg == "mode":
            node = keyword.value
            break
    else:
        node = call.args[position] if len(call.args) > position else None
    return (
        node.value
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        else None
    )


def file_mutations(source: str) -> list[str]:
    """Where `source` writes, moves or deletes files itself: "line 12: os.replace", one per call."""
    tree = ast.parse(source)
    bound = {}  # local name -> module name, for os, shutil, torch and their functions
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in MODULE_MUTATORS:
                    bound[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.module in MODULE_MUTATORS:
            for alias in node.names:
                if alias.name in MODULE_MUTATORS[node.module] or alias.name == "*":
                    bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func, what = node.func, None
        if isinstance(func, ast.Name):
            if func.id == "open" and set(_mode(node, 1) or "") & WRITE_MODE:
                what = f"open(..., {_mode(node, 1)!r})"
            elif "." in bound.get(func.id, ""):
                what = bound[func.id]
        elif isinstance(func, ast.Attribute):
            owner = func.value.id if isinstance(func.value, ast.Name) else None
            module = bound.get(owner) if owner else None
            if module in MODULE_MUTATORS:
                if func.attr in MODULE_MUTATORS[module]:
                    what = f"{module}.{func.attr}"
            elif func.attr in PATH_MUTATORS:
                what = f".{func.attr}()"
            elif func.attr in PATH_MOVERS and len(node.args) == 1 and not node.keywords:
                what = f".{func.attr}()"
            elif func.attr == "open" and set(_mode(node, 0) or "") & WRITE_MODE:
                what = f".open({_mode(node, 0)!r})"
        if what:
            found.append((node.lineno, f"line {node.lineno}: {what}"))
    return [entry for _, entry in sorted(found)]


def check_writes(name: str, source: str) -> None:
    """Fail when the module `name` (relative to the package) changes files itself without being
    allowed to, or is allowed to but no longer does."""
    found = file_mutations(source)
    if name in FILE_WRITERS_ALLOWED:
        assert found, (
            f"{name} no longer changes files itself: remove it from FILE_WRITERS_ALLOWED here"
        )
        return
    assert not found, (
        f"{name} changes files itself ({'; '.join(found)}): write through runtime.files "
        "(atomic_write_text/bytes, save_torch, copy_file, append_line, move_aside, remove_file, "
        "ensure_folder, ...), adding a small function there if none fits, or add the module to "
        "FILE_WRITERS_ALLOWED here with the reason"
    )


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_only_the_writer_changes_files(path):
    check_writes(path.relative_to(PACKAGE).as_posix(), path.read_text(encoding="utf-8"))


def test_the_allowed_writers_exist_and_are_few():
    assert len(FILE_WRITERS_ALLOWED) <= 5, sorted(FILE_WRITERS_ALLOWED)
    for name, why in FILE_WRITERS_ALLOWED.items():
        assert (PACKAGE / name).is_file(), f"{name} is allowed but no longer exists"
        assert why.strip(), f"{name} is allowed without a reason"


@pytest.mark.parametrize(
    "source",
    [
        "from pathlib import Path\nPath('a').write_text('x')\n",
        "path.write_bytes(data)\n",
        "folder.mkdir(parents=True, exist_ok=True)\n",
        "path.unlink(missing_ok=True)\n",
        "folder.rmdir()\n",
        "link.symlink_to(target)\n",
        "path.touch()\n",
        "tmp.rename(target)\n",
        "tmp.replace(target)\n",
        "import os\nos.replace(a, b)\n",
        "import os\nos.makedirs(folder)\n",
        "import os as o\no.remove(path)\n",
        "from os import rename\nrename(a, b)\n",
        "import shutil\nshutil.rmtree(folder)\n",
        "import shutil\nshutil.copyfile(a, b)\n",
        "from shutil import move as mv\nmv(a, b)\n",
        "import torch\ntorch.save(state, path)\n",
        "with open(path, 'w') as handle:\n    pass\n",
        "with open(path, mode='ab') as handle:\n    pass\n",
        "open(path, 'r+b')\n",
        "with path.open('x') as handle:\n    pass\n",
        "path.open(mode='w')\n",
        "path.chmod(0o644)\n",
        "tar.extractall(folder)\n",
        "import tempfile\nwith tempfile.TemporaryDirectory() as scratch:\n    pass\n",
        "from tempfile import mkstemp\nmkstemp()\n",
    ],
)
def test_the_writer_scan_sees_each_way_of_writing(source):
    assert file_mutations(source), source


def test_the_writer_scan_lets_reading_and_lookalikes_be():
    source = (
        "import os, shutil, torch, dataclasses\n"
        "text = open(path).read()\nwith open(path, 'rb') as h:\n    pass\n"
        "with path.open() as h:\n    pass\nh = path.open('r', encoding='utf-8')\n"
        "name = text.replace('a', 'b')\nframe = frame.rename(columns={'a': 'b'})\n"
        "config = dataclasses.replace(config, d_model=8)\nsettings = settings.replace(name='x')\n"
        "os.path.join(a, b)\nshutil.disk_usage(folder)\ntorch.load(path)\n"
        "atomic_write_text(path, text)\nname = 'os.replace'\n"
    )
    assert file_mutations(source) == []


def test_a_new_module_that_writes_directly_fails_the_check():
    source = (
        "from pathlib import Path\n\n\ndef save(path, text):\n"
        "    Path(path).parent.mkdir(parents=True, exist_ok=True)\n"
        "    Path(path).write_text(text)\n"
    )
    assert file_mutations(source) == ["line 5: .mkdir()", "line 6: .write_text()"]
    with pytest.raises(AssertionError, match=r"experiments/new\.py changes files itself"):
        check_writes("experiments/new.py", source)
    check_writes("experiments/new.py", "from ..runtime.files import atomic_write_text\n")


def test_an_allowed_module_that_no_longer_writes_fails_the_check():
    with pytest.raises(AssertionError, match="no longer changes files"):
        check_writes("runtime/files.py", "def atomic_write(path, fill):\n    pass\n")

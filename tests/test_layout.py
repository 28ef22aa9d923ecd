"""The package's folders are its architecture: each imports only the layers below it, and the
README's layout table names every module."""

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "annotated_transformer"

# Lower layers first. A module may import its own folder and any lower layer; two folders of one
# layer may not import each other.
LAYERS = {
    "runtime": 0,
    "model": 1,
    "data": 1,
    "training": 2,
    "evaluation": 3,
    "profiles": 4,
    "pipeline": 5,
    "viz": 5,
    "chapters": 6,
    "web": 6,
    "book": 7,
    "commands": 8,
    "notebook_api": 8,
    "cli": 9,
    "__main__": 10,
    "__init__": 10,
}


def modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def unit(path: Path) -> str:
    """The layer a file belongs to: its folder, or its own name at the top level."""
    rel = path.relative_to(PACKAGE)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def imported_units(path: Path) -> set[str]:
    """The package's layers that `path` imports, relative and absolute imports alike."""
    package = list(path.relative_to(REPO).with_suffix("").parts[:-1])
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = base + (node.module.split(".") if node.module else [])
                names = (
                    [target] if node.module else [target + [a.name] for a in node.names]
                )
            elif node.module and node.module.split(".")[0] == "annotated_transformer":
                target = node.module.split(".")
                names = (
                    [target]
                    if len(target) > 1
                    else [target + [a.name] for a in node.names]
                )
            else:
                continue
        elif isinstance(node, ast.Import):
            names = [
                a.name.split(".")
                for a in node.names
                if a.name.startswith("annotated_transformer.")
            ]
        else:
            continue
        for name in names:
            if len(name) > 1:
                found.add(name[1])
    return found


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_a_module_imports_only_lower_layers(path):
    own = unit(path)
    assert own in LAYERS, (
        f"{own} is in no layer: add it to LAYERS here and to the README's table"
    )
    for other in imported_units(path) - {own}:
        assert other in LAYERS, f"{path.name} imports {other}, which is in no layer"
        assert LAYERS[other] < LAYERS[own], (
            f"{path.relative_to(PACKAGE)} ({own}, layer {LAYERS[own]}) imports {other} "
            f"(layer {LAYERS[other]}): a layer imports only the layers below it"
        )


CHAPTERS = PACKAGE / "chapters"
# The introduction's folder holds its figures only: it reads every chapter's record through the
# book's summary, so it keeps no record of its own.
ARTEFACTS = sorted(
    p.name
    for p in CHAPTERS.iterdir()
    if (p / "__init__.py").is_file() and p.name != "introduction"
)


def artefact_of(module: list[str]) -> str | None:
    """The artefact package a dotted module (as a list) lies in, or None."""
    if module[:2] == ["annotated_transformer", "chapters"] and len(module) > 2:
        return module[2] if module[2] in ARTEFACTS else None
    return None


def imported_modules(path: Path) -> set[tuple[str, ...]]:
    """Every module of the package that `path` imports, as absolute dotted parts."""
    package = list(path.relative_to(REPO).with_suffix("").parts[:-1])
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = base + (node.module.split(".") if node.module else [])
            elif node.module and node.module.startswith("annotated_transformer"):
                target = node.module.split(".")
            else:
                continue
            found.add(tuple(target))
            found.update(tuple(target + [a.name]) for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(
                tuple(a.name.split("."))
                for a in node.names
                if a.name.startswith("annotated_transformer.")
            )
    return found


def test_every_experiment_lives_in_an_artefact_package():
    loose = sorted(
        p.name
        for p in CHAPTERS.glob("*.py")
        # shared by every artefact: how numbers are worded, what a chapter keeps as it goes
        # and the table of a chapter's sizes under every profile
        # and the typed record every chapter's record is
        if p.name
        not in (
            "__init__.py",
            "wording.py",
            "chapter_state.py",
            "sizes.py",
            "chapter_record.py",
        )
    )
    assert not loose, f"chapters/ modules outside a chapter folder: {loose}"
    chapter_files = sorted(
        p.stem.split("_", 1)[1] for p in (REPO / "book").glob("0[1-9]_*.py")
    )
    assert ARTEFACTS == chapter_files, (
        "one folder of chapters/ per chapter, named as its file"
    )


@pytest.mark.parametrize("artefact", ARTEFACTS)
def test_every_artefact_package_has_the_same_contract(artefact):
    """What a reader can predict of each package: its record (written, read back) and the
    sentences that close its chapter from that record."""
    import importlib

    record = importlib.import_module(f"annotated_transformer.chapters.{artefact}.record")
    sentences = importlib.import_module(
        f"annotated_transformer.chapters.{artefact}.sentences"
    )
    assert isinstance(record.RESULTS_NAME, str) and record.RESULTS_NAME
    for name in ("build", "write", "read"):
        assert callable(getattr(record, name, None)), f"{artefact}.record.{name}"
    assert callable(getattr(sentences, "closing", None)), f"{artefact}.sentences.closing"


@pytest.mark.parametrize(
    "path",
    sorted(CHAPTERS.rglob("*.py")),
    ids=lambda p: str(p.relative_to(CHAPTERS)),
)
def test_an_artefact_package_imports_no_other_artefact_package(path):
    own = artefact_of(list(path.relative_to(REPO).with_suffix("").parts))
    for module in imported_modules(path):
        other = artefact_of(list(module))
        assert other is None or other == own, (
            f"{path.relative_to(PACKAGE)} imports {'.'.join(module)}: an artefact package "
            "imports the layers below and chapters.wording, never another artefact's "
            "package; move what both need down a layer"
        )


def test_the_artefact_check_sees_a_cross_import():
    bad = CHAPTERS / "model_variations" / "bad_example_for_test.py"
    try:
        bad.write_text("from ..translation_results import table2\n")
        assert ("annotated_transformer", "chapters", "translation_results", "table2") in (
            imported_modules(bad)
        )
        assert artefact_of(
            ["annotated_transformer", "chapters", "translation_results"]
        ) == ("translation_results")
    finally:
        bad.unlink()


def test_the_checker_sees_an_upward_import(tmp_path):
    # The test above can fail: an import from the book into the model is caught.
    bad = PACKAGE / "model" / "bad_example_for_test.py"
    text = "from ..book import viz\n"
    try:
        bad.write_text(text)
        assert "book" in imported_units(bad)
    finally:
        bad.unlink()


def test_readme_layout_table_names_every_module():
    readme = (REPO / "README.md").read_text()
    table = readme[readme.index("### How the code is laid out") :]
    table = table[: table.index("\n## ")]
    named = set(re.findall(r"`([a-z_0-9]+)`", table))
    missing = [
        str(p.relative_to(PACKAGE))
        for p in modules()
        if p.stem != "__init__" and p.stem not in named
    ]
    assert not missing, f"the README's layout table does not name: {', '.join(missing)}"


def module_name(path: Path) -> str:
    """`annotated_transformer.runtime.files`, and a package's `__init__` as the package."""
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_imports(path: Path, known: set[str]) -> set[str]:
    """The package's modules `path` imports anywhere in it (in a function, under TYPE_CHECKING),
    as the layering test counts them: `from .x import y` is `x.y` where that is a module, else
    `x`; a package's own `__init__` is not counted for the import of one of its modules."""
    package = list(path.relative_to(REPO).with_suffix("").parts[:-1])
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = ".".join(base + (node.module.split(".") if node.module else []))
            elif node.module and node.module.startswith("annotated_transformer"):
                target = node.module
            else:
                continue
            for alias in node.names:
                found.add(
                    f"{target}.{alias.name}"
                    if f"{target}.{alias.name}" in known
                    else target
                )
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name in known)
    return (found & known) - {module_name(path)}


def import_circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The groups of modules that import each other round a circle (Tarjan's strongly connected
    components with more than one module), in `graph` {module: the modules it imports}."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for other in sorted(graph[module]):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            group = {stack.pop()}
            while module not in group:
                group.add(stack.pop())
            if len(group) > 1:
                circles.append(frozenset(group))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return circles


def package_graph() -> dict[str, set[str]]:
    paths = {module_name(p): p for p in modules()}
    known = set(paths)
    return {name: module_imports(path, known) for name, path in paths.items()}


def test_the_package_has_no_import_circle():
    circles = import_circles(package_graph())
    assert not circles, (
        "modules that import each other round a circle: "
        + "; ".join(" <-> ".join(sorted(c)) for c in circles)
        + ". Move what both need into the lower one, or into a small module of its own"
    )


def test_the_circle_check_sees_a_circle():
    graph = package_graph()
    record = "annotated_transformer.chapters.translation_results.record"
    table2 = "annotated_transformer.chapters.translation_results.table2"
    assert table2 not in graph[record] or record not in graph[table2]
    graph[record] = graph[record] | {table2}
    graph[table2] = graph[table2] | {record}
    assert frozenset({record, table2}) in import_circles(graph)
    assert not import_circles(package_graph())


def test_a_function_level_import_counts(tmp_path):
    bad = PACKAGE / "runtime" / "bad_example_for_test.py"
    try:
        bad.write_text("def f():\n    from . import records\n")
        known = {"annotated_transformer.runtime.records"}
        assert module_imports(bad, known) == known
    finally:
        bad.unlink()

"""How the package is split: a small core (the model, data, training, evaluation) and the extras
of pyproject.toml, with the chapters' imports covered by core + `notebook`, and JupyterLab in the
set-up with jupytext's pairing of each chapter's .py and .ipynb."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from functools import cache
from importlib import metadata
from importlib.util import find_spec
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.support import REPO

tomllib = pytest.importorskip("tomllib", reason="Python 3.11 reads TOML")
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
PROJECT = PYPROJECT["project"]
EXTRAS = PROJECT["optional-dependencies"]
CHAPTERS = sorted((REPO / "book").glob("[0-9][0-9]_*.py"))
PACKAGE = REPO / "annotated_transformer"

CORE = {"torch", "numpy", "tqdm", "sentencepiece", "sacrebleu", "filelock", "jsonschema"}
# Never in the core: each belongs to an extra.
NOT_CORE = {
    "statsmodels",
    "scipy",
    "nltk",
    "pandas",
    "altair",
    "vl-convert-python",
    "onnx",
    "onnxruntime",
    "papermill",
    "jupytext",
    "nbformat",
    "nbconvert",
    "ipykernel",
    "ipython",
}
# Import names that only an extra provides; the core must import without them.
OPTIONAL_MODULES = (
    "altair",
    "pandas",
    "statsmodels",
    "nltk",
    "scipy",
    "onnx",
    "onnxruntime",
    "papermill",
    "jupytext",
    "nbformat",
    "IPython",
    "ipykernel",
    "yaml",
    "jupyter_core",
    "pygments",
    "vl_convert",
)


def names(requirements: list[str]) -> set[str]:
    return {canonicalize_name(Requirement(r).name) for r in requirements}


def normalized(requirements: list[str]) -> set[str]:
    """Each requirement as `name<specifier>`, comparable across files."""
    out = set()
    for line in requirements:
        req = Requirement(line)
        out.add(f"{canonicalize_name(req.name)}{req.specifier}")
    return out


def requirements_txt() -> list[str]:
    lines = []
    for raw in (REPO / "requirements.txt").read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if line:
            lines.append(line)
    return lines


# --- the split --------------------------------------------------------------------------------


def test_the_core_is_the_model_data_training_and_evaluation():
    core = names(PROJECT["dependencies"])
    assert core == CORE
    assert not core & NOT_CORE
    assert not {n for n in core if n.startswith("jupyter")}


def test_every_extra_is_there_and_all_holds_the_others():
    expected = {"experiments", "charts", "notebook", "book", "web", "test", "all"}
    assert expected <= set(EXTRAS)
    every = set().union(*(normalized(EXTRAS[e]) for e in EXTRAS if e != "all"))
    assert every <= normalized(EXTRAS["all"]), "all: every other extra's requirements"
    notebook = normalized(EXTRAS["notebook"])
    for part in ("experiments", "charts", "web"):
        assert normalized(EXTRAS[part]) <= notebook, f"notebook holds {part}"
    assert notebook <= normalized(EXTRAS["book"]), "book holds notebook"


def test_notebook_leaves_the_site_and_the_runner_to_book():
    notebook = names(EXTRAS["notebook"])
    assert not notebook & {"jupyter-book", "papermill"}
    assert {"jupyter-book", "papermill", "jupytext", "jupyterlab", "nbconvert"} <= names(
        EXTRAS["book"]
    )


def test_torch_is_bounded_to_the_tested_minor_release():
    (torch,) = [Requirement(r) for r in PROJECT["dependencies"] if r.startswith("torch")]
    assert torch.specifier.contains("2.13.0") and torch.specifier.contains("2.13.0+cpu")
    assert not torch.specifier.contains("2.14.0"), "an upper bound: only a tested torch"
    assert not torch.specifier.contains("2.12.0")


def test_requirements_txt_is_the_core_and_every_extra():
    # scripts/setup.sh installs requirements.txt (or its lock), then the package with --no-deps:
    # a requirement missing here would be missing from the set-up.
    declared = normalized(PROJECT["dependencies"]) | normalized(EXTRAS["all"])
    assert normalized(requirements_txt()) == declared


def test_the_build_backend_writes_nothing_into_the_clone():
    # setuptools leaves build/ and *.egg-info in the source tree that `pip install <clone>` builds
    assert PYPROJECT["build-system"]["build-backend"] == "hatchling.build"
    assert PYPROJECT["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"] == [
        "annotated_transformer"
    ]


# --- what the chapters and the package import -------------------------------------------------


def _imports(path: Path) -> set[tuple[str, bool]]:
    """(module, deferred) for every import in `path`: deferred when inside a function, so that
    importing `path` does not run it. Relative imports are made absolute; `from a import b` gives
    both a and a.b."""
    package = list(
        path.relative_to(REPO).parts[:-1]
    )  # a module's package; an __init__'s own
    found = set()

    def visit(node: ast.AST, deferred: bool) -> None:
        if isinstance(node, ast.Import):
            found.update((alias.name, deferred) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.add((module, deferred))
            found.update((f"{module}.{alias.name}", deferred) for alias in node.names)
        inner = deferred or isinstance(
            node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
        )
        for child in ast.iter_child_nodes(node):
            visit(child, inner)

    visit(ast.parse(path.read_text()), False)
    return found


def _module_file(module: str) -> Path | None:
    parts = module.split(".")
    if parts[0] != "annotated_transformer":
        return None
    base = REPO.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None  # a name inside a module, not a module


def third_party_imports(start: list[Path]) -> dict[str, set[tuple[str, bool]]]:
    """Top-level third-party modules imported by `start` and every package module they may load
    (with its parent packages, deferred imports followed too), each mapped to (file, deferred)
    for every file that imports it."""
    seen: set[Path] = set()
    todo = list(start)
    found: dict[str, set[tuple[str, bool]]] = {}
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for module, deferred in _imports(path):
            top = module.split(".")[0]
            if not top or top in sys.stdlib_module_names or top == "__future__":
                continue
            if top != "annotated_transformer":
                where = (str(path.relative_to(REPO)), deferred)
                found.setdefault(top, set()).add(where)
                continue
            parts = module.split(".")
            for i in range(1, len(parts) + 1):
                file = _module_file(".".join(parts[:i]))
                if file is not None:
                    todo.append(file)
    return found


@cache
def _requires(dist: str) -> tuple[str, ...]:
    try:
        return tuple(metadata.requires(dist) or ())
    except metadata.PackageNotFoundError:
        return ()


def installed_closure(requirements: list[str]) -> set[str]:
    """The distributions `requirements` bring, their own requirements included, as installed
    here (markers evaluated for this machine, no extras of theirs)."""
    env = {**default_environment(), "extra": ""}
    todo = [Requirement(r) for r in requirements]
    closure: set[str] = set()
    while todo:
        req = todo.pop()
        if req.marker is not None and not req.marker.evaluate(env):
            continue
        name = canonicalize_name(req.name)
        if name in closure:
            continue
        closure.add(name)
        todo.extend(Requirement(r) for r in _requires(name))
    return closure


def providers() -> dict[str, set[str]]:
    return {
        module: {canonicalize_name(d) for d in dists}
        for module, dists in metadata.packages_distributions().items()
    }


def uncovered(
    imports: dict[str, set[tuple[str, bool]]],
    requirements: list[str],
    allowed_deferred: frozenset[str] = frozenset(),
) -> list[str]:
    """The imported modules that no distribution of `requirements` (with theirs) provides, but
    those of `allowed_deferred` that are only ever imported inside functions."""
    closure = installed_closure(requirements)
    by_module = providers()
    problems = []
    for module, where in sorted(imports.items()):
        first = sorted(where)[0][0]
        dists = by_module.get(module)
        if not dists:
            problems.append(f"{module} (in {first}): not installed, no distribution")
        elif not dists & closure:
            if module in allowed_deferred and all(deferred for _, deferred in where):
                continue
            problems.append(f"{module} (in {first}): {sorted(dists)} in no such extra")
    return problems


# The runner's and the site's tools (the book extra). Chapters load modules that use them (the
# chapter list, the committed runs), but only inside functions that the book command calls.
BOOK_TOOLS = frozenset({"jupytext", "nbformat", "papermill", "yaml", "jupyter_core"})


def test_the_chapters_run_on_core_and_notebook():
    imports = third_party_imports(CHAPTERS)
    assert {"torch", "pandas", "IPython", "onnxruntime"} <= set(
        imports
    )  # the walk's reach
    problems = uncovered(
        imports, PROJECT["dependencies"] + EXTRAS["notebook"], BOOK_TOOLS
    )
    assert not problems, "add to the notebook extra (or defer the import):\n" + "\n".join(
        problems
    )


def test_every_package_module_runs_on_core_and_all():
    imports = third_party_imports(sorted(PACKAGE.rglob("*.py")))
    assert {"papermill", "jupytext", "onnx"} <= set(imports)
    problems = uncovered(imports, PROJECT["dependencies"] + EXTRAS["all"])
    assert not problems, "add to an extra:\n" + "\n".join(problems)


def test_the_walk_sees_a_deferred_and_a_relative_import():
    found = third_party_imports([PACKAGE / "book" / "chapters.py"])
    assert ("annotated_transformer/book/chapters.py", True) in found["jupytext"]
    # commands/table3.py imports chapters/model_variations inside a function, relatively
    assert "statsmodels" in third_party_imports([PACKAGE / "commands" / "table3.py"])


def test_the_core_imports_without_any_extra():
    blocked = ", ".join(repr(m) for m in OPTIONAL_MODULES)
    code = (
        "import sys\n"
        f"for name in ({blocked}):\n"
        "    sys.modules[name] = None  # importing it raises ImportError\n"
        "import annotated_transformer\n"
        "from annotated_transformer import Transformer, preset\n"
        "import annotated_transformer.cli\n"
        "for command in ('train', 'translate', 'evaluate', 'average'):\n"
        "    __import__(f'annotated_transformer.commands.{command}')\n"
        "import annotated_transformer.chapters.training.copy_task\n"
        "print('core ok')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0 and "core ok" in result.stdout, result.stderr[-3000:]


def test_the_charts_import_on_core_and_charts():
    # attention_chart and the book's figures: pandas and altair, none of the experiments' libraries
    allowed = names(PROJECT["dependencies"] + EXTRAS["charts"])
    assert {"altair", "pandas"} <= allowed
    blocked = [m for m in OPTIONAL_MODULES if m not in ("altair", "pandas", "vl_convert")]
    code = (
        "import sys\n"
        f"for name in {tuple(blocked)!r}:\n"
        "    sys.modules[name] = None\n"
        "from annotated_transformer import attention_chart\n"
        "import annotated_transformer.viz.charts, annotated_transformer.viz.display\n"
        "import annotated_transformer.chapters.attention_visualizations.figures\n"
        "print('charts ok')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0 and "charts ok" in result.stdout, result.stderr[-3000:]


# --- Jupyter ----------------------------------------------------------------------------------


def test_jupyterlab_and_nbconvert_are_set_up():
    for module in ("jupyterlab", "nbconvert", "jupytext", "ipykernel"):
        assert find_spec(module) is not None, (
            f"{module} is missing: bash scripts/setup.sh"
        )
    # jupytext's wheel turns its contents manager on in the environment's Jupyter server config
    config = (
        Path(sys.prefix) / "etc" / "jupyter" / "jupyter_server_config.d" / "jupytext.json"
    )
    assert json.loads(config.read_text())["ServerApp"]["jpserver_extensions"][
        "jupyterlab_jupytext"
    ]


def test_the_project_kernel_is_installed():
    from jupyter_client.kernelspec import KernelSpecManager

    specs = KernelSpecManager().get_all_specs()
    missing = {"annotated-transformer", "python3"} - set(specs)
    assert not missing, f"kernels {sorted(missing)} missing: bash scripts/setup.sh"
    ours = specs["annotated-transformer"]["spec"]
    assert ours["display_name"] == "Python 3 (annotated-transformer)"
    assert Path(ours["argv"][0]).resolve() == Path(sys.executable).resolve()


def test_jupytext_pairs_each_chapter_as_ipynb_and_percent_script():
    from jupytext.config import load_jupytext_configuration_file
    from jupytext.formats import long_form_multiple_formats

    config = load_jupytext_configuration_file(str(REPO / "jupytext.toml"))
    assert config.formats == ["ipynb,py:percent"]
    assert long_form_multiple_formats(config.default_formats("book/02_model.py")) == [
        {"extension": ".ipynb"},
        {"extension": ".py", "format_name": "percent"},
    ]
    for chapter in CHAPTERS:  # and each chapter's own metadata says the same
        header = chapter.read_text().split("# ---", 2)[1]
        assert re.search(r"^#\s+formats: ipynb,py:percent$", header, re.M), chapter.name


def test_jupyterlab_opens_a_python_file_as_a_notebook():
    overrides = json.loads(
        (REPO / "scripts" / "jupyter" / "lab-overrides.json").read_text()
    )
    viewers = overrides["@jupyterlab/docmanager-extension:plugin"]["defaultViewers"]
    assert viewers["python"] == "Jupytext Notebook"
    assert (
        "scripts/jupyter/lab-overrides.json"
        in (REPO / "scripts" / "setup.sh").read_text()
    )


def test_the_readme_names_the_jupyter_command():
    assert ".venv/bin/jupyter lab book/" in (REPO / "README.md").read_text()

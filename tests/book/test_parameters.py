"""Book parameters as a contract: `--param` names and values are checked against the
selected chapters' parameters cells before any chapter runs, each refusal is one line naming
`--param NAME`, numbers stay inside each parameter's declared range, the run's record says what each
chapter was given, and a chapter run by hand with a bad `profile_name` or an out-of-range value fails
in one line."""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from annotated_transformer.book import parameters, runner
from annotated_transformer.commands import book as book_command
from annotated_transformer.evaluation import results

REPO = Path(__file__).resolve().parents[2]
CHAPTERS = sorted((REPO / "book").glob("[0-9][0-9]_*.py"))

DEMO = """# %% [markdown]
# # Demo

# %% tags=["parameters"]
profile_name = "cpu"
device = "auto"
seed = 0  # every random number follows from it
threads = 1  # None: the default

# %%
from annotated_transformer.evaluation import results
results.write_result("demo", {"seed": seed}, profile=profile_name)
"""


def _cli(argv: list[str], capsys) -> tuple[int, str]:
    parser = argparse.ArgumentParser()
    book_command.add_arguments(parser)
    code = book_command.run(parser.parse_args(argv))
    return code, capsys.readouterr().err


@pytest.fixture
def clone(tmp_path, monkeypatch):
    monkeypatch.delenv(results.RESULTS_ENV, raising=False)
    monkeypatch.delenv(results.BOOK_RUN_ENV, raising=False)
    root = tmp_path / "clone"
    (root / "book").mkdir(parents=True)
    shutil.copy(REPO / "_config.yml", root)
    (root / "book" / "01_demo.py").write_text(DEMO)
    return root


def test_the_chapters_parameters_are_read_from_their_cells():
    cells = {c.stem: parameters.chapter_parameters(c) for c in CHAPTERS}
    assert cells["01_attention"] == {
        "profile_name": "auto",
        "device": "auto",
        "seed": 0,
    }
    assert cells["02_model"]["vocab_size"] == 37_000
    assert all({"profile_name", "device"} <= set(c) for c in cells.values())
    # opened by hand, every chapter takes the machine's profile
    assert {c["profile_name"] for c in cells.values()} == {"auto"}


@pytest.mark.parametrize(
    ("param", "says"),
    [
        (
            "sede=5",
            "--param sede: no chapter selected has a parameter 'sede'; did you mean seed",
        ),
        (
            "seed=1.5",
            "--param seed=1.5: chapter 01_attention's seed expects a whole number",
        ),
        (
            "seed=abc",
            "--param seed='abc': chapter 01_attention's seed expects a whole number",
        ),
        ("seed=True", "expects a whole number"),
        ("=5", "--param '=5': '' is not a parameter name"),
        (
            "book.minutes=3",
            "--param 'book.minutes=3': 'book.minutes' is not a parameter name",
        ),
        ("vocab_size=5", "no chapter selected has a parameter 'vocab_size'"),  # 02's only
        (
            "seed=-1",
            "--param seed=-1: chapter 01_attention's seed must be a whole number from 0 to "
            "4294967295 (its default is 0)",
        ),
        (
            "seed=4294967296",
            "--param seed=4294967296: chapter 01_attention's seed must be",
        ),
    ],
)
def test_a_bad_param_is_one_line_before_any_chapter(
    param, says, tmp_path, capsys, monkeypatch
):
    """A `--param` naming no selected chapter's parameter, or giving a value the parameter
    cannot take, exits 2 with one line before any chapter runs or any folder is made,
    instead of reaching the chapter as papermill's warning, a rounded seed or an error
    inside it."""
    monkeypatch.setattr(
        runner, "execute_chapter", lambda *a, **k: pytest.fail("a chapter ran")
    )
    argv = ["--profile", "smoke", "--chapters", "01", "--no-build", "--param", param]
    argv += ["--output-dir", str(tmp_path / "o"), "--results-dir", str(tmp_path / "r")]
    code, err = _cli(argv, capsys)
    assert code == 2
    assert err.count("\n") == 1 and says in err, err
    assert not (tmp_path / "o").exists() and not (tmp_path / "r").exists()


def test_values_follow_the_defaults_type():
    sources = [c for c in CHAPTERS if c.stem[:2] in ("03", "04", "06")]
    takes = parameters.check_chapter_parameters(
        {
            "seed": 2,
            "threads": None,
            "resume": False,
            "max_steps": 5,
            "results_name": "x",
        },
        sources,
    )
    assert takes["04_training"] == {"seed": 2, "resume": False, "max_steps": 5}
    assert takes["06_model_variations"] == {"results_name": "x"}
    for bad in ({"resume": 1}, {"results_name": 3}, {"kernel_size": None}):
        with pytest.raises(ValueError, match=f"--param {next(iter(bad))}="):
            parameters.check_chapter_parameters(bad, sources)


@pytest.mark.parametrize(
    ("name", "value", "chapter", "allowed"),
    [
        ("seed", -1, "01_attention", "a whole number from 0 to 4294967295"),
        ("first_seed", -1, "06_model_variations", "a whole number from 0 to 4294967295"),
        (
            "max_steps",
            0,
            "00_introduction",
            "a whole number from 1 to 2147483647 (or None)",
        ),
        ("max_steps", -5, "00_introduction", "from 1 to"),
        ("max_steps", "abc", "00_introduction", "a whole number from 1"),
        ("max_steps", 2.5, "00_introduction", "a whole number from 1"),
        ("recipe_steps", 0, "05_translation_results", "from 1 to"),
        ("beam_size", 0, "05_translation_results", "from 1 to"),
        ("epochs", 0, "06_model_variations", "from 1 to"),
        ("seeds", 0, "06_model_variations", "from 1 to"),
        ("workers", -2, "06_model_variations", "from 1 to"),
        ("parsing_epochs", 0, "07_constituency_parsing", "from 1 to"),
        ("test_sentences", 0, "08_attention_visualizations", "from 1 to"),
        ("threads", 0, "03_why_self_attention", "from 1 to"),
        ("kernel_size", 4, "03_why_self_attention", "an odd whole number from 1"),
        ("kernel_size", -1, "03_why_self_attention", "an odd whole number from 1"),
        ("vocab_size", 4, "02_model", "a whole number from 5"),
    ],
)
def test_a_value_outside_its_range_is_one_line_naming_the_param_and_the_range(
    name, value, chapter, allowed
):
    with pytest.raises(ValueError) as caught:
        parameters.check_chapter_parameters({name: value}, CHAPTERS)
    message = str(caught.value)
    assert message.startswith(f"--param {name}={value!r}: chapter {chapter}'s {name} ")
    assert allowed in message and "\n" not in message


@pytest.mark.parametrize(
    "given",
    [
        {"seed": 0},
        {"seed": 2**32 - 1},
        {"first_seed": 0},
        {"max_steps": 1},
        {"max_steps": None},
        {"epochs": 1, "seeds": 1, "workers": 1, "parsing_epochs": None},
        {"beam_size": 1, "recipe_steps": 1, "test_sentences": 1},
        {"threads": None, "kernel_size": 1},
        {"kernel_size": 5},
        {"vocab_size": 5},
    ],
)
def test_values_at_the_ends_of_their_ranges_are_taken(given):
    takes = parameters.check_chapter_parameters(given, CHAPTERS)
    assert {k: v for taken in takes.values() for k, v in taken.items()} == given


def test_every_numeric_parameter_has_a_range_that_holds_its_default():
    cells = {c.stem: parameters.chapter_parameters(c) for c in CHAPTERS}
    names = {name for cell in cells.values() for name in cell}
    assert set(parameters.PARAMETER_BOUNDS) <= names  # no range for a name no chapter has
    for chapter, cell in cells.items():
        for name, default in cell.items():
            bounds = parameters.PARAMETER_BOUNDS.get(name)
            if isinstance(default, int) and not isinstance(default, bool):
                assert bounds is not None, f"{chapter}'s {name} has no range"
            if bounds is not None:
                assert bounds.check(name, default) == default, (chapter, name)
                assert bounds.optional or default is not None, (chapter, name)


@pytest.mark.parametrize(
    ("name", "value", "allowed"),
    [
        ("seed", -1, "a whole number from 0 to 4294967295"),
        ("max_steps", 0, "a whole number from 1 to 2147483647 (or None)"),
        ("epochs", 0, "a whole number from 1"),
        ("kernel_size", 2, "an odd whole number from 1"),
    ],
)
def test_a_chapter_run_by_hand_stops_at_its_first_cell_on_an_out_of_range_value(
    name, value, allowed
):
    """papermill puts the parameters in the notebook's globals; the first cell's
    `chapter_profile` reads the ones with a range from there."""
    namespace = {
        "chapter_profile": parameters.chapter_profile,
        "profile_name": "smoke",
        "max_steps": None,
        name: value,
    }
    first_cell = "profile = chapter_profile(profile_name, max_steps=max_steps)"
    with pytest.raises(parameters.ParameterError) as caught:
        exec(first_cell, namespace)
    (line,) = caught.value._render_traceback_()
    assert line.startswith(f"ParameterError: parameter {name}={value!r}: {name} must be ")
    assert allowed in line and f"papermill -p {name} VALUE" in line and "\n" not in line
    namespace[name] = {"seed": 0, "max_steps": 1, "epochs": None, "kernel_size": 3}[name]
    exec(first_cell, namespace)
    assert namespace["profile"].name == "smoke"


def test_a_bad_profile_by_hand_is_one_line():
    """A chapter run by hand with an unknown `profile_name` fails in one line naming the
    known profiles, not get_profile's traceback; every chapter builds its profile this
    way."""
    with pytest.raises(parameters.ParameterError) as caught:
        parameters.chapter_profile("nonsense")
    (line,) = caught.value._render_traceback_()
    assert line.startswith(
        "ParameterError: parameters profile_name='nonsense': unknown profile"
    )
    assert "smoke" in line
    assert parameters.chapter_profile("smoke", max_steps=None).name == "smoke"
    for source in CHAPTERS:
        assert "profile = chapter_profile(profile_name" in source.read_text(), source.name


@pytest.mark.book
def test_the_record_says_what_each_chapter_was_given(clone, tmp_path):
    run = runner.run_book(
        "smoke",
        root=clone,
        chapters=["01"],
        output_dir=tmp_path / "out",
        results_dir=tmp_path / "res",
        parameters={"seed": 7},
        build=False,
        log=lambda line: None,
    )
    assert [c.status for c in run.chapters] == ["ok"]
    record = json.loads((tmp_path / "res" / "smoke" / "book_run.json").read_text())
    entry = record["metrics"]["chapters"]["01_demo"]
    assert entry["parameters"] == {"profile_name": "smoke", "device": "auto", "seed": 7}
    assert results.read_result("demo", "smoke", tmp_path / "res")["metrics"]["seed"] == 7


def test_a_param_given_twice_is_one_line_before_any_chapter(
    tmp_path, capsys, monkeypatch
):
    """`--param seed=1 --param seed=2` used to run with seed 2: a run cannot take both."""
    monkeypatch.setattr(
        runner, "execute_chapter", lambda *a, **k: pytest.fail("a chapter ran")
    )
    argv = ["--profile", "smoke", "--chapters", "01", "--no-build"]
    argv += ["--param", "seed=1", "--param", "seed = 2"]
    argv += ["--output-dir", str(tmp_path / "o"), "--results-dir", str(tmp_path / "r")]
    code, err = _cli(argv, capsys)
    assert code == 2
    assert (
        err
        == "error: --param seed is given twice (seed=1 and seed=2): keep the one you mean\n"
    )
    assert not (tmp_path / "o").exists() and not (tmp_path / "r").exists()
    assert parameters.parse_params(["seed=1", "max_steps=2"]) == {
        "seed": 1,
        "max_steps": 2,
    }


PARAM_NAMES = st.sampled_from(["seed", " seed", "seed ", "max_steps", "a.b", "", "x y"])
PARAM_TEXTS = st.one_of(
    st.text(max_size=12),
    st.builds(lambda name, value: f"{name}={value}", PARAM_NAMES, st.text(max_size=12)),
    st.builds(
        lambda name, value: f"{name}={value!r}",
        PARAM_NAMES,
        st.one_of(st.integers(), st.floats(), st.none(), st.booleans(), st.text()),
    ),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(PARAM_TEXTS, max_size=6))
def test_any_params_parse_to_unique_names_or_are_refused_in_one_line(texts):
    try:
        parsed = parameters.parse_params(texts)
    except ValueError as error:
        message = str(error)
        assert message.startswith("--param ") and "\n" not in message, message
        return
    names = [parameters.parse_param(text)[0] for text in texts]
    assert sorted(parsed) == sorted(names)  # every name once: none dropped, none twice
    assert all(name.isidentifier() for name in parsed)


CHAPTER_02_CELL = """# auto: the machine's
profile_name = "auto"  # sets the sizes
device = "auto"
seed = 0  # every random tensor of the chapter follows from it
vocab_size = 37_000
"""


def _kernel_namespace(injected: str) -> dict:
    """A kernel's globals after papermill ran chapter 02's parameters cell and its injected
    cell: IPython keeps the sources it ran, in order, in `_ih`."""
    namespace = {"chapter_profile": parameters.chapter_profile}
    exec(CHAPTER_02_CELL, namespace)
    exec(injected, namespace)
    first_cell = 'profile = chapter_profile(profile_name, "02")'
    namespace["_ih"] = ["", "import time", CHAPTER_02_CELL, injected, first_cell]
    return namespace


@pytest.mark.parametrize(
    ("injected", "says"),
    [
        (
            '# Parameters\nprofile_name = "smoke"\nsede = 5\n',
            "ParameterError: papermill -p sede: the chapter has no parameter 'sede'; did you "
            "mean seed? (its parameters: device, profile_name, seed, vocab_size)",
        ),
        (
            "# Parameters\nvocab = 100\n",
            "ParameterError: papermill -p vocab: the chapter has no parameter 'vocab'; did you "
            "mean vocab_size?",
        ),
        (
            '# Parameters\nseed = "abc"\n',
            "ParameterError: papermill -p seed='abc': chapter 02's seed expects a whole number",
        ),
    ],
)
def test_a_chapter_run_by_hand_with_a_parameter_its_cell_lacks_stops_in_one_line(
    injected, says
):
    """papermill only warns about a name the parameters cell lacks and runs the chapter with
    the default: its first cell reads the injected names from the kernel's history instead."""
    namespace = _kernel_namespace(injected)
    with pytest.raises(parameters.ParameterError) as caught:
        exec(namespace["_ih"][-1], namespace)
    (line,) = caught.value._render_traceback_()
    assert line.startswith(says) and "\n" not in line, line


def test_injected_parameters_the_cell_has_are_taken():
    namespace = _kernel_namespace('# Parameters\nprofile_name = "smoke"\nseed = 3\n')
    exec(namespace["_ih"][-1], namespace)
    assert namespace["profile"].name == "smoke"
    assert parameters.injected_parameters(namespace)[0] == {
        "profile_name": "smoke",
        "seed": 3,
    }
    assert parameters.injected_parameters({}) is None  # outside a kernel
    # a notebook without a parameters cell: papermill injects at the top, nothing to compare
    assert parameters.injected_parameters({"_ih": ["", "# Parameters\nx = 1\n"]}) is None


@pytest.mark.slow
def test_papermill_with_an_unknown_parameter_stops_in_the_first_cell(
    tmp_path, monkeypatch
):
    """The whole way: papermill's injected cell, a real kernel, chapter_profile."""
    import nbformat
    import papermill as pm
    from papermill.exceptions import PapermillExecutionError

    notebook = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell(CHAPTER_02_CELL)
    cell.metadata["tags"] = ["parameters"]
    notebook.cells = [
        cell,
        nbformat.v4.new_code_cell(
            "from annotated_transformer.book.parameters import chapter_profile\n"
            'profile = chapter_profile(profile_name, "02")'
        ),
    ]
    source = tmp_path / "chapter.ipynb"
    nbformat.write(notebook, source)
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    monkeypatch.setenv(results.RESULTS_ENV, str(tmp_path / "results"))
    with pytest.raises(PapermillExecutionError) as caught:
        pm.execute_notebook(
            str(source),
            str(tmp_path / "out.ipynb"),
            parameters={"profile_name": "smoke", "sede": 5},
            kernel_name="python3",
            language="python",
            progress_bar=False,
        )
    assert caught.value.ename == "ParameterError"
    assert caught.value.evalue.startswith(
        "papermill -p sede: the chapter has no parameter 'sede'; did you mean seed?"
    )

"""The chapters' parameters as a contract: each chapter's `parameters` cell names the values a run
may set and, by its defaults, their types. `book --param NAME=VALUE` is checked against the cells of
the chapters selected before any chapter runs (a name no selected chapter has, or a value its
default's type does not allow, or a number outside the parameter's range in `PARAMETER_BOUNDS`, is
refused in one line naming `--param NAME`; so is a name given twice), and a chapter opened by hand
(papermill `-p ...`) fails on a bad profile, a name its parameters cell lacks, a value of another
type or an out-of-range value in one line (`chapter_profile`)."""

from __future__ import annotations

import ast
import difflib
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from ..runtime.checks import OPTIONAL_COUNT, Bounds
from .by_hand import OneLineError

PARAMETERS_TAG = 'tags=["parameters"]'


@dataclass(frozen=True)
class OddBounds(Bounds):
    """Bounds of a whole number that must also be odd (a kernel that keeps the length n)."""

    def describe(self, none: bool = True) -> str:
        return "an odd " + super().describe(none).removeprefix("a ")

    def _inside(self, value: float) -> bool:
        return super()._inside(value) and int(value) % 2 == 1


# The numbers each chapter parameter may take, declared once for every chapter that has the name
# (tests/book/test_parameters.py checks that every numeric parameter of a chapter is here and that
# its default is inside). None is allowed where the chapter's default is None.
PARAMETER_BOUNDS: dict[str, Bounds] = {
    # seeds: what torch, numpy and random all take
    "seed": Bounds(int, 0, high=2**32 - 1),
    "first_seed": Bounds(int, 0, high=2**32 - 1),
    # steps, epochs and counts of something: at least one (0 would train or show nothing)
    "max_steps": OPTIONAL_COUNT,
    "recipe_steps": OPTIONAL_COUNT,
    "epochs": OPTIONAL_COUNT,
    "parsing_epochs": OPTIONAL_COUNT,
    "seeds": OPTIONAL_COUNT,
    "workers": OPTIONAL_COUNT,
    "threads": OPTIONAL_COUNT,
    "beam_size": OPTIONAL_COUNT,
    "test_sentences": OPTIONAL_COUNT,
    "kernel_size": OddBounds(int, 1),
    # more pieces than the 4 special ids (pad, bos, eos, unk)
    "vocab_size": Bounds(int, 5),
}


class ParameterError(OneLineError, ValueError):
    """A parameter a chapter cannot take (one line in IPython)."""


def parse_param(text: str) -> tuple[str, Any]:
    """`NAME=VALUE` as (name, value): a Python literal, else the bare word as a string."""
    if "=" not in text:
        raise ValueError(f"--param expects NAME=VALUE, got {text!r}")
    name, value = (part.strip() for part in text.split("=", 1))
    if not name.isidentifier():
        raise ValueError(
            f"--param {text!r}: {name!r} is not a parameter name; NAME is one name of a "
            "chapter's parameters cell (letters, digits and _, no dots), e.g. --param seed=1"
        )
    try:
        return name, ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return name, value  # a bare word is a string


def parse_params(texts: Iterable[str]) -> dict[str, Any]:
    """Every `--param NAME=VALUE` as one dict (`parse_param` each); a name given twice is refused
    in one line, as no run can take both values."""
    parameters: dict[str, Any] = {}
    for text in texts:
        name, value = parse_param(text)
        if name in parameters:
            raise ValueError(
                f"--param {name} is given twice ({name}={parameters[name]!r} and "
                f"{name}={value!r}): keep the one you mean"
            )
        parameters[name] = value
    return parameters


def chapter_parameters(source: str | os.PathLike) -> dict[str, Any]:
    """The names of a chapter's `parameters` cell and their default values, read from its
    jupytext .py source with `ast` (nothing of the chapter runs); {} without such a cell."""
    return {name: default for name, (default, _) in _parameters_cell(source).items()}


def _parameters_cell(source: str | os.PathLike) -> dict[str, tuple[Any, str]]:
    """Each parameter's default and its comment (the line's own and the comment lines above)."""
    lines = Path(source).read_text(encoding="utf-8").splitlines()
    cell: list[str] = []
    inside = False
    for line in lines:
        if line.startswith("# %%"):
            if inside:
                break
            inside = PARAMETERS_TAG in line.replace(" ", "").replace("'", '"')
            continue
        if inside:
            cell.append(line)
    return _cell_assignments("\n".join(cell))


def _cell_assignments(source: str) -> dict[str, tuple[Any, str]]:
    """The names a cell's source assigns, each with its value (None where it is not a literal)
    and its comment."""
    cell = source.splitlines()
    defaults: dict[str, tuple[Any, str]] = {}
    previous_end = 0
    for node in ast.parse(source).body:
        comment = "\n".join(cell[previous_end : node.end_lineno])
        previous_end = node.end_lineno or previous_end
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            try:
                default = ast.literal_eval(node.value)
            except ValueError:
                default = None  # not a literal: any value
            defaults[node.targets[0].id] = (default, comment)
    return defaults


def _expects(default: Any) -> tuple[tuple[type, ...], str] | None:
    """The types a value for a parameter with this default may have, and their description;
    None when the default (None) allows any value."""
    if default is None:
        return None
    if isinstance(default, bool):
        return (bool,), "True or False"
    if isinstance(default, int):
        return (int,), "a whole number"
    if isinstance(default, float):
        return (int, float), "a number"
    if isinstance(default, str):
        return (str,), "a string"
    return (type(default),), f"a {type(default).__name__}"


def out_of_bounds(name: str, value: Any) -> str | None:
    """What `value` of the parameter `name` should be when it is outside `PARAMETER_BOUNDS`
    (e.g. 'a whole number from 1 to 2147483647 (or None)'); None when it is inside, or when the
    name has no bounds."""
    bounds = PARAMETER_BOUNDS.get(name)
    if bounds is None:
        return None
    try:
        bounds.check(name, value)
    except ValueError:
        return bounds.describe()
    return None


def _allowed(value: Any, types: tuple[type, ...]) -> bool:
    if isinstance(value, bool) and bool not in types:
        return False  # True is an int to Python, not a count
    return isinstance(value, types)


def check_chapter_parameters(
    parameters: dict | None, sources: Iterable[str | os.PathLike]
) -> dict[str, dict[str, Any]]:
    """Check `parameters` against the parameters cells of the chapters `sources`: every name is a
    parameter of at least one of them, and every value has the type of that parameter's default
    (an int for an int, an int or a float for a float, True/False for a bool, a string for a string;
    any value for a None default), inside its `PARAMETER_BOUNDS` where it has some. Returns, per
    chapter (its stem), the parameters it takes.

    Raises:
        ValueError: one line naming `--param NAME` and the closest names, or what it expects.
    """
    parameters = parameters or {}
    cells = {Path(s).stem: _parameters_cell(s) for s in sources}
    _check_against_cells(parameters, cells, lambda name, value: f"--param {name}")
    return {
        chapter: {k: v for k, v in parameters.items() if k in cell}
        for chapter, cell in cells.items()
    }


def _check_against_cells(
    parameters: dict,
    cells: dict[str, dict[str, tuple[Any, str]]],
    given,
    selected: bool = True,
) -> None:
    """The rule of `check_chapter_parameters`, for `book --param` and for papermill's `-p` alike:
    `given(name, value)` is how the error names what was given (`--param NAME`, ...);
    `selected`: the cells are of the chapters a run selected (else of the one chapter running)."""
    known = sorted({name for cell in cells.values() for name in cell})
    for name, value in parameters.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(
                f"{given(name, value)}: not a parameter name; NAME is one name of a chapter's "
                "parameters cell (letters, digits and _, no dots)"
            )
        having = [chapter for chapter, cell in cells.items() if name in cell]
        if not having:
            close = difflib.get_close_matches(name, known, n=3)
            raise ValueError(
                f"{given(name, value)}: "
                + (
                    f"no chapter selected has a parameter {name!r}"
                    if selected
                    else f"the chapter has no parameter {name!r}"
                )
                + (f"; did you mean {' or '.join(close)}?" if close else "")
                + f" ({'their' if selected else 'its'} parameters: {', '.join(known) or 'none'})"
            )
        for chapter in having:
            default, comment = cells[chapter][name]
            expected = _expects(default)
            # A comment that documents None (`threads = 1  # ... None: default`) allows it.
            if value is None and "None" in comment:
                continue
            if expected is not None and not _allowed(value, expected[0]):
                raise ValueError(
                    f"{given(name, value)}={value!r}: {_whose(chapter)} {name} expects "
                    f"{expected[1]} (its default is {default!r})"
                )
            allowed = out_of_bounds(name, value)
            if allowed is not None:
                raise ValueError(
                    f"{given(name, value)}={value!r}: {_whose(chapter)} {name} must be "
                    f"{allowed} (its default is {default!r})"
                )


def _whose(chapter: str) -> str:
    return f"chapter {chapter}'s" if chapter else "the chapter's"


# papermill's injected cell (tagged `injected-parameters`, placed right after the parameters
# cell) starts with this comment; the kernel sees no tags, only the sources it ran.
INJECTED_COMMENT = "# Parameters"


def injected_parameters(namespace: dict) -> tuple[dict[str, Any], dict] | None:
    """(the names papermill injected, with their values in `namespace`, and the assignments of
    the parameters cell run just before them), read from the kernel's input history (`_ih`, the
    sources of the cells run, in order); None outside a kernel or without an injected cell."""
    history = namespace.get("_ih")
    if not isinstance(history, list):
        return None
    for index in range(len(history) - 1, 0, -1):
        source = history[index]
        if isinstance(source, str) and source.lstrip().startswith(INJECTED_COMMENT):
            try:
                injected = _cell_assignments(source)
                cell = _cell_assignments(str(history[index - 1]))
            except SyntaxError:
                return None
            if not cell:  # injected at the top: a notebook without a parameters cell
                return None
            return {k: namespace.get(k, v) for k, (v, _) in injected.items()}, cell
    return None


def chapter_profile(profile_name: str, chapter: str | None = None, **overrides):
    """`profiles.get_profile(profile_name, **overrides)` for a chapter's first cell: a profile or an
    override it does not take fails in one line (a `ParameterError`, shown without a traceback),
    naming the parameter, so a chapter run by hand with papermill says what to fix at once.

    "auto" is the machine's profile (`gpu` where CUDA is visible, else `cpu`). Outside the
    book's runner the chapter is a run by hand (`book.by_hand`): it writes under `runs/by-hand/`
    and its first output says what it runs (`chapter` is its number, e.g. "02").

    papermill only warns about a name the parameters cell lacks (`-p sede 5`) and runs on with
    the default: the names it injected (its `injected-parameters` cell, found in the kernel's
    input history, `injected_parameters`) are checked against the parameters cell run just before
    it, by the rule `book --param` follows, so a misspelt name stops here, naming the closest.

    The chapter's other parameters are checked against `PARAMETER_BOUNDS` here too: papermill
    puts them in the notebook's namespace, which is the caller's globals (only the names with
    bounds are read), so a seed of -1 given to papermill stops in the first cell, as
    `book --param` stops it before any chapter runs.
    """
    from ..profiles import get_profile

    namespace = sys._getframe(1).f_globals
    injected = injected_parameters(namespace)
    if injected is not None:
        given, cell = injected
        try:
            _check_against_cells(
                given,
                {chapter or "": cell},
                lambda name, value: f"papermill -p {name}",
                selected=False,
            )
        except ValueError as exc:
            raise ParameterError(str(exc)) from None
    values = {name: namespace[name] for name in PARAMETER_BOUNDS if name in namespace}
    values.update((k, v) for k, v in overrides.items() if k in PARAMETER_BOUNDS)
    for name, value in values.items():
        allowed = out_of_bounds(name, value)
        if allowed is not None:
            raise ParameterError(
                f"parameter {name}={value!r}: {name} must be {allowed}; run the chapter with "
                f"another value (papermill -p {name} VALUE)"
            )
    from . import by_hand

    chosen = profile_name not in (None, by_hand.AUTO)
    name = by_hand.resolve_profile_name(profile_name)
    try:
        profile = get_profile(name, **overrides)
    except ValueError as exc:
        given = ", ".join(
            [f"profile_name={profile_name!r}"]
            + [f"{k}={v!r}" for k, v in overrides.items() if v is not None]
        )
        raise ParameterError(f"parameters {given}: {exc}") from None
    by_hand.begin(profile.name, chapter, chosen=chosen)
    return profile

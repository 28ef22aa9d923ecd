"""Results and run records: one JSON Schema per kind, checked whenever a record is read or written.

The package keeps what it measured in JSON files that one version writes and another reads, often
on another machine: the results records of `results/<profile>/` (`evaluation.results`), the book's
record of its chapters (`book_run.json`), the run folders of `table3` and `parser-curve` (their
`*_run.json` plan and each job's `curve.json`), the files those runs export for the chapters to
read, and the ONNX export's `model.json`. Each kind has a schema here (`SCHEMAS`), strict on what a
reader of it uses (the keys it indexes and their types: every point of a Table 3 curve has its
epoch and its perplexity) and open to fields it does not (`additionalProperties` is left allowed,
so an older or newer record with more fields still reads).

`read_record(path, kind)` parses and validates; `write_record(path, kind, data)` validates, then
writes atomically (`files.atomic_write_text`), so a record that a reader would refuse is never
written. A file that is not JSON, or not a record of its kind, is one line (`RecordError`, a
ValueError, which the command line prints without a traceback): the file, the field
(`curve[0].ppl`), what is wrong with it, and the fix.

JSON Schema (checked with the `jsonschema` library) rather than classes of our own: the schemas are
a standard a reader of the files can check them with without this package, and the library is
maintained and already installed with the book's Jupyter stack.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from .files import atomic_write_text


class RecordError(ValueError):
    """A results or run record that is not valid JSON, or not a record of its kind: one line
    naming the file, the field and the fix."""


# ------------------------------------------------------------------------------------ the schemas
def _number(minimum: float | None = None, exclusive: bool = False) -> dict:
    schema: dict[str, Any] = {"type": "number"}
    if minimum is not None:
        schema["exclusiveMinimum" if exclusive else "minimum"] = minimum
    return schema


def _integer(minimum: int | None = None) -> dict:
    schema: dict[str, Any] = {"type": "integer"}
    if minimum is not None:
        schema["minimum"] = minimum
    return schema


def _object(required: Iterable[str] = (), **properties: dict) -> dict:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    required = list(required)
    if required:
        schema["required"] = required
    return schema


def _list(items: dict, min_items: int = 0) -> dict:
    schema: dict[str, Any] = {"type": "array", "items": items}
    if min_items:
        schema["minItems"] = min_items
    return schema


_STRING = {"type": "string"}
_OPTIONAL_STRING = {"type": ["string", "null"]}
_OPTIONAL_NUMBER = {"type": ["number", "null"]}
_OBJECT = {"type": "object"}

# evaluation.results.write_result: what `read_result`, the summary and `describe_provenance` read.
RESULT = _object(
    ["metrics"],
    schema=_integer(1),
    name=_STRING,
    profile=_STRING,
    metrics=_OBJECT,
    config={"type": ["object", "null"]},
    wall_time_s=_OPTIONAL_NUMBER,
    run_folder=_OPTIONAL_STRING,
    provenance=_OBJECT,
)

# One chapter's entry of book_run.json (book.runner._record_chapter, book.committed.import_run).
_CHAPTER_ENTRY = _object(
    ["status"],
    status=_STRING,
    wall_time_s=_OPTIONAL_NUMBER,
    date=_OPTIONAL_STRING,
    results=_list(_STRING),
    published={"type": ["object", "null"]},
)
BOOK_RUN = {
    **RESULT,
    "properties": {
        **RESULT["properties"],
        "metrics": {
            **_object(["chapters"], ok={"type": "boolean"}, profile=_OBJECT),
            "properties": {
                "chapters": {"type": "object", "additionalProperties": _CHAPTER_ENTRY},
                "ok": {"type": "boolean"},
                "profile": _OBJECT,
            },
        },
    },
}

# experiments.table3.extended: a job's curve.json, and the jobs of its export.
_TABLE3_POINT = _object(
    ["epoch", "ppl"],
    epoch=_integer(1),
    ppl=_number(0, exclusive=True),
    epochs=_number(0),
    step=_integer(0),
    train_s=_number(0),
    wall_s=_number(0),
)
TABLE3_JOB = _object(
    ["row", "seed", "corpus", "curve"],
    row=_STRING,
    seed=_integer(),
    corpus={"enum": ["full", "small"]},
    train_pairs=_integer(0),
    config=_OBJECT,
    precision=_STRING,
    device=_STRING,
    curve=_list(_TABLE3_POINT),
)
_TABLE3_TARGETS = {"type": "object", "additionalProperties": _integer(0)}
_TABLE3_IDENTITY = _object(
    ["overfit_share"],
    profile=_STRING,
    corpus=_STRING,
    vocab_size=_integer(1),
    batch_tokens=_integer(1),
    scale=_list(_integer(1)),
    overfit_share=_integer(1),
    precision=_STRING,
)
TABLE3_RUN = _object(["identity"], identity=_TABLE3_IDENTITY, targets=_TABLE3_TARGETS)
TABLE3_EXPORT = _object(
    ["identity", "targets", "jobs"],
    identity=_TABLE3_IDENTITY,
    targets={
        **_TABLE3_TARGETS,
        "required": ["full", "small"],
    },
    machine=_STRING,
    written=_STRING,
    jobs=_list(TABLE3_JOB, min_items=1),
)

# experiments.parsing.extended: a share's curve.json, the folder's plan, the export, the test score.
_PARSER_POINT = _object(
    ["epoch", "f1"],
    epoch=_integer(1),
    step=_integer(0),
    f1=_number(0),
    dev_nll=_number(),
    invalid=_integer(0),
    best={"type": "boolean"},
)
PARSER_JOB = _object(
    ["curve"],
    share=_number(0, exclusive=True),
    train_trees=_integer(0),
    recipe=_OBJECT,
    precision=_STRING,
    device=_STRING,
    curve=_list(_PARSER_POINT),
)
PARSER_RUN = _object(
    ["recipe"],
    recipe=_OBJECT,
    stopping=_object(
        ["min_epochs", "max_epochs"], min_epochs=_integer(1), max_epochs=_integer(1)
    ),
    device_type=_STRING,
    stops={
        "type": "object",
        "additionalProperties": _object(["epochs"], epochs=_integer(0)),
    },
)
PARSER_EXPORT = _object(
    ["recipe", "jobs"],
    recipe=_OBJECT,
    min_epochs=_integer(1),
    max_epochs=_integer(1),
    patience=_number(0),
    stopped={"type": "object", "additionalProperties": {"type": "boolean"}},
    jobs=_list(
        {**PARSER_JOB, "required": ["share", "train_trees", "curve"]}, min_items=1
    ),
)
PARSER_TEST = _object(
    ["recipe", "jobs"],
    recipe=_OBJECT,
    choice=_OBJECT,
    jobs=_list(
        _object(
            ["share", "test", "chosen_on_dev"],
            share=_number(0, exclusive=True),
            test=_object(
                ["f1", "f1_ci95", "f1_le40"],
                f1=_number(0),
                f1_ci95=_list(_number(), min_items=2),
                f1_le40=_number(0),
            ),
            chosen_on_dev=_object(
                ["snapshot", "search", "epoch"],
                snapshot=_STRING,
                search=_STRING,
                epoch=_integer(1),
            ),
        )
    ),
)

# web.onnx_export: the export's model.json, which OnnxTranslator and the live page read (the page
# loads the graphs its "files" name and decodes with max_len, bos_id, eos_id and banned).
ONNX_MODEL = _object(
    ["max_len", "bos_id", "eos_id", "banned", "weights", "files"],
    layers=_integer(1),
    encoder_layers=_integer(1),
    heads=_integer(1),
    d_model=_integer(1),
    max_len=_integer(2),
    vocab_size=_integer(1),
    bos_id=_integer(0),
    eos_id=_integer(0),
    banned=_list(_integer(0)),
    weights={"enum": ["float32", "int8"]},
    files={
        **_object(["encoder", "decoder"], encoder=_STRING, decoder=_STRING),
        "additionalProperties": _STRING,
    },
    checkpoint=_OBJECT,
)

SCHEMAS: dict[str, dict] = {
    "result": RESULT,
    "book_run": BOOK_RUN,
    "table3_job": TABLE3_JOB,
    "table3_run": TABLE3_RUN,
    "table3_export": TABLE3_EXPORT,
    "parser_job": PARSER_JOB,
    "parser_run": PARSER_RUN,
    "parser_export": PARSER_EXPORT,
    "parser_test": PARSER_TEST,
    "onnx_model": ONNX_MODEL,
}

# What a record of each kind is, in words, and the fix for a broken one ({path}: the file,
# {folder}: the folder it is in).
WHAT = {
    "result": "a results record",
    "book_run": "the book's record of its chapters",
    "table3_job": "a Table 3 job's curve",
    "table3_run": "a Table 3 run folder's plan",
    "table3_export": "a Table 3 extended run's export",
    "parser_job": "a parser share's curve",
    "parser_run": "a parser run folder's plan",
    "parser_export": "a parser extended run's export",
    "parser_test": "a parser run's test scores",
    "onnx_model": "an ONNX export's model description",
}
_RESTORE = "restore it from git (git checkout -- {path}) if it is committed"
FIXES = {
    "result": _RESTORE + ", else delete it and rerun what writes it",
    "book_run": _RESTORE + ", else delete it (the book's next run writes a new one)",
    "table3_job": "delete the job's folder {folder} to retrain it",
    "table3_run": "give another --out, or delete {folder} to train the run again",
    "table3_export": _RESTORE
    + ", else export it again (table3 --export-only --export {path})",
    "parser_job": "delete the share's folder {folder} to retrain it",
    "parser_run": "give another --out, or delete {folder} to train the run again",
    "parser_export": _RESTORE + ", else export it again (parser-curve --export {path})",
    "parser_test": _RESTORE + ", else move it away to score the stopped shares again",
    "onnx_model": "export the model again (export-onnx --out {folder})",
}


@cache
def _validator(kind: str):
    from jsonschema import Draft202012Validator

    if kind not in SCHEMAS:
        raise KeyError(f"no record kind {kind!r}; the kinds are {', '.join(SCHEMAS)}")
    schema = SCHEMAS[kind]
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


# ------------------------------------------------------------------------------------ the errors
_TYPE_WORDS = {
    "object": "an object",
    "array": "a list",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "null": "null",
}


def field_name(path: Iterable[Any]) -> str:
    """A field's path as a reader writes it: ["curve", 0, "ppl"] -> "curve[0].ppl"."""
    text = ""
    for part in path:
        text += (
            f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
        )
    return text


def _shown_value(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


def _problem(error) -> str:
    """What is wrong, in words, starting with the field: "curve[0].ppl is missing"."""
    path = list(error.absolute_path)
    here = field_name(path) or "the record"
    kind, expected, value = error.validator, error.validator_value, error.instance
    if kind == "required":
        missing = [name for name in expected if name not in value]
        names = [field_name([*path, name]) for name in missing]
        return f"{', '.join(names)} {'is' if len(names) == 1 else 'are'} missing"
    if kind == "type":
        wanted = [expected] if isinstance(expected, str) else list(expected)
        words = " or ".join(_TYPE_WORDS.get(t, t) for t in wanted)
        return f"{here} is {_shown_value(value)}, not {words}"
    if kind == "enum":
        return f"{here} is {_shown_value(value)}, not one of {_shown_value(expected)}"
    if kind in ("minimum", "exclusiveMinimum"):
        bound = "at least" if kind == "minimum" else "more than"
        return f"{here} is {_shown_value(value)}, not {bound} {expected}"
    if kind == "minItems":
        return f"{here} holds {len(value)} item(s), fewer than {expected}"
    return f"{here}: {error.message}"


def _fix(kind: str, path: Path, fix: str | None) -> str:
    return (fix if fix is not None else FIXES[kind]).format(path=path, folder=path.parent)


def problems(data: Any, kind: str) -> list[str]:
    """Every way `data` is not a record of `kind`, most telling first ([]: it is one)."""

    def order(error) -> tuple:  # the outermost field first, then in the record's order
        parts = tuple(
            (0, p) if isinstance(p, int) else (1, str(p)) for p in error.absolute_path
        )
        return len(parts), parts

    errors = sorted(_validator(kind).iter_errors(data), key=order)
    # one line for the fields missing from one object (jsonschema reports each on its own)
    return list(dict.fromkeys(_problem(e) for e in errors))


def check_record(
    data: Any,
    kind: str,
    path: str | os.PathLike,
    *,
    fix: str | None = None,
    writing: bool = False,
) -> Any:
    """`data` when it is a record of `kind`; else RecordError naming `path` (the file it was
    read from, or is to be written to), the first field that is wrong, and the fix (`fix`,
    default the kind's; "{path}" and "{folder}" in it are filled in)."""
    found = problems(data, kind)
    if found:
        path = Path(path)
        shown = " and ".join(found[:2])
        more = f" (and {len(found) - 2} more problems)" if len(found) > 2 else ""
        head = (
            f"not writing {path}, which would not be {WHAT[kind]}"
            if writing
            else f"{path} is not {WHAT[kind]}"
        )
        raise RecordError(f"{head}: {shown}{more}; {_fix(kind, path, fix)}")
    return data


# ------------------------------------------------------------------------------------ read, write
def parse_json(text: str, path: str | os.PathLike, kind: str, *, fix: str | None = None):
    """The JSON value of `text` (read from `path`); RecordError naming the file, the line and
    the column where it breaks, and the fix."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        path = Path(path)
        raise RecordError(
            f"{path} is not valid JSON (line {error.lineno} column {error.colno}: {error.msg}); "
            f"{_fix(kind, path, fix)}"
        ) from error


def read_json(path: str | os.PathLike, kind: str, *, fix: str | None = None) -> Any:
    """The JSON value in `path`, not yet checked against `kind`'s schema (for a reader that
    first tells what else the file could be); an unreadable or malformed file is a RecordError."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise RecordError(
            f"{path} is not text (UTF-8): it is not {WHAT[kind]}; {_fix(kind, path, fix)}"
        ) from error
    return parse_json(text, path, kind, fix=fix)


def read_record(path: str | os.PathLike, kind: str, *, fix: str | None = None) -> Any:
    """The record of `kind` in `path`, parsed and checked against its schema (RecordError in
    one line otherwise). A missing file is FileNotFoundError, as `open` raises it."""
    return check_record(read_json(path, kind, fix=fix), kind, path, fix=fix)


def record_text(
    data: Any,
    kind: str,
    path: str | os.PathLike,
    *,
    indent: int = 1,
    default: Callable[[Any], Any] | None = None,
    fix: str | None = None,
) -> str:
    """`data` as the JSON text of a record of `kind` for `path`, checked first (as it will be
    read back): RecordError when a reader would refuse it."""
    text = json.dumps(data, indent=indent, default=default)
    fix = fix or "the file is left as it was (a bug of the writer: report it)"
    check_record(json.loads(text), kind, path, fix=fix, writing=True)
    return text


def write_record(
    path: str | os.PathLike,
    kind: str,
    data: Mapping,
    *,
    indent: int = 1,
    default: Callable[[Any], Any] | None = None,
    newline: bool = False,
) -> Path:
    """Check `data` against `kind`'s schema, then write it to `path` atomically; a record a
    reader would refuse is never written (RecordError, the file left as it was)."""
    text = record_text(data, kind, path, indent=indent, default=default)
    return atomic_write_text(path, text + ("\n" if newline else ""))

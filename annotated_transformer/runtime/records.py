"""Results and run records: one JSON Schema per kind, checked whenever a record is read or written.

The package keeps what it measured in JSON files that one version writes and another reads, often
on another machine: the results records of `results/<profile>/` (`evaluation.results`), the book's
record of its chapters (`book_run.json`), the long runs of `table3` and `parser-curve`
(`training.long_run`: a run folder's plan, each job's `curve.json` and the file a run exports for
the chapters to read, one format for both), and the ONNX export's `model.json`. Each kind has a
schema here (`SCHEMAS`), strict on what a reader of it uses (the keys it indexes and their types:
every point of a Table 3 curve has its epoch and its perplexity) and open to fields it does not
(`additionalProperties` is left allowed, so an older or newer record with more fields still reads).

`read_record(path, kind)` parses and validates; `write_record(path, kind, data)` validates, then
writes atomically (`files.atomic_write_text`), so a record that a reader would refuse is never
written. A file that is not JSON, or not a record of its kind, is one line (`RecordError`, a
ValueError, which the command line prints without a traceback): the file, the field
(`curve[0].ppl`), what is wrong with it, and the fix.

It is also the package's one JSON codec: every JSON text the package reads, record or not (a
notebook, a cached measurement, a run's `metrics.jsonl` line by line), is parsed by `parse_json`
(`read_json`, `read_lines`), and what it writes here by `json_text`. Strict JSON: no NaN or
Infinity (Python's json reads and writes them; no other reader does), no number beyond a float's
range (1e999 would read as infinity), no key twice in one object (the last would win unseen), at
most MAX_JSON_SIZE long and MAX_JSON_DEPTH deep (counted before parsing: a deeper text would be a
RecursionError). Each refusal is one RecordError naming the file, what is wrong and the fix.

JSON Schema (checked with the `jsonschema` library) rather than classes of our own: the schemas are
a standard a reader of the files can check them with without this package, and the library is
maintained and already installed with the book's Jupyter stack.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Callable, Iterable, Mapping
from functools import cache
from itertools import accumulate
from pathlib import Path
from typing import Any

from .files import atomic_write_text, cache_dir, ensure_folder


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
        "metrics": _object(
            ["chapters"],
            chapters={"type": "object", "additionalProperties": _CHAPTER_ENTRY},
            ok={"type": "boolean"},
            profile=_OBJECT,
        ),
    },
}

# training.long_run: a long run's job records (`curve.json`), its folder's plan and its export, one
# format for every kind of long run; what each kind's readers index is required by kind below.
_LONG_RUN_POINT = _object(
    ["epoch"],
    epoch=_integer(1),
    epochs=_number(0),
    step=_integer(0),
    ppl=_number(0, exclusive=True),
    f1=_number(0),
    dev_nll=_number(),
    invalid=_integer(0),
    best={"type": "boolean"},
    train_s=_number(0),
    wall_s=_number(0),
)
# {kind: (the values that name a job, what every point of its curve holds)}
LONG_RUN_KINDS = {
    "table3": (
        _object(
            ["corpus", "row", "seed"],
            corpus={"enum": ["full", "small"]},
            row=_STRING,
            seed=_integer(),
        ),
        ["ppl"],
    ),
    "parser": (_object(["share"], share=_number(0, exclusive=True)), ["f1"]),
}


def _when(kind: str, then: dict) -> dict:
    """JSON Schema's if/then: a record of that `kind` is also a `then`."""
    return {
        "if": {"required": ["kind"], "properties": {"kind": {"const": kind}}},
        "then": then,
    }


LONG_RUN_JOB = {
    **_object(
        ["kind", "name", "job", "precision", "device", "facts", "curve"],
        kind={"enum": list(LONG_RUN_KINDS)},
        name=_STRING,
        job=_OBJECT,
        precision=_STRING,
        device=_OPTIONAL_STRING,
        facts=_OBJECT,
        curve=_list(_LONG_RUN_POINT),
    ),
    "allOf": [
        _when(kind, _object(job=job, curve=_list(_object(point))))
        for kind, (job, point) in LONG_RUN_KINDS.items()
    ],
}
_LONG_RUN_TABLE3_IDENTITY = _object(
    ["overfit_share", "precision"],
    profile=_STRING,
    corpus=_STRING,
    vocab_size=_integer(1),
    batch_tokens=_integer(1),
    scale=_list(_integer(1)),
    overfit_share=_integer(1),
    precision=_STRING,
)
LONG_RUN_PLAN = _object(
    ["kind", "identity", "targets", "stops"],
    kind={"enum": list(LONG_RUN_KINDS)},
    identity=_OBJECT,
    targets=_OBJECT,
    stops={
        "type": "object",
        "additionalProperties": _object(["epochs"], epochs=_integer(0)),
    },
)
LONG_RUN_EXPORT = {
    **_object(
        ["kind", "identity", "targets", "written", "machine", "notes", "jobs"],
        kind={"enum": list(LONG_RUN_KINDS)},
        identity=_OBJECT,
        targets=_OBJECT,
        written=_OPTIONAL_STRING,
        machine=_OPTIONAL_STRING,
        notes=_OBJECT,
        jobs=_list(LONG_RUN_JOB, min_items=1),
    ),
    # Table 3's readers read the identity's share and precision and both corpora's targets, and
    # `table3 --merge` when and where each part was written; the parser's readers its recipe.
    "allOf": [
        _when(
            "table3",
            _object(
                ["written", "machine"],
                identity=_LONG_RUN_TABLE3_IDENTITY,
                targets=_object(["full", "small"], full=_integer(0), small=_integer(0)),
                written=_STRING,
                machine=_STRING,
            ),
        ),
        _when(
            "parser",
            _object(
                ["identity", "targets"],
                identity=_object(["recipe"], recipe=_OBJECT, device_type=_STRING),
                targets=_object(
                    ["min_epochs", "max_epochs"],
                    min_epochs=_integer(1),
                    max_epochs=_integer(1),
                ),
            ),
        ),
    ],
}
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
    "long_run_job": LONG_RUN_JOB,
    "long_run_plan": LONG_RUN_PLAN,
    "long_run_export": LONG_RUN_EXPORT,
    "parser_test": PARSER_TEST,
    "onnx_model": ONNX_MODEL,
}

# What a record of each kind is, in words, and the fix for a broken one ({path}: the file,
# {folder}: the folder it is in).
WHAT = {
    "result": "a results record",
    "book_run": "the book's record of its chapters",
    "long_run_job": "a long run's job record",
    "long_run_plan": "a long run folder's plan",
    "long_run_export": "a long run's export",
    "parser_test": "a parser run's test scores",
    "onnx_model": "an ONNX export's model description",
}
_RESTORE = "restore it from git (git checkout -- {path}) if it is committed"
FIXES = {
    "result": _RESTORE + ", else delete it and rerun what writes it",
    "book_run": _RESTORE + ", else delete it (the book's next run writes a new one)",
    "long_run_job": "delete the job's folder {folder} to retrain it",
    "long_run_plan": "give another --out, or delete {folder} to train the run again",
    "long_run_export": _RESTORE
    + ", else export it again from its run folder (table3 --export-only --export {path}, "
    "parser-curve --export {path})",
    "parser_test": _RESTORE + ", else move it away to score the stopped shares again",
    "onnx_model": "export the model again (export-onnx --out {folder})",
}
_GENERIC_FIX = "repair the file, or delete it and rerun what writes it"
_WRITER_FIX = "the file is left as it was (a bug of the writer: report it)"


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


def _fix(kind: str | None, path: Path, fix: str | None) -> str:
    """`fix`, default the kind's (`_GENERIC_FIX` for JSON that is no record), filled in."""
    return (fix or FIXES.get(kind, _GENERIC_FIX)).format(path=path, folder=path.parent)


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


# ------------------------------------------------------------------------------------ the codec
# Every JSON text the package reads goes through `parse_json` (tests/test_doors.py holds the one
# list of modules allowed to call the json module's parsers). Strict JSON, bounded:
# the bytes of a file (characters of a text) read as JSON; the largest the package writes is ~1 MiB
MAX_JSON_SIZE = 64 * 1024 * 1024
# lists and objects inside each other: the package writes ~10, and the parser recurses once per
# level (a RecursionError near 1000, sooner under a deep caller)
MAX_JSON_DEPTH = 100
# What writes a value that does not exist as null, and why; everything else refuses to write a
# NaN or an infinite float (a bug of its writer). No kind reads NaN or Infinity back.
# - "result": a row's p-value against itself, the mean distance of a head with no key;
# - "metrics_log": a run's metrics.jsonl (the trainer checks the loss before each `train` record;
#   a value that is not finite still cannot make the log unreadable).
MISSING_AS_NULL_KINDS = frozenset({"result", "metrics_log"})

_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_DEPTH_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


class _Refused(Exception):
    """What is wrong with a JSON text, raised from inside the parser's hooks."""


def _no_constant(name: str):
    raise _Refused(f"it holds {name}, which JSON has no number for")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Refused(
            f"the number {text[:40]} is beyond a float's range (it reads as {value})"
        )
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict:
    found = dict(pairs)
    if len(found) != len(pairs):
        seen: set[str] = set()
        twice = next(key for key, _ in pairs if key in seen or seen.add(key))
        raise _Refused(f"an object holds the key {_shown_value(twice)} twice")
    return found


def _too_deep(text: str) -> bool:
    """Whether `text` nests lists and objects more than MAX_JSON_DEPTH deep (brackets inside
    strings left out), counted before the parser recurses into them."""
    if text.count("[") + text.count("{") <= MAX_JSON_DEPTH:
        return False
    brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text))
    return max(accumulate(map(_DEPTH_STEP.__getitem__, brackets)), default=0) > (
        MAX_JSON_DEPTH
    )


def parse_json(
    text: str | bytes,
    path: str | os.PathLike,
    kind: str | None = None,
    *,
    fix: str | None = None,
) -> Any:
    """The JSON value of `text` (read from `path`, or what `path` names in words): strict JSON
    (no NaN or Infinity; no number beyond a float's range; no key twice
    in one object), at most MAX_JSON_SIZE long and MAX_JSON_DEPTH deep, bytes as UTF-8. Anything
    else is one RecordError naming `path`, what is wrong and the fix (`fix`, default the kind's)."""
    path = Path(path)

    def refuse(what: str) -> RecordError:
        return RecordError(f"{path} is not valid JSON ({what}); {_fix(kind, path, fix)}")

    if len(text) > MAX_JSON_SIZE:
        raise refuse(
            f"it is {len(text) / 2**20:.0f} MiB, more than the {MAX_JSON_SIZE // 2**20} MiB "
            "the package reads as JSON"
        )
    if isinstance(text, (bytes, bytearray, memoryview)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as error:
            raise refuse(f"byte {error.start} is not UTF-8 text") from None
    if _too_deep(text):
        raise refuse(f"lists and objects nest more than {MAX_JSON_DEPTH} deep")
    try:
        return json.loads(
            text,
            object_pairs_hook=_unique_keys,
            parse_float=_finite_float,
            parse_constant=_no_constant,
        )
    except json.JSONDecodeError as error:
        raise refuse(f"line {error.lineno} column {error.colno}: {error.msg}") from None
    except _Refused as error:
        raise refuse(str(error)) from None
    except RecursionError:
        raise refuse("lists and objects nest too deep for the parser") from None
    except ValueError as error:  # an integer of more digits than Python converts
        raise refuse(str(error).split(";")[0]) from None


def parse_lines(
    text: str | bytes,
    path: str | os.PathLike,
    kind: str | None = None,
    *,
    fix: str | None = None,
) -> list:
    """The values of a JSON-lines text (`metrics.jsonl`), one per line that is not blank, each
    parsed as `parse_json` parses a file; the error names the line ("metrics.jsonl: line 3")."""
    path = Path(path)
    if len(text) > MAX_JSON_SIZE:
        parse_json(text, path, kind, fix=fix)  # the size's refusal
    lines = (
        bytes(text).split(b"\n")
        if isinstance(text, (bytes, bytearray, memoryview))
        else text.split("\n")
    )
    return [
        parse_json(line, f"{path}: line {number}", kind, fix=fix)
        for number, line in enumerate(lines, 1)
        if line.strip()
    ]


def _read_bytes(path: Path, kind: str | None, fix: str | None) -> bytes:
    """The bytes of `path`, refused before reading when over MAX_JSON_SIZE."""
    size = path.stat().st_size
    if size > MAX_JSON_SIZE:
        raise RecordError(
            f"{path} is not valid JSON (it is {size / 2**20:.0f} MiB, more than the "
            f"{MAX_JSON_SIZE // 2**20} MiB the package reads as JSON); "
            f"{_fix(kind, path, fix)}"
        )
    return path.read_bytes()


def read_json(
    path: str | os.PathLike, kind: str | None = None, *, fix: str | None = None
) -> Any:
    """The JSON value in `path` (`parse_json`), not checked against a schema (for a file that is
    no record, or a reader that first tells what else the file could be); an unreadable or
    malformed file is a RecordError, a missing one FileNotFoundError."""
    path = Path(path)
    return parse_json(_read_bytes(path, kind, fix), path, kind, fix=fix)


def read_lines(
    path: str | os.PathLike, kind: str | None = None, *, fix: str | None = None
) -> list:
    """The values of the JSON-lines file `path` (`parse_lines`)."""
    path = Path(path)
    return parse_lines(_read_bytes(path, kind, fix), path, kind, fix=fix)


def _non_finite_field(data: Any, at: tuple = ()) -> tuple | None:
    """Where `data` holds a float that is not finite (the first such field), else None."""
    if isinstance(data, float) and not math.isfinite(data):
        return at
    items = (
        data.items()
        if isinstance(data, Mapping)
        else enumerate(data)
        if isinstance(data, (list, tuple))
        else ()
    )
    for key, value in items:
        found = _non_finite_field(value, (*at, key))
        if found is not None:
            return found
    return None


def json_text(
    data: Any,
    path: str | os.PathLike,
    kind: str | None = None,
    *,
    indent: int | None = None,
    default: Callable[[Any], Any] | None = None,
    fix: str | None = None,
) -> str:
    """`data` as the JSON text to write to `path`: strict JSON, so `parse_json` reads it back. A
    NaN or infinite float is null in MISSING_AS_NULL_KINDS and one RecordError naming the field in
    every other kind."""
    if kind in MISSING_AS_NULL_KINDS:
        data = _missing_as_null(data)
    try:
        return json.dumps(data, indent=indent, default=default, allow_nan=False)
    except ValueError:
        field = _non_finite_field(data)
        if field is None:
            raise
        path = Path(path)
        fix = fix or _WRITER_FIX
        raise RecordError(
            f"not writing {path}: {field_name(field) or 'the value'} is {_data_at(data, field)}, "
            f"which JSON has no number for; {_fix(kind, path, fix)}"
        ) from None


def _missing_as_null(data: Any) -> Any:
    """`data` with every NaN or infinite float (numpy's too) replaced by None."""
    if isinstance(data, float) or type(data).__name__.startswith("float"):
        try:
            return data if math.isfinite(data) else None
        except TypeError:
            return data
    if isinstance(data, Mapping):
        return {key: _missing_as_null(value) for key, value in data.items()}
    if isinstance(data, (list, tuple)):
        return [_missing_as_null(value) for value in data]
    return data


def _data_at(data: Any, field: Iterable[Any]) -> Any:
    for key in field:
        data = data[key]
    return data


# ------------------------------------------------------------------------------------ read, write
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
) -> str:
    """`data` as the JSON text of a record of `kind` for `path`, checked first (as it will be
    read back): RecordError when a reader would refuse it."""
    text = json_text(data, path, kind, indent=indent, default=default, fix=_WRITER_FIX)
    parsed = parse_json(text, path, kind, fix=_WRITER_FIX)
    check_record(parsed, kind, path, fix=_WRITER_FIX, writing=True)
    return text


def write_record(path: str | os.PathLike, kind: str, data: Mapping) -> Path:
    """Check `data` against `kind`'s schema, then write it to `path` atomically; a record a
    reader would refuse is never written (RecordError, the file left as it was)."""
    return atomic_write_text(path, record_text(data, kind, path))


# ------------------------------------------------------------------------------ measured choices
def read_measured(name: str) -> dict:
    """The entries of the cache file `name` under cache_dir() (measured choices: precision,
    compile), or {} when it is missing or unreadable."""
    try:
        return read_json(cache_dir() / name)
    except (OSError, ValueError):
        return {}


def write_measured(name: str, key: str, value: dict) -> None:
    """Add `key` to the cache file `name`, written whole; a read-only cache only means measuring
    again next time."""
    entries = read_measured(name)
    entries[key] = value
    path = cache_dir() / name
    try:
        ensure_folder(path.parent)
        atomic_write_text(path, json.dumps(entries, indent=1, sort_keys=True) + "\n")
    except OSError:
        pass

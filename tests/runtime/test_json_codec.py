"""The package's one JSON codec (runtime/records.py): strict JSON, bounded in size and depth, and
every refusal one RecordError line naming the file, what is wrong and the fix."""

from __future__ import annotations

import json
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotated_transformer.runtime import records
from annotated_transformer.runtime.records import RecordError, parse_json


def refusal(text, kind=None, path="f.json") -> str:
    with pytest.raises(RecordError) as caught:
        parse_json(text, path, kind)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(str(path)), message
    return message


@pytest.mark.parametrize(
    "text, says",
    [
        ('{"ppl": NaN}', "it holds NaN"),
        ('{"ppl": Infinity}', "it holds Infinity"),
        ('{"ppl": -Infinity}', "it holds -Infinity"),
        ('{"ppl": 1e999}', "the number 1e999 is beyond a float's range"),
        ('{"ppl": -1e999}', "the number -1e999 is beyond a float's range"),
        ('{"ppl": 1, "ppl": 2}', 'an object holds the key "ppl" twice'),
        ('[{"a": {}, "a": []}]', 'an object holds the key "a" twice'),
        ("1" * 5000, "Exceeds the limit (4300 digits) for integer string conversion"),
        (b"\xff{}", "byte 0 is not UTF-8 text"),
        ('{"a": ', "line 1 column 7: Expecting value"),
    ],
)
def test_what_python_json_reads_but_json_is_not_is_refused_in_one_line(text, says):
    message = refusal(text)
    assert says in message and "; repair the file, or delete it" in message


def test_no_kind_reads_nan_and_a_results_record_writes_a_missing_value_as_null(tmp_path):
    for kind in (None, "result", "metrics_log"):
        assert "it holds NaN" in refusal('{"p_value": NaN}', kind)
    row = {"p_value": float("nan"), "rows": [float("-inf"), 1.5], "n": 3}
    text = records.json_text(row, tmp_path / "r.json", "result")
    assert parse_json(text, "r.json", "result") == {
        "p_value": None,
        "rows": [None, 1.5],
        "n": 3,
    }
    assert "is beyond a float's range" in refusal('{"p": 1e999}', "result")
    assert "twice" in refusal('{"p": 1, "p": 1}', "result")


@pytest.mark.parametrize("opening", ["[", '{"a":'])
def test_a_deeply_nested_text_is_one_line_not_a_recursion_error(opening):
    closing = "]" if opening == "[" else "}"
    deep = opening * 100_000 + "1" + closing * 100_000
    try:
        json.loads(deep)
    except RecursionError:
        pass  # what the package met before the codec counted
    else:  # pragma: no cover - a parser without recursion
        pytest.skip("this Python's json parses it")
    assert f"nest more than {records.MAX_JSON_DEPTH} deep" in refusal(deep)
    limit = records.MAX_JSON_DEPTH
    assert parse_json("[" * limit + "]" * limit, "f.json") is not None
    assert "nest more than" in refusal("[" * (limit + 1) + "]" * (limit + 1))
    # brackets inside strings are text, not nesting
    assert parse_json(json.dumps(["[" * 1000, '\\"{' * 500]), "f.json")


def test_a_file_over_the_size_bound_is_refused_before_it_is_read(tmp_path, monkeypatch):
    path = tmp_path / "big.json"
    path.write_text(json.dumps(list(range(1000))))
    monkeypatch.setattr(records, "MAX_JSON_SIZE", 100)
    monkeypatch.setattr(
        type(path), "read_bytes", lambda self: pytest.fail("read the file")
    )
    with pytest.raises(RecordError, match=r"big\.json is not valid JSON \(it is 0 MiB"):
        records.read_json(path)
    assert records.MAX_JSON_SIZE < 2**31


def test_a_record_is_refused_naming_its_kinds_fix(tmp_path):
    path = tmp_path / "curve.json"
    path.write_text('{"kind": "table3", "curve": [{"epoch": 1, "ppl": NaN}]}')
    with pytest.raises(RecordError) as caught:
        records.read_record(path, "long_run_job")
    assert str(caught.value) == (
        f"{path} is not valid JSON (it holds NaN, which JSON has no number for); "
        f"delete the job's folder {tmp_path} to retrain it"
    )


def test_a_record_with_a_number_json_has_not_is_never_written(tmp_path):
    path = tmp_path / "curve.json"
    job = {"kind": "table3", "curve": [{"epoch": 1}]}
    job["curve"][0]["ppl"] = float("inf")
    with pytest.raises(RecordError) as caught:
        records.write_record(path, "long_run_job", job)
    assert f"not writing {path}: curve[0].ppl is inf, which JSON has no number" in str(
        caught.value
    )
    assert not path.exists()


def test_a_lines_file_names_the_line(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text('{"kind": "start"}\n\n{"kind": "valid", "ppl": NaN}\n')
    with pytest.raises(RecordError) as caught:
        records.read_lines(path, fix="train the run again")
    assert str(caught.value) == (
        f"{path}: line 3 is not valid JSON (it holds NaN, which JSON has no number for); "
        "train the run again"
    )
    path.write_text('{"kind": "start"}\n\n{"kind": "stop"}\n')
    assert records.read_lines(path) == [{"kind": "start"}, {"kind": "stop"}]
    # a line break inside a string is no line break of the file
    path.write_text('{"say": "a\u2028b\x85c"}\n')
    assert records.read_lines(path) == [{"say": "a\u2028b\x85c"}]
    path.write_bytes(b'{"kind": "start"}\n{"say": "\xff"}\n')
    with pytest.raises(
        RecordError, match=r"metrics\.jsonl: line 2 is not valid JSON \(byte"
    ):
        records.read_lines(path)


def test_a_metrics_log_is_strict_json_and_a_lost_loss_is_null(tmp_path):
    from annotated_transformer.training.run_folder import METRICS_NAME
    from annotated_transformer.training.training_log import read_metrics

    path = tmp_path / METRICS_NAME
    line = records.json_text({"kind": "train", "loss": float("nan")}, path, "metrics_log")
    path.write_text(line + '\n{"kind": "diverged"}\n')
    assert read_metrics(tmp_path)[0]["loss"] is None
    path.write_text('{"kind": "train", "loss": 1.0, "loss": 2.0}\n')
    with pytest.raises(RecordError) as caught:
        read_metrics(tmp_path)
    assert str(caught.value) == (
        f'{path}: line 1 is not valid JSON (an object holds the key "loss" twice); the '
        "run's log is damaged: restore it, or train the run again with --overwrite"
    )


# ----------------------------------------------------------------- any text at the door: properties
def agrees_with_python(text) -> None:
    """The codec's answer to `text`: Python's json value, or its one-line refusal; nothing else."""
    try:
        got = parse_json(text, "door.json")
    except RecordError as error:
        assert "\n" not in str(error) and str(error).startswith("door.json ")
        return
    plain = text.decode("utf-8") if isinstance(text, bytes) else text
    expected = json.loads(plain)
    assert got == expected and repr(got) == repr(expected)


# strict JSON values: what the package writes
values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4)
    ),
    max_leaves=30,
)
# texts near JSON: its tokens, with Python's extensions and broken pieces among them
TOKENS = [
    "[", "]", "{", "}", ",", ":", '"a"', '"b"', '"[{"', '"\\"', '"\\u00e9"', '"\\ud800"', "0",
    "-1", "1.5", "1e999", "-1e400", "1e-999", "NaN", "Infinity", "-Infinity", "true", "null",
    " ", "\n", "\x00", '"', "\\", "\ufeff", "01", "1" * 4400,
]  # fmt: skip
near_json = st.lists(st.sampled_from(TOKENS), max_size=40).map("".join)
EXAMPLES = 400
_SETTINGS = settings(
    max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@_SETTINGS
@given(values)
def test_strict_json_the_package_writes_reads_back_as_python_reads_it(value):
    text = json.dumps(value)
    assert repr(parse_json(text, "door.json")) == repr(json.loads(text))
    assert repr(parse_json(text.encode(), "door.json")) == repr(json.loads(text))


@_SETTINGS
@given(st.text())
def test_any_text_is_python_json_value_or_one_line(text):
    agrees_with_python(text)


@_SETTINGS
@given(near_json)
def test_any_text_of_json_tokens_is_python_json_value_or_one_line(text):
    agrees_with_python(text)


@_SETTINGS
@given(st.binary() | near_json.map(lambda t: t.encode("utf-8", "surrogatepass")))
def test_any_bytes_are_python_json_value_or_one_line(data):
    agrees_with_python(data)


@_SETTINGS
@given(st.integers(0, 3 * sys.getrecursionlimit()), st.sampled_from(["[", '{"k":']))
def test_any_depth_is_read_or_refused_in_one_line(depth, opening):
    closing = "]" if opening == "[" else "}"
    text = opening * depth + "0" + closing * depth
    if depth <= records.MAX_JSON_DEPTH:
        assert repr(parse_json(text, "door.json")) == repr(json.loads(text))
    else:
        assert "nest more than" in refusal(text, path="door.json")


@_SETTINGS
@given(st.lists(near_json | values.map(json.dumps), max_size=6).map("\n".join))
def test_any_lines_are_python_json_values_or_one_line_naming_the_line(text):
    try:
        got = records.parse_lines(text, "metrics.jsonl")
    except RecordError as error:
        assert "\n" not in str(error)
        assert str(error).startswith("metrics.jsonl: line "), str(error)
        return
    lines = [line for line in text.split("\n") if line.strip()]
    assert repr(got) == repr([json.loads(line) for line in lines])

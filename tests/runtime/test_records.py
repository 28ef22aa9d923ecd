"""Results and run records are checked against a JSON Schema per kind (runtime/records.py).

The schemas accept every committed record (so they are not stricter than what the package wrote),
and refuse a planted broken one in one line naming the file, the field and the fix.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from annotated_transformer.runtime import records

REPO = Path(__file__).resolve().parents[2]
# Committed JSON under results/ that is none of the package's record kinds: the benchmarks' own
# files, the parser sweep's notes and scripts/table3_reanalysis.py's output.
NOT_RECORDS = ("results/benchmarks/", "results/tuning_parser_cpu/")
NOT_RECORD_NAMES = ("table3_reanalysis.json",)


def committed_kind(path: Path) -> str | None:
    """The record kind of a committed file under results/, from where it lies."""
    rel = path.relative_to(REPO).as_posix()
    if rel.startswith(NOT_RECORDS) or path.name in NOT_RECORD_NAMES:
        return None
    if path.name == "book_run.json":
        return "book_run"
    if path.name in ("table3_run.json", "parser_run.json"):
        return "long_run_plan"
    if path.name == "curve.json":
        return "long_run_job"
    if rel.startswith(("results/table3_extended_", "results/parser_extended_")):
        return "parser_test" if path.name == "test.json" else "long_run_export"
    return "result"


def committed_records() -> list[tuple[Path, str]]:
    listed = subprocess.run(
        ["git", "ls-files", "results"], cwd=REPO, capture_output=True, text=True
    ).stdout.split()
    found = [REPO / p for p in listed if p.endswith(".json")]
    return [(p, committed_kind(p)) for p in found if committed_kind(p) is not None]


def test_every_schema_is_valid_json_schema():
    for schema in records.SCHEMAS.values():
        Draft202012Validator.check_schema(schema)
    assert set(records.WHAT) == set(records.FIXES) == set(records.SCHEMAS)


def test_every_committed_record_reads_under_its_kinds_schema():
    found = committed_records()
    if not found:
        pytest.skip("needs a clone with its results/")
    kinds = {kind for _, kind in found}
    # every kind committed under results/ is walked
    assert {"result", "book_run", "long_run_export", "parser_test"} <= kinds
    assert {"long_run_job", "long_run_plan"} <= kinds
    for path, kind in found:
        records.read_record(path, kind)


def _table3_job(curve: list, **changes) -> dict:
    """A Table 3 job's record, as `training.long_run.JobRecord.to_dict` writes it."""
    job = {"corpus": "full", "row": "base", "seed": 1}
    return {"kind": "table3", "name": "full-base-seed1", "job": job, "precision": "fp32",
            "device": "AMD EPYC", "facts": {}, "curve": curve} | changes  # fmt: skip


def test_a_curve_point_without_its_perplexity_is_refused_naming_file_and_field(tmp_path):
    path = tmp_path / "full-base-seed1" / "curve.json"
    path.parent.mkdir()
    path.write_text(json.dumps(_table3_job([{"epoch": 1}])))
    with pytest.raises(records.RecordError) as caught:
        records.read_record(path, "long_run_job")
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(
        f"{path} is not a long run's job record: curve[0].ppl is missing"
    )
    assert f"delete the job's folder {path.parent} to retrain it" in message


def test_a_wrong_type_names_the_field_the_value_and_the_type_wanted(tmp_path):
    path = tmp_path / "runs.json"
    document = {
        "kind": "table3",
        "identity": {"overfit_share": "20", "precision": "fp32"},
        "targets": {"full": 1},
        "jobs": [],
        "notes": {},
    }
    path.write_text(json.dumps({**document, "machine": "cpu", "written": "today"}))
    with pytest.raises(records.RecordError) as caught:
        records.read_record(path, "long_run_export")
    message = str(caught.value)
    # the outermost problems first, two of them, and how many more there are
    assert "jobs holds 0 item(s), fewer than 1 and targets.small is missing" in message
    assert "(and 1 more problems)" in message
    assert 'identity.overfit_share is "20", not an integer' in records.problems(
        document, "long_run_export"
    )
    with pytest.raises(records.RecordError) as caught:
        records.check_record({**document, "stops": []}, "long_run_plan", path)
    assert "stops is [], not an object" in str(caught.value)
    assert f"git checkout -- {path}" in message


def test_malformed_json_names_the_file_line_and_column(tmp_path):
    path = tmp_path / "book_run.json"
    path.write_text('{\n  "metrics": {,\n}')
    with pytest.raises(records.RecordError, match="line 2 column 15") as caught:
        records.read_record(path, "book_run")
    assert str(caught.value).startswith(f"{path} is not valid JSON")


def test_fields_the_schema_does_not_name_are_kept(tmp_path):
    """An older or newer record with fields of its own still reads, and they reach the reader."""
    record = _table3_job([], from_the_future=[1, 2])
    path = records.write_record(tmp_path / "curve.json", "long_run_job", record)
    assert records.read_record(path, "long_run_job") == record


def test_a_record_a_reader_would_refuse_is_never_written(tmp_path):
    path = tmp_path / "curve.json"
    path.write_text("previous")
    with pytest.raises(
        records.RecordError, match=r"not writing .*curve\[0\]\.f1 is missing"
    ):
        records.write_record(
            path, "long_run_job", _table3_job([{"epoch": 1}], kind="parser")
        )
    assert path.read_text() == "previous"
    assert [p.name for p in tmp_path.iterdir()] == ["curve.json"]


def test_the_errors_are_value_errors_the_command_line_prints_in_one_line():
    from annotated_transformer import cli

    assert issubclass(records.RecordError, cli.KNOWN_ERRORS)

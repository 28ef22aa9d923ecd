"""The run folders' records (a job's curve.json, the folder's plan) and the exports are read
against their schemas: a broken one is one line that names the file, the field and the fix, and
nothing is exported from it."""

from __future__ import annotations

import json

import pytest

from annotated_transformer.chapters.constituency_parsing import (
    extended as parsing_extended,
)
from annotated_transformer.chapters.model_variations import extended
from annotated_transformer.chapters.model_variations import verdicts as table3_report
from annotated_transformer.training.long_run import CURVE_NAME

from .model_variations.test_extended import _curve, _export_only, _tiny


def _folder_with_one_job(tmp_path):
    out = tmp_path / "run"
    extended.Table3Run(_tiny(), out).write_identity({"full": 1, "small": 1})
    _curve(out, "base", 1, 1)
    return out, out / "full-base-seed1" / CURVE_NAME


def _one_error_line(capsys) -> str:
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[-1].startswith("(run with --debug")
    assert len(lines) == 2 and lines[0].startswith("error: ")
    return lines[0]


def test_an_export_of_a_curve_without_its_fields_is_refused_naming_them(tmp_path, capsys):
    out, curve = _folder_with_one_job(tmp_path)
    record = json.loads(curve.read_text())
    del record["job"]["seed"], record["curve"][0]["ppl"]
    curve.write_text(json.dumps(record))
    assert _export_only(out, tmp_path / "runs.json") == 1
    line = _one_error_line(capsys)
    assert f"{curve} is not a long run's job record" in line
    assert "job.seed is missing and curve[0].ppl is missing" in line
    assert f"delete the job's folder {curve.parent} to retrain it" in line
    assert not (tmp_path / "runs.json").exists()


@pytest.mark.parametrize("name", [CURVE_NAME, extended.PLAN_NAME])
def test_an_export_from_a_file_that_is_not_json_names_it_and_where_it_breaks(
    tmp_path, capsys, name
):
    out, curve = _folder_with_one_job(tmp_path)
    broken = curve if name == CURVE_NAME else out / name
    broken.write_text('{"curve":\n')
    assert _export_only(out, tmp_path / "runs.json") == 1
    line = _one_error_line(capsys)
    assert line.startswith(f"error: {broken} is not valid JSON (line 2 column 1: ")
    assert not (tmp_path / "runs.json").exists()


def test_a_broken_export_it_would_replace_is_named(tmp_path, capsys):
    out, _ = _folder_with_one_job(tmp_path)
    export = tmp_path / "runs.json"
    export.write_text("{}")
    assert _export_only(out, export) == 1
    line = _one_error_line(capsys)
    assert f"{export} is not a long run's export" in line
    assert "kind, identity, targets, written, machine, notes, jobs are missing" in line
    assert export.read_text() == "{}"


def test_the_chapter_reads_an_export_only_when_every_job_has_its_curve(tmp_path):
    out, _ = _folder_with_one_job(tmp_path)
    table3_report.export(out, tmp_path / "runs.json")
    document = json.loads((tmp_path / "runs.json").read_text())
    del document["jobs"][0]["curve"][0]["ppl"]
    root = tmp_path / "results"
    (root / "table3_extended_smoke").mkdir(parents=True)
    path = root / "table3_extended_smoke" / table3_report.EXTENDED_NAME
    path.write_text(json.dumps(document))
    with pytest.raises(ValueError, match=r"jobs\[0\]\.curve\[0\]\.ppl is missing"):
        table3_report.load_extended(root, "smoke")


def test_a_parser_run_whose_plan_is_broken_is_named_with_the_fix(tmp_path):
    (tmp_path / parsing_extended.PLAN_NAME).write_text(
        '{"kind": "parser", "targets": {"min_epochs": 1}, "stops": {"share_1": {}}}'
    )
    with pytest.raises(ValueError) as caught:
        parsing_extended.open_run(tmp_path)
    message = str(caught.value)
    assert f"{tmp_path / parsing_extended.PLAN_NAME} is not a long run folder's plan" in (
        message
    )
    assert "identity is missing and stops.share_1.epochs is missing" in message
    assert f"give another --out, or delete {tmp_path}" in message


def test_a_parser_share_whose_curve_is_not_json_is_named(tmp_path):
    run = parsing_extended.ParserCurveRun.__new__(parsing_extended.ParserCurveRun)
    object.__setattr__(run, "out_dir", tmp_path)
    share = tmp_path / parsing_extended.share_name(1.0)
    share.mkdir()
    (share / CURVE_NAME).write_text("")
    with pytest.raises(ValueError, match="line 1 column 1") as caught:
        run.curve(1.0)
    assert str(caught.value).startswith(f"{share / CURVE_NAME} is not")

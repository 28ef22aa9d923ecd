"""A long run's one format: its plan, each job's record and its export are written and read back
whole, a job gains an epoch at a time, and an export never loses one a file holds."""

from __future__ import annotations

import pytest
from filelock import FileLock

from annotated_transformer.training import long_run
from annotated_transformer.training.long_run import JobRecord, LongRun, RunExport, RunPlan


def _run(folder) -> LongRun:
    return LongRun(folder, "parser", "parser_run.json", "parser-curve", "a parser run")


def _job(share: float, epochs: int, f1: float = 10.0) -> JobRecord:
    curve = tuple({"epoch": e + 1, "f1": f1 + e} for e in range(epochs))
    return JobRecord(
        "parser", f"share_{share:g}", {"share": share}, "fp32", "cpu", {"trees": 9}, curve
    )


def _export(*jobs: JobRecord, recipe: int = 128) -> RunExport:
    identity = {"recipe": {"d_model": recipe}, "device_type": "cpu"}
    rule = {"min_epochs": 1, "max_epochs": 9}
    return RunExport("parser", identity, rule, jobs, long_run.now(), "cpu")


def test_a_job_gains_an_epoch_at_a_time_and_reads_back_whole(tmp_path):
    run = _run(tmp_path)
    assert run.job("share_1") is None and run.curve("share_1") == []
    run.write_job(_job(1.0, 1))
    run.write_job(run.job("share_1").with_point({"epoch": 2, "f1": 11.0}, device="gpu"))
    record = run.job("share_1")
    assert [p["epoch"] for p in record.curve] == [1, 2] and record.device == "gpu"
    assert run.jobs() == [record]
    view = record.view()
    assert view["share"] == 1.0 and view["trees"] == 9 and view["name"] == "share_1"
    assert JobRecord.from_view(view, "parser", ["share"]) == record


def test_a_plan_records_what_every_job_shares_and_a_strangers_folder_is_refused(
    tmp_path,
):
    run = _run(tmp_path / "run")
    assert run.check_folder() is None and run.changed({"device_type": "cpu"}) == {}
    plan = RunPlan("parser", {"recipe": {"d_model": 128}, "device_type": "cpu"})
    run.write_plan(plan)
    assert run.check_folder() == plan
    assert run.changed({"recipe": {"d_model": 128}, "device_type": "cuda"}) == {
        "device_type": "cpu"
    }
    assert run.changed({"device_type": "cuda"}, ignore=["device_type"]) == {}
    other = LongRun(
        tmp_path / "run", "table3", "parser_run.json", "table3", "a Table 3 run"
    )
    with pytest.raises(ValueError, match="is a parser run, not a Table 3 run"):
        other.plan()
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("x")
    with pytest.raises(ValueError, match="holds files but no parser_run.json"):
        _run(tmp_path / "mine").check_folder()


def test_a_second_process_is_refused_at_once(tmp_path):
    run = _run(tmp_path)
    with FileLock(str(tmp_path / ".lock")):
        with pytest.raises(ValueError, match="in use by another parser-curve process"):
            with run.lock():
                pass


def test_an_export_never_loses_an_epoch_a_file_holds(tmp_path):
    run = _run(tmp_path / "run")
    path = tmp_path / "curves.json"
    run.export(path, _export(_job(1.0, 3), _job(0.5, 2)))
    held = long_run.read_export(path, "parser")
    assert [len(j.curve) for j in held.jobs] == [3, 2]
    before = path.read_bytes()
    with pytest.raises(ValueError, match=r"holds what .* lacks \(share_1 \(3 epochs\)\)"):
        run.export(path, _export(_job(1.0, 2), _job(0.5, 2)))
    with pytest.raises(ValueError, match=r"holds what .* lacks \(another recipe\)"):
        run.export(path, _export(_job(1.0, 3), _job(0.5, 2), recipe=64), "another recipe")
    assert path.read_bytes() == before
    run.export(path, _export(_job(1.0, 4), _job(0.5, 2)))  # longer: replaces it
    assert [len(j.curve) for j in long_run.read_export(path, "parser").jobs] == [4, 2]
    with pytest.raises(ValueError, match="inside the run folder"):
        run.export(tmp_path / "run" / "x.json", _export(_job(1.0, 4)))
    with pytest.raises(ValueError, match="holds no finished epoch"):
        run.export(tmp_path / "empty.json", _export())
    with pytest.raises(ValueError, match="not of a table3 run"):
        long_run.read_export(path, "table3")


def test_a_bounded_invocation_needs_positive_minutes():
    assert long_run.deadline(None)() and long_run.deadline(10)()
    with pytest.raises(ValueError, match="minutes must be positive"):
        long_run.deadline(0)

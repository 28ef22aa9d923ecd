"""Table 3's extended run: epochs trained one at a time equal a run of all of them at once, a second
invocation adds and retrains nothing, and a folder of other settings or in use is refused."""

from __future__ import annotations

import json

import pytest
from filelock import FileLock

from annotated_transformer.experiments import table3_extended as extended
from annotated_transformer.experiments import variations
from annotated_transformer.profiles import get_profile

Job = extended.Job


def test_thirteen_rows_cover_every_finding_and_dropouts_small_corpus():
    rows = extended.extended_rows()
    assert rows == [
        "base",
        "A1",
        "A4",
        "B1",
        "C1",
        "C3",
        "C4",
        "C5",
        "C6",
        "C7",
        "D1",
        "D2",
        "E",
    ]
    jobs = extended.finding_jobs(rows, [1, 2])
    assert len(jobs) == 13 * 2 + 3 * 2
    assert {j.row for j in jobs if j.corpus == "small"} == {"base", "D1", "D2"}
    assert len({j.name for j in jobs}) == len(jobs)


def test_rounds_advance_every_job_by_its_share_of_the_target():
    a, b, small = Job("base", 1), Job("C1", 1), Job("D1", 1, "small")
    order = extended.plan_rounds({a: 1}, {a: 2, b: 2, small: 4})
    # By the share of the target reached, ties in the jobs' order: small's quarter epochs first.
    assert order == [
        (small, 1),
        (b, 1),
        (small, 2),
        (small, 3),
        (a, 2),
        (b, 2),
        (small, 4),
    ]
    assert extended.plan_rounds({a: 3}, {a: 2}) == []


def test_flattening_and_minimum():
    assert extended.flattened_at([30.0, 20.0, 15.0, 14.9]) == 4
    assert extended.flattened_at([30.0, 20.0, 15.0]) is None
    assert extended.small_minimum_passed([9.0, 8.0, 8.5])
    assert not extended.small_minimum_passed([9.0, 8.0, 7.9])


def _tiny(profile_name="smoke"):
    return get_profile(
        profile_name, max_train_pairs=120, max_valid_pairs=30, batch_tokens=256
    )


@pytest.mark.slow  # trains a row three times on Multi30k
def test_epoch_by_epoch_equals_one_run_and_a_second_call_adds(data_dir, tmp_path):
    from annotated_transformer import pipeline

    profile = _tiny()
    data = pipeline.prepare_data(extended.data_profile(profile), data_dir)
    at_once = variations.train_row(
        "C1", data, extended.data_profile(profile), seed=2, epochs=2, curve_points=2
    )
    run = extended.Table3Run(profile, tmp_path / "run")
    job = Job("C1", 2)
    first = extended.train_all(run, {job: 1}, data_dir=data_dir, show_progress=False)
    second = extended.train_all(run, {job: 2}, data_dir=data_dir, show_progress=False)
    assert first == {"trained": 1, "skipped": 0} and second == {
        "trained": 1,
        "skipped": 1,
    }
    curve = extended.read_curve(run.folder(job))
    assert [p["epoch"] for p in curve] == [1, 2]
    assert [p["ppl"] for p in curve] == pytest.approx(
        [p["ppl"] for p in at_once.curve], rel=1e-6
    )
    again = extended.train_all(run, {job: 2}, data_dir=data_dir, show_progress=False)
    assert again == {"trained": 0, "skipped": 2}
    records = extended.collect(tmp_path / "run")
    assert extended.ppl_at_epoch(records, "full", 2) == {"C1": {2: curve[1]["ppl"]}}
    assert extended.complete_epoch(records, "full", ["C1"]) == 2
    assert extended.complete_epoch(records, "full", ["C1", "base"]) == 0


def test_a_folder_of_other_settings_or_in_use_is_refused(tmp_path):
    run = extended.Table3Run(_tiny(), tmp_path)
    run.write_identity()
    other = extended.Table3Run(_tiny("cpu"), tmp_path)
    with pytest.raises(ValueError, match="other Table 3 settings"):
        other.check_folder()
    with FileLock(str(tmp_path / ".lock")):
        with pytest.raises(ValueError, match="in use by another table3 process"):
            extended.train_all(run, {Job("base", 1): 1}, show_progress=False)
    stranger = tmp_path / "elsewhere"
    stranger.mkdir()
    (stranger / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="not a Table 3 run"):
        extended.Table3Run(_tiny(), stranger).check_folder()
    assert (
        json.loads((tmp_path / extended.PLAN_NAME).read_text())["identity"]["profile"]
        == "smoke"
    )


def test_the_command_refuses_an_export_of_nothing_in_one_line(tmp_path, capsys):
    from annotated_transformer import cli

    out = tmp_path / "run"
    code = cli.main(
        [
            "table3",
            "--profile",
            "smoke",
            "--out",
            str(out),
            "--export-only",
            "--export",
            str(tmp_path / "runs.json"),
        ]
    )
    assert code != 0
    assert "holds no finished epoch" in capsys.readouterr().err
    assert not (tmp_path / "runs.json").exists()

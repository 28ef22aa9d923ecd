"""Table 3's extended run: epochs trained one at a time equal a run of all of them at once, a second
invocation adds and retrains nothing, and a folder of other settings or in use is refused."""

from __future__ import annotations

import json

import pytest
from filelock import FileLock

from annotated_transformer.chapters.model_variations import extended
from annotated_transformer.chapters.model_variations import rows as variations
from annotated_transformer.profiles import get_profile
from annotated_transformer.training.long_run import JobRecord, RunPlan

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
    assert first == {"trained": 1, "skipped": 0, "left": 0}
    assert second == {"trained": 1, "skipped": 1, "left": 0}
    curve = run.run.curve(job.name)
    assert [p["epoch"] for p in curve] == [1, 2]
    assert [p["ppl"] for p in curve] == pytest.approx(
        [p["ppl"] for p in at_once.curve], rel=1e-6
    )
    again = extended.train_all(run, {job: 2}, data_dir=data_dir, show_progress=False)
    assert again == {"trained": 0, "skipped": 2, "left": 0}
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
    assert run.run.plan().identity["profile"] == "smoke"


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


def test_rows_mean_what_they_say_on_every_corpus():
    """`--rows base C3` trains base on both corpora and C3 on the whole one: not D1 and D2."""
    jobs = extended.finding_jobs(["base", "C3"], [1])
    assert [j.name for j in jobs] == [
        "full-base-seed1",
        "full-C3-seed1",
        "small-base-seed1",
    ]
    assert [j.name for j in extended.finding_jobs(["C3"], [1, 2])] == [
        "full-C3-seed1",
        "full-C3-seed2",
    ]


def _write_identity(folder, **changes):
    identity = extended.Table3Run(_tiny(), folder).identity() | changes
    extended.long_run(folder).write_plan(RunPlan(extended.KIND, identity))


def test_a_folder_continues_only_in_its_own_precision(tmp_path):
    run = extended.Table3Run(_tiny(), tmp_path / "a", "cpu")
    assert run.precision == "fp32" and run.identity()["precision"] == "fp32"
    _write_identity(tmp_path / "b", precision="bf16")  # trained on a GPU
    on_cpu = extended.Table3Run(_tiny(), tmp_path / "b", "cpu")
    with pytest.raises(ValueError, match=r"precision differ: precision='bf16'.*--device"):
        on_cpu.check_folder()
    on_cpu.check_folder(training=False)  # reading it for an export is fine anywhere


def test_every_job_trains_on_the_runs_device_in_its_precision(tmp_path, monkeypatch):
    """The device and the precision reach `fit` (it trained on the CPU even on a GPU machine)."""
    seen = {}

    def fake_fit(config, tokenizer, train, valid, settings, out_dir, **options):
        seen.update(options, precision=settings.precision)
        raise RuntimeError("stop here")

    monkeypatch.setattr(extended, "fit", fake_fit)
    # what auto means on a GPU with bf16 (this machine has none)
    monkeypatch.setattr(extended, "resolve_precision", lambda asked, device: "bf16")
    run = extended.Table3Run(_tiny(), tmp_path, "cuda:0")

    class Data:
        train = list(range(40))
        valid = tokenizer = None

    with pytest.raises(RuntimeError, match="stop here"):
        run.train_epoch(Job("base", 1), Data())
    assert seen["device"] == "cuda:0" and seen["precision"] == "bf16"


def test_the_command_names_a_device_the_machine_lacks_in_one_line(tmp_path, capsys):
    import torch

    from annotated_transformer import cli

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    code = cli.main(
        ["table3", "--profile", "smoke", "--out", str(tmp_path / "r"), "--device", "cuda"]
    )
    assert code != 0
    assert "CUDA is not available" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def _curve(folder, row, seed, epochs, corpus="full", ppl=30.0, device="AMD EPYC"):
    curve = tuple({"epoch": e + 1, "ppl": ppl - e} for e in range(epochs))
    job = {"corpus": corpus, "row": row, "seed": seed}
    name = Job(row, seed, corpus).name
    record = JobRecord(extended.KIND, name, job, "fp32", device, {}, curve)
    extended.long_run(folder).write_job(record)


def _set_precision(folder, precision):
    run = extended.long_run(folder)
    plan = run.plan()
    identity = {**plan.identity, "precision": precision}
    run.write_plan(RunPlan(plan.kind, identity, plan.targets, plan.stops))


def _export_only(out, to, *flags):
    from annotated_transformer import cli

    return cli.main(
        ["table3", "--profile", "smoke", "--out", str(out), "--export-only"]
        + ["--export", str(to), *flags]
    )


def test_the_export_writes_the_targets_the_folder_records_not_the_flags(tmp_path, capsys):
    """Trained to 3 epochs and dropout's rows to 12: an export without the flags writes those
    (not the defaults 8 and 2 x overfit_epochs), and a flag that disagrees is refused in one line."""
    out = tmp_path / "run"
    extended.Table3Run(_tiny(), out).write_identity({"full": 3, "small": 12})
    _curve(out, "base", 1, 2)
    _curve(out, "base", 1, 5, corpus="small")
    assert _export_only(out, tmp_path / "a.json") == 0
    document = json.loads((tmp_path / "a.json").read_text())
    assert document["targets"] == {"full": 3, "small": 12}
    assert _export_only(out, tmp_path / "b.json", "--epochs", "3") == 0
    capsys.readouterr()
    assert _export_only(out, tmp_path / "c.json", "--epochs", "8") != 0
    err = capsys.readouterr().err
    assert "was trained to --epochs 3, not 8" in err and err.count("error:") == 1
    assert not (tmp_path / "c.json").exists()


def test_the_recorded_targets_are_only_raised(tmp_path, monkeypatch):
    """A later call with fewer epochs trains nothing and leaves the record; a folder made before
    the record starts from what its curves hold, and its export says so."""
    from annotated_transformer import pipeline
    from annotated_transformer.chapters.model_variations import verdicts as table3_report

    monkeypatch.setattr(pipeline, "prepare_data", lambda *a, **k: None)
    run = extended.Table3Run(_tiny(), tmp_path / "run")
    run.write_identity({"full": 6, "small": 20})
    run.write_identity({"full": 4, "small": 30})
    assert extended.recorded_targets(run.out_dir) == {"full": 6, "small": 30}
    # a folder from before the record, its curves at 3 epochs: a call for 2 records 3
    old = extended.Table3Run(_tiny(), tmp_path / "old")
    old.write_identity()
    _curve(old.out_dir, "base", 1, 3)
    lines: list[str] = []
    table3_report.export(old.out_dir, tmp_path / "old.json", say=lines.append)
    assert json.loads((tmp_path / "old.json").read_text())["targets"] == {
        "full": 3,
        "small": 0,
    }
    assert len(lines) == 1 and "records no targets" in lines[0]
    summary = extended.train_all(old, {Job("base", 1): 2}, show_progress=False)
    assert summary["trained"] == 0
    assert extended.recorded_targets(old.out_dir) == {"full": 3}


def test_an_interrupt_is_one_line_and_exit_130(tmp_path, monkeypatch, capsys):
    from annotated_transformer import cli

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(extended, "train_all", interrupted)
    out = tmp_path / "run"
    code = cli.main(
        ["table3", "--profile", "smoke", "--out", str(out), "--device", "cpu"]
    )
    assert code == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "interrupted" in err[0] and str(out) in err[0]


def test_an_export_names_where_the_jobs_trained_and_reads_a_gpu_folder_anywhere(tmp_path):
    """A folder trained on a GPU (bf16) exports on a CPU machine, and the export names the GPU,
    not the exporting machine's CPU."""
    out = tmp_path / "run"
    extended.Table3Run(_tiny(), out).write_identity({"full": 1, "small": 1})
    _set_precision(out, "bf16")
    _curve(out, "base", 1, 1, device="NVIDIA H100 80GB HBM3")
    assert _export_only(out, tmp_path / "a.json") == 0
    assert (
        json.loads((tmp_path / "a.json").read_text())["machine"]
        == "NVIDIA H100 80GB HBM3"
    )


class _Clock:
    """A monotonic clock that each trained epoch moves on by `epoch_s` seconds."""

    def __init__(self, epoch_s: float):
        self.now, self.epoch_s, self.started = 0.0, epoch_s, []

    def monotonic(self) -> float:
        return self.now

    def epoch(self, job):
        self.started.append(job.name)
        self.now += self.epoch_s
        return {"epoch": 1, "ppl": 10.0}


def _five_jobs():
    return {Job(row, 1): 1 for row in ("base", "A1", "A4", "B1", "C1")}


def test_no_epoch_starts_once_the_minutes_are_spent(tmp_path, monkeypatch):
    """One process: epochs of 30 s under a one-minute limit start at 0 s and 30 s, and the
    other three are left, counted as such."""
    from annotated_transformer import pipeline

    clock = _Clock(30.0)
    monkeypatch.setattr(pipeline, "prepare_data", lambda *a, **k: None)
    monkeypatch.setattr(extended.time, "monotonic", clock.monotonic)
    monkeypatch.setattr(
        extended.Table3Run, "train_epoch", lambda self, job, data: clock.epoch(job)
    )
    run = extended.Table3Run(_tiny(), tmp_path / "run")
    summary = extended.train_all(run, _five_jobs(), minutes=1.0, show_progress=False)
    assert summary == {"trained": 2, "skipped": 0, "left": 3}
    assert clock.started == ["full-base-seed1", "full-A1-seed1"]
    unlimited = extended.train_all(run, _five_jobs(), show_progress=False)
    assert unlimited["left"] == 0 and unlimited["trained"] == 5
    with pytest.raises(ValueError, match="minutes must be positive"):
        extended.train_all(run, _five_jobs(), minutes=0.0, show_progress=False)


class _OneAtATime:
    """A pool whose epochs run only when `wait` collects them, the oldest first, one per call: an
    epoch handed out before the limit can still be running after it (stands in for the
    processes, in a fixed order)."""

    def __init__(self, clock: _Clock):
        self.clock, self.queued = clock, []

    def submit(self, function, job):
        from concurrent.futures import Future

        future = Future()
        self.queued.append((future, function, job))
        return future

    def wait(self, futures, return_when=None):
        future, function, job = self.queued.pop(0)
        try:
            future.set_result(function(job))
        except Exception as error:
            future.set_exception(error)
        return {future}, set(futures) - {future}


def _pool_of(monkeypatch, pool: _OneAtATime, epoch) -> list:
    """Route `train_all`'s processes through `pool`, each epoch `epoch(job)`; returns the list of
    the main process's tokenizer preparations."""
    import concurrent.futures
    import contextlib

    from annotated_transformer import pipeline
    from annotated_transformer.runtime import side_by_side

    @contextlib.contextmanager
    def pool_of(workers, initializer, initargs):
        yield pool

    prepared: list = []
    monkeypatch.setattr(side_by_side, "one_thread_pool", pool_of)
    monkeypatch.setattr(concurrent.futures, "wait", pool.wait)
    monkeypatch.setattr(extended, "_epoch_in_worker", lambda job: (job, epoch(job)))
    monkeypatch.setattr(extended.time, "monotonic", pool.clock.monotonic)
    # here once, so that the processes find the tokenizer instead of each training it
    monkeypatch.setattr(pipeline, "corpus_tokenizer", lambda *a, **k: prepared.append(a))
    return prepared


def test_processes_side_by_side_start_nothing_after_the_minutes_and_finish_what_runs(
    tmp_path, monkeypatch
):
    """Two processes, epochs of 25 s, a limit of 40 s: two start at 0 s, the third at 25 s when
    the first ends; at 50 s no fourth starts, and the third, still running, is kept."""
    clock = _Clock(25.0)
    pool = _OneAtATime(clock)
    prepared = _pool_of(monkeypatch, pool, clock.epoch)
    run = extended.Table3Run(_tiny(), tmp_path / "run")
    summary = extended.train_all(
        run, _five_jobs(), workers=2, minutes=40 / 60, show_progress=False
    )
    assert summary == {"trained": 3, "skipped": 0, "left": 2}
    assert clock.started == ["full-base-seed1", "full-A1-seed1", "full-A4-seed1"]
    assert len(prepared) == 1


def test_a_failed_epoch_lets_the_running_ones_finish_then_raises(tmp_path, monkeypatch):
    """A process's error (a GPU out of memory) starts no further epoch, keeps the one still
    running, then reaches the caller."""
    clock = _Clock(1.0)
    reported = []

    def epoch(job):
        if job.row == "base":
            raise RuntimeError("CUDA out of memory")
        reported.append(job.name)
        return clock.epoch(job)

    _pool_of(monkeypatch, _OneAtATime(clock), epoch)
    run = extended.Table3Run(_tiny(), tmp_path / "run")
    with pytest.raises(RuntimeError, match="out of memory"):
        extended.train_all(run, _five_jobs(), workers=2, show_progress=False)
    assert reported == ["full-A1-seed1"]  # handed out beside base, finished, kept


def test_the_command_passes_its_minutes_on_and_says_what_is_left(
    tmp_path, monkeypatch, capsys
):
    from annotated_transformer import cli

    seen = {}

    def stopped_early(run, targets, **options):
        seen.update(options)
        return {"trained": 7, "skipped": 0, "left": 5}

    monkeypatch.setattr(extended, "train_all", stopped_early)
    args = [
        "table3",
        "--profile",
        "smoke",
        "--out",
        str(tmp_path / "r"),
        "--device",
        "cpu",
    ]
    assert cli.main([*args, "--minutes", "8"]) == 0
    assert seen["minutes"] == 8.0
    out = capsys.readouterr().out
    assert "5 left when the 8 minutes ended" in out and "same command" in out
    with pytest.raises(SystemExit):  # argparse's one line and exit 2, before any work
        cli.main([*args, "--minutes", "0"])
    assert "--minutes: must be a number > 0" in capsys.readouterr().err


def _part(
    tmp_path, name, rows, epochs=2, small=(), targets=None, precision=None, ppl=30.0
):
    """An export of one part of a run: `rows` on the whole corpus, `small` on dropout's."""
    out = tmp_path / f"run_{name}"
    extended.Table3Run(_tiny(), out).write_identity(
        targets or {"full": epochs, **({"small": 4} if small else {})}
    )
    if precision:
        _set_precision(out, precision)
    # another machine's run of the same jobs (`ppl` other than 30): other numbers
    for row in rows:
        for seed in (1, 2):
            _curve(out, row, seed, epochs, ppl=ppl)
    for row in small:
        _curve(out, row, 1, 4, corpus="small", ppl=ppl)
    assert _export_only(out, tmp_path / f"{name}.json") == 0
    return tmp_path / f"{name}.json"


def _merge(*paths, to):
    from annotated_transformer import cli

    return cli.main(["table3", "--merge", *map(str, paths), "--export", str(to)])


def test_parts_trained_on_machines_of_their_own_merge_into_one_run(tmp_path, capsys):
    """Groups of rows exported by separate calls make one export holding every job, which the
    chapter reads as one table; the written file then only grows."""
    from annotated_transformer.chapters.model_variations import verdicts as table3_report

    first = _part(tmp_path, "findings", ["base", "A1"], small=["base", "D1"])
    second = _part(tmp_path, "size", ["C1", "C3"])
    to = tmp_path / "merged" / "runs.json"
    assert _merge(first, second, to=to) == 0
    merged = table3_report.read_extended(to)
    assert sorted(table3_report._key(j) for j in merged["jobs"]) == sorted(
        [("full", r, s) for r in ("base", "A1", "C1", "C3") for s in (1, 2)]
        + [("small", "base", 1), ("small", "D1", 1)]
    )
    assert merged["targets"] == {"full": 2, "small": 4}
    assert [m["jobs"] for m in merged["merged_from"]] == [6, 4]
    budgets = table3_report.extended_budgets(merged)
    assert [b["full_epoch"] for b in budgets] == [1, 2]
    # a third part later, merged into the file that holds the first two
    third = _part(tmp_path, "rest", ["big"])
    assert _merge(third, to=to) == 0
    assert len(table3_report.read_extended(to)["jobs"]) == 12


def test_a_job_in_two_parts_keeps_the_longer_curve_and_says_so(tmp_path, capsys):
    from annotated_transformer.chapters.model_variations import verdicts as table3_report

    short = _part(tmp_path, "short", ["base"], epochs=2, targets={"full": 4})
    longer = _part(tmp_path, "long", ["base"], epochs=4, ppl=31.0)
    to = tmp_path / "runs.json"
    assert _merge(short, longer, to=to) == 0
    out = capsys.readouterr().out
    assert "full-base-seed1: 4 epochs from" in out and "in place of 2" in out
    jobs = table3_report.read_extended(to)["jobs"]
    assert [len(j["curve"]) for j in jobs] == [4, 4]
    # merging the shorter part again loses nothing the file holds
    assert _merge(short, to=to) == 0
    assert [len(j["curve"]) for j in table3_report.read_extended(to)["jobs"]] == [4, 4]
    # two runs of a job as long as each other: the first kept, and said
    other = _part(tmp_path, "other", ["base"], epochs=4, ppl=32.0)
    capsys.readouterr()
    assert _merge(other, to=to) == 0
    assert "hold 4 epochs of two runs of it" in capsys.readouterr().out
    assert table3_report.read_extended(to)["jobs"][0]["curve"][0]["ppl"] == 31.0


def test_a_part_short_of_the_files_budgets_is_refused(tmp_path, capsys):
    """The file's jobs all reached 2 epochs; a part of 1 would cut the chapter's last budget."""
    to = tmp_path / "runs.json"
    assert _merge(_part(tmp_path, "a", ["base"]), to=to) == 0
    before = to.read_bytes()
    capsys.readouterr()
    short = _part(tmp_path, "b", ["C1"], epochs=1, targets={"full": 2})
    assert _merge(short, to=to) != 0
    err = capsys.readouterr().err
    assert "would cut the full corpus's budgets" in err and "from 2 epochs to 1" in err
    assert str(short) in err and err.count("error:") == 1
    assert to.read_bytes() == before
    # into a file of its own it merges
    assert _merge(short, to=tmp_path / "other.json") == 0


@pytest.mark.parametrize("problem", ["precision", "targets", "no export", "twice"])
def test_parts_that_do_not_make_one_run_are_refused_in_one_line(
    tmp_path, capsys, problem
):
    first = _part(tmp_path, "a", ["base"])
    to = tmp_path / "runs.json"
    if problem == "precision":
        other, says = _part(tmp_path, "b", ["A1"], precision="bf16"), "precision differ"
    elif problem == "targets":
        other = _part(tmp_path, "b", ["A1"], epochs=2, targets={"full": 6})
        says = "to 6 epochs, another part to 2"
    elif problem == "twice":
        other, says = first, "named twice"
    capsys.readouterr()
    if problem == "no export":
        from annotated_transformer import cli

        code, says = cli.main(["table3", "--merge", str(first)]), "--merge needs --export"
    else:
        code = _merge(first, other, to=to)
    err = capsys.readouterr().err
    assert code != 0 and says in err and err.count("error:") == 1, err
    assert not to.exists()

"""scripts/gpu/spell.py: one GPU call runs what fits its minutes and returns one file a step."""

import json
import os
import re
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from tests.support.scripts import imported_script

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "gpu" / "spell.py"


@pytest.fixture()
def spell():
    with imported_script(SCRIPT) as module:
        yield module


@pytest.fixture()
def short_margins(spell, monkeypatch):
    """Seconds, not tens of them, kept back for delivering and stopping a step."""
    monkeypatch.setattr(spell, "RESERVE_S", 1)
    monkeypatch.setattr(spell, "GRACE_S", 2)


def _cli(*args, **env):
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, **env},
    )


@pytest.mark.parametrize(
    "steps, says",
    [
        (["chapters:09"], "no chapter 09"),
        (["chapters:04,04"], "list them once each"),
        (["calibrate:warm_up"], "calibrate_book.sh has no step warm_up"),
        (["speed:decode,everything"], "speed.sh has no part everything"),
        (["recipe_seeds:two"], "seeds are whole numbers"),
        (["recipe_seeds"], "unknown step 'recipe_seeds'"),
        (["tests=soon"], "a whole number of seconds"),
        (["tests", "chapters:04", "tests"], "the same file (gpu_tests)"),
        (["tests", *(f"chapters:0{n}" for n in range(6))], "7 steps, at most 6"),
        ([], "name at least one step"),
    ],
)
def test_a_step_it_cannot_run_is_refused_in_one_line_before_any_runs(
    steps, says, tmp_path
):
    proc = _cli(*steps, OUT=str(tmp_path))
    assert proc.returncode == 2
    assert says in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    assert not any(tmp_path.iterdir())  # no ledger, no log: nothing started


def test_its_names_are_the_scripts_own(spell):
    """The calibration steps and speed parts it accepts are those the scripts run, in their order."""
    calibrate = (REPO / "scripts/gpu/calibrate_book.sh").read_text()
    functions = re.findall(r"^(\w+)\(\) \{$", calibrate, flags=re.M)
    assert set(spell.CALIBRATE_S) == set(functions) - {"pack", "timed"}
    speed = (REPO / "scripts/gpu/speed.sh").read_text()
    known = re.search(r"^known=\((.*)\)$", speed, flags=re.M).group(1).split()
    assert list(spell.SPEED_S) == known
    table3 = (REPO / "scripts/gpu/table3_extended.sh").read_text()
    parts = re.findall(r"^  (\w+)\) rows=", table3, flags=re.M)
    assert ["all", *spell.TABLE3_PARTS] == parts
    assert spell.parse_step("table3_extended:size").env == {"GROUP": "size"}
    chapters = sorted(p.name[:2] for p in (REPO / "book").glob("[0-9][0-9]_*.py"))
    assert sorted(spell.CHAPTER_S) == chapters
    for text in (
        "tests",
        "chapters:04",
        "calibrate:fp16",
        "table3_extended",
        "parser_sweep",
    ):
        assert Path(spell.parse_step(text).argv[1]).is_file()
    for text in ("recipe_seeds:2", "speed"):
        assert Path(spell.parse_step(text).argv[1]).is_file()


def test_the_dry_run_says_which_steps_the_minutes_hold(spell):
    lines = spell.dry_run(
        spell.plan(["chapters:04", "tests", "chapters:05", "chapters:08=15"]), 540
    )
    assert [line.split(":")[0] for line in lines] == [
        "chapters_04",
        "gpu_tests",
        "chapters_05",
        "chapters_08",
    ]
    assert "runs" in lines[0] and "runs" in lines[1]
    # 135 s estimated; 540 - 375 - 90 left, less the 55 s kept back from each step
    assert "skipped (20 s left)" in lines[2]
    # a shorter step behind a skipped one still runs
    assert "about 15 s, runs" in lines[3]
    # a step that fits itself to its limit takes the rest of the call
    rest = spell.dry_run(spell.plan(["speed:decode", "tests"]), 540)
    assert "runs" in rest[0] and "skipped" in rest[1]


def _step(spell, name, script, estimate=1, **fields):
    return spell.Step(name, ["bash", "-c", script], estimate, **fields)


def _run(spell, folder, steps, limit_s, sampler=None):
    out, work = folder / "out", folder / "work"
    out.mkdir(parents=True)
    log = open(out / "spell.log", "a")
    try:
        status = spell.Spell(steps, limit_s, out, work, log, sampler=sampler).run()
    finally:
        log.close()
    return status, out, json.loads((out / "spell.json").read_text())


def test_each_step_returns_one_file_and_the_ledger_says_what_ran(
    spell, tmp_path, short_margins
):
    steps = [
        # its own single file, returned as it is
        _step(
            spell,
            "chapters_04",
            'echo "$LIMIT_S" > "$OUT/chapters_04.tgz"; echo step one said',
        ),
        # several files (one in a folder): packed into one
        _step(
            spell,
            "speed",
            'echo a > "$OUT/a.json"; mkdir "$OUT/b"; echo b > "$OUT/b/c.md"',
        ),
        # more than the time left: skipped, and the call goes on
        _step(spell, "parser_sweep", "echo never", estimate=10_000),
        # fails
        _step(
            spell,
            "gpu_tests",
            'echo "$MINUTES" > "$OUT/m.txt"; exit 3',
            minutes_from_limit=True,
        ),
    ]
    status, out, ledger = _run(spell, tmp_path, steps, limit_s=300)
    assert status == 1
    assert sorted(p.name for p in out.iterdir()) == [
        "chapters_04.tgz",
        "m.txt",
        "speed.tgz",
        "spell.json",
        "spell.log",
    ]
    limit = int((out / "chapters_04.tgz").read_text())
    assert 290 <= limit <= 297  # the time left less the reserve and the grace
    with tarfile.open(out / "speed.tgz") as tar:
        assert sorted(tar.getnames()) == ["a.json", "b/c.md"]
    minutes = float((out / "m.txt").read_text())
    assert minutes > 0 and minutes * 60 + 90 <= limit  # what table3_extended.sh demands
    by_step = {entry["step"]: entry for entry in ledger["steps"]}
    assert [e["status"] for e in ledger["steps"]] == ["ok", "ok", "skipped", "failed"]
    assert by_step["gpu_tests"]["exit"] == 3
    assert by_step["speed"]["files"] == ["speed.tgz"]
    assert ledger["ended"] and ledger["limit_s"] == 300
    log = (out / "spell.log").read_text()
    assert "step one said" in log and "parser_sweep skipped" in log
    assert "not done: parser_sweep gpu_tests" in log


@pytest.mark.slow  # waits out a step's limit and grace, twice
def test_a_step_past_its_limit_is_stopped_and_keeps_what_it_wrote(
    spell, tmp_path, monkeypatch
):
    # a step's LIMIT_S of 2 s, then 2 s after SIGINT before SIGKILL: time for the trap on a
    # loaded machine
    monkeypatch.setattr(spell, "RESERVE_S", 1)
    monkeypatch.setattr(spell, "GRACE_S", 4)
    steps = [
        # writes as it goes, and on SIGINT what it has left, then stops
        _step(
            spell,
            "table3_extended",
            'echo started > "$OUT/runs.json"; '
            "trap 'echo saved >> \"$OUT/runs.json\"; exit 130' INT; sleep 60 & wait",
        ),
    ]
    status, out, ledger = _run(spell, tmp_path, steps, limit_s=7)
    assert status == 1
    entry = ledger["steps"][0]
    assert entry["status"] == "cut_short" and entry["wall_s"] < 12
    assert (out / "runs.json").read_text() == "started\nsaved\n"
    # one that ignores SIGINT is killed a moment later, and keeps what it wrote
    stubborn = [
        _step(spell, "speed", "trap '' INT; echo partial > \"$OUT/a.json\"; sleep 60")
    ]
    status, out, ledger = _run(spell, tmp_path / "stubborn", stubborn, limit_s=7)
    assert ledger["steps"][0]["status"] == "cut_short"
    assert ledger["steps"][0]["wall_s"] < 14
    assert (out / "a.json").read_text() == "partial\n"


def test_recipe_seeds_refuses_a_bad_seed_before_any_work(tmp_path):
    proc = subprocess.run(
        ["bash", str(REPO / "scripts/gpu/recipe_seeds.sh")],
        cwd=tmp_path,  # nothing of the checkout's is touched
        capture_output=True,
        text=True,
        env={**os.environ, "SEEDS": "2 x", "PYTHON": "false"},
    )
    assert proc.returncode == 2 and "SEEDS holds 'x'" in proc.stderr
    assert not any(tmp_path.iterdir())


@pytest.mark.slow
def test_a_spell_runs_the_gpu_scripts_on_a_cpu(tmp_path):
    """The device call's own command, on a CPU: the CUDA-only tests (each skipped here) and
    speed.sh's decode part at the smoke sizes, each returned as one file beside the ledger."""
    out = tmp_path / "out"
    proc = _cli(
        "--limit-s",
        "900",
        "--work",
        str(tmp_path / "work"),
        "tests",
        "speed:decode",
        OUT=str(out),
        DEVICE="cpu",
        QUICK="1",
        AT_CACHE_DIR=str(tmp_path / "cache"),
        PYTHON=sys.executable,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "gpu_tests.tgz",
        "speed.tgz",
        "spell.json",
        "spell.log",
    ]
    with tarfile.open(out / "gpu_tests.tgz") as tar:
        assert sorted(tar.getnames()) == ["gpu_tests.log", "gpu_tests.xml"]
    with tarfile.open(out / "speed.tgz") as tar:
        record = json.load(tar.extractfile("speed_decode.json"))
    assert all(row["same_tokens"] for row in record["decoding"])
    ledger = json.loads((out / "spell.json").read_text())
    assert [e["status"] for e in ledger["steps"]] == ["ok", "ok"]


def test_chapters_reading_the_trained_model_run_only_where_it_was_trained(
    spell, tmp_path, monkeypatch
):
    monkeypatch.setattr(spell, "REPO", tmp_path)  # a machine with no runs/ of its own
    monkeypatch.delenv("PROFILE", raising=False)
    for alone in (
        ["chapters:05"],
        ["tests", "chapters:08"],
        ["chapters:08", "chapters:04"],
    ):
        with pytest.raises(spell.PlanError, match="chapter 04's model"):
            spell.plan(alone)
    assert len(spell.plan(["chapters:04", "chapters:05,08"])) == 2
    # a second call on the machine that ran 04 says so (its step still checks at run time)
    assert len(spell.plan(["chapters:08"], warm=True)) == 1
    # a second call on the warm machine that trained it
    (tmp_path / "runs" / "book-gpu").mkdir(parents=True)
    (tmp_path / "runs" / "book-gpu" / "averaged.pt").write_bytes(b"")
    assert len(spell.plan(["chapters:08", "tests"])) == 2
    monkeypatch.setenv("PROFILE", "cpu")  # another profile's model is another folder
    with pytest.raises(spell.PlanError, match="runs/book-cpu/averaged.pt"):
        spell.plan(["chapters:05"])


def test_preparing_a_call_refuses_bad_input_before_any_download(tmp_path):
    def prepare(*steps, **env):
        return subprocess.run(
            ["bash", str(REPO / "scripts/gpu/prepare_call.sh"), *steps],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHON": sys.executable, **env},
        )

    no_data = prepare("tests", AT_DATA_DIR=str(tmp_path))
    assert no_data.returncode == 2 and "AT_DATA_DIR must name" in no_data.stderr
    (tmp_path / "multi30k").mkdir()
    bad_step = prepare("chapters:10", AT_DATA_DIR=str(tmp_path))
    assert bad_step.returncode == 2 and "no chapter 10" in bad_step.stderr
    assert "[wheels]" not in bad_step.stdout + bad_step.stderr


def test_the_ledger_keeps_how_busy_each_step_kept_the_gpu(spell, tmp_path, short_margins):
    """A stand-in for nvidia-smi's samples ("utilisation, memory" lines, and one it cannot read):
    the step's entry holds them and their summary; without the sampler, nothing."""
    fake = [
        "bash",
        "-c",
        'echo "0, 500"; echo "[N/A], 1"; echo "50, 900"; echo "100, 700"; sleep 30',
    ]
    steps = [_step(spell, "speed", "sleep 1")]
    _, _, ledger = _run(spell, tmp_path / "a", steps, limit_s=60, sampler=fake)
    gpu = ledger["steps"][0]["gpu"]
    assert [s[1:] for s in gpu["samples"]] == [[0, 500], [50, 900], [100, 700]]
    assert gpu["mean_util_pct"] == 50.0 and gpu["busy_share"] == pytest.approx(
        2 / 3, abs=1e-3
    )
    assert gpu["max_memory_mib"] == 900
    missing = ["no-such-sampler-here"]
    _, _, ledger = _run(spell, tmp_path / "b", steps, limit_s=60, sampler=missing)
    assert ledger["steps"][0]["gpu"] is None


def _with_sigint_ignored(code: str, tmp_path) -> subprocess.CompletedProcess:
    """`code` run by a Python started as `command &` starts it in a script, or as CI ran the
    suite when this failed there: with SIGINT ignored, which every child inherits."""
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        capture_output=True,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
        env={**os.environ, "TMP": str(tmp_path)},
    )


@pytest.mark.slow  # waits out a step's limit
def test_a_step_can_be_stopped_and_save_though_the_call_ignores_sigint(tmp_path):
    proc = _with_sigint_ignored(
        f"""
import os, sys
from pathlib import Path
sys.path.insert(0, "tests")
from support.scripts import imported_script
with imported_script(Path("{SCRIPT}")) as spell:
    spell.RESERVE_S, spell.GRACE_S = 1, 4
    tmp = Path(os.environ["TMP"])
    (tmp / "out").mkdir()
    step = spell.Step("table3_extended", ["bash", "-c",
        "trap 'echo saved > \\"$OUT/runs.json\\"; exit 130' INT; sleep 60 & wait"], 1)
    with open(tmp / "out" / "spell.log", "w") as log:
        spell.Spell([step], 7, tmp / "out", tmp / "work", log, sampler=None).run()
""",
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out" / "runs.json").read_text() == "saved\n"


def _alive(marker: str) -> bool:
    return subprocess.run(["pgrep", "-f", marker], capture_output=True).returncode == 0


@pytest.mark.slow  # waits out a step's limit
def test_a_stop_reaches_the_processes_timeout_put_in_a_group_of_their_own(
    spell, tmp_path, monkeypatch
):
    """The scripts run their work under `timeout`, which moves it to a process group of its own:
    a step past its limit is stopped whole, the process under `timeout` included."""
    monkeypatch.setattr(spell, "RESERVE_S", 1)
    monkeypatch.setattr(spell, "GRACE_S", 2)
    marker = "sleep 61.73"
    steps = [
        _step(
            spell,
            "speed",
            # as run_chapters.sh runs the book: under timeout, in a pipeline, then packing
            f'echo kept > "$OUT/a.json"; timeout 100 bash -c "trap \'\' INT; {marker}" | cat;'
            " echo packed",
        )
    ]
    _, out, ledger = _run(spell, tmp_path, steps, limit_s=5)
    assert ledger["steps"][0]["status"] == "cut_short"
    assert (out / "a.json").read_text() == "kept\n"
    assert not _alive(marker)


@pytest.mark.slow  # a Python process that runs a step
def test_a_spell_stopped_by_sigterm_stops_its_step_and_keeps_what_it_wrote(tmp_path):
    """A runner's SIGTERM to the spell: the running step is stopped and delivered, the steps
    after it are recorded as not started, and the spell exits 130."""
    code = f"""
import os, sys
from pathlib import Path
sys.path.insert(0, "tests")
from support.scripts import imported_script
with imported_script(Path("{SCRIPT}")) as spell:
    tmp = Path(os.environ["TMP"])
    (tmp / "out").mkdir()
    steps = [
        # the marker assembled here, so that only the step's command line holds it
        spell.Step("speed", ["bash", "-c", 'echo kept > "$OUT/a.json"; sleep 61.7' + '4'], 1),
        spell.Step("gpu_tests", ["bash", "-c", "echo never"], 1),
    ]
    with open(tmp / "out" / "spell.log", "w") as log:
        sys.exit(spell.Spell(steps, 600, tmp / "out", tmp / "work", log, sampler=None).run())
"""
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=REPO,
        env={**os.environ, "TMP": str(tmp_path)},
    )
    out = tmp_path / "out"
    deadline = time.monotonic() + 30
    while not _alive("sleep 61.74") and time.monotonic() < deadline:
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 130
    ledger = json.loads((out / "spell.json").read_text())
    assert ledger["interrupted"] is True
    assert [e["status"] for e in ledger["steps"]] == ["cut_short", "not_started"]
    assert (out / "a.json").read_text() == "kept\n"
    assert not _alive("sleep 61.74")


def test_chapters_reading_the_model_are_skipped_where_chapter_04_did_not_leave_one(
    spell, tmp_path, monkeypatch, short_margins
):
    """Chapter 04's step failed: chapter 05's is skipped in a second, not run to fail; where 04
    left its model, 05 runs."""
    monkeypatch.setattr(spell, "REPO", tmp_path)
    monkeypatch.delenv("PROFILE", raising=False)

    def chapter(number, script):  # argv as run_chapters.sh's: the chapters last
        return spell.Step(f"chapters_{number}", ["bash", "-c", script, number], 1)

    failed = [chapter("04", "exit 1"), chapter("05", 'echo ran > "$OUT/05.txt"')]
    _, out, ledger = _run(spell, tmp_path / "failed", failed, limit_s=60)
    assert [e["status"] for e in ledger["steps"]] == ["failed", "skipped"]
    assert (
        ledger["steps"][1]["why"] == "no trained model" and not (out / "05.txt").exists()
    )
    trained = [
        chapter("04", "mkdir -p runs/book-gpu && touch runs/book-gpu/averaged.pt"),
        chapter("05", 'echo ran > "$OUT/05.txt"'),
    ]
    _, out, ledger = _run(spell, tmp_path / "trained", trained, limit_s=60)
    assert [e["status"] for e in ledger["steps"]] == ["ok", "ok"]


def test_a_chapter_the_committed_gpu_run_timed_is_estimated_from_its_time(
    spell, tmp_path, monkeypatch
):
    monkeypatch.setattr(spell, "REPO", tmp_path)
    monkeypatch.delenv("PROFILE", raising=False)
    start = spell.CHAPTERS_START_S
    assert spell.parse_step("chapters:04").estimate_s == start + spell.CHAPTER_S["04"]
    record = tmp_path / "results" / "book_gpu" / "book_run.json"
    record.parent.mkdir(parents=True)
    record.write_text("{not json")  # unreadable: the table's estimates
    assert spell.parse_step("chapters:04").estimate_s == start + spell.CHAPTER_S["04"]
    chapters = {
        "04_training": {"status": "ok", "wall_time_s": 250.0},
        "05_translation_results": {"status": "interrupted", "wall_time_s": 539.0},
    }
    record.write_text(json.dumps({"metrics": {"chapters": chapters}}))
    assert spell.parse_step("chapters:04").estimate_s == start + 300  # 250 s and a fifth
    assert spell.parse_step("chapters:05").estimate_s == start + spell.CHAPTER_S["05"]


def test_a_chapter_cut_short_has_time_to_record_itself_before_the_kill():
    """run_chapters.sh sends the book SIGINT at its limit and SIGKILL `--kill-after` seconds
    later. In between, the book gives the running cell its interrupt grace and the kernel its
    shutdown, then records the chapter as interrupted: both must fit, or a cut-short chapter
    leaves no record and no notebook."""
    from jupyter_client.manager import KernelManager

    from annotated_transformer.book.engine import INTERRUPT_GRACE_S

    script = (REPO / "scripts" / "gpu" / "run_chapters.sh").read_text()
    kill_after = float(re.search(r"--kill-after=(\d+)", script).group(1))
    shutdown = KernelManager().shutdown_wait_time
    assert INTERRUPT_GRACE_S + shutdown + 3 <= kill_after  # 3 s to write the records

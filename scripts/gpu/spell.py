"""One call on a lent GPU, as many of the prepared steps as its minutes hold (issues 49 and 54).

A session lent a GPU gets about 15 minutes of it, the machine's start included, at most 10 a call,
and at most 8 files back from the call's $OUT (16 MiB each). So a spell is one call, and this script
is its command: it runs the named steps in order, gives each the time left as its LIMIT_S, skips a
step that would not fit (naming it for the next spell) and goes on to a later one that does, and
turns what each step wrote into exactly one file in $OUT: the step's own file where it wrote one,
else a tarball of them. Beside them, `spell.json` (each step's command, status, wall time and
files, and how busy it kept the GPU, sampled every 2 s; the commit and the device) and `spell.log`
(everything printed), rewritten after every step, so a call cut short still returns what finished:

    python3 scripts/gpu/spell.py --limit-s $((590 - SECONDS)) chapters:04 chapters:05 chapters:08
    python3 scripts/gpu/spell.py --dry-run chapters:04 tests    # the plan, without running it

(bash's SECONDS: what the call's 600 s have left once the wheels are installed; prepare_call.sh
prints the whole command.)

The steps (the scripts beside this one; `=SECONDS` after a step replaces its estimate):

    tests                   gpu_tests.sh: the CUDA-only tests
    chapters:NN[,NN...]     run_chapters.sh NN ...: those chapters of the `gpu` book, one papermill run
    calibrate:NAME[,NAME]   calibrate_book.sh NAME ...
    table3_extended[:PART]  table3_extended.sh (GROUP=PART: findings, size or rest), its MINUTES
                            from the time left
    parser_sweep            parser_sweep.sh
    recipe_seeds:N[,N...]   recipe_seeds.sh for those seeds (1 alone, then 2,3 side by side)
    speed[:PART,...]        speed.sh PART ... (all of them by default)

A step starts only if its estimate fits the time left (a chapter cut short keeps nothing, so the
estimate of a chapter step is its chapters' whole time; steps that fit themselves to their LIMIT_S,
speed and table3_extended, need only their first part's). The environment passes through: DEVICE,
PROFILE, QUICK, AT_DATA_DIR and the rest mean what they mean to each script. Every name is checked
before any step runs, and at most 6 steps are taken, so that the files fit the 8 that come back.
Chapters 05 and 08 read chapter 04's run folder, which no call returns or carries (its snapshots
are hundreds of MB): they run after chapter 04 in the same call, or in a second call on the warm
machine, which keeps `runs/`; elsewhere they are refused before anything runs.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
MAX_STEPS = 6  # + spell.json and spell.log: the 8 files a call returns
MAX_FILE_BYTES = 16 * 2**20
SAFE_NAME = re.compile(r"^[A-Za-z0-9._-]+$")
# Seconds kept back from the time left when a step starts: RESERVE_S for delivering its files,
# GRACE_S for stopping it (its LIMIT_S is the rest; see Spell.execute).
RESERVE_S = 15
GRACE_S = (
    40  # > twice run_chapters.sh's --kill-after and its packing: the scripts stop first
)

# Estimates, in seconds on one H100: measured where a run measured them (results/book_gpu/,
# results/gpu/book_calibration/, results/gpu/README.md), else the budget in results/book_gpu/README.md.
# A chapter's is read from the committed run's record where it has one (MEASURED_MARGIN).
CHAPTER_S = {
    "00": 30, "01": 40, "02": 30, "03": 100, "04": 360,
    "05": 120, "06": 360, "07": 300, "08": 90,
}  # fmt: skip
READS_THE_TRAINED_MODEL = (
    "05",
    "08",
)  # chapter 04's run folder, which stays on the machine
CHAPTERS_START_S = 15  # a papermill run's own start: imports, the kernel's registration
# A chapter the committed GPU run timed (results/book_<profile>/book_run.json) is estimated at its
# measured time and this much more: a chapter cut short keeps nothing.
MEASURED_MARGIN = 1.2
CALIBRATE_S = {
    "table3_costs": 220, "table3_calibration": 240, "fp16": 180, "parser_epochs": 90,
    "sdpa_backends": 240, "table3_all_rows": 200, "stacked_rows": 150,
}  # fmt: skip
# speed.sh's parts, in its order; each one's estimate is what it needs to be worth starting
SPEED_S = {
    "decode": 60, "decode_bf16": 60, "train_eager": 120, "profile_eager": 60,
    "profile_graphed": 60, "train_compiled": 180, "train_bucketed": 240, "train_graphs": 240,
    "profile_compiled": 180,
}  # fmt: skip
RECIPE_SEED_S = 360  # seed 1 alone: 352 s measured; 2 and 3 side by side about as long
TESTS_S = 90
PARSER_SWEEP_S = 300
TABLE3_MIN_MINUTES = 3  # fewer minutes than this would not finish an epoch of every row
TABLE3_PARTS = (
    "findings",
    "size",
    "rest",
)  # table3_extended.sh's GROUPs, besides all 20 rows


class PlanError(ValueError):
    """A step this script cannot run, said before any step runs."""


@dataclass
class Step:
    name: str  # the file it delivers is named after it
    argv: list[str]
    estimate_s: int
    env: dict[str, str] = field(default_factory=dict)
    # table3_extended: MINUTES from the time left (what it needs: LIMIT_S >= MINUTES * 60 + 90)
    minutes_from_limit: bool = False
    # speed and table3_extended fit themselves to their LIMIT_S: they take what is left
    takes_the_rest: bool = False


def _bash(script: str, *args: str) -> list[str]:
    return ["bash", str(HERE / script), *args]


def _items(spec: str, what: str) -> list[str]:
    items = [item for item in spec.split(",") if item]
    if not items or len(set(items)) != len(items):
        raise PlanError(f"{what}: list them once each, comma-separated, got '{spec}'")
    return items


def _known_items(spec: str, text: str, known, what: str) -> list[str]:
    """The comma-separated `spec`, each item one of `known`, else a PlanError naming `what`."""
    items = _items(spec, text)
    unknown = [item for item in items if item not in known]
    if unknown:
        raise PlanError(
            f"{text}: {what} {', '.join(unknown)}; choose from {' '.join(known)}"
        )
    return items


def parse_step(text: str) -> Step:
    """One step from its name on the command line (see the module's docstring)."""
    spec, _, seconds = text.partition("=")
    kind, _, arg = spec.partition(":")
    if kind == "tests" and not arg:
        step = Step("gpu_tests", _bash("gpu_tests.sh"), TESTS_S)
    elif kind == "chapters" and arg:
        chapters = _known_items(arg, text, CHAPTER_S, "no chapter")
        measured = _measured_chapters(_profile())
        name = (
            "chapters_" + chapters[0] + (f"-{chapters[-1]}" if len(chapters) > 1 else "")
        )
        estimate = CHAPTERS_START_S + sum(measured.get(c, CHAPTER_S[c]) for c in chapters)
        step = Step(name, _bash("run_chapters.sh", *chapters), estimate)
    elif kind == "calibrate" and arg:
        names = _known_items(arg, text, CALIBRATE_S, "calibrate_book.sh has no step")
        step = Step(
            "calibrate_" + "-".join(names),
            _bash("calibrate_book.sh", *names),
            sum(CALIBRATE_S[n] for n in names),
        )
    elif kind == "table3_extended" and arg in ("", *TABLE3_PARTS):
        estimate = TABLE3_MIN_MINUTES * 60 + 90
        name = "table3_extended" + (f"_{arg}" if arg else "")
        env = {"GROUP": arg} if arg else {}
        step = Step(name, _bash("table3_extended.sh"), estimate, env=env)
        step.minutes_from_limit = step.takes_the_rest = True
    elif kind == "parser_sweep" and not arg:
        step = Step("parser_sweep", _bash("parser_sweep.sh"), PARSER_SWEEP_S)
    elif kind == "recipe_seeds" and arg:
        seeds = _items(arg, text)
        if not all(s.isdigit() and int(s) > 0 for s in seeds):
            raise PlanError(
                f"{text}: seeds are whole numbers above 0, as recipe_seeds:2,3"
            )
        step = Step(
            "recipe_seeds_" + "-".join(seeds),
            _bash("recipe_seeds.sh"),
            RECIPE_SEED_S,
            env={"SEEDS": " ".join(seeds)},
        )
    elif kind == "speed":
        parts = (
            _known_items(arg, text, SPEED_S, "speed.sh has no part")
            if arg
            else list(SPEED_S)
        )
        step = Step(
            "speed", _bash("speed.sh", *(parts if arg else [])), SPEED_S[parts[0]]
        )
        step.takes_the_rest = True
    else:
        raise PlanError(
            f"unknown step '{text}'; the steps are tests, chapters:NN[,NN], calibrate:NAME[,NAME],"
            " table3_extended[:PART], parser_sweep, recipe_seeds:N[,N] and speed[:PART,...]"
        )
    if seconds:
        if not seconds.isdigit() or int(seconds) <= 0:
            raise PlanError(f"{text}: an estimate is a whole number of seconds above 0")
        step.estimate_s = int(seconds)
    return step


def plan(texts: list[str], warm: bool = False) -> list[Step]:
    """Every step parsed and checked, or a PlanError naming the first problem."""
    if not texts:
        raise PlanError("name at least one step, e.g. chapters:04 tests")
    if len(texts) > MAX_STEPS:
        raise PlanError(
            f"{len(texts)} steps, at most {MAX_STEPS} a call: each returns one file, and a call"
            " returns 8 with spell.json and spell.log; join chapters (chapters:05,08) or split the call"
        )
    steps = [parse_step(text) for text in texts]
    if not warm:  # a warm machine's earlier call ran 04: the run-time check still applies
        _check_the_trained_model(steps)
    names = [step.name for step in steps]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise PlanError(
            f"two steps would deliver the same file ({', '.join(repeated)}); join them"
        )
    return steps


def _measured_chapters(profile: str) -> dict[str, int]:
    """{"01": seconds} for each chapter the committed run of `profile` timed whole, with the
    margin; {} where there is no record (or one this script cannot read)."""
    path = REPO / "results" / f"book_{profile}" / "book_run.json"
    try:
        chapters = json.loads(path.read_text())["metrics"]["chapters"]
        return {
            name[:2]: math.ceil(entry["wall_time_s"] * MEASURED_MARGIN)
            for name, entry in chapters.items()
            if entry.get("status") == "ok" and entry.get("wall_time_s")
        }
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def _profile() -> str:
    return os.environ.get("PROFILE", "gpu")


def _trained(profile: str) -> bool:
    return (REPO / "runs" / f"book-{profile}" / "averaged.pt").is_file()


def _chapters(step: Step) -> list[str]:
    return step.argv[2:] if step.name.startswith("chapters_") else []


def _reads_the_model(step: Step) -> bool:
    return any(c in READS_THE_TRAINED_MODEL for c in _chapters(step))


def _check_the_trained_model(steps: list[Step]) -> None:
    """Chapters 05 and 08 read chapter 04's run folder (its snapshots and their average, far more
    than the call returns or carries), so they run on the machine that trained it: after 04 in the
    same call, or in a second call on the still-warm machine, which keeps it. (Where 04's step
    then fails or is skipped, `Spell.run_step` skips them.)"""
    profile = _profile()
    trained = _trained(profile)
    for step in steps:
        chapters = _chapters(step)
        if "04" in chapters:
            trained = True
        readers = [c for c in chapters if c in READS_THE_TRAINED_MODEL]
        if readers and not trained:
            which = (
                "chapter " + readers[0] + " reads"
                if len(readers) == 1
                else "chapters 05 and 08 read"
            )
            raise PlanError(
                f"{which} chapter 04's model, which this machine has not trained (no"
                f" runs/book-{profile}/averaged.pt): put chapters:04 before it in this call, or call"
                " again on the warm machine that ran it"
            )


def dry_run(steps: list[Step], limit_s: int) -> list[str]:
    """The plan as the call would meet it if every step took its estimate: which run, which not."""
    left, lines = limit_s, []
    for step in steps:
        room = left - RESERVE_S - GRACE_S
        verdict = (
            "runs" if step.estimate_s <= room else f"skipped ({max(room, 0)} s left)"
        )
        if step.estimate_s <= room:
            left -= room + GRACE_S if step.takes_the_rest else step.estimate_s
        lines.append(
            f"{step.name}: about {step.estimate_s} s, {verdict}: {' '.join(step.argv)}"
        )
    return lines


def _write_json(path: Path, record: dict) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(record, indent=1) + "\n")
    partial.replace(path)


def _probe(argv: list[str]) -> str | None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30, cwd=REPO)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


def deliver(name: str, staging: Path, out: Path) -> list[str]:
    """What a step wrote into `staging`, as one file in `out`: the file itself where there is one
    with a name the call can return, else `<name>.tgz` of them all. Returns the names delivered."""
    files = sorted(p for p in staging.rglob("*") if p.is_file())
    if not files:
        return []
    alone = files[0] if len(files) == 1 and files[0].parent == staging else None
    # as it is, unless its name cannot travel or another step delivered a file of that name
    if alone and SAFE_NAME.match(alone.name) and not (out / alone.name).exists():
        partial = out / (
            alone.name + ".partial"
        )  # whole or not at all, across file systems too
        shutil.move(alone, partial)
        partial.replace(out / alone.name)
        return [alone.name]
    packed = out / f"{name}.tgz"
    with tarfile.open(packed.with_name(packed.name + ".partial"), "w:gz") as tar:
        for path in files:
            tar.add(path, arcname=str(path.relative_to(staging)))
    packed.with_name(packed.name + ".partial").replace(packed)
    return [packed.name]


# The GPU's utilisation (%) and memory (MiB) every SAMPLE_S seconds while a step runs, where
# nvidia-smi exists: how busy a chapter or a study kept the GPU, into the ledger.
SAMPLE_S = 2
SAMPLER = [
    "nvidia-smi",
    "--query-gpu=utilization.gpu,memory.used",
    "--format=csv,noheader,nounits",
    f"--loop={SAMPLE_S}",
]


class Sampler:
    """Runs `command` (one "utilisation, memory" line per sample) beside a step and keeps the
    samples; nothing where the command does not exist."""

    def __init__(self, command: list[str]):
        self.samples: list[list[float]] = []
        self.started = time.monotonic()
        try:
            self.proc = subprocess.Popen(
                command,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
                errors="replace",
                start_new_session=True,
            )
        except OSError:
            self.proc = None
            return
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            try:
                util, memory = (float(x) for x in line.split(",")[:2])
            except ValueError:
                continue  # a line that is not a sample ("[N/A]", a warning)
            self.samples.append([round(time.monotonic() - self.started, 1), util, memory])

    def stop(self) -> dict | None:
        """The samples and their summary, or None where nothing was sampled."""
        if self.proc is None:
            return None
        _signal_pid_group(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        self.reader.join(timeout=5)
        if not self.samples:
            return None
        utils = [s[1] for s in self.samples]
        return {
            "every_s": SAMPLE_S,
            "mean_util_pct": round(sum(utils) / len(utils), 1),
            "busy_share": round(sum(u > 0 for u in utils) / len(utils), 3),
            "max_memory_mib": max(s[2] for s in self.samples),
            "samples": self.samples,  # [seconds into the step, utilisation %, memory MiB]
        }


class Spell:
    """Runs steps against a deadline, delivering each step's files and the ledger as it goes."""

    def __init__(
        self,
        steps: list[Step],
        limit_s: float,
        out: Path,
        work: Path,
        log,
        sampler: list[str] | None = SAMPLER,
    ):
        self.steps, self.limit_s, self.log = steps, limit_s, log
        self.out, self.work, self.sampler = out, work, sampler
        self.stop_requests = 0  # Ctrl-C or SIGTERM to this script, counted
        self.started = time.monotonic()
        self.record = {
            "started": _now(),
            "ended": None,
            "limit_s": limit_s,
            "commit": _probe(["git", "rev-parse", "HEAD"]),
            "device": _probe(
                ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"]
            ),
            "steps": [],
        }

    def left(self) -> float:
        return self.limit_s - (time.monotonic() - self.started)

    def say(self, line: str) -> None:
        self.log.write(line + "\n")
        self.log.flush()

    def run(self) -> int:
        on_main_thread = threading.current_thread() is threading.main_thread()
        if on_main_thread:
            # Ctrl-C and SIGTERM (a runner's stop) ask for a stop, which the wait for the running
            # step reads: raising from the handler instead could leave subprocess's wait lock
            # taken (seen: a hang), and a step never outlives this script. Our own handler also
            # matters where this process was started with SIGINT ignored (`command &` in a
            # script, some CI runners): an ignored signal passes on to every step, which could
            # then not be stopped with SIGINT to save what it has; a handler is reset to the
            # default in each step's exec.
            previous = {
                sig: signal.signal(sig, self._request_stop)
                for sig in (signal.SIGINT, signal.SIGTERM)
            }
        status = 0
        try:
            for step in self.steps:
                if self.interrupted:
                    entry = {"step": step.name, "status": "not_started"}
                    entry["why"] = "the spell was interrupted"
                else:
                    entry = self.run_step(step)
                self.record["steps"].append(entry)
                _write_json(self.out / "spell.json", self.record)
                status = status or int(entry["status"] != "ok")
        finally:
            if on_main_thread:
                for sig, handler in previous.items():
                    signal.signal(sig, handler)
        self.record["ended"] = _now()
        self.record["interrupted"] = self.interrupted
        _write_json(self.out / "spell.json", self.record)
        done = [e["step"] for e in self.record["steps"] if e["status"] == "ok"]
        rest = [e["step"] for e in self.record["steps"] if e["status"] != "ok"]
        self.say(
            f"[spell] done: {' '.join(done) or 'nothing'}; not done: {' '.join(rest) or 'none'}"
        )
        return 130 if self.interrupted else status

    def _request_stop(self, signum, frame) -> None:
        self.stop_requests += 1

    @property
    def interrupted(self) -> bool:
        return self.stop_requests > 0

    def run_step(self, step: Step) -> dict:
        entry = {
            "step": step.name,
            "command": " ".join(step.argv),
            "estimate_s": step.estimate_s,
        }
        limit = int(self.left()) - RESERVE_S - GRACE_S  # the step's LIMIT_S
        if step.estimate_s > limit:
            self.say(
                f"[spell] {step.name} skipped: needs about {step.estimate_s} s, {max(limit, 0)} s"
                " left; run it in the next spell"
            )
            return entry | {"status": "skipped", "left_s": max(limit, 0)}
        if (
            _reads_the_model(step)
            and "04" not in _chapters(step)
            and not _trained(_profile())
        ):
            self.say(
                f"[spell] {step.name} skipped: chapter 04's model is not on this machine (its"
                " step failed, was cut short or was skipped)"
            )
            return entry | {"status": "skipped", "why": "no trained model"}
        env = os.environ | step.env | {"LIMIT_S": str(limit), "PYTHONUNBUFFERED": "1"}
        if step.minutes_from_limit:
            # whole half-minutes, leaving table3_extended.sh the 90 s it keeps for the export
            env["MINUTES"] = str((limit - 90) // 30 / 2)
        staging = self.work / step.name
        # this script's own folder, left by an earlier call on the same machine
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        env["OUT"] = str(staging)
        self.say(
            f"[spell] {step.name} ({limit} s at most, estimated {step.estimate_s}): {entry['command']}"
        )
        started = time.monotonic()
        sampler = Sampler(self.sampler) if self.sampler else None
        code, cut = self.execute(step.argv, env, limit)
        wall = round(time.monotonic() - started, 1)
        gpu = sampler.stop() if sampler else None
        files = deliver(step.name, staging, self.out)
        too_big = [f for f in files if (self.out / f).stat().st_size > MAX_FILE_BYTES]
        # 124: the step's own `timeout` stopped it at its LIMIT_S
        status = "cut_short" if cut or code == 124 else ("ok" if code == 0 else "failed")
        self.say(
            f"[spell] {step.name}: {status} (exit {code}) after {wall} s; files: {' '.join(files) or 'none'}"
        )
        for name in too_big:
            self.say(
                f"[spell] {name} is over {MAX_FILE_BYTES >> 20} MiB: the call will not return it"
            )
        if gpu:
            self.say(
                f"[spell] {step.name}: the GPU {gpu['mean_util_pct']}% busy on average,"
                f" {gpu['max_memory_mib']:.0f} MiB at most"
            )
        return entry | {
            "gpu": gpu,
            "status": status,
            "exit": code,
            "wall_s": wall,
            "files": files,
            "too_big": too_big,
            "env": {k: env[k] for k in (*step.env, "LIMIT_S", "MINUTES") if k in env},
        }

    def execute(self, argv: list[str], env: dict, limit: int) -> tuple[int, bool]:
        """Runs one step in a session of its own, its output into the log as it comes.

        The scripts stop themselves at their LIMIT_S and pack what they have (`timeout
        --signal=INT --kill-after=...`, which sets up a process group of its own, so a signal to
        the step's group would miss the book under it). Only a step still running GRACE_S / 2
        past its LIMIT_S, or one running when this script is interrupted, gets SIGINT, sent to
        every process of its session; whatever is left of the session GRACE_S / 2 later, or once
        the step has ended (a child left behind), gets SIGKILL."""
        proc = subprocess.Popen(
            argv,
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",  # one undecodable byte must not stop the reader and stall the step
            start_new_session=True,
        )

        def pump() -> None:
            for line in proc.stdout:
                self.log.write(line)
                self.log.flush()

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        # past the step's time, or on a stop asked of this script: SIGINT, then SIGKILL
        code = self._wait(proc, limit + GRACE_S / 2, stops=1)
        cut = code is None
        if cut:
            _signal_session(proc.pid, signal.SIGINT)
            code = self._wait(proc, GRACE_S / 2, stops=self.stop_requests + 1)
        _signal_session(proc.pid, signal.SIGKILL)
        if code is None:
            code = proc.wait()
        reader.join(timeout=5)
        return code, cut

    def _wait(self, proc: subprocess.Popen, seconds: float, stops: int) -> int | None:
        """The step's exit code, or None after `seconds` or once `stops` stops have been asked
        of this script. Polled, so that a signal's handler never interrupts subprocess's own
        waiting."""
        deadline = time.monotonic() + seconds
        while (code := proc.poll()) is None:
            if self.stop_requests >= stops or time.monotonic() >= deadline:
                return None
            time.sleep(0.1)
        return code


def _signal_session(session: int, sig: int) -> None:
    """`sig` to every process of `session` (a step's, started with start_new_session, so its id is
    the step's pid), whatever process group it is in; on a system without /proc, to the step's
    own group."""
    proc_dir = Path("/proc")
    if not proc_dir.is_dir():
        _signal_pid_group(session, sig)
        return
    for stat in proc_dir.glob("[0-9]*/stat"):
        try:
            # after the command's name, which may hold spaces and parentheses: state, ppid,
            # process group, session, ...
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[3]) == session:
                os.kill(int(stat.parent.name), sig)
        except (OSError, IndexError, ValueError):
            continue  # a process that ended while being read


def _signal_pid_group(group: int, sig: int) -> None:
    try:
        os.killpg(group, sig)
    except ProcessLookupError:
        pass


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class _Tee:
    def __init__(self, *streams):
        self.streams = streams

    def write(self, text: str) -> None:
        for stream in self.streams:
            stream.write(text)

    def flush(self) -> None:
        for stream in self.streams:
            stream.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Run prepared GPU steps in one call, within its minutes and its 8 files back.",
        epilog="The steps: tests, chapters:NN[,NN], calibrate:NAME[,NAME], table3_extended[:PART],"
        " parser_sweep, recipe_seeds:N[,N], speed[:PART,...]; STEP=SECONDS replaces an estimate.",
    )
    parser.add_argument("steps", nargs="*", metavar="STEP")
    parser.add_argument(
        "--limit-s",
        type=int,
        default=540,
        help="seconds for all the steps together (default 540: a 600-s call with the wheels' install)",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="print the plan and run nothing"
    )
    parser.add_argument(
        "--warm",
        action="store_true",
        help="a second call on the machine whose first call ran chapter 04: chapters 05 and 08 "
        "are not refused before the run (they are still skipped where its model is missing)",
    )
    parser.add_argument(
        "--work",
        type=Path,
        default=REPO / "_build" / "spell" / "steps",
        help="where each step writes before its files are delivered (default _build/spell/steps)",
    )
    args = parser.parse_args(argv)
    try:
        steps = plan(args.steps, warm=args.warm)
        if args.limit_s <= RESERVE_S + GRACE_S:
            raise PlanError(f"--limit-s {args.limit_s} leaves no time for a step")
    except PlanError as error:
        print(f"spell.py: {error}", file=sys.stderr)
        return 2
    if args.dry_run:
        for line in dry_run(steps, args.limit_s):
            print(line)
        return 0
    out = Path(os.environ.get("OUT") or REPO / "_build" / "spell" / "out")
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "spell.log", "a") as log_file:
        spell = Spell(steps, args.limit_s, out, args.work, _Tee(sys.stdout, log_file))
        return spell.run()


if __name__ == "__main__":
    sys.exit(main())

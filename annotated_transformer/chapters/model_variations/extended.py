"""Table 3 past one epoch: a resumable run of every row and seed, one epoch at a time.

Chapter 06 trains its rows for the profile's budget inside the book's time. Whether a finding holds
once the rows have learned needs more epochs than a chapter can afford, so this run trains them
outside the book as a long run (`training.long_run`: its folder, records and export), resumed over
several invocations, and the chapter reads what it committed.

The run folder holds one job per (corpus, row, seed): a training folder (`fit`'s resume checkpoint)
and its record, the validation perplexity after every epoch so far. Jobs advance in rounds, every
job one epoch per round, so an interrupted run leaves all rows at about the same epoch and every
finished round is a whole Table 3 at that budget. Because the paper's schedule has no horizon, a job
resumed for more epochs is bit for bit the job that would have been trained for them at once: a
second invocation with more `--epochs` or more seeds adds to the run and retrains nothing.

The rows, scale, warm-up, peak rate, batches and vocabulary are the profile's Table 3 settings
(`variations.row_config` and `row_settings`), the chapter's own, so both runs differ only in epochs.
Every job trains on the run's device in the one precision "auto" means there without timing (bf16 on
a GPU with it, fp16 on one without, fp32 on a CPU), so the rows of one table never differ in precision; the folder records
that precision and refuses to continue under another. Rows train eager: each row-epoch builds its
trainer afresh, and a compile of tens of seconds per model shape costs more than an epoch of these
small models (the measurement on an H100 is in results/gpu/README.md).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from ...model.config import TABLE3_ALL_ROWS
from ...profiles import Profile
from ...runtime.devices import device_name
from ...runtime.precision import resolve_precision
from ...runtime.side_by_side import check_workers
from ...training.checkpoint import RESUME_NAME
from ...training.fit import fit
from ...training.long_run import JobRecord, LongRun, RunPlan, deadline
from . import rows as variations
from . import statistics as findings

KIND = "table3"
PLAN_NAME = "table3_run.json"
JOB_KEYS = ("corpus", "row", "seed")  # what names a job among the run's
OVERFIT_ROWS = ("base", "D1", "D2")


def long_run(out_dir: str | os.PathLike) -> LongRun:
    """The Table 3 run folder `out_dir` as a long run (its plan, records, lock and export)."""
    return LongRun(out_dir, KIND, PLAN_NAME, "table3", "a Table 3 run")


def data_profile(profile: Profile) -> Profile:
    """The profile whose data every Table 3 row trains on: its corpus, with the Table 3 vocabulary
    and batch size where the profile sets them."""
    book = profile.book
    return profile.replace(
        vocab_size=book.table3.vocab_size or profile.vocab_size,
        batch_tokens=book.table3.batch_tokens or profile.batch_tokens,
    )


@dataclass(frozen=True)
class Job:
    """One row and seed on one corpus: "full" (the whole training split) or "small" (its first
    1/overfit_share pairs, where dropout's rows can overfit)."""

    row: str
    seed: int
    corpus: str = "full"

    @property
    def name(self) -> str:
        return f"{self.corpus}-{self.row}-seed{self.seed}"


def finding_jobs(rows: Sequence[str], seeds: Iterable[int]) -> list[Job]:
    """Every (row, seed) of `rows` on the whole corpus, and those of `rows` that dropout's finding
    reads (base, D1, D2) on its small corpus too: a row not named trains on no corpus."""
    seeds = list(seeds)
    small = [r for r in findings.finding_rows(corpus="small") if r in OVERFIT_ROWS]
    small += [r for r in OVERFIT_ROWS if r not in small and r in TABLE3_ALL_ROWS]
    small = [r for r in small if r in rows]
    return [Job(r, s) for s in seeds for r in rows] + [
        Job(r, s, "small") for s in seeds for r in small
    ]


def extended_rows() -> list[str]:
    """The 13 rows of the findings in Table 3's order: every row a finding compares (C6 and C7
    included) and dropout's D1 and D2, which the full-corpus table and its rank correlation show."""
    wanted = {
        *findings.finding_rows(),
        *findings.finding_rows(corpus="small"),
        *OVERFIT_ROWS,
    }
    return [r for r in TABLE3_ALL_ROWS if r in wanted]


class Table3Run:
    """A run folder of Table 3 jobs under one profile; see the module's docstring.

    The folder records the profile's Table 3 settings and the precision when it is made; a later
    invocation under other settings or another precision (a CPU run continued on a GPU) is refused
    (its jobs would not be comparable), as is a second process at once. `device` is a resolved
    device ("cpu", "cuda:0"): every job trains there.
    """

    def __init__(self, profile: Profile, out_dir: str | os.PathLike, device: str = "cpu"):
        self.profile = data_profile(profile)
        self.out_dir = Path(out_dir)
        self.scales = self.profile.book
        self.overfit_share = self.scales.table3.overfit_share
        self.device = str(device)
        self.precision = resolve_precision(
            self.profile.train_settings().precision, self.device
        )
        self.run = long_run(self.out_dir)

    # ------------------------------------------------------------------ the folder's identity
    def identity(self) -> dict:
        """What every job of the folder shares: change any of it and the rows differ."""
        p = self.profile
        return {
            "profile": p.name,
            "corpus": p.corpus,
            "vocab_size": p.vocab_size,
            "batch_tokens": p.batch_tokens,
            # width, depth, heads
            "scale": list(variations.scale_of(p).__dict__.values()),
            "warmup_steps": self.scales.table3.warmup_steps,
            "peak_lr": self.scales.table3.peak_lr,
            "overfit_share": self.overfit_share,
            "precision": self.precision,
        }

    def check_folder(self, training: bool = True) -> None:
        """Refuse a folder made under other settings, before any work (one line with the fix).
        Reading it (`training` False) does not depend on this machine's precision."""
        self.run.check_folder()
        changed = self.run.changed(
            self.identity(), ignore=() if training else ("precision",)
        )
        if changed:
            raise ValueError(
                f"{self.out_dir} was trained with other Table 3 settings ({', '.join(changed)} "
                f"differ: {', '.join(f'{k}={v!r}' for k, v in changed.items())}); continue it "
                + (
                    "on a device where auto means that precision (--device cpu for fp32), "
                    if list(changed) == ["precision"]
                    else "with its own profile, "
                )
                + "or give another --out"
            )

    def write_identity(self, targets: dict[str, int] | None = None) -> None:
        """Write the folder's plan when it is made and record `targets` ({corpus: epochs} this
        call trains to) in it, only ever raised: a later call with fewer epochs trains nothing and
        leaves the record, and a plan without targets starts from the epochs its curves hold. The
        export reads them from here, never from the flags."""
        plan = self.run.plan() or RunPlan(KIND, self.identity())
        recorded = dict(plan.targets) or (
            held_epochs(collect(self.out_dir)) if targets else {}
        )
        raised = {
            corpus: max(recorded.get(corpus, 0), (targets or {}).get(corpus, 0))
            for corpus in sorted({*recorded, *(targets or {})})
        }
        self.run.write_plan(RunPlan(KIND, plan.identity, raised, plan.stops))

    # ------------------------------------------------------------------ one epoch of one job
    def epochs_done(self, job: Job) -> int:
        return len(self.run.curve(job.name))

    def train_epoch(self, job: Job, data) -> dict:
        """Train `job` one more epoch (resuming its checkpoint) and record its validation perplexity."""
        folder = self.run.folder(job.name)
        epoch = self.epochs_done(job) + 1
        config = variations.row_config(job.row, self.profile)
        settings = variations.row_settings(
            self.profile, config, epochs=epoch, seed=job.seed
        )
        settings = settings.replace(
            precision=self.precision, name=f"table3 {self.profile.name} {job.name}"
        )
        train = data.train
        if job.corpus == "small":
            train = train.subset(range(len(train) // self.overfit_share))
        # A checkpoint holds the position inside the epoch (Ctrl-C saves one), so an epoch cut
        # short continues where it stopped and ends as it would have.
        resume = (folder / "train" / RESUME_NAME).is_file()
        started = time.perf_counter()
        fitted = fit(
            config,
            data.tokenizer,
            train,
            data.valid,
            settings,
            folder / "train",
            device=self.device,
            resume=resume,
            show_progress=False,
        )
        trainer, result = fitted.trainer, fitted.result
        if result.stopped_by != "max_epochs":
            raise KeyboardInterrupt(f"{job.name} stopped by {result.stopped_by}")
        point = {
            "epoch": epoch,
            "epochs": round(trainer.epochs_done(), 4),
            "step": result.progress.step,
            "ppl": float(result.valid["ppl"]),
            "train_s": round(result.progress.train_time_s, 2),
            "wall_s": round(time.perf_counter() - started, 2),
        }
        record = self.run.job(job.name) or JobRecord(
            KIND,
            job.name,
            {"corpus": job.corpus, "row": job.row, "seed": job.seed},
            precision=trainer.precision,
            device=device_name(self.device),
            facts={
                "train_pairs": len(train),
                "config": config.to_dict(),
                "peak_lr": settings.peak_lr,
                "warmup_steps": settings.warmup_steps,
            },
        )
        self.run.write_job(
            record.with_point(
                point, precision=trainer.precision, device=device_name(self.device)
            )
        )
        return point


def plan_rounds(done: dict[Job, int], targets: dict[Job, int]) -> list[tuple[Job, int]]:
    """The order of the epochs still to train, by the share of its target each epoch reaches
    (then in the jobs' order): an interrupted run leaves every job about as far along, and a job of
    40 short epochs moves five epochs for every one of a job of 8."""
    order = list(targets)
    todo = [
        (job, epoch)
        for job, target in targets.items()
        for epoch in range(done.get(job, 0) + 1, target + 1)
    ]
    return sorted(todo, key=lambda t: (t[1] / targets[t[0]], order.index(t[0])))


def collect(out_dir: str | os.PathLike) -> list[dict]:
    """Every job's record in a run folder as the chapter reads it (`JobRecord.view`: name, row,
    seed, corpus, curve...), in name order."""
    return [r.view() for r in long_run(out_dir).jobs()]


def held_epochs(records: Sequence[dict]) -> dict[str, int]:
    """{corpus: the most epochs a job of it holds}: what a folder's curves reach."""
    out: dict[str, int] = {}
    for r in records:
        out[r["corpus"]] = max(out.get(r["corpus"], 0), len(r["curve"]))
    return out


def recorded_targets(out_dir: str | os.PathLike) -> dict[str, int] | None:
    """The targets a run folder's plan records ({"full": 12, "small": 80}), or None."""
    plan = long_run(out_dir).plan()
    return dict(plan.targets) if plan and plan.targets else None


def ppl_at_epoch(records: Sequence[dict], corpus: str, epoch: int) -> dict:
    """{row: {seed: validation perplexity after `epoch` epochs}} of the jobs that reached it."""
    out: dict[str, dict[int, float]] = {}
    for r in records:
        if r["corpus"] == corpus and len(r["curve"]) >= epoch:
            out.setdefault(r["row"], {})[r["seed"]] = r["curve"][epoch - 1]["ppl"]
    return out


def complete_epoch(records: Sequence[dict], corpus: str, rows: Sequence[str]) -> int:
    """The last epoch that every job of `rows` x every seed in `records` on `corpus` has
    finished (0: none, or a job not started)."""
    seeds = sorted({r["seed"] for r in records})
    done = {
        (r["row"], r["seed"]): len(r["curve"]) for r in records if r["corpus"] == corpus
    }
    return min((done.get((row, s), 0) for row in rows for s in seeds), default=0)


def flattened_at(curve: Sequence[float], threshold: float = 0.01) -> int | None:
    """The first epoch after which the perplexity fell by less than `threshold` (a fraction) in
    one epoch (None: it has not flattened yet)."""
    for i in range(1, len(curve)):
        if curve[i] > curve[i - 1] * (1 - threshold):
            return i + 1
    return None


def small_minimum_passed(curve: Sequence[float]) -> bool:
    """Whether a curve has risen above its lowest point (the model overfits)."""
    return len(curve) >= 2 and curve[-1] > min(curve)


# ------------------------------------------------------------------------------------------ the loop
_WORKER: dict = {}


def _start_worker(profile: Profile, out_dir: str, device: str, data_dir) -> None:
    from ...pipeline import prepare_data

    run = Table3Run(profile, out_dir, device)
    _WORKER.update(run=run, data=prepare_data(run.profile, data_dir))


def _epoch_in_worker(job: Job) -> tuple[Job, dict]:
    return job, _WORKER["run"].train_epoch(job, _WORKER["data"])


def _train_in_pool(
    run: Table3Run, order, workers: int, data_dir, report, may_start: Callable[[], bool]
) -> None:
    """`order` on `workers` processes; a job's next epoch waits for its previous one. On a GPU the
    processes share it: one small model leaves most of an accelerator idle. Once `may_start()` is
    False no further epoch starts, and those running finish. An epoch that fails (a GPU out of
    memory with eight processes on it) does the same, and its error is raised once the running
    epochs are done and kept, where an `--export-only` finds them."""
    from concurrent.futures import FIRST_COMPLETED, wait

    from ...runtime.side_by_side import one_thread_pool

    pending = list(order)
    busy: dict = {}  # future -> job
    failed: Exception | None = None
    start = (run.profile, str(run.out_dir), run.device, data_dir)
    with one_thread_pool(workers, _start_worker, start) as pool:
        while pending or busy:
            if not may_start():
                pending.clear()
            running = set(busy.values())
            while len(busy) < workers and pending:
                ready = next((t for t in pending if t[0] not in running), None)
                if ready is None:
                    break
                pending.remove(ready)
                busy[pool.submit(_epoch_in_worker, ready[0])] = ready[0]
                running.add(ready[0])
            if not busy:
                break
            finished, _ = wait(list(busy), return_when=FIRST_COMPLETED)
            for future in finished:
                busy.pop(future)
                try:
                    done = future.result()
                except Exception as error:
                    failed = failed or error
                    pending.clear()
                    continue
                report(*done)
    if failed is not None:
        raise failed


def train_all(
    run: Table3Run,
    targets: dict[Job, int],
    *,
    data_dir=None,
    workers: int = 1,
    show_progress: bool = True,
    minutes: float | None = None,
) -> dict:
    """Train every job of `targets` ({job: epochs}) up to its epochs, round by round, under a
    lock on the folder. With `minutes`, no epoch starts after that many minutes (those running
    finish), so a bounded invocation ends with whole epochs kept, and the same call continues.
    Returns the epochs trained, those already done, and those `left` when the minutes ended."""
    from ...pipeline import corpus_tokenizer, prepare_data
    from ...runtime.progress import progress_bar

    check_workers(workers, run.device)
    may_start = deadline(minutes)
    run.check_folder()
    run.write_identity()
    with run.run.lock():
        corpus_targets: dict[str, int] = {}
        for job, target in targets.items():
            corpus_targets[job.corpus] = max(corpus_targets.get(job.corpus, 0), target)
        run.write_identity(corpus_targets)
        done = {job: run.epochs_done(job) for job in targets}
        order = plan_rounds(done, targets)
        skipped = sum(min(done[j], t) for j, t in targets.items())
        bar = progress_bar(
            total=len(order), unit="epoch", desc="table3", disable=not show_progress
        )
        trained = 0

        def report(job: Job, point: dict) -> None:
            nonlocal trained
            trained += 1
            bar.set_postfix_str(
                f"{job.name} epoch {point['epoch']}: ppl {point['ppl']:.2f}"
            )
            bar.update(1)

        if workers <= 1:
            torch.set_num_threads(1)
            data = prepare_data(run.profile, data_dir)
            for job, _ in order:
                if not may_start():
                    break
                report(job, run.train_epoch(job, data))
        elif order:
            # the shared tokenizer trained (or found) once, before the processes race to train it
            corpus_tokenizer(run.profile, data_dir)
            _train_in_pool(run, order, workers, data_dir, report, may_start)
        bar.close()
        return {"trained": trained, "skipped": skipped, "left": len(order) - trained}

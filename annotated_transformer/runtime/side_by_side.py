"""Independent runs side by side, in spawned processes of one thread each.

A model small enough for a chapter's side experiment (the copy task, a six-layer model of width 64)
gains little from a second thread in one process: on a 2-core CPU, 200 copy-task steps took about
the same time with one thread as with two. Two such runs in two one-thread processes therefore take
about the time of one. Chapters 04, 06 and 07 and the `table3` command share their runs this way.

On a GPU the same processes share the device: one such model leaves most of it idle, and on an
H100 four processes side by side each trained a Table 3 row about as fast as one alone
(results/gpu/book_calibration), so a caller that measured it asks for more than one
(`side_by_side_workers(..., accelerator=N)`).

Processes are spawned, never forked: a fork of a process that already holds torch's thread pool can
hang in the child. The function a job runs must be importable (a module's top-level function, not
one a notebook defines), because a spawned process finds it by name.
"""

from __future__ import annotations

import multiprocessing
import weakref
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed

import torch


def _start(initializer, initargs) -> None:
    torch.set_num_threads(1)
    if initializer is not None:
        initializer(*initargs)


def _call(function: Callable, job: dict):
    return function(**job)


def one_thread_pool(
    workers: int, initializer: Callable | None = None, initargs: tuple = ()
) -> ProcessPoolExecutor:
    """`workers` spawned processes, each set to one torch thread, then `initializer(*initargs)`."""
    return ProcessPoolExecutor(
        workers,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_start,
        initargs=(initializer, initargs),
    )


def usable_cores() -> int:
    """The cores this process may run on (its affinity, which a container's CPU set narrows),
    where the platform says; otherwise the machine's count."""
    import os

    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


# How many worker processes a GPU's runs may share per usable core: each still needs a core to feed it.
GPU_WORKERS_PER_CORE = 2


def check_workers(workers: int, device: torch.device | str) -> int:
    """`workers` when the machine can run that many processes side by side: at most its usable
    cores on a CPU (one thread each), at most GPU_WORKERS_PER_CORE times them on a GPU; else one
    ValueError naming --workers and the most this machine takes (a process each, at hundreds of MB
    each, would exhaust the memory long before finishing)."""
    cores = usable_cores()
    on_cpu = torch.device(device).type == "cpu"
    most = cores if on_cpu else GPU_WORKERS_PER_CORE * cores
    if workers > most:
        where = (
            "one process per usable core on a CPU"
            if on_cpu
            else f"at most {GPU_WORKERS_PER_CORE} processes per usable core feeding a GPU"
        )
        raise ValueError(
            f"--workers {workers} is more than this machine runs side by side ({cores} usable "
            f"cores, {where}): give --workers {most} or fewer"
        )
    return workers


def side_by_side_workers(
    device: torch.device | str, jobs: int, accelerator: int = 1
) -> int:
    """How many processes to share `jobs` runs on `device`, never more than there are runs: one per
    usable core on a CPU; `accelerator` on a GPU, whose runs are queued on it (more than one where
    measured to pay: one small model leaves most of a GPU idle)."""
    if torch.device(device).type != "cpu":
        return max(1, min(accelerator, jobs))
    return max(1, min(usable_cores(), jobs))


def side_by_side(
    function: Callable,
    jobs: Sequence[dict],
    *,
    workers: int,
) -> Iterator:
    """`function(**job)` for each of `jobs`, yielded as each finishes.

    With `workers` <= 1 the runs go one after another in this process, with its threads, in the
    order given. Otherwise min(`workers`, len(`jobs`)) one-thread processes share them (a single
    run too, so that it computes as it would beside others) and the results come in the order they
    finish, so each should say which job it is. A run that raises stops the rest: the runs not yet
    started are cancelled, and its error reaches the caller.
    """
    if workers <= 1:
        for job in jobs:
            yield function(**job)
        return
    if not jobs:
        return
    with one_thread_pool(min(workers, len(jobs))) as pool:
        futures = [pool.submit(_call, function, job) for job in jobs]
        try:
            for future in as_completed(futures):
                yield future.result()
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            raise


class StartedEarly:
    """`side_by_side(function, jobs, workers=workers)` whose processes may start before the code
    that reads their results: `start()` submits every job at once to one-thread processes (at
    least one, since a run started early must not occupy the caller), and `results()` yields them
    as they finish. Not started, `results()` runs them then, exactly as `side_by_side` does (in
    this process, with its threads, when `workers` <= 1). A second `results()` yields the first
    one's results again instead of training anew (a notebook cell run twice).

    A run already going cannot be stopped from outside: `close()` (also called when the object is
    collected) cancels the jobs not yet started and lets the running ones finish, so a chapter that
    fails between `start()` and `results()` leaves at most its running jobs behind, for as long as
    each takes.
    """

    def __init__(self, function: Callable, jobs: Sequence[dict], *, workers: int):
        self.function, self.jobs, self.workers = function, list(jobs), workers
        self.started = False
        self._pool: ProcessPoolExecutor | None = None
        self._futures: list = []
        self._results: list | None = None
        self._closer = None

    def start(self) -> StartedEarly:
        if not self.started and self.jobs:
            pool = one_thread_pool(max(1, min(self.workers, len(self.jobs))))
            self._futures = [pool.submit(_call, self.function, job) for job in self.jobs]
            self._pool, self.started = pool, True
            self._closer = weakref.finalize(
                self, pool.shutdown, wait=False, cancel_futures=True
            )
        return self

    def close(self) -> None:
        if self._closer is not None:
            self._closer()  # runs once, however often called
        self._pool = None

    def results(self) -> Iterator:
        if self._results is not None:
            yield from self._results
            return
        got = []
        if self._pool is None:
            source = side_by_side(self.function, self.jobs, workers=self.workers)
        else:
            source = (future.result() for future in as_completed(self._futures))
        try:
            for result in source:
                got.append(result)
                yield result
        finally:
            self.close()
        self._results = got

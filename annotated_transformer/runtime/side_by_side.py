"""Independent runs side by side, in spawned processes of one thread each.

A model small enough for a chapter's side experiment (the copy task, a six-layer model of width 64)
gains little from a second thread in one process: on a 2-core CPU, 200 copy-task steps took about
the same time with one thread as with two. Two such runs in two one-thread processes therefore take
about the time of one. Chapters 04, 06 and 07 and the `table3` command share their runs this way.

Processes are spawned, never forked: a fork of a process that already holds torch's thread pool can
hang in the child. The function a job runs must be importable (a module's top-level function, not
one a notebook defines), because a spawned process finds it by name.
"""

from __future__ import annotations

import multiprocessing
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


def side_by_side_workers(device: torch.device | str, jobs: int) -> int:
    """How many processes to share `jobs` runs on `device`: one per core on a CPU, never more than
    there are runs; one on an accelerator, where the runs are better off queued on the device."""
    import os

    if torch.device(device).type != "cpu":
        return 1
    return max(1, min(os.cpu_count() or 1, jobs))


def side_by_side(
    function: Callable,
    jobs: Sequence[dict],
    *,
    workers: int,
) -> Iterator:
    """`function(**job)` for each of `jobs`, yielded as each finishes.

    With `workers` <= 1 the runs go one after another in this process, with its threads, in the
    order given. Otherwise `workers` one-thread processes
    share them and the results come in the order they finish, so each should say which job it is.
    """
    if workers <= 1 or len(jobs) <= 1:
        for job in jobs:
            yield function(**job)
        return
    with one_thread_pool(min(workers, len(jobs))) as pool:
        futures = [pool.submit(_call, function, job) for job in jobs]
        for future in as_completed(futures):
            yield future.result()

"""When a run stops, and when it saves: the limits, the time budget, Ctrl-C, and the ranks' agreement.

A run ends at whichever limit comes first (steps, epochs, minutes) or when asked to (Ctrl-C,
SIGTERM, `Trainer.request_stop`). Steps and epochs are the same on every rank; a signal or the
clock may reach one rank before the others, so under DDP the ranks agree on those through an
all-reduce before any of them stops or writes a snapshot: a rank that left alone would leave the
others waiting at the next collective forever.
"""

from __future__ import annotations

import signal
import threading
import time
from typing import TYPE_CHECKING

import torch

from ..runtime.distributed import DistributedContext, max_over_ranks
from .settings import TrainSettings

if TYPE_CHECKING:
    from .resume_state import TrainingProgress

# steps between the ranks' agreement on Ctrl-C / time limits under DDP
STOP_CHECK_EVERY = 10


class StopRequest:
    """Ctrl-C or SIGTERM set a flag the loop checks after each step; a second Ctrl-C aborts at once."""

    def __init__(self):
        self.requested = False
        self.reason = ""
        self._previous: dict = {}

    def _handle(self, signum, frame):
        if self.requested and signum == signal.SIGINT:
            raise KeyboardInterrupt
        self.requested = True
        self.reason = signal.Signals(signum).name

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc):
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        # the request ended this run; the trainer's next `train()` (a notebook cell run again)
        # starts without one, and its first Ctrl-C asks again instead of aborting
        self.requested = False
        return False


class InvocationClock:
    """Adds this invocation's time to the run's, so a resumed run's budget counts every
    invocation that trained it.

    Wall time, and this process's CPU time divided by its threads (the `cpu` budget clock, which
    other programs on the machine do not slow down).
    """

    def __init__(self, progress: TrainingProgress):
        self.wall_start, self.cpu_start = time.perf_counter(), time.process_time()
        self.wall_before, self.cpu_before = progress.train_time_s, progress.train_cpu_s
        self.threads = max(1, torch.get_num_threads())

    def tick(self, progress: TrainingProgress) -> None:
        progress.train_time_s = self.wall_before + (time.perf_counter() - self.wall_start)
        progress.train_cpu_s = (
            self.cpu_before + (time.process_time() - self.cpu_start) / self.threads
        )


# A training process alone on a CPU keeps its threads busy about 97-99% of the wall time (the `cpu`
# profile's committed runs); below this share other processes (or a CPU quota, or more threads than
# usable cores) held it back.
CONTENDED_BELOW = 0.8


def cpu_share(train_time_s: float, train_cpu_s: float, device) -> float | None:
    """The share of the wall time the training threads ran (CPU time per thread over wall time, to
    3 decimals), on a CPU; None on a GPU, where waiting on the device spins a core and the share
    says nothing."""
    if torch.device(device).type != "cpu" or train_time_s <= 0:
        return None
    return round(train_cpu_s / train_time_s, 3)


def contention_note(share: float | None, stopped_by: str) -> str | None:
    """One line when other processes took the cores from the training threads, naming what it cost
    a run stopped by its (wall-clock) time budget; None when the run had the machine to itself."""
    if share is None or share >= CONTENDED_BELOW:
        return None
    note = (
        f"the training threads ran only {share:.0%} of the wall time: other processes used the "
        "cores (or a CPU quota held them back)"
    )
    if stopped_by == "time_budget":
        note += (
            ", so this time-budgeted run trained fewer steps than the machine affords alone "
            "(run it on a quiet machine, or with --budget-clock cpu)"
        )
    return note


def budget_seconds_used(settings: TrainSettings, progress: TrainingProgress) -> float:
    """Seconds spent so far on the settings' budget clock (wall, or CPU time per thread)."""
    return (
        progress.train_cpu_s if settings.budget_clock == "cpu" else progress.train_time_s
    )


def limit_reached(settings: TrainSettings, progress: TrainingProgress) -> str | None:
    """The first limit the run has reached ("max_steps", "max_epochs", "time_budget"), if any."""
    r, p = settings, progress
    if r.max_steps is not None and p.step >= r.max_steps:
        return "max_steps"
    if r.max_epochs is not None and p.epoch >= r.max_epochs:
        return "max_epochs"
    if (
        r.time_budget_minutes is not None
        and budget_seconds_used(r, p) >= 60.0 * r.time_budget_minutes
    ):
        return "time_budget"
    return None


def stop_decision(
    settings: TrainSettings,
    progress: TrainingProgress,
    stop: StopRequest,
    context: DistributedContext,
) -> str | None:
    """Why to stop after this step, if at all; the same answer on every rank.

    Step and epoch limits are the same everywhere; a signal or the clock may reach one rank first, so
    ranks agree on those through an all-reduce, every step in one process and every
    `STOP_CHECK_EVERY` steps with DDP (a GPU sync per step would cost more than a few extra steps).
    """
    limit = limit_reached(settings, progress)
    if limit in ("max_steps", "max_epochs"):
        return limit
    if context.is_distributed and progress.step % STOP_CHECK_EVERY:
        return None
    urgency = max_over_ranks(
        2 if stop.requested else 1 if limit == "time_budget" else 0, context
    )
    return {2: "interrupted", 1: "time_budget"}.get(urgency)


def snapshot_due(
    settings: TrainSettings, progress: TrainingProgress, context: DistributedContext
) -> bool:
    """A snapshot every save_every_steps steps or save_every_minutes minutes (ranks agree on the clock)."""
    r, p = settings, progress
    by_steps = bool(r.save_every_steps) and p.step % r.save_every_steps == 0
    by_time = (
        bool(r.save_every_minutes)
        and budget_seconds_used(r, p) - p.last_snapshot_time_s
        >= 60.0 * r.save_every_minutes
    )
    # rank 0 writes, then all ranks meet at a barrier: all must decide alike
    if context.is_distributed:
        by_time = p.step % STOP_CHECK_EVERY == 0 and bool(
            max_over_ranks(int(by_time), context)
        )
    return by_steps or by_time

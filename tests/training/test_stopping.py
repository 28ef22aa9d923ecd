"""When a run stops and when it saves: each limit, Ctrl-C and SIGTERM as a request, each
invocation's time added to the run's, and ranks that decide together."""

import os
import signal
import threading
import types

import pytest
import torch

from annotated_transformer.runtime.distributed import DistributedContext
from annotated_transformer.training import stopping
from annotated_transformer.training.resume_state import TrainingProgress
from annotated_transformer.training.settings import TrainSettings
from annotated_transformer.training.stopping import (
    STOP_CHECK_EVERY,
    InvocationClock,
    StopRequest,
    budget_seconds_used,
    limit_reached,
    snapshot_due,
    stop_decision,
)

ONE = DistributedContext()
TWO_RANKS = DistributedContext(rank=0, world_size=2)


@pytest.fixture
def other_rank(monkeypatch):
    """The value the other rank brings to `max_over_ranks` (set `.value`); records the calls."""
    state = types.SimpleNamespace(value=0, calls=[])

    def max_over_ranks(value, context):
        assert context.is_distributed
        state.calls.append(value)
        return max(value, state.value)

    monkeypatch.setattr(stopping, "max_over_ranks", max_over_ranks)
    return state


# ------------------------------------------------------------------------------------------ signals
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_becomes_a_stop_request_and_the_old_handler_comes_back(signum):
    before = signal.getsignal(signum)
    with StopRequest() as stop:
        assert not stop.requested
        os.kill(os.getpid(), signum)
        assert stop.requested and stop.reason == signal.Signals(signum).name
    assert signal.getsignal(signum) is before


def test_a_second_ctrl_c_aborts_at_once():
    with StopRequest() as stop:
        os.kill(os.getpid(), signal.SIGINT)
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
        assert stop.requested


def test_a_request_ends_with_its_run_and_the_next_run_starts_without_one():
    stop = StopRequest()
    with stop:
        os.kill(os.getpid(), signal.SIGINT)
    assert (
        not stop.requested and stop.reason == "SIGINT"
    )  # the reason stays for the record
    with stop:  # a notebook cell run again: its first Ctrl-C asks, it does not abort
        os.kill(os.getpid(), signal.SIGINT)
        assert stop.requested


def test_a_second_sigterm_is_still_only_a_request():
    with StopRequest() as stop:
        os.kill(os.getpid(), signal.SIGTERM)
        os.kill(os.getpid(), signal.SIGTERM)
        assert stop.requested and stop.reason == "SIGTERM"


def test_the_handlers_come_back_after_an_exception():
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(RuntimeError):
        with StopRequest():
            raise RuntimeError("a failing step")
    assert signal.getsignal(signal.SIGINT) is before


def test_outside_the_main_thread_no_handler_is_installed():
    """Python lets only the main thread set handlers: a run in another thread keeps them as they are."""
    before = signal.getsignal(signal.SIGINT)
    seen = []

    def run():
        with StopRequest() as stop:
            seen.append((signal.getsignal(signal.SIGINT), stop.requested))

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    assert seen == [(before, False)]


# ------------------------------------------------------------------------------------------ limits
def test_no_limit_is_reached_before_its_value():
    settings = TrainSettings(max_steps=10, max_epochs=2, time_budget_minutes=1.0)
    progress = TrainingProgress(step=9, epoch=1, train_time_s=59.9)
    assert limit_reached(settings, progress) is None


@pytest.mark.parametrize(
    "settings,progress,limit",
    [
        (TrainSettings(max_steps=10), TrainingProgress(step=10), "max_steps"),
        (TrainSettings(max_steps=10), TrainingProgress(step=11), "max_steps"),
        (TrainSettings(max_epochs=2), TrainingProgress(epoch=2), "max_epochs"),
        (
            TrainSettings(time_budget_minutes=1.0),
            TrainingProgress(train_time_s=60.0),
            "time_budget",
        ),
        (
            TrainSettings(time_budget_minutes=1.0, budget_clock="cpu"),
            TrainingProgress(train_time_s=0.0, train_cpu_s=60.0),
            "time_budget",
        ),
    ],
)
def test_each_limit_is_reached_at_its_value(settings, progress, limit):
    assert limit_reached(settings, progress) == limit


def test_the_budget_reads_the_settings_clock():
    progress = TrainingProgress(train_time_s=100.0, train_cpu_s=30.0)
    wall = TrainSettings(time_budget_minutes=1.0)
    cpu = wall.replace(budget_clock="cpu")
    assert budget_seconds_used(wall, progress) == 100.0
    assert budget_seconds_used(cpu, progress) == 30.0
    assert limit_reached(wall, progress) == "time_budget"
    assert limit_reached(cpu, progress) is None  # a busy machine does not shorten it


def test_the_first_limit_in_order_is_named_when_several_are_reached():
    settings = TrainSettings(max_steps=1, max_epochs=1, time_budget_minutes=1.0)
    progress = TrainingProgress(step=5, epoch=5, train_time_s=600.0)
    assert limit_reached(settings, progress) == "max_steps"
    assert limit_reached(settings.replace(max_steps=None), progress) == "max_epochs"


# ------------------------------------------------------------------------------------------ decisions
def test_one_process_decides_every_step():
    settings = TrainSettings(max_steps=100, time_budget_minutes=1.0)
    stop = StopRequest()
    assert stop_decision(settings, TrainingProgress(step=3), stop, ONE) is None
    assert (
        stop_decision(settings, TrainingProgress(step=3, train_time_s=61.0), stop, ONE)
        == "time_budget"
    )
    stop.requested = True
    assert stop_decision(settings, TrainingProgress(step=3), stop, ONE) == "interrupted"
    # a request outranks the clock: the run saves and says it was interrupted
    assert (
        stop_decision(settings, TrainingProgress(step=3, train_time_s=61.0), stop, ONE)
        == "interrupted"
    )
    assert stop_decision(settings, TrainingProgress(step=100), stop, ONE) == "max_steps"


def test_ranks_stop_at_step_and_epoch_limits_without_a_collective(other_rank):
    settings = TrainSettings(max_steps=13, max_epochs=1)
    stop = StopRequest()
    assert (
        stop_decision(settings, TrainingProgress(step=13), stop, TWO_RANKS) == "max_steps"
    )
    assert (
        stop_decision(settings, TrainingProgress(step=3, epoch=1), stop, TWO_RANKS)
        == "max_epochs"
    )
    assert other_rank.calls == []


def test_ranks_agree_on_requests_only_every_stop_check(other_rank):
    settings = TrainSettings(max_steps=1000)
    stop = StopRequest()
    stop.requested = True
    for step in range(1, STOP_CHECK_EVERY):
        assert (
            stop_decision(settings, TrainingProgress(step=step), stop, TWO_RANKS) is None
        )
    assert other_rank.calls == []
    progress = TrainingProgress(step=STOP_CHECK_EVERY)
    assert stop_decision(settings, progress, stop, TWO_RANKS) == "interrupted"
    assert other_rank.calls == [2]


@pytest.mark.parametrize(
    "theirs,decision", [(0, None), (1, "time_budget"), (2, "interrupted")]
)
def test_another_ranks_signal_or_clock_stops_this_rank_too(other_rank, theirs, decision):
    other_rank.value = theirs
    settings = TrainSettings(max_steps=1000, time_budget_minutes=1.0)
    progress = TrainingProgress(step=2 * STOP_CHECK_EVERY)
    assert stop_decision(settings, progress, StopRequest(), TWO_RANKS) == decision
    assert other_rank.calls == [0]


# ------------------------------------------------------------------------------------------ snapshots
def test_snapshots_fall_due_every_save_every_steps():
    settings = TrainSettings(max_steps=100, save_every_steps=4)
    due = [
        s for s in range(1, 17) if snapshot_due(settings, TrainingProgress(step=s), ONE)
    ]
    assert due == [4, 8, 12, 16]
    never = settings.replace(save_every_steps=None)
    assert not any(
        snapshot_due(never, TrainingProgress(step=s), ONE) for s in range(1, 17)
    )


def test_snapshots_fall_due_every_save_every_minutes_since_the_last_one():
    settings = TrainSettings(max_steps=100, save_every_minutes=1.0)
    since = dict(step=3, last_snapshot_time_s=100.0)
    assert not snapshot_due(settings, TrainingProgress(train_time_s=159.0, **since), ONE)
    assert snapshot_due(settings, TrainingProgress(train_time_s=160.0, **since), ONE)
    cpu = settings.replace(budget_clock="cpu")
    assert not snapshot_due(
        cpu, TrainingProgress(train_time_s=500.0, train_cpu_s=120.0, **since), ONE
    )


def test_ranks_save_by_the_clock_only_together_every_stop_check(other_rank):
    settings = TrainSettings(max_steps=100, save_every_minutes=1.0)
    late = dict(train_time_s=600.0)
    assert not snapshot_due(settings, TrainingProgress(step=3, **late), TWO_RANKS)
    assert snapshot_due(
        settings, TrainingProgress(step=STOP_CHECK_EVERY, **late), TWO_RANKS
    )
    # this rank's clock has not got there, the other's has
    other_rank.value = 1
    assert snapshot_due(settings, TrainingProgress(step=STOP_CHECK_EVERY), TWO_RANKS)


# ------------------------------------------------------------------------------------------ clock
def test_the_invocation_clock_adds_this_invocations_time_to_the_runs(monkeypatch):
    now = types.SimpleNamespace(wall=1000.0, cpu=50.0)
    monkeypatch.setattr(
        stopping,
        "time",
        types.SimpleNamespace(
            perf_counter=lambda: now.wall, process_time=lambda: now.cpu
        ),
    )
    progress = TrainingProgress(train_time_s=300.0, train_cpu_s=40.0)
    clock = InvocationClock(progress)
    now.wall, now.cpu = 1012.0, 50.0 + 8.0 * clock.threads
    clock.tick(progress)
    assert progress.train_time_s == pytest.approx(312.0)
    assert progress.train_cpu_s == pytest.approx(48.0)  # CPU seconds per thread
    assert clock.threads == max(1, torch.get_num_threads())


def test_a_run_that_shared_its_cores_says_so_and_what_it_cost():
    from annotated_transformer.training.stopping import contention_note, cpu_share

    alone = cpu_share(900.0, 892.3, "cpu")  # the cpu book's published run
    assert alone == pytest.approx(0.991, abs=1e-3)
    assert contention_note(alone, "time_budget") is None
    starved = cpu_share(900.0, 300.0, "cpu")
    note = contention_note(starved, "time_budget")
    assert "33% of the wall time" in note and "fewer steps" in note
    assert "fewer steps" not in contention_note(starved, "max_epochs")
    # on a GPU the share says nothing: waiting on the device spins a core
    assert cpu_share(900.0, 300.0, "cuda") is None
    assert contention_note(None, "time_budget") is None

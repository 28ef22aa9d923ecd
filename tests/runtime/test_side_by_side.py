"""Runs side by side in one-thread processes: the same results as one after another, one thread
each, and a failure that reaches the caller."""

import numpy as np
import pytest
import torch

from annotated_transformer.chapters.training import warmup
from annotated_transformer.chapters.training.copy_task import train_copy_task
from annotated_transformer.data.batching import EncodedPairs
from annotated_transformer.runtime.side_by_side import side_by_side, side_by_side_workers


def test_each_process_has_one_thread_and_one_after_another_keeps_ours():
    assert list(side_by_side(torch.get_num_threads, [{}, {}], workers=2)) == [1, 1]
    here = torch.get_num_threads()
    assert list(side_by_side(torch.get_num_threads, [{}, {}], workers=1)) == [here] * 2


def test_workers_are_one_per_usable_core_on_a_cpu_and_as_asked_on_an_accelerator(
    monkeypatch,
):
    monkeypatch.setattr("os.cpu_count", lambda: 64)  # the machine's, not this process's
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0, 1}, raising=False)
    assert side_by_side_workers("cpu", 4) == 2
    assert side_by_side_workers(torch.device("cpu"), 1) == 1
    assert side_by_side_workers("cuda", 4) == 1
    # on a GPU, as many as the caller measured to pay, never more than the runs
    assert side_by_side_workers("cuda", 9, accelerator=4) == 4
    assert side_by_side_workers("cuda", 3, accelerator=4) == 3
    assert side_by_side_workers("cpu", 9, accelerator=4) == 2
    monkeypatch.delattr("os.sched_getaffinity", raising=False)
    assert side_by_side_workers("cpu", 4) == 4
    monkeypatch.setattr("os.cpu_count", lambda: None)
    assert side_by_side_workers("cpu", 4) == 1


def test_a_single_run_given_workers_still_gets_a_one_thread_process():
    assert list(side_by_side(torch.get_num_threads, [{}], workers=2)) == [1]
    assert list(side_by_side(torch.get_num_threads, [], workers=2)) == []


@pytest.fixture
def one_thread():
    """Adam turns a reordered sum into a visible change of a near-zero weight, so runs compare
    exactly only at the same thread count: here, one, as in each side-by-side process."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_copy_runs_side_by_side_equal_the_runs_one_after_another(one_thread):
    jobs = [
        dict(steps=12, batch_size=8, seed=3, verbose=False, positional=p)
        for p in ("sinusoidal", "learned")
    ]
    alone = {r["positional"]: r for r in side_by_side(train_copy_task, jobs, workers=1)}
    apart = {r["positional"]: r for r in side_by_side(train_copy_task, jobs, workers=2)}
    assert set(apart) == {"sinusoidal", "learned"}
    for name, run in alone.items():
        assert run["accuracy"] == apart[name]["accuracy"]
        mine, theirs = run["model"].state_dict(), apart[name]["model"].state_dict()
        assert mine.keys() == theirs.keys()
        for key in mine:
            assert torch.equal(mine[key], theirs[key]), (name, key)
    assert apart["learned"]["model"].config.positional == "learned"


def test_a_failing_run_raises_in_the_caller():
    jobs = [dict(steps=1, verbose=False, positional=p) for p in ("sinusoidal", "rotary")]
    with pytest.raises(ValueError, match="positional"):
        list(side_by_side(train_copy_task, jobs, workers=2))


def test_the_norm_runs_side_by_side_keep_the_order_and_the_losses(one_thread):
    rng = np.random.default_rng(0)
    lengths = rng.integers(3, 12, size=(64, 2))
    src = [rng.integers(4, 40, size=n).tolist() for n in lengths[:, 0]]
    tgt = [rng.integers(4, 40, size=n).tolist() for n in lengths[:, 1]]
    setup = warmup.NormSetup(layers=2, width=16, warmup=3, batch_tokens=64)
    experiment = warmup.NormExperiment(
        EncodedPairs(src, tgt), 40, setup, 0, torch.device("cpu"), (0.9, 0.98), 1e-9
    )

    def runs(workers: int):
        jobs = warmup.warmup_jobs(experiment, 6, progress=False)
        return warmup.log_frame(side_by_side(warmup.warmup_run, jobs, workers=workers), 6)

    alone, apart = runs(1), runs(2)
    names = [warmup.run_name(n, w) for n, w in warmup.RUN_ORDER]
    assert list(apart.run.unique()) == names == list(alone.run.unique())
    np.testing.assert_array_equal(apart.nll, alone.nll)

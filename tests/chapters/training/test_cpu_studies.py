"""Chapter 04's CPU studies compute the same whether they start early (a GPU machine) or in their
own sections (a CPU), and start early only when asked."""

import dataclasses

import pandas as pd
import pytest

from annotated_transformer.chapters.training import cpu_studies, warmup
from annotated_transformer.chapters.training import sizes as training_sizes
from annotated_transformer.chapters.training.cpu_studies import (
    CpuStudies,
    copy_jobs,
)
from annotated_transformer.profiles import get_profile
from annotated_transformer.runtime import side_by_side
from annotated_transformer.runtime.side_by_side import StartedEarly
from tests.support.training import VOCAB, copy_pairs

SMOKE = get_profile("smoke")
SIZES = dataclasses.replace(training_sizes.of(SMOKE.name), copy_steps=30, norm_steps=6)


def _run(early: bool) -> tuple[dict, pd.DataFrame, bool, bool]:
    studies = CpuStudies(SIZES, 0, early=early)
    assert studies.early == early
    copy_started = studies._copy.started
    studies.prepare_norm_study(copy_pairs(40, 0), VOCAB, SMOKE)
    norm_started = studies._norm.started
    return studies.copy_task(), studies.norm_study(), copy_started, norm_started


@pytest.mark.slow
def test_started_early_or_late_the_studies_compute_the_same(monkeypatch):
    monkeypatch.setattr(cpu_studies, "usable_cores", lambda: 16)  # a GPU machine's host
    early_copy, early_norm, *early_started = _run(early=True)
    late_copy, late_norm, *late_started = _run(early=False)
    assert early_started == [True, True] and late_started == [False, False]
    assert set(early_copy) == set(late_copy) == {"sinusoidal", "learned"}
    for positional, run in early_copy.items():
        assert run["history"] == late_copy[positional]["history"]
        assert run["accuracy"] == late_copy[positional]["accuracy"]
    pd.testing.assert_frame_equal(early_norm, late_norm)
    assert list(early_norm.run.unique()) == [
        warmup.run_name(n, w) for n, w in warmup.RUN_ORDER
    ]
    assert (early_norm.groupby("run").step.max() == SIZES.norm_steps).all()


def test_early_only_with_a_core_for_every_run_and_one_for_the_chapter(monkeypatch):
    for cores, early in ((2, False), (6, False), (7, True)):
        monkeypatch.setattr(cpu_studies, "usable_cores", lambda c=cores: c)
        monkeypatch.setattr(side_by_side, "usable_cores", lambda c=cores: c)
        studies = CpuStudies(SIZES, 0, early=True)
        assert studies.early is early and studies._copy.started is early, cores
        studies._copy.close()
    assert CpuStudies(SIZES, 0, early=False).early is False


def test_the_copy_jobs_are_the_two_positionals_at_the_chapters_sizes():
    jobs = copy_jobs(SIZES, 3)
    assert [j["positional"] for j in jobs] == ["sinusoidal", "learned"]
    assert all(j["length"] == (1, SIZES.copy_length) and j["seed"] == 3 for j in jobs)


def test_the_norm_study_needs_its_pairs_first():
    with pytest.raises(RuntimeError, match="prepare_norm_study first"):
        CpuStudies(SIZES, 0, early=False).norm_study()


def _square(x: int) -> int:
    return x * x


def test_started_early_yields_every_result_and_runs_in_place_when_not_started():
    jobs = [dict(x=i) for i in range(5)]
    early = StartedEarly(_square, jobs, workers=2).start()
    assert early.started
    assert sorted(early.results()) == [0, 1, 4, 9, 16]
    assert sorted(early.results()) == [0, 1, 4, 9, 16]  # again, not computed anew
    late = StartedEarly(_square, jobs, workers=1)
    assert not late.started
    assert list(late.results()) == [0, 1, 4, 9, 16]  # in this process, in order


def _count(x: int, calls: list) -> int:
    calls.append(x)
    return x


def test_a_second_results_call_computes_nothing_again():
    calls = []
    late = StartedEarly(
        _count, [dict(x=1, calls=calls), dict(x=2, calls=calls)], workers=1
    )
    assert list(late.results()) == list(late.results()) == [1, 2]
    assert calls == [1, 2]

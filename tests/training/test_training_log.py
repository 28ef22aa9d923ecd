"""metrics.jsonl: one JSON record a line, written by rank 0 alone; a `train` record is the mean over
the target tokens of the steps since the last one, summed over ranks."""

import json
import math

import pytest
import torch

from annotated_transformer.runtime.distributed import DistributedContext
from annotated_transformer.runtime.progress import BOOK_BUILD_ENV
from annotated_transformer.training import step_stats
from annotated_transformer.training.resume_state import TrainingProgress
from annotated_transformer.training.settings import TrainSettings
from annotated_transformer.training.step_stats import StepStats
from annotated_transformer.training.training_log import TrainingLog, read_metrics

SETTINGS = TrainSettings(name="t", max_steps=10)


def step(loss: float, nll: float, tokens: int) -> StepStats:
    stats = StepStats.zeros("cpu")
    stats.add_micro_batch(torch.tensor(loss), torch.tensor(nll), torch.tensor(tokens))
    return stats


def opened(out_dir, context=DistributedContext(), progress=None, **kwargs) -> TrainingLog:
    log = TrainingLog(out_dir, SETTINGS, context, show_progress=False, **kwargs)
    log.open(progress or TrainingProgress())
    return log


def test_records_are_json_lines_in_order_and_the_folder_is_made(tmp_path):
    log = TrainingLog(
        tmp_path / "new", SETTINGS, DistributedContext(), show_progress=False
    )
    log.write({"kind": "start", "step": 0})
    log.write({"kind": "stop", "step": 3, "note": "ü"})
    lines = (tmp_path / "new" / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == read_metrics(tmp_path / "new")
    assert read_metrics(tmp_path / "new") == [
        {"kind": "start", "step": 0},
        {"kind": "stop", "step": 3, "note": "ü"},
    ]


def test_a_value_that_is_not_finite_is_written_as_null_and_the_log_reads_back(tmp_path):
    log = TrainingLog(tmp_path, SETTINGS, DistributedContext(), show_progress=False)
    log.write({"kind": "diverged", "step": 4, "loss": float("nan"), "ppl": math.inf})
    assert "NaN" not in (tmp_path / "metrics.jsonl").read_text()
    assert read_metrics(tmp_path) == [
        {"kind": "diverged", "step": 4, "loss": None, "ppl": None}
    ]


def test_only_rank_0_writes(tmp_path):
    other = DistributedContext(rank=1, world_size=2)
    TrainingLog(tmp_path, SETTINGS, other, show_progress=False).write({"kind": "start"})
    assert not (tmp_path / "metrics.jsonl").exists()
    assert read_metrics(tmp_path) == []


def test_read_metrics_skips_blank_lines(tmp_path):
    (tmp_path / "metrics.jsonl").write_text('{"kind": "a"}\n\n  \n{"kind": "b"}\n')
    assert [r["kind"] for r in read_metrics(tmp_path)] == ["a", "b"]


def test_a_report_averages_over_tokens_not_over_steps(tmp_path):
    log, progress = opened(tmp_path), TrainingProgress(step=2, epoch=1, target_tokens=100)
    log.add(step(loss=10.0, nll=8.0, tokens=10))  # 1.0 a token
    log.add(step(loss=90.0, nll=72.0, tokens=30))  # 3.0 a token
    log.report(progress, lr=1e-3)
    (record,) = read_metrics(tmp_path)
    assert record["kind"] == "train" and (record["step"], record["epoch"]) == (2, 1)
    assert record["loss"] == pytest.approx(100.0 / 40)  # not (1 + 3) / 2
    assert record["nll"] == pytest.approx(80.0 / 40)
    assert record["ppl"] == pytest.approx(math.exp(2.0))
    assert record["lr"] == 1e-3
    assert record["target_tokens"] == progress.target_tokens == 140
    assert record["target_tokens_per_s"] > 0


def test_each_report_counts_only_the_steps_since_the_last(tmp_path):
    log, progress = opened(tmp_path), TrainingProgress()
    log.add(step(10.0, 10.0, 10))
    log.report(progress, lr=1.0)
    log.add(step(6.0, 3.0, 2))
    log.report(progress, lr=1.0)
    first, second = read_metrics(tmp_path)
    assert (first["loss"], second["loss"]) == (1.0, 3.0)
    assert (first["target_tokens"], second["target_tokens"]) == (10, 12)


def test_the_mean_is_over_every_ranks_tokens_and_written_once(tmp_path, monkeypatch):
    """Rank 1 trained 30 tokens at loss 3 a token, this rank 10 at loss 1."""

    def with_rank_1(tensor, context):
        return tensor.add_(torch.tensor([90.0, 90.0, 30.0], dtype=torch.float64))

    monkeypatch.setattr(step_stats, "all_reduce_sum", with_rank_1)
    for rank in (0, 1):
        progress = TrainingProgress()
        log = opened(tmp_path, DistributedContext(rank=rank, world_size=2))
        log.add(step(10.0, 10.0, 10))
        log.report(progress, lr=1.0)
        assert (
            progress.target_tokens == 40
        )  # every rank counts the global batches' tokens
    (record,) = read_metrics(tmp_path)
    assert record["loss"] == pytest.approx(2.5) and record["target_tokens"] == 40


def test_perplexity_stays_finite_for_a_huge_loss(tmp_path):
    log = opened(tmp_path)
    log.add(step(1e6, 1e6, 1))
    log.report(TrainingProgress(), lr=1.0)
    assert read_metrics(tmp_path)[0]["ppl"] == pytest.approx(math.exp(50.0))


def test_close_reports_the_steps_not_reported_yet_and_nothing_else(tmp_path):
    log, progress = opened(tmp_path), TrainingProgress(step=5)
    log.add(step(4.0, 2.0, 2))
    log.close(progress, lr=1.0)
    log.close(progress, lr=1.0)
    assert [(r["kind"], r["loss"]) for r in read_metrics(tmp_path)] == [("train", 2.0)]


def test_diverged_and_stop_records(tmp_path):
    log = opened(tmp_path)
    log.diverged(7, "training diverged at step 7")
    progress = TrainingProgress(step=7, train_time_s=12.3456)
    log.finish(progress, "interrupted", {}, "SIGINT")
    assert read_metrics(tmp_path) == [
        {"kind": "diverged", "step": 7, "message": "training diverged at step 7"},
        {
            "kind": "stop",
            "step": 7,
            "stopped_by": "interrupted",
            "train_time_s": 12.35,
            "reason": "SIGINT",
        },
    ]


def test_the_bar_starts_at_the_runs_step_and_moves_one_a_step(tmp_path, monkeypatch):
    monkeypatch.delenv(BOOK_BUILD_ENV, raising=False)  # an executed page draws no bar
    log = TrainingLog(tmp_path, SETTINGS, DistributedContext(), show_progress=True)
    log.open(TrainingProgress(step=4))
    assert log.bar.n == 4 and log.bar.total == SETTINGS.max_steps
    log.add(step(1.0, 1.0, 1))
    log.tick()
    log.report(TrainingProgress(step=6), lr=1.0)
    assert log.bar.n == 6
    log.close(TrainingProgress(step=6), lr=1.0)


def test_no_bar_on_other_ranks_or_when_not_asked(tmp_path):
    for context, show in [
        (DistributedContext(rank=1, world_size=2), True),
        (DistributedContext(), False),
    ]:
        log = TrainingLog(tmp_path, SETTINGS, context, show_progress=show)
        log.open(TrainingProgress())
        assert log.bar is None

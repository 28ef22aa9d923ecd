"""Tiny end-to-end training that must learn: the copy task through the package's own pieces."""

import pytest

from annotated_transformer.chapters.training.copy_task import train_copy_task
from annotated_transformer.model import preset
from annotated_transformer.training.schedule import noam_lr


@pytest.mark.slow  # 1,600 training steps: a minute and a half on 2 idle cores
def test_copy_task_learns_to_copy():
    result = train_copy_task("copy", steps=1600, verbose=False)
    # 1,000 held-out sequences of 1-10 symbols; a model that had not learned would score ~0.
    assert result["accuracy"] >= 0.99, result["accuracy"]
    losses = [h["loss"] for h in result["history"]]
    assert losses[-1] < losses[0]


def test_the_logged_rate_is_the_one_the_logged_step_used():
    result = train_copy_task("copy", steps=4, log_every=1, verbose=False)
    # the tiny model's width and the task's 200 warm-up steps; the first step's rate is the
    # schedule's at k = 1 (the log named the next step's before)
    d_model = preset("tiny").d_model
    assert [r["step"] for r in result["history"]] == [1, 2, 3, 4]
    for record in result["history"]:
        assert record["lr"] == pytest.approx(
            noam_lr(record["step"], d_model, 200), rel=1e-12
        )


def test_the_history_starts_at_step_one_and_then_averages_each_window():
    result = train_copy_task("copy", steps=7, log_every=3, verbose=False)
    history = result["history"]
    # windows of log_every steps ending at its multiples, step 1 inside the first as well
    assert [(r["step"], r["steps"]) for r in history] == [(1, 1), (3, 3), (6, 3), (7, 1)]
    # the untrained model's loss is about a uniform guess over the 14 symbols, ln 14 = 2.64
    assert 2.0 < history[0]["loss"] < 3.5
    # a window's loss is the mean of its steps': logged one by one they average to it
    each = train_copy_task("copy", steps=7, log_every=1, verbose=False)["history"]
    losses = [r["loss"] for r in each]
    assert history[2]["loss"] == pytest.approx(sum(losses[3:6]) / 3, rel=1e-12)
    assert history[1]["loss"] == pytest.approx(sum(losses[0:3]) / 3, rel=1e-12)
    assert history[0]["loss"] == losses[0]


@pytest.mark.parametrize("vocab, epsilon", [(14, 0.1), (40, 0.2), (14, 0.0)])
def test_the_loss_floor_is_the_smoothed_losss_minimum(vocab, epsilon):
    import torch

    from annotated_transformer.chapters.training.tables import (
        smoothed_loss_floor,
    )
    from annotated_transformer.training.loss import label_smoothed_cross_entropy

    floor = smoothed_loss_floor(vocab, epsilon)
    target = torch.tensor([4, 5, 9, 13])
    # the optimum: the smoothed target itself as the model's distribution
    best = torch.full((4, vocab), epsilon / vocab, dtype=torch.float64)
    best[torch.arange(4), target] += 1 - epsilon
    if epsilon:
        at_best = label_smoothed_cross_entropy(best.log(), target, epsilon, pad_id=0)
        assert at_best.loss.item() / 4 == pytest.approx(floor, rel=1e-9)
    else:
        assert floor == 0.0
    # another distribution loses more
    draw = torch.Generator().manual_seed(0)
    other = torch.randn(4, vocab, dtype=torch.float64, generator=draw)
    above = label_smoothed_cross_entropy(other, target, epsilon, pad_id=0)
    assert above.loss.item() / 4 > floor

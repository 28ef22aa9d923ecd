"""A loss or weights that are no longer finite are noticed, by every rank alike, and the message
says what was kept and what to change."""

import math

import pytest
import torch

from annotated_transformer.runtime.distributed import DistributedContext
from annotated_transformer.training import divergence
from annotated_transformer.training.divergence import (
    describe_loss,
    loss_diverged,
    loss_limit,
    message,
    weights_are_finite,
)
from annotated_transformer.training.step_stats import StepStats
from annotated_transformer.training.stopping import STOP_CHECK_EVERY

CPU, GPU = torch.device("cpu"), torch.device("cuda")  # only the type is read
ONE = DistributedContext()


def stats(loss: float, nll: float = 1.0, tokens: int = 3) -> StepStats:
    result = StepStats.zeros("cpu")
    result.add_micro_batch(torch.tensor(loss), torch.tensor(nll), torch.tensor(tokens))
    return result


@pytest.mark.parametrize(
    "loss,nll", [(float("nan"), 1.0), (float("inf"), 1.0), (1.0, float("-inf"))]
)
def test_a_loss_that_is_not_finite_diverged_at_every_step_on_a_cpu(loss, nll):
    for step in range(1, STOP_CHECK_EVERY + 2):
        assert loss_diverged(stats(loss, nll), step, CPU, ONE)


def test_a_finite_loss_did_not_diverge_however_large():
    for loss in (0.0, 1e-30, 3.5, 3e38):  # 3e38: near float32's largest
        assert not loss_diverged(stats(loss), 1, CPU, ONE)


def test_the_limit_is_twice_a_uniform_guess_plus_the_smoothed_targets_entropy():
    """A uniform guess scores ln V at any smoothing; the smoothing's floor is what a perfect model
    still pays, so the limit sits well above anything a learning run reaches."""
    assert loss_limit(37000, 0.0) == pytest.approx(2 * math.log(37000))
    floor = -(0.9 + 0.1 / 4) * math.log(0.9 + 0.1 / 4) - 0.3 / 4 * math.log(0.1 / 4)
    assert loss_limit(4, 0.1) == pytest.approx(2 * math.log(4) + floor)
    assert 22 < loss_limit(37000, 0.1) < 23  # the paper's vocabulary: about 22.4 nats


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_a_finite_loss_far_above_a_uniform_guess_diverged(dtype):
    """A run at --lr 1e4 in bf16 reaches 3e9 nats a token, finite in bf16's range."""
    limit = loss_limit(37000, 0.1)
    huge = float(torch.tensor(3e9 * 1000, dtype=dtype))  # as the step's sums hold it
    assert loss_diverged(stats(huge, 1e6, tokens=1000), 1, CPU, ONE, limit)
    assert "3e+09 nats a token, above the limit of 22.4" in describe_loss(
        stats(3e12, 1e6, tokens=1000), limit
    )
    # a fresh model's loss (about ln V) and a bad spike (1.5 ln V) go on
    for per_token in (math.log(37000), 1.5 * math.log(37000)):
        assert not loss_diverged(stats(per_token * 1000, 1.0, 1000), 1, CPU, ONE, limit)


def test_the_last_step_is_read_on_every_device():
    """A run shorter than a stop check is still judged before its end saves anything."""
    bad = stats(1e12, 1.0, tokens=10)
    assert not loss_diverged(bad, 3, GPU, ONE, 10.0)
    assert loss_diverged(bad, 3, GPU, ONE, 10.0, every_step=True)


def test_elsewhere_the_loss_is_read_every_stop_check():
    """Each read waits for the device; a NaN between checks is caught at the next, or before a save."""
    bad = stats(float("nan"))
    checked = [
        s for s in range(1, 3 * STOP_CHECK_EVERY + 1) if loss_diverged(bad, s, GPU, ONE)
    ]
    assert checked == [STOP_CHECK_EVERY, 2 * STOP_CHECK_EVERY, 3 * STOP_CHECK_EVERY]


@pytest.mark.parametrize("theirs,diverged", [(0, False), (1, True)])
def test_ranks_decide_together(monkeypatch, theirs, diverged):
    seen = []

    def max_over_ranks(value, context):
        seen.append(value)
        return max(value, theirs)

    monkeypatch.setattr(divergence, "max_over_ranks", max_over_ranks)
    two_ranks = DistributedContext(rank=1, world_size=2)
    assert loss_diverged(stats(1.0), 1, CPU, two_ranks) is diverged
    assert seen == [0]


def test_finite_weights_are_finite():
    assert weights_are_finite(
        torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 2))
    )


def test_huge_finite_weights_are_finite_although_their_norm_overflows():
    layer = torch.nn.Linear(4, 4)
    with torch.no_grad():
        layer.weight.fill_(1e30)  # finite in float32; the norm of 16 of them is not
    assert not torch.isfinite(layer.weight.norm()) and weights_are_finite(layer)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_one_bad_entry_anywhere_makes_the_weights_not_finite(bad, dtype):
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 2)).to(dtype)
    with torch.no_grad():
        model[1].bias[1] = bad
    assert not weights_are_finite(model)


def test_the_message_names_the_step_the_rate_and_the_last_good_checkpoint(tmp_path):
    (tmp_path / "last.pt").write_bytes(b"x")
    text = message("the loss is nan", 17, 3e-3, tmp_path)
    assert text.startswith(
        "training diverged at step 17: the loss is nan (learning rate 3.00e-03)"
    )
    assert f"the last good checkpoint is {tmp_path / 'last.pt'}" in text
    assert "--lr" in text and "--warmup" in text and "--resume" in text


def test_without_a_checkpoint_the_message_offers_only_a_fresh_start(tmp_path):
    text = message("the weights are no longer finite", 2, 1e-4, tmp_path)
    assert "no checkpoint was written" in text and "--resume" not in text
    assert text.endswith("start afresh with --overwrite")

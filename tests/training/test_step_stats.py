"""A step's sums of loss, nll and target tokens: one float64 tensor, added without leaving the
device, all-reduced as a copy."""

import pytest
import torch

from annotated_transformer.runtime.distributed import DistributedContext
from annotated_transformer.training import step_stats
from annotated_transformer.training.step_stats import StepStats

TWO_RANKS = DistributedContext(rank=0, world_size=2)


def micro_batch(loss: float, nll: float, tokens: int):
    return torch.tensor(loss), torch.tensor(nll), torch.tensor(tokens)


@pytest.mark.parametrize(
    "values",
    [
        torch.zeros(2, dtype=torch.float64),
        torch.zeros(4, dtype=torch.float64),
        torch.zeros(3, 1, dtype=torch.float64),
        torch.zeros(3, dtype=torch.float32),
        torch.zeros(3, dtype=torch.int64),
    ],
)
def test_anything_but_three_float64_sums_is_refused(values):
    with pytest.raises(ValueError, match="3 float64 sums"):
        StepStats(values)


def test_zeros_are_three_float64_zeros_on_the_device():
    stats = StepStats.zeros("cpu")
    assert stats.values.dtype == torch.float64 and stats.values.device.type == "cpu"
    assert stats.values.tolist() == [0.0, 0.0, 0.0]


def test_micro_batches_add_up_in_order():
    stats = StepStats.zeros("cpu")
    stats.add_micro_batch(*micro_batch(2.5, 2.0, 7))
    stats.add_micro_batch(*micro_batch(1.5, 1.0, 3))
    assert stats.values.tolist() == [4.0, 3.0, 10.0]


def test_a_micro_batch_is_counted_detached_and_in_float64():
    logits = torch.tensor(1.0 + 2**-30, dtype=torch.float64, requires_grad=True)
    stats = StepStats.zeros("cpu")
    stats.add_micro_batch(logits * 2, logits, torch.tensor(1))
    assert not stats.values.requires_grad
    assert stats.values[1].item() == 1.0 + 2**-30  # no float32 rounding on the way
    stats.add_micro_batch(
        torch.tensor(1.0, dtype=torch.bfloat16), torch.tensor(1.0), torch.tensor(2)
    )
    assert stats.values.dtype == torch.float64


def test_steps_add_in_place_and_zero_clears_them():
    window, step = StepStats.zeros("cpu"), StepStats.zeros("cpu")
    step.add_micro_batch(*micro_batch(3.0, 2.0, 5))
    window += step
    window += step
    assert window.values.tolist() == [6.0, 4.0, 10.0]
    assert step.values.tolist() == [3.0, 2.0, 5.0]
    before = window.values
    window.zero_()
    assert window.values is before and window.values.tolist() == [0.0, 0.0, 0.0]


def test_totals_in_one_process_are_the_sums_as_floats():
    stats = StepStats.zeros("cpu")
    stats.add_micro_batch(*micro_batch(3.0, 2.0, 5))
    totals = stats.totals(DistributedContext())
    assert totals == (3.0, 2.0, 5.0) and all(type(v) is float for v in totals)


def test_totals_sum_over_ranks_without_touching_the_sums(monkeypatch):
    def two_equal_ranks(tensor, context):
        assert context.is_distributed
        tensor.mul_(2)  # as dist.all_reduce does: in place
        return tensor

    monkeypatch.setattr(step_stats, "all_reduce_sum", two_equal_ranks)
    stats = StepStats.zeros("cpu")
    stats.add_micro_batch(*micro_batch(3.0, 2.0, 5))
    assert stats.totals(TWO_RANKS) == (6.0, 4.0, 10.0)
    assert stats.values.tolist() == [3.0, 2.0, 5.0]

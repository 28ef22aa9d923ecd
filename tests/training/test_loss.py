"""The package's loss (hand-written backward) equals PyTorch's cross-entropy in value and gradient,
whichever way through the logits it takes (row blocks, the CPU's; softmax kernels, a GPU's)."""

import math

import pytest
import torch
import torch.nn.functional as F

from annotated_transformer.training.loss import (
    STRATEGIES,
    default_strategy,
    label_smoothed_cross_entropy,
)
from tests.support.gpu import NEEDS_GPU, on_a_gpu

both_ways = pytest.mark.parametrize("strategy", STRATEGIES)


@pytest.mark.parametrize("smoothing", [0.0, 0.1, 0.3])
@both_ways
def test_loss_and_gradient_equal_pytorch_cross_entropy(smoothing, strategy):
    logits = torch.randn(3, 5, 11, dtype=torch.float64, requires_grad=True)
    target = torch.randint(1, 11, (3, 5))
    target[1, 3:] = 0  # padding
    parts = label_smoothed_cross_entropy(
        logits, target, smoothing, pad_id=0, strategy=strategy
    )
    expected = F.cross_entropy(
        logits.reshape(-1, 11),
        target.reshape(-1),
        ignore_index=0,
        label_smoothing=smoothing,
        reduction="sum",
    )
    nll = F.cross_entropy(
        logits.reshape(-1, 11), target.reshape(-1), ignore_index=0, reduction="sum"
    )
    torch.testing.assert_close(parts.loss.double(), expected)
    torch.testing.assert_close(parts.nll.double(), nll)
    assert parts.tokens.item() == 13
    (grad,) = torch.autograd.grad(parts.loss, logits)
    (expected_grad,) = torch.autograd.grad(expected, logits)
    torch.testing.assert_close(grad, expected_grad)
    assert (grad[1, 3:] == 0).all()  # padding receives no gradient


@both_ways
def test_gradcheck(strategy):
    logits = torch.randn(4, 7, dtype=torch.float64, requires_grad=True)
    target = torch.tensor([1, 0, 5, 6])
    assert torch.autograd.gradcheck(
        lambda x: label_smoothed_cross_entropy(x, target, 0.1, 0, strategy=strategy).loss,
        (logits,),
    )


@both_ways
def test_bf16_logits_give_a_float32_loss_and_bf16_gradient(strategy):
    logits = torch.randn(6, 50).bfloat16().requires_grad_()
    target = torch.randint(1, 50, (6,))
    parts = label_smoothed_cross_entropy(logits, target, strategy=strategy)
    assert parts.loss.dtype == torch.float32
    parts.loss.backward()
    assert logits.grad.dtype == torch.bfloat16


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("inplace", [False, True])
@both_ways
def test_row_blocks_and_inplace_backward_give_the_same_loss_and_gradient(
    monkeypatch, inplace, dtype, strategy
):
    """Blocks of 2-3 rows (as the CPU cuts a 37k vocabulary into ~56-row blocks) change nothing."""
    import annotated_transformer.training.loss as loss_module

    monkeypatch.setattr(
        loss_module, "_CPU_BLOCK_ELEMENTS", 25
    )  # 2 rows of 11 per block, and a last row
    x = torch.randn(3, 5, 11, dtype=dtype, requires_grad=True)
    target = torch.randint(1, 11, (3, 5))
    target[2, 2:] = 0
    logits = x * 1.0  # a non-leaf, as a model's output is
    parts = label_smoothed_cross_entropy(
        logits, target, 0.1, pad_id=0, inplace_backward=inplace, strategy=strategy
    )
    expected = F.cross_entropy(
        x.detach().reshape(-1, 11),
        target.reshape(-1),
        ignore_index=0,
        label_smoothing=0.1,
        reduction="sum",
    )
    torch.testing.assert_close(parts.loss, expected)
    before = logits.detach().clone()
    parts.loss.backward()
    x_ref = x.detach().clone().requires_grad_()
    F.cross_entropy(
        x_ref.reshape(-1, 11),
        target.reshape(-1),
        ignore_index=0,
        label_smoothing=0.1,
        reduction="sum",
    ).backward()
    torch.testing.assert_close(x.grad, x_ref.grad)
    if inplace:  # the logits' storage now holds the gradient, as documented
        torch.testing.assert_close(logits.detach(), x_ref.grad)
    else:
        assert torch.equal(logits.detach(), before)


@both_ways
def test_bf16_gradient_matches_float32_arithmetic_on_the_same_logits(
    monkeypatch, strategy
):
    import annotated_transformer.training.loss as loss_module

    monkeypatch.setattr(loss_module, "_CPU_BLOCK_ELEMENTS", 100)
    x = torch.randn(9, 50).bfloat16()
    target = torch.randint(1, 50, (9,))
    for inplace in (False, True):
        logits = x.clone().requires_grad_()
        out = logits * 1.0
        label_smoothed_cross_entropy(
            out, target, 0.1, inplace_backward=inplace, strategy=strategy
        ).loss.backward()
        wide = x.float().requires_grad_()
        F.cross_entropy(
            wide, target, ignore_index=0, label_smoothing=0.1, reduction="sum"
        ).backward()
        assert logits.grad.dtype == torch.bfloat16
        torch.testing.assert_close(logits.grad.float(), wide.grad, atol=4e-3, rtol=1e-2)


@both_ways
def test_no_real_rows_give_zero_loss_and_zero_gradient(strategy):
    """An all-padding selection (`only_at` all False) yields (0, V) logits: nothing to learn, nothing breaks."""
    weight = torch.randn(11, 4, requires_grad=True)
    logits = torch.randn(0, 4) @ weight.t()
    parts = label_smoothed_cross_entropy(
        logits,
        torch.zeros(0, dtype=torch.long),
        0.1,
        inplace_backward=True,
        strategy=strategy,
    )
    assert parts.loss.item() == 0.0 and parts.tokens.item() == 0
    parts.loss.backward()
    assert torch.equal(weight.grad, torch.zeros_like(weight))


def test_mismatched_target_names_the_shapes():
    with pytest.raises(ValueError, match="target has 3 tokens but logits have 4 rows"):
        label_smoothed_cross_entropy(torch.randn(4, 7), torch.tensor([1, 2, 3]))


@both_ways
def test_inplace_backward_refuses_a_second_backward_instead_of_using_overwritten_logits(
    strategy,
):
    x = torch.randn(4, 7, requires_grad=True)
    target = torch.tensor([1, 0, 5, 6])
    loss = label_smoothed_cross_entropy(
        x * 1.0, target, 0.1, inplace_backward=True, strategy=strategy
    ).loss
    loss.backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="inplace"):
        loss.backward()
    # without the flag the retained graph still gives the same gradient twice
    y = torch.randn(4, 7, requires_grad=True)
    plain = label_smoothed_cross_entropy(y * 1.0, target, 0.1, strategy=strategy).loss
    (first,) = torch.autograd.grad(plain, y, retain_graph=True)
    (second,) = torch.autograd.grad(plain, y)
    torch.testing.assert_close(first, second)


@both_ways
def test_label_smoothing_equals_hand_computed_value(strategy):
    # V = 4, logits (0, ln 2, 0, 0): probabilities (1, 2, 1, 1) / 5, target 1, eps = 0.1.
    #   nll     = -ln(2/5)                              = 0.916291
    #   uniform = -(3 ln(1/5) + ln(2/5)) / 4            = 1.436151
    #   loss    = 0.9 * 0.916291 + 0.1 * 1.436151       = 0.968277
    logits = torch.tensor([[[0.0, math.log(2.0), 0.0, 0.0], [5.0, 1.0, 2.0, 3.0]]])
    target = torch.tensor([[1, 0]])  # the second position is padding and must not count
    parts = label_smoothed_cross_entropy(
        logits, target, smoothing=0.1, pad_id=0, strategy=strategy
    )
    assert parts.tokens.item() == 1
    assert parts.nll.item() == pytest.approx(0.916291, abs=1e-6)
    assert parts.loss.item() == pytest.approx(0.968277, abs=1e-6)


DEVICES = ["cpu", pytest.param("cuda", marks=NEEDS_GPU)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("inplace", [False, True])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_both_strategies_give_the_same_loss_and_gradient_in_every_training_dtype(
    dtype, inplace, device
):
    """What a GPU runs (softmax kernels) against what the CPU runs (row blocks), on the same logits:
    the loss to float32 rounding, the gradient to one rounding of its own dtype."""
    torch.manual_seed(0)
    x = (torch.randn(64, 997) * 3).to(device=device, dtype=dtype)
    target = torch.randint(1, 997, (64,), device=device)
    target[::7] = 0
    results = {}
    for strategy in STRATEGIES:
        logits = x.clone().requires_grad_()
        parts = label_smoothed_cross_entropy(
            logits * 1.0, target, 0.1, inplace_backward=inplace, strategy=strategy
        )
        parts.loss.backward()
        results[strategy] = parts, logits.grad
    (blocks, blocks_grad), (kernels, kernels_grad) = results.values()
    torch.testing.assert_close(kernels.loss, blocks.loss, rtol=1e-6, atol=0)
    torch.testing.assert_close(kernels.nll, blocks.nll, rtol=1e-6, atol=0)
    assert kernels_grad.dtype == dtype
    resolution = torch.finfo(dtype).eps
    torch.testing.assert_close(
        kernels_grad.float(), blocks_grad.float(), rtol=resolution, atol=1e-6
    )


@both_ways
@pytest.mark.parametrize("inplace", [False, True])
def test_the_gradient_follows_the_gradient_of_the_loss(strategy, inplace):
    """The trainer backpropagates loss * world_size / tokens (and the fp16 scaler's factor): the
    gradient must scale with what comes from above, not only with the loss itself."""
    x = torch.randn(3, 5, 11, dtype=torch.float64, requires_grad=True)
    target = torch.randint(1, 11, (3, 5))
    target[0, 2:] = 0
    parts = label_smoothed_cross_entropy(
        x * 1.0, target, 0.1, inplace_backward=inplace, strategy=strategy
    )
    (parts.loss * 0.37).backward()
    reference = x.detach().clone().requires_grad_()
    expected = F.cross_entropy(
        reference.reshape(-1, 11),
        target.reshape(-1),
        ignore_index=0,
        label_smoothing=0.1,
        reduction="sum",
    )
    (expected * 0.37).backward()
    torch.testing.assert_close(x.grad, reference.grad)


@on_a_gpu
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_on_a_gpu_logits_of_several_blocks_give_the_cpu_loss_and_gradient(dtype):
    """The GPU's own path at the paper's vocabulary, past one 2^28-logit block (7,255 rows of
    37,000), gradient written over the logits as the trainer has it, against the CPU's row blocks."""
    torch.manual_seed(0)
    x = torch.randn(7_300, 37_000, dtype=dtype)
    target = torch.randint(1, 37_000, (7_300,))
    target[::9] = 0
    results = {}
    for device in ("cpu", "cuda"):
        logits = x.to(device).requires_grad_()
        parts = label_smoothed_cross_entropy(
            logits * 1.0, target.to(device), 0.1, inplace_backward=True
        )
        parts.loss.backward()
        results[device] = parts.loss.cpu(), logits.grad.cpu().float()
    torch.testing.assert_close(results["cuda"][0], results["cpu"][0], rtol=1e-5, atol=0)
    resolution = torch.finfo(dtype).eps
    torch.testing.assert_close(
        results["cuda"][1], results["cpu"][1], rtol=resolution, atol=1e-6
    )


def test_the_cpu_takes_row_blocks_and_other_devices_the_softmax_kernels():
    assert default_strategy(torch.device("cpu")) == "row_blocks"
    assert default_strategy(torch.device("cuda")) == "softmax_kernels"
    assert default_strategy(torch.device("mps")) == "softmax_kernels"


def test_an_unknown_strategy_is_refused_with_the_choices():
    with pytest.raises(ValueError, match="row_blocks, softmax_kernels, got 'fused'"):
        label_smoothed_cross_entropy(
            torch.randn(2, 5), torch.tensor([1, 2]), strategy="fused"
        )


def test_blocks_cover_every_row_once_in_cache_sized_blocks_on_a_cpu_and_1_gb_elsewhere():
    from annotated_transformer.training.loss import _row_blocks

    for device, most in (("cpu", 1 << 21), ("meta", 1 << 28)):  # meta stands in for a GPU
        logits = torch.empty(1, 37_000, device=device).expand(25_000, -1)  # shape only
        blocks = _row_blocks(logits)
        rows = [r for block in blocks for r in range(25_000)[block]]
        assert rows == list(range(25_000))
        assert all((b.stop - b.start) * 37_000 <= most for b in blocks)
        assert len(blocks) == (4 if device == "meta" else 447)  # 7,255 and 56 rows

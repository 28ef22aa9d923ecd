"""The package's loss (hand-written backward) equals PyTorch's cross-entropy in value and gradient."""
import pytest
import torch
import torch.nn.functional as F

from annotated_transformer.training.loss import label_smoothed_cross_entropy


@pytest.mark.parametrize("smoothing", [0.0, 0.1, 0.3])
def test_loss_and_gradient_equal_pytorch_cross_entropy(smoothing):
    logits = torch.randn(3, 5, 11, dtype=torch.float64, requires_grad=True)
    target = torch.randint(1, 11, (3, 5))
    target[1, 3:] = 0  # padding
    parts = label_smoothed_cross_entropy(logits, target, smoothing, pad_id=0)
    expected = F.cross_entropy(logits.reshape(-1, 11), target.reshape(-1), ignore_index=0,
                               label_smoothing=smoothing, reduction="sum")
    nll = F.cross_entropy(logits.reshape(-1, 11), target.reshape(-1), ignore_index=0, reduction="sum")
    torch.testing.assert_close(parts.loss.double(), expected)
    torch.testing.assert_close(parts.nll.double(), nll)
    assert parts.tokens.item() == 13
    (grad,) = torch.autograd.grad(parts.loss, logits)
    (expected_grad,) = torch.autograd.grad(expected, logits)
    torch.testing.assert_close(grad, expected_grad)
    assert (grad[1, 3:] == 0).all()  # padding receives no gradient


def test_gradcheck():
    logits = torch.randn(4, 7, dtype=torch.float64, requires_grad=True)
    target = torch.tensor([1, 0, 5, 6])
    assert torch.autograd.gradcheck(lambda x: label_smoothed_cross_entropy(x, target, 0.1, 0).loss, (logits,))


def test_bf16_logits_give_a_float32_loss_and_bf16_gradient():
    logits = torch.randn(6, 50).bfloat16().requires_grad_()
    target = torch.randint(1, 50, (6,))
    parts = label_smoothed_cross_entropy(logits, target)
    assert parts.loss.dtype == torch.float32
    parts.loss.backward()
    assert logits.grad.dtype == torch.bfloat16

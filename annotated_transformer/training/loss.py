"""Label-smoothed cross-entropy that ignores padding (paper section 5.4)."""
from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn as nn

# torch.compiler.is_compiling exists from torch 2.3; on 2.2 the eager branch is taken, correct under compile too.
_is_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", lambda: False)


class LossParts(NamedTuple):
    loss: torch.Tensor  # the label-smoothed loss, summed over real tokens (what is optimised)
    nll: torch.Tensor  # plain negative log-likelihood, summed (perplexity = exp(nll / tokens))
    tokens: torch.Tensor  # number of non-padding target tokens


def _at_least_float32(x: torch.Tensor) -> torch.Tensor:
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


class _SmoothedCrossEntropy(torch.autograd.Function):
    """Forward keeps one logsumexp per row; backward writes softmax - smoothed target in one tensor.

    Under autograd, log_softmax, gather and mean allocate and sweep several (N, V) tensors in the
    backward pass; with a 37k vocabulary that made the loss the slowest part of an eager `base` step
    on a CPU (benchmarks/README.md). Same function, same gradient (tests/test_loss.py).
    """

    @staticmethod
    def forward(ctx, logits, target, smoothing: float, pad_id: int):
        x = _at_least_float32(logits)
        lse = torch.logsumexp(x, dim=-1)
        nll = lse - x.gather(-1, target.unsqueeze(-1)).squeeze(-1)
        uniform = lse - x.mean(dim=-1)  # -mean(log_softmax(x))
        keep = target != pad_id
        zero = torch.zeros((), device=x.device, dtype=x.dtype)
        loss = torch.where(keep, (1.0 - smoothing) * nll + smoothing * uniform, zero).sum()
        ctx.save_for_backward(logits, target, lse, keep)
        ctx.smoothing = smoothing
        nll_sum = torch.where(keep, nll, zero).sum()
        ctx.mark_non_differentiable(nll_sum)
        return loss, nll_sum

    @staticmethod
    def backward(ctx, grad_loss, _grad_nll):
        logits, target, lse, keep = ctx.saved_tensors
        eps, vocab = ctx.smoothing, logits.size(-1)
        # d loss / d x = softmax(x) - ((1 - eps) * one_hot(target) + eps / V), zero on padding rows
        grad = torch.sub(_at_least_float32(logits), lse.unsqueeze(-1)).exp_().sub_(eps / vocab)
        grad.scatter_add_(-1, target.unsqueeze(-1), torch.full_like(lse, eps - 1.0).unsqueeze(-1))
        grad.mul_((keep.to(grad.dtype) * grad_loss).unsqueeze(-1))
        return grad.to(logits.dtype), None, None, None


def label_smoothed_cross_entropy(
    logits: torch.Tensor, target: torch.Tensor, smoothing: float = 0.1, pad_id: int = 0
) -> LossParts:
    """Cross-entropy against (1 - eps) * one_hot(target) + eps / V, summed over non-pad targets.

    This is the uniform smoothing of Szegedy et al. that the paper cites, the same target as
    `F.cross_entropy(label_smoothing=eps)`. Computed in float32 (or float64 when given) whatever
    the autocast dtype, since a bf16 log-softmax over tens of thousands of classes loses the small
    probabilities. Eagerly it runs with a hand-written backward; under torch.compile the plain
    composition is traced instead, which the compiler fuses by itself.
    """
    if not 0.0 <= smoothing < 1.0:
        raise ValueError(f"smoothing must lie in [0, 1), got {smoothing}")
    target = target.reshape(-1)
    logits = logits.flatten(0, -2)
    keep = target != pad_id
    if not _is_compiling():
        loss, nll = _SmoothedCrossEntropy.apply(logits, target, smoothing, pad_id)
        return LossParts(loss=loss, nll=nll, tokens=keep.sum())
    return composite_smoothed_cross_entropy(logits, target, smoothing, pad_id)


def composite_smoothed_cross_entropy(
    logits: torch.Tensor, target: torch.Tensor, smoothing: float = 0.1, pad_id: int = 0
) -> LossParts:
    """The same loss as plain autograd ops (log_softmax, gather, mean): what torch.compile traces,
    and the baseline the benchmark measures the hand-written backward against."""
    target = target.reshape(-1)
    keep = target != pad_id
    log_probs = _at_least_float32(logits.flatten(0, -2)).log_softmax(dim=-1)
    nll = -log_probs.gather(1, target.unsqueeze(1)).squeeze(1)
    uniform = -log_probs.mean(dim=-1)
    loss = (1.0 - smoothing) * nll + smoothing * uniform
    zero = torch.zeros((), device=loss.device, dtype=loss.dtype)
    return LossParts(
        loss=torch.where(keep, loss, zero).sum(),
        nll=torch.where(keep, nll, zero).sum(),
        tokens=keep.sum(),
    )


class LabelSmoothedCrossEntropy(nn.Module):
    """Module form of `label_smoothed_cross_entropy`, returning the mean over real tokens."""

    def __init__(self, smoothing: float = 0.1, pad_id: int = 0):
        super().__init__()
        self.smoothing, self.pad_id = smoothing, pad_id

    def forward(self, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        parts = label_smoothed_cross_entropy(logits, target, self.smoothing, self.pad_id)
        return parts.loss / parts.tokens.clamp(min=1)

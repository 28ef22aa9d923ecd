"""Label-smoothed cross-entropy that ignores padding (paper section 5.4)."""

from __future__ import annotations

from typing import NamedTuple

import torch

from ..runtime.compat import is_compiling


class LossParts(NamedTuple):
    loss: (
        torch.Tensor
    )  # the label-smoothed loss, summed over real tokens (what is optimised)
    nll: (
        torch.Tensor
    )  # plain negative log-likelihood, summed (perplexity = exp(nll / tokens))
    tokens: torch.Tensor  # number of non-padding target tokens


def _at_least_float32(x: torch.Tensor) -> torch.Tensor:
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


# Row blocks of about 8 MB (float32) on a CPU: each block's passes (max, exp, sum, mean; in the backward
# subtract, exp, scale) run while it sits in cache, and temporaries stay below glibc's mmap threshold,
# so no (tokens x vocabulary) tensor is page-faulted in afresh every step. On other devices, one block.
_CPU_BLOCK_ELEMENTS = 1 << 21


def _row_blocks(x: torch.Tensor) -> list[slice]:
    n = x.size(0)
    rows = (
        n if x.device.type != "cpu" else max(1, _CPU_BLOCK_ELEMENTS // max(1, x.size(-1)))
    )
    return [slice(i, i + rows) for i in range(0, n, max(1, rows))]


class _SmoothedCrossEntropy(torch.autograd.Function):
    """Forward keeps one logsumexp per row; backward writes softmax - smoothed target, block by block.

    Under autograd, log_softmax, gather and mean allocate and sweep several (N, V) tensors; with a
    37k vocabulary that made the loss the slowest part of an eager `base` step on a CPU
    (benchmarks/README.md). On a CPU the forward here allocates nothing of size (N, V) beyond
    8 MB blocks, and the backward one gradient, or none with `inplace`: the gradient then overwrites
    the logits, which nothing else reads once the loss exists (the output projection's backward
    needs its input, not its output). On a GPU it is one block, so the forward makes one float32
    (N, V) temporary, as `torch.logsumexp` does. Same function, same gradient (tests/training/test_loss.py).
    Not twice differentiable.
    """

    @staticmethod
    def forward(ctx, logits, target, keep, smoothing: float, inplace: bool):
        stat_dtype = torch.float64 if logits.dtype == torch.float64 else torch.float32
        lse = torch.empty(logits.size(0), device=logits.device, dtype=stat_dtype)
        mean = torch.empty_like(lse)
        for rows in _row_blocks(logits):
            block = _at_least_float32(logits[rows])
            peak = block.amax(dim=-1, keepdim=True)
            lse[rows] = torch.sub(block, peak).exp_().sum(dim=-1).log_() + peak.squeeze(
                -1
            )
            mean[rows] = block.mean(dim=-1)
        picked = _at_least_float32(logits.gather(-1, target.unsqueeze(-1)).squeeze(-1))
        nll = lse - picked
        uniform = lse - mean  # -mean(log_softmax(x))
        zero = torch.zeros((), device=lse.device, dtype=lse.dtype)
        loss = torch.where(
            keep, (1.0 - smoothing) * nll + smoothing * uniform, zero
        ).sum()
        ctx.save_for_backward(logits, target, lse, keep)
        ctx.smoothing, ctx.inplace = smoothing, inplace
        nll_sum = torch.where(keep, nll, zero).sum()
        ctx.mark_non_differentiable(nll_sum)
        return loss, nll_sum

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_loss, _grad_nll):
        logits, target, lse, keep = ctx.saved_tensors
        eps, vocab = ctx.smoothing, logits.size(-1)
        grad = logits if ctx.inplace else torch.empty_like(logits)
        scale = keep.to(lse.dtype) * grad_loss  # zero on padding rows
        # d loss / d x = softmax(x) - ((1 - eps) * one_hot(target) + eps / V)
        same_dtype = logits.dtype == lse.dtype
        for rows in _row_blocks(logits):
            out, shift = grad[rows], lse[rows].unsqueeze(-1)
            # bf16/fp16 logits: the arithmetic in float32, one cast on the way out
            g = (
                torch.sub(logits[rows], shift, out=out)
                if same_dtype
                else logits[rows].to(lse.dtype).sub_(shift)
            )
            g.exp_().sub_(eps / vocab)
            g.scatter_add_(
                -1, target[rows].unsqueeze(-1), torch.full_like(shift, eps - 1.0)
            )
            g.mul_(scale[rows].unsqueeze(-1))
            if not same_dtype:
                out.copy_(g)
        return grad, None, None, None, None


def label_smoothed_cross_entropy(
    logits: torch.Tensor,
    target: torch.Tensor,
    smoothing: float = 0.1,
    pad_id: int = 0,
    *,
    inplace_backward: bool = False,
) -> LossParts:
    """Cross-entropy against (1 - eps) * one_hot(target) + eps / V, summed over non-pad targets.

    This is the uniform smoothing of Szegedy et al. that the paper cites, the same target as
    `F.cross_entropy(label_smoothing=eps)`. Computed in float32 (or float64 when given) whatever
    the autocast dtype, since a bf16 log-softmax over tens of thousands of classes loses the small
    probabilities. Eagerly it runs with a hand-written backward; under torch.compile the plain
    composition is traced instead, which the compiler fuses by itself.

    `inplace_backward=True` lets the backward write the gradient over `logits` (eager only): one
    (tokens x vocabulary) tensor less per step. Only for callers that do not read the logits after
    `backward()`, as the trainer does not. Misuse fails loudly rather than silently: a second
    backward through the same graph (`retain_graph=True`), or another op that saved the logits for
    its own backward, raises autograd's "modified by an inplace operation" error; logits that are
    an expanded view cannot be written and raise too. Leaf logits are overwritten like any others.
    """
    if not 0.0 <= smoothing < 1.0:
        raise ValueError(f"smoothing must lie in [0, 1), got {smoothing}")
    target = target.reshape(-1)
    logits = logits.flatten(0, -2)
    if target.numel() != logits.size(0):
        raise ValueError(
            f"target has {target.numel()} tokens but logits have {logits.size(0)} rows "
            f"(logits {tuple(logits.shape)}); they must match one to one"
        )
    keep = target != pad_id
    if not is_compiling():
        loss, nll = _SmoothedCrossEntropy.apply(
            logits, target, keep, smoothing, inplace_backward
        )
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

"""Label-smoothed cross-entropy that ignores padding (paper section 5.4)."""

from __future__ import annotations

from typing import NamedTuple

import torch

from ..runtime.compat import is_compiling


class LossParts(NamedTuple):
    # the label-smoothed loss, summed over real tokens (what is optimised)
    loss: torch.Tensor
    # plain negative log-likelihood, summed (perplexity = exp(nll / tokens))
    nll: torch.Tensor
    tokens: torch.Tensor  # number of non-padding target tokens


def _at_least_float32(x: torch.Tensor) -> torch.Tensor:
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


# Row blocks of about 8 MB (float32) on a CPU: each block's passes (max, exp, sum, mean; in the backward
# subtract, exp, scale) run while it sits in cache, and temporaries stay below glibc's mmap threshold,
# so no (tokens x vocabulary) tensor is page-faulted in afresh every step. On other devices blocks of
# up to 1 GB (float32): a few launches more at the paper's 25k tokens x 37k pieces, and float32
# temporaries of 1-2 GB instead of 7.
_CPU_BLOCK_ELEMENTS = 1 << 21
_DEVICE_BLOCK_ELEMENTS = 1 << 28

# How the hand-written loss walks the logits; `default_strategy` picks one per device.
STRATEGIES = ("row_blocks", "softmax_kernels")


def default_strategy(device: torch.device) -> str:
    """Which way the eager loss walks the logits: "row_blocks" on a CPU, else "softmax_kernels".

    Both compute the same function. On a CPU a few cheap passes over a cache-sized block are at
    least as fast as PyTorch's softmax kernels: for the forward and backward of 2,000 x 37,000
    logits on 2 cores of an Intel Xeon with AMX, medians of 5 (range), 195 (188-213) against 206
    (196-224) ms in float32, within each other's spread, and 161 (157-190) against 196 (174-315) ms
    in bf16 (`results/benchmarks/cpu_loss_strategies.json`, `bench_model.py --only components`). On a GPU
    the blocks are far larger than any cache, every pass goes to memory, and what counts
    is the bytes moved: about 78 per logit for the row-blocks arithmetic on bf16 logits, some 38
    for the softmax kernels (more where a kernel rereads a row beyond the L2 cache; fp16 logits,
    whose cast the kernel fuses, about 22). In the eager `base` step's profile on an H100, the row
    blocks' subtract, exp and multiply kernels alone took 12 of the step's 70 ms, and by the bytes
    moved, the casts and reductions bring them to about 17-20. That GPU choice is arithmetic
    until `bench_step.py`'s eager_row_blocks_loss variant has timed it.
    """
    return "row_blocks" if device.type == "cpu" else "softmax_kernels"


def _row_blocks(x: torch.Tensor) -> list[slice]:
    elements = _CPU_BLOCK_ELEMENTS if x.device.type == "cpu" else _DEVICE_BLOCK_ELEMENTS
    rows = max(1, elements // max(1, x.size(-1)))
    return [slice(i, i + rows) for i in range(0, x.size(0), rows)]


def _stat_dtype(logits: torch.Tensor) -> torch.dtype:
    return torch.float64 if logits.dtype == torch.float64 else torch.float32


def _row_block_statistics(logits, target):
    """Per row: the NLL, the uniform term -mean(log_softmax) and the logsumexp (for the backward),
    from max, exp, sum and mean passes over each cache-sized block."""
    lse = torch.empty(logits.size(0), device=logits.device, dtype=_stat_dtype(logits))
    mean = torch.empty_like(lse)
    for rows in _row_blocks(logits):
        block = _at_least_float32(logits[rows])
        peak = block.amax(dim=-1, keepdim=True)
        lse[rows] = torch.sub(block, peak).exp_().sum(dim=-1).log_() + peak.squeeze(-1)
        mean[rows] = block.mean(dim=-1)
    picked = _at_least_float32(logits.gather(-1, target.unsqueeze(-1)).squeeze(-1))
    return lse - picked, lse - mean, lse


def _softmax_kernel_statistics(logits, target):
    """The same NLL and uniform term from PyTorch's log-softmax kernel: a cast, one kernel and a
    mean over each block (no logsumexp kept: the backward recomputes the softmax)."""
    nll = torch.empty(logits.size(0), device=logits.device, dtype=_stat_dtype(logits))
    uniform = torch.empty_like(nll)
    for rows in _row_blocks(logits):
        log_probs = torch.log_softmax(logits[rows], dim=-1, dtype=nll.dtype)
        nll[rows] = log_probs.gather(-1, target[rows].unsqueeze(-1)).squeeze(-1).neg_()
        uniform[rows] = log_probs.mean(dim=-1).neg_()
    return nll, uniform, None


def _row_block_gradient(grad, logits, target, lse, scale, eps):
    """softmax - smoothed target, from the saved logsumexp: subtract, exp, shift, scale per block."""
    vocab = logits.size(-1)
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
        g.scatter_add_(-1, target[rows].unsqueeze(-1), torch.full_like(shift, eps - 1.0))
        g.mul_(scale[rows].unsqueeze(-1))
        if not same_dtype:
            out.copy_(g)


def _softmax_kernel_gradient(grad, logits, target, scale, eps):
    """The same gradient as scale * (softmax - one_hot * (1 - eps)) - scale * eps / V: the softmax
    kernel in float32, the target's share subtracted, and one addcmul that writes the logits' dtype."""
    vocab = logits.size(-1)
    scale = scale.unsqueeze(-1)
    shift = scale * (-eps / vocab)
    for rows in _row_blocks(logits):
        probs = torch.softmax(logits[rows], dim=-1, dtype=scale.dtype)
        probs.scatter_add_(
            -1,
            target[rows].unsqueeze(-1),
            torch.full_like(shift[rows], eps - 1.0),
        )
        torch.addcmul(shift[rows], probs, scale[rows], out=grad[rows])


class _SmoothedCrossEntropy(torch.autograd.Function):
    """Forward keeps per-row statistics only; backward writes softmax - smoothed target.

    Under autograd, log_softmax, gather and mean allocate and sweep several (N, V) tensors; with a
    37k vocabulary that made the loss the slowest part of an eager `base` step on a CPU
    (benchmarks/README.md). Two ways through the logits compute it (`default_strategy` says which
    runs where): "row_blocks" allocates nothing of size (N, V) beyond 8 MB blocks on a CPU in the
    forward, and in the backward one gradient; "softmax_kernels" uses PyTorch's log-softmax and
    softmax kernels (after a float32 copy of bf16 logits), fewer passes over memory. With `inplace` the gradient overwrites the
    logits, which nothing else reads once the loss exists (the output projection's backward needs
    its input, not its output). Same function, same gradient (tests/training/test_loss.py).
    Not twice differentiable.
    """

    @staticmethod
    def forward(
        ctx, logits, target, keep, smoothing: float, inplace: bool, strategy: str
    ):
        statistics = (
            _row_block_statistics
            if strategy == "row_blocks"
            else _softmax_kernel_statistics
        )
        nll, uniform, lse = statistics(logits, target)
        zero = torch.zeros((), device=nll.device, dtype=nll.dtype)
        loss = torch.where(
            keep, (1.0 - smoothing) * nll + smoothing * uniform, zero
        ).sum()
        ctx.save_for_backward(logits, target, lse, keep)
        ctx.smoothing, ctx.inplace, ctx.strategy = smoothing, inplace, strategy
        nll_sum = torch.where(keep, nll, zero).sum()
        ctx.mark_non_differentiable(nll_sum)
        return loss, nll_sum

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_loss, _grad_nll):
        logits, target, lse, keep = ctx.saved_tensors
        grad = logits if ctx.inplace else torch.empty_like(logits)
        scale = keep.to(_stat_dtype(logits)) * grad_loss  # zero on padding rows
        # d loss / d x = softmax(x) - ((1 - eps) * one_hot(target) + eps / V)
        if ctx.strategy == "row_blocks":
            _row_block_gradient(grad, logits, target, lse, scale, ctx.smoothing)
        else:
            _softmax_kernel_gradient(grad, logits, target, scale, ctx.smoothing)
        return grad, None, None, None, None, None


def label_smoothed_cross_entropy(
    logits: torch.Tensor,
    target: torch.Tensor,
    smoothing: float = 0.1,
    pad_id: int = 0,
    *,
    inplace_backward: bool = False,
    strategy: str | None = None,
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

    `strategy` ("row_blocks" or "softmax_kernels", `STRATEGIES`) chooses how the eager loss walks
    the logits; None takes the device's `default_strategy`. The two differ in speed and in
    float rounding only.
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
    if strategy is None:
        strategy = default_strategy(logits.device)
    elif strategy not in STRATEGIES:
        raise ValueError(
            f"strategy must be one of {', '.join(STRATEGIES)}, got {strategy!r}"
        )
    keep = target != pad_id
    if not is_compiling():
        loss, nll = _SmoothedCrossEntropy.apply(
            logits, target, keep, smoothing, inplace_backward, strategy
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

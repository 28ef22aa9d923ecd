"""Teacher forcing: the decoder reads the reference shifted right and is scored on every next token.

This is what training optimises and what validation perplexity measures, so both go through the same
`batch_loss`: one definition of the shift (the decoder reads tgt[:, :-1], predicts tgt[:, 1:]), the
autocast region and the loss. Perplexity is per subword (eos included, no label smoothing), as in the
paper's Table 3.
"""

from __future__ import annotations

from typing import Callable

import torch
import torch.nn as nn

from ..data.batching import EncodedPairs, TokenBatcher, collate_pairs
from ..model.transformer import logits_at_real_targets
from ..runtime import attention_kernels
from ..runtime.compat import maybe_mark_dynamic
from ..runtime.distributed import DistributedContext, all_reduce_sum
from ..runtime.precision import autocast_context
from .loss import LossParts, label_smoothed_cross_entropy
from .step_stats import per_token


def batch_loss(
    model: nn.Module,
    src: torch.Tensor,
    tgt: torch.Tensor,
    *,
    smoothing: float,
    pad_id: int,
    precision: str = "fp32",
    real_rows_only: bool = True,
    loss_fn: Callable[..., LossParts] = label_smoothed_cross_entropy,
) -> LossParts:
    """Summed label-smoothed loss, NLL and token count of one collated batch (`collate_pairs` output).

    `model` may be wrapped (DDP, torch.compile). With `real_rows_only` the output projection runs only
    at non-padding target positions (a data-dependent shape: eager mode only).
    """
    tgt_in, tgt_out = tgt[:, :-1], tgt[:, 1:]
    _batch_shape_varies(src, tgt_in)
    with (
        autocast_context(src.device, precision),
        attention_kernels.for_varying_shapes(src.device),
    ):
        if real_rows_only:
            logits, tgt_out = logits_at_real_targets(model, src, tgt_in, tgt_out, pad_id)
        else:
            logits = model(src, tgt_in)
    _batch_shape_varies(tgt_out)
    _batch_shape_varies(logits, but_last=True)  # the last is the vocabulary
    return loss_fn(logits, tgt_out, smoothing, pad_id)


def _batch_shape_varies(*tensors: torch.Tensor, but_last: bool = False) -> None:
    """Tell torch.compile that every batch has its own number of rows and length (each tensor's
    dimensions, `but_last` leaving out the logits' vocabulary), so that the compiled model and loss
    each compile one graph for every shape. Unmarked, Dynamo compiles a graph for the first batch's
    shape and a second, dynamic one at the next batch: twice the compile time. Outside
    torch.compile the mark is an attribute that nothing reads."""
    for t in tensors:
        maybe_mark_dynamic(t, tuple(range(t.dim() - but_last)))


@torch.no_grad()
def teacher_forced_loss(
    model: nn.Module,
    data: EncodedPairs,
    *,
    batch_tokens: int = 4000,
    precision: str = "fp32",
    context: DistributedContext | None = None,
    label_smoothing: float | None = None,
) -> dict:
    """Mean label-smoothed loss, NLL and perplexity per target subword (eos included) over `data`.

    With a DistributedContext the batches are shared out over ranks and the sums added up, so every rank
    returns the same numbers. `label_smoothing` defaults to the model's own, for the `loss` entry; `nll`
    and `ppl` never smooth. Pairs longer than `batch_tokens` are left out (with a warning).
    """
    config = model.config
    device = next(model.parameters()).device
    smoothing = config.label_smoothing if label_smoothing is None else label_smoothing
    batches = TokenBatcher(
        data.src_lengths,
        data.tgt_lengths,
        batch_tokens,
        shuffle=False,
        skip_too_long=True,
    ).epoch_batches(0)
    rank, world = (context.rank, context.world_size) if context is not None else (0, 1)
    was_training = model.training
    model.eval()
    sums = torch.zeros(3, dtype=torch.float64, device=device)
    try:
        for indices in batches[rank::world]:
            src, tgt = collate_pairs(
                [data[i] for i in indices], config.pad_id, config.bos_id, config.eos_id
            )
            parts = batch_loss(
                model,
                src.to(device),
                tgt.to(device),
                smoothing=smoothing,
                pad_id=config.pad_id,
                precision=precision,
            )
            sums += torch.stack(
                [parts.loss.double(), parts.nll.double(), parts.tokens.double()]
            )
    finally:
        model.train(was_training)
    if context is not None:
        all_reduce_sum(sums, context)
    loss_sum, nll_sum, tokens = sums.tolist()
    return {**per_token(loss_sum, nll_sum, tokens), "tokens": int(max(tokens, 1.0))}

"""Label-smoothed cross-entropy that ignores padding (paper section 5.4)."""
from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn as nn


class LossParts(NamedTuple):
    loss: torch.Tensor  # the label-smoothed loss, summed over real tokens (what is optimised)
    nll: torch.Tensor  # plain negative log-likelihood, summed (perplexity = exp(nll / tokens))
    tokens: torch.Tensor  # number of non-padding target tokens


def label_smoothed_cross_entropy(
    logits: torch.Tensor, target: torch.Tensor, smoothing: float = 0.1, pad_id: int = 0
) -> LossParts:
    """Cross-entropy against (1 - eps) * one_hot(target) + eps / V, summed over non-pad targets.

    This is the uniform smoothing of Szegedy et al. that the paper cites, the same target as
    `F.cross_entropy(label_smoothing=eps)`. Computed in float32 whatever the autocast dtype, since
    a bf16 log-softmax over tens of thousands of classes loses the small probabilities.
    """
    if not 0.0 <= smoothing < 1.0:
        raise ValueError(f"smoothing must lie in [0, 1), got {smoothing}")
    log_probs = logits.float().log_softmax(dim=-1).flatten(0, -2)
    target = target.reshape(-1)
    keep = target != pad_id
    nll = -log_probs.gather(1, target.unsqueeze(1)).squeeze(1)
    uniform = -log_probs.mean(dim=-1)
    loss = (1.0 - smoothing) * nll + smoothing * uniform
    zero = torch.zeros((), device=loss.device)
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

"""What one optimizer step measured: its label-smoothed loss, its negative log-likelihood and its
target tokens, each summed over the step's micro-batches.

The three sums live in one float64 tensor on the device: adding a micro-batch or a step costs no
host synchronisation, and a report all-reduces them in one call.
"""

from __future__ import annotations

import math

import torch

from ..runtime.distributed import DistributedContext, all_reduce_sum


def per_token(loss_sum: float, nll_sum: float, tokens: float) -> dict[str, float]:
    """The loss and nll a target token and the perplexity (capped at e^50): what validation and
    the metrics' `train` records report; no tokens report zeros, not a division by 0."""
    tokens = max(tokens, 1.0)
    nll = nll_sum / tokens
    return {"loss": loss_sum / tokens, "nll": nll, "ppl": math.exp(min(nll, 50.0))}


class StepStats:
    """Sums of (loss, nll, target tokens), in this order in `values`, the float64 tensor that
    holds them."""

    __slots__ = ("values",)

    def __init__(self, values: torch.Tensor):
        if values.shape != (3,) or values.dtype != torch.float64:
            raise ValueError(f"StepStats holds 3 float64 sums, got {tuple(values.shape)}")
        self.values = values

    @classmethod
    def zeros(cls, device: torch.device | str) -> StepStats:
        return cls(torch.zeros(3, device=device, dtype=torch.float64))

    def add_micro_batch(
        self, loss: torch.Tensor, nll: torch.Tensor, tokens: torch.Tensor
    ) -> None:
        """Count one micro-batch's summed loss, summed nll and target tokens (detached)."""
        self.values += torch.stack(
            [loss.detach().double(), nll.detach().double(), tokens.double()]
        )

    def __iadd__(self, other: StepStats) -> StepStats:
        self.values += other.values
        return self

    def zero_(self) -> None:
        self.values.zero_()

    def mean_loss(self) -> float:
        """The loss a target token on this rank, NaN where the nll is not finite (one host
        synchronisation)."""
        loss, nll, tokens = self.values.tolist()
        return loss / max(tokens, 1.0) if math.isfinite(nll) else math.nan

    def totals(self, context: DistributedContext) -> tuple[float, float, float]:
        """(loss_sum, nll_sum, tokens) summed over all ranks, as Python floats."""
        loss_sum, nll_sum, tokens = all_reduce_sum(self.values.clone(), context).tolist()
        return loss_sum, nll_sum, tokens

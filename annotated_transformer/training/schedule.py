"""The optimizer of section 5.3 and its learning-rate schedule: Adam, with a linear warm-up, then
inverse square-root decay."""

from __future__ import annotations

import torch
import torch.nn as nn
from torch.optim import Optimizer
from torch.optim.lr_scheduler import LRScheduler

from .settings import TrainSettings


def noam_lr(
    step: int, d_model: int, warmup_steps: int = 4000, factor: float = 1.0
) -> float:
    """lrate = factor * d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5), for step >= 1."""
    if step < 1:
        raise ValueError(f"the schedule counts steps from 1, got {step}")
    return factor * d_model**-0.5 * min(step**-0.5, step * warmup_steps**-1.5)


def peak_lr(d_model: int, warmup_steps: int = 4000, factor: float = 1.0) -> float:
    """The largest rate of the schedule, reached at step == warmup_steps."""
    return noam_lr(warmup_steps, d_model, warmup_steps, factor)


class NoamSchedule(LRScheduler):
    """`noam_lr` as a PyTorch scheduler: call `step()` after each optimizer step.

    The rate for the k-th optimizer update (k = 1, 2, ...) is noam_lr(k); `factor` scales the
    whole curve (1.0 is the paper). Its state_dict holds the step, so a resumed run continues
    the curve exactly.
    """

    def __init__(
        self,
        optimizer: Optimizer,
        d_model: int,
        warmup_steps: int = 4000,
        factor: float = 1.0,
        last_epoch: int = -1,
    ):
        if warmup_steps < 1:
            raise ValueError(f"warmup_steps must be >= 1, got {warmup_steps}")
        self.d_model, self.warmup_steps, self.factor = d_model, warmup_steps, factor
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        lr = noam_lr(self.last_epoch + 1, self.d_model, self.warmup_steps, self.factor)
        return [lr for _ in self.optimizer.param_groups]


def schedule_factor(settings: TrainSettings, d_model: int) -> float:
    """Scale of the paper's curve: 1.0 for the paper, or whatever makes its top equal settings.peak_lr."""
    if settings.peak_lr is None:
        return 1.0
    return settings.peak_lr / peak_lr(d_model, settings.warmup_steps, 1.0)


def build_optimizer(
    model: nn.Module, settings: TrainSettings, device: torch.device
) -> torch.optim.Adam:
    """Adam(beta1=0.9, beta2=0.98, eps=1e-9) of section 5.3 with PyTorch's fused kernel (CPU and GPU).

    On a 2-core CPU the fused update of a `base` step is several times faster than PyTorch's default
    (results/benchmarks/cpu_train.json); on GPUs it is one kernel launch instead of many. Other devices
    fall back to foreach.
    """
    params = [p for p in model.parameters() if p.requires_grad]
    kernel = {"fused": True} if device.type in ("cuda", "cpu") else {"foreach": True}
    return torch.optim.Adam(
        params, lr=1.0, betas=tuple(settings.adam_betas), eps=settings.adam_eps, **kernel
    )

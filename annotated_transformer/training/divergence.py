"""Noticing that training diverged, before a broken model is saved over a good one.

Too high a learning rate or too short a warm-up can make the loss, then the weights, NaN or
infinite. From then on every step and every checkpoint is worthless, and a run that went on would
overwrite its last good `last.pt` with one that cannot be resumed. So the loop checks the loss, the
trainer checks the weights before anything is written, and the run stops with `TrainingDiverged`,
a message that says what to change and where the last good checkpoint is.
"""

from __future__ import annotations

from pathlib import Path

import torch
import torch.nn as nn

from ..runtime.distributed import DistributedContext, max_over_ranks
from .checkpoint import RESUME_NAME
from .step_stats import StepStats
from .stopping import STOP_CHECK_EVERY


class TrainingDiverged(RuntimeError):
    """The loss or the weights stopped being finite numbers; nothing from that point on was saved."""


def loss_diverged(
    stats: StepStats, step: int, device: torch.device, context: DistributedContext
) -> bool:
    """Whether the step's loss is not finite (NaN or inf), the same answer on every rank.

    Every step on a CPU; on other devices every STOP_CHECK_EVERY steps (each check waits for the
    device) and, through `weights_are_finite`, before anything is saved. Ranks decide together.
    """
    if device.type != "cpu" and step % STOP_CHECK_EVERY:
        return False
    bad = int(not stats.losses_are_finite())
    return bool(max_over_ranks(bad, context))


def weights_are_finite(model: nn.Module) -> bool:
    """Whether every weight is a finite number (checked element by element: a norm of finite
    weights can itself overflow), one host synchronisation for the whole model."""
    return bool(
        torch.stack([torch.isfinite(p.detach()).all() for p in model.parameters()]).all()
    )


def message(what: str, step: int, lr: float, out_dir: Path) -> str:
    """What went wrong at which step, what was kept, and what to change before trying again."""
    last_good = out_dir / RESUME_NAME
    if last_good.is_file():
        kept, then = (
            f"the last good checkpoint is {last_good}",
            "continue from it with --resume or start afresh with --overwrite",
        )
    else:
        kept, then = "no checkpoint was written", "start afresh with --overwrite"
    return (
        f"training diverged at step {step}: {what} (learning rate "
        f"{lr:.2e}). Nothing from this point was saved; {kept}. Lower the "
        f"peak learning rate (--lr) or lengthen the warm-up (--warmup), then {then}"
    )

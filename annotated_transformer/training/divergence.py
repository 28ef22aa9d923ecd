"""Noticing that training diverged, before a broken model is saved over a good one.

Too high a learning rate or too short a warm-up can make the loss, then the weights, NaN or
infinite, or (in bf16, whose range is float32's) leave them finite but absurd: a loss of 3e9 nats
a token. From then on every step and every checkpoint is worthless, and a run that went on would
overwrite its last good `last.pt` with one that cannot be resumed, then file its results. So the
loop checks the loss (not finite, or above `loss_limit`), the trainer checks the weights before
anything is written, and the run stops with `TrainingDiverged`, a message that says what to change
and where the last good checkpoint is.
"""

from __future__ import annotations

import math
from pathlib import Path

import torch
import torch.nn as nn

from ..runtime.distributed import DistributedContext, max_over_ranks
from .checkpoint import RESUME_NAME
from .step_stats import StepStats
from .stopping import STOP_CHECK_EVERY


class TrainingDiverged(RuntimeError):
    """The loss or the weights stopped being finite numbers; nothing from that point on was saved."""


def loss_limit(vocab_size: int, smoothing: float) -> float:
    """The highest loss a token (nats, label-smoothed) may have while training still learns.

    A uniform guess over the vocabulary scores ln V at any smoothing, and a fresh model about that;
    a perfect one still pays the smoothed target's entropy. Twice the first plus the second is a
    loss no run that learns reaches (it would be far worse than guessing), while a diverged one
    goes to millions; the margin is wide, so a spike that training recovers from is no divergence.
    """
    v, eps = float(vocab_size), float(smoothing)
    right = 1.0 - eps + eps / v  # the smoothed target's mass on the reference token
    entropy = -right * math.log(right) if right < 1.0 else 0.0
    if eps > 0.0:
        entropy -= eps * (v - 1.0) / v * math.log(eps / v)
    return 2.0 * math.log(v) + entropy


def loss_diverged(
    stats: StepStats,
    step: int,
    device: torch.device,
    context: DistributedContext,
    limit: float = math.inf,
    *,
    every_step: bool = False,
) -> bool:
    """Whether the step's loss is not finite (NaN or inf) or above `limit` a token (`loss_limit`),
    the same answer on every rank.

    Every step on a CPU; on other devices every STOP_CHECK_EVERY steps (each check waits for the
    device) or when `every_step` (the last step, before the run's end saves it) and, through
    `weights_are_finite`, before anything is saved. Ranks decide together.
    """
    if device.type != "cpu" and step % STOP_CHECK_EVERY and not every_step:
        return False
    loss = stats.mean_loss()
    bad = int(not math.isfinite(loss) or loss > limit)
    return bool(max_over_ranks(bad, context))


def describe_loss(stats: StepStats, limit: float) -> str:
    """The step's loss, as the divergence message names it."""
    loss = stats.mean_loss()
    if not math.isfinite(loss):
        return f"the loss is {loss:g}"
    return (
        f"the loss is {loss:.3g} nats a token, above the limit of {limit:.3g} (twice a uniform "
        "guess's over the vocabulary, plus the label smoothing's floor)"
    )


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

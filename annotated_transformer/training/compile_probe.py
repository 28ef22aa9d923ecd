"""Whether a run compiles its step, measured on the run's own step where the machine leaves it open.

`runtime.compiling.choose_compile` decides `compile="auto"` and caches the measured seconds; on a
CPU it needs a *probe* that times the run's step eagerly and compiled. The probe lives here, beside
the precision's, because it runs this package's forward, loss and optimizer on the run's first
batches, which the runtime layer below cannot import. It measures on copies of the model, with
every random generator put back, so measuring changes nothing about the run. Under DDP a single
rank that chose eager makes every rank train eagerly.
"""

from __future__ import annotations

import copy
import functools

import torch
import torch.nn as nn

from ..data.batching import EncodedPairs, TokenBatcher
from ..runtime.compiling import CompileChoice, choose_compile
from ..runtime.distributed import DistributedContext, max_over_ranks
from .loss import label_smoothed_cross_entropy
from .precision_probe import run_shape
from .probe_timing import collated_batches, time_alternately
from .schedule import build_optimizer
from .settings import TrainSettings
from .teacher_forcing import batch_loss

# Batches the probe steps through: distinct shapes, as a run's are. The first compiles one graph
# for every shape (`batch_loss` marks rows and length as varying); the later ones catch what
# Inductor still splits off by shape (on a CPU, a batch past 4,096 tokens changes how its C++
# reductions accumulate; on a GPU, a length that is a multiple of 8 is aligned).
PROBE_BATCHES = 3


def compiled_step_parts(model: nn.Module, **options):
    """The model and the loss as a compiled run uses them: two graphs, the loss's log-softmax, gather
    and mean fused instead of several float32 passes over the (tokens x vocabulary) logits.
    `options` go to torch.compile (the benchmark's quick mode picks another backend)."""
    return (
        torch.compile(model, **options),
        torch.compile(label_smoothed_cross_entropy, **options),
    )


def compile_options(settings: TrainSettings) -> dict:
    """torch.compile's options for a run's step: its `compile_mode` ("default": none given)."""
    return {} if settings.compile_mode == "default" else {"mode": settings.compile_mode}


def eager_loss():
    """The eager run's loss: the hand-written backward writes the gradient over the logits."""
    return functools.partial(label_smoothed_cross_entropy, inplace_backward=True)


def time_eager_and_compiled(
    model: nn.Module,
    data: EncodedPairs,
    batches: list[list[int]],
    device: torch.device,
    settings: TrainSettings,
    *,
    precision: str,
) -> dict[str, float]:
    """Seconds of the run's step (forward, loss, backward, fused Adam) eager and compiled, on copies of
    `model`, over the pairs of `batches` (each a list of indices into `data`).

    The first round through the batches warms up; its compiled excess over a steady round is the
    compile time. Then two rounds alternate the two, so load on the machine hits both alike.
    Returns {"eager": s per step, "compiled": s per step, "compile": s once}. Whatever compiling
    raises propagates (the caller falls back to eager). Learning rate 0: the copies keep their
    weights, so every round computes the same thing.
    """
    c = model.config
    tensors = collated_batches(c, data, batches, device)
    cpu = device.type == "cpu"
    variants = {}
    for name in ("eager", "compiled"):
        copy_ = copy.deepcopy(model).train()
        optimizer = build_optimizer(copy_, settings, device)
        for group in optimizer.param_groups:
            group["lr"] = 0.0
        if name == "eager":
            forward, loss_fn, rows_only = copy_, eager_loss(), cpu
        else:
            parts = compiled_step_parts(copy_, **compile_options(settings))
            (forward, loss_fn), rows_only = parts, False
        variants[name] = (forward, loss_fn, rows_only, optimizer)

    def one_round(name: str) -> None:
        forward, loss_fn, rows_only, optimizer = variants[name]
        for src, tgt in tensors:
            parts = batch_loss(
                forward,
                src,
                tgt,
                smoothing=c.label_smoothing,
                pad_id=c.pad_id,
                precision=precision,
                real_rows_only=rows_only,
                loss_fn=loss_fn,
            )
            parts.loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)

    rounds_of = {name: functools.partial(one_round, name) for name in variants}
    first, steady = time_alternately(rounds_of, rounds=2)
    return {
        "eager": steady["eager"] / len(tensors),
        "compiled": steady["compiled"] / len(tensors),
        "compile": max(0.0, first["compiled"] - steady["compiled"]),
    }


def planned_seconds(
    settings: TrainSettings, batcher: TokenBatcher, micro_batches_per_step: int
):
    """The run's training seconds as a function of an eager micro-batch's seconds: the time budget,
    or the steps (max_steps, or max_epochs of the first epoch's steps) times the step, whichever is
    shorter; None for a run without limits."""

    def seconds(step_s: float) -> float | None:
        limits = []
        if settings.time_budget_minutes is not None:
            limits.append(60.0 * settings.time_budget_minutes)
        if settings.max_steps is not None:
            limits.append(settings.max_steps * step_s * micro_batches_per_step)
        if settings.max_epochs is not None:
            steps = settings.max_epochs * batcher.steps_per_epoch(0)
            limits.append(steps * step_s * micro_batches_per_step)
        return min(limits) if limits else None

    return seconds


def training_compile(
    model: nn.Module,
    settings: TrainSettings,
    data: EncodedPairs,
    batcher: TokenBatcher,
    context: DistributedContext,
    *,
    precision: str,
    micro_batches_per_step: int = 1,
) -> CompileChoice:
    """settings.compile resolved for this run: "auto" on a CPU times the run's own step, eager and
    compiled, on its first batches (once per machine and shape); all ranks end up alike."""
    shape = {**run_shape(model, settings), "precision": precision}
    if settings.compile_mode != "default":  # the default's answers keep their earlier key
        shape["compile_mode"] = settings.compile_mode
    choice = choose_compile(
        settings.compile,
        context.device,
        probe=lambda: time_eager_and_compiled(
            model,
            data,
            batcher.epoch_batches(0)[:PROBE_BATCHES],
            context.device,
            settings,
            precision=precision,
        ),
        shape=shape,
        run_seconds=planned_seconds(settings, batcher, micro_batches_per_step),
    )
    if context.is_distributed:  # every rank must compute alike: eager if any rank says so
        any_eager = max_over_ranks(int(not choice.compile), context)
        if any_eager and choice.compile:
            choice = CompileChoice(
                False, choice.reason + "; another rank chose eager", choice.seconds
            )
    return choice

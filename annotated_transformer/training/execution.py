"""How a run's step executes, decided once before the trainer is built: precision and compiling.

Both choices can need the machine's answer: "auto" on a CPU with bf16 instructions times the run's
own step in both precisions (`precision_probe`), and compiling "auto" on a CPU times it eager and
compiled (`compile_probe`), each cached per machine and model shape. `choose_execution` runs the
two in that order (compiling is timed in the chosen precision) and returns one `StepExecution`,
which the `Trainer` takes as given: building a trainer never measures anything, and a test or a
benchmark can hand it any execution it wants to study.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch.nn as nn

from ..data.batching import EncodedPairs
from ..runtime.distributed import DistributedContext
from .compile_probe import training_compile
from .global_batches import run_batcher
from .precision_probe import training_precision
from .settings import TrainSettings


@dataclass(frozen=True)
class StepExecution:
    """The precision a run trains in and whether its step is compiled, each with its reason."""

    precision: str  # "bf16", "fp16" or "fp32"
    precision_reason: str
    compiled: bool
    compile_reason: str
    # compiling was tried and raised; compile_reason says what
    compile_failed: bool = False
    # On a CPU the eager step computes logits for real target tokens only (4% of a `base` step,
    # results/benchmarks/cpu_train.json). A compiled graph keeps every row (a boolean selection's
    # size depends on the data, which breaks the graph), and a GPU keeps them too: selecting costs
    # a host synchronisation per micro-batch, unmeasured against what it saves.
    real_rows_only: bool = False


def choose_execution(
    model: nn.Module,
    settings: TrainSettings,
    train_data: EncodedPairs,
    context: DistributedContext,
) -> StepExecution:
    """`settings.precision` and `settings.compile` resolved for `model` on `context.device`.

    Explicit settings are taken as asked and cost nothing. "auto" may time the run's first batches
    (on copies of the model, every random generator put back), so the run that follows is the same
    as if nothing had been measured; under DDP all ranks end up with the same execution.
    """
    on_cpu = context.device.type == "cpu"
    batcher = run_batcher(train_data, settings, context.world_size)
    precision = training_precision(
        model,
        settings,
        train_data,
        batcher,
        context,
        # the eager step, unless compiling was asked for
        real_rows_only=on_cpu and settings.compile is not True,
    )
    compiling = training_compile(
        model,
        settings,
        train_data,
        batcher,
        context,
        precision=precision.precision,
        micro_batches_per_step=settings.accumulation,
    )
    return StepExecution(
        precision=precision.precision,
        precision_reason=precision.reason,
        compiled=compiling.compile,
        compile_reason=compiling.reason,
        compile_failed=compiling.failed,
        real_rows_only=on_cpu and not compiling.compile,
    )

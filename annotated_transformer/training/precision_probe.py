"""The precision a run trains in, measured on the run's own step where the hardware leaves it open.

`runtime.precision.choose_precision` decides "auto" and caches a measured answer per machine and
model shape; on a CPU with bf16 instructions it needs a *probe* that times the training step in
both precisions. The probe lives here rather than beside it because it runs this package's forward
and loss on the run's first batches, which the runtime layer below cannot import. Under DDP every
rank must compute alike (fp16 alone scales its gradients), so where ranks choose differently all of
them take the one every rank computes in: fp32 before fp16 before bf16.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Sequence

import torch
import torch.nn as nn

from ..data.batching import EncodedPairs, TokenBatcher
from ..runtime.distributed import DistributedContext, max_over_ranks
from ..runtime.precision import PrecisionChoice, choose_precision
from .probe_timing import collated_batches, time_alternately
from .settings import TrainSettings
from .teacher_forcing import batch_loss

# Where ranks choose differently, the later wins: a GPU with bf16 computes fp16 too, and every
# device fp32.
BY_REACH = ("bf16", "fp16", "fp32")


def run_shape(model: nn.Module, settings: TrainSettings) -> dict:
    """What the timing depends on besides the machine: the model's widths, vocabulary and batch."""
    c = model.config
    return {
        "d_model": c.d_model,
        "d_ff": c.d_ff,
        "n_heads": c.n_heads,
        "layers": [c.encoder_layers, c.decoder_layers],
        "vocab": model.tgt_embed.num_embeddings,
        "batch_tokens": settings.batch_tokens,
    }


#: Batches each precision is timed on after its warm-up: distinct batches, as training meets them.
PROBE_BATCHES = 8


def time_both_precisions(
    model: nn.Module,
    data: EncodedPairs,
    batches: Sequence[list[int]],
    device: torch.device,
    *,
    real_rows_only: bool,
) -> dict[str, float]:
    """Median seconds of `model`'s forward and backward per batch, fp32 and bf16 interleaved
    (`probe_timing`), on a copy of the model, so measuring changes nothing about the run.

    Each precision steps through the same `batches` (pairs of `data`) in order, each batch once,
    the first as its warm-up (a run of fewer than four batches goes round them again): a run meets a new shape at almost every step, and oneDNN builds its
    bf16 kernels per shape, which one batch timed again and again hides (on an AMX Xeon the
    parser's step measured 1.17x faster in bf16 that way and trained 1.5x slower in it)."""
    model = copy.deepcopy(model).train()
    c = model.config
    collated = collated_batches(c, data, batches, device)

    def stepper(precision: str):
        batch = itertools.cycle(collated)

        def step():
            src, tgt = next(batch)
            parts = batch_loss(
                model,
                src,
                tgt,
                smoothing=c.label_smoothing,
                pad_id=c.pad_id,
                precision=precision,
                real_rows_only=real_rows_only,
            )
            parts.loss.backward()
            model.zero_grad(set_to_none=True)

        return step

    variants = {p: stepper(p) for p in ("fp32", "bf16")}
    return time_alternately(variants, rounds=max(len(collated) - 1, 3))[1]


def training_precision(
    model: nn.Module,
    settings: TrainSettings,
    data: EncodedPairs,
    batcher: TokenBatcher,
    context: DistributedContext,
    *,
    real_rows_only: bool,
) -> PrecisionChoice:
    """settings.precision resolved for this run: "auto" on a CPU with bf16 instructions times the
    run's own step on its first batches (once per machine and shape); all ranks end up alike."""
    choice = choose_precision(
        settings.precision,
        context.device,
        probe=lambda: time_both_precisions(
            model,
            data,
            batcher.epoch_batches(0)[: PROBE_BATCHES + 1],
            context.device,
            real_rows_only=real_rows_only,
        ),
        shape=run_shape(model, settings),
    )
    if context.is_distributed:  # every rank must compute alike
        common = BY_REACH[max_over_ranks(BY_REACH.index(choice.precision), context)]
        if common != choice.precision:
            choice = PrecisionChoice(
                common, choice.reason + f"; another rank chose {common}"
            )
    return choice

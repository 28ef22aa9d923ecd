"""A run's batches: one optimizer step takes one *global batch* of micro-batches.

A global batch is `accumulation x world_size` micro-batches of about `batch_tokens` tokens each,
fixed by the data and the seed alone. The batcher makes the number of micro-batches per epoch a
multiple of that, so the plan does not depend on how the product is split between ranks and
accumulation: one process accumulating N micro-batches and N processes (DDP) take the same steps.
"""

from __future__ import annotations

import numpy as np

from ..data.batching import (
    SRC_SPECIALS,
    TGT_SPECIALS,
    EncodedPairs,
    LengthBuckets,
    TokenBatcher,
)
from .settings import TrainSettings


def micro_batches_per_step(settings: TrainSettings, world_size: int) -> int:
    """How many micro-batches one optimizer step takes, over all ranks."""
    return settings.accumulation * world_size


def run_batcher(
    train_data: EncodedPairs, settings: TrainSettings, world_size: int
) -> TokenBatcher:
    """The shuffled token batches of a run on `world_size` ranks, the same for every rank (with
    `settings.length_buckets`, padded to `run_buckets(train_data)`)."""
    return TokenBatcher(
        train_data.src_lengths,
        train_data.tgt_lengths,
        settings.batch_tokens,
        shuffle=True,
        seed=settings.seed,
        batches_per_step=micro_batches_per_step(settings, world_size),
        skip_too_long=True,
        buckets=run_buckets(train_data) if settings.length_buckets else None,
    )


def run_buckets(train_data: EncodedPairs) -> LengthBuckets:
    """The widths a bucketed run pads to: 8, 12, 16, 24, 32, ... up to its widest pair (bos and eos
    included), and the widest source among them, so every pair has a bucket, no source is padded
    past the widest source (a target may be one position wider than the encoder's positions hold:
    the decoder reads all but its last), and the plan depends on the data alone."""
    widest_src = int(np.max(train_data.src_lengths, initial=0)) + SRC_SPECIALS
    widest_tgt = int(np.max(train_data.tgt_lengths, initial=0)) + TGT_SPECIALS
    sizes = LengthBuckets.doubling(max(widest_src, widest_tgt)).sizes
    return LengthBuckets(sorted({*sizes, widest_src}))

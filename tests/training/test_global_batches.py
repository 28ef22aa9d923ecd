"""A step takes accumulation x world_size micro-batches, and the plan of steps depends on that
product alone: one process accumulating N takes the steps N ranks take."""

import numpy as np
import pytest

from annotated_transformer.data.batching import EncodedPairs
from annotated_transformer.training.global_batches import (
    micro_batches_per_step,
    run_batcher,
)
from annotated_transformer.training.settings import TrainSettings
from tests.support.training import copy_pairs

PAIRS = copy_pairs(120, 0)


def settings(**changes) -> TrainSettings:
    return TrainSettings(max_steps=10, batch_tokens=96, **changes)


@pytest.mark.parametrize("accumulation,world", [(1, 1), (3, 1), (1, 4), (2, 3)])
def test_a_step_takes_accumulation_times_world_size_micro_batches(accumulation, world):
    assert micro_batches_per_step(settings(accumulation=accumulation), world) == (
        accumulation * world
    )


@pytest.mark.parametrize("accumulation,world", [(1, 1), (2, 1), (3, 1), (2, 2), (1, 5)])
def test_every_epoch_is_whole_steps_of_every_pair_once(accumulation, world):
    batcher = run_batcher(PAIRS, settings(accumulation=accumulation), world)
    for epoch in range(3):
        batches = batcher.epoch_batches(epoch)
        assert len(batches) % (accumulation * world) == 0
        assert sorted(i for batch in batches for i in batch) == list(range(len(PAIRS)))
        assert batcher.steps_per_epoch(epoch) == len(batches) // (accumulation * world)


def test_accumulating_two_and_two_ranks_plan_the_same_batches():
    accumulated = run_batcher(PAIRS, settings(accumulation=2), world_size=1)
    distributed = run_batcher(PAIRS, settings(accumulation=1), world_size=2)
    for epoch in range(3):
        assert accumulated.epoch_batches(epoch) == distributed.epoch_batches(epoch)


def test_the_plan_is_the_seeds_and_each_epoch_its_own():
    first = run_batcher(PAIRS, settings(seed=1), 1)
    again = run_batcher(PAIRS, settings(seed=1), 1)
    other = run_batcher(PAIRS, settings(seed=2), 1)
    assert first.epoch_batches(0) == again.epoch_batches(0)
    assert first.epoch_batches(0) != other.epoch_batches(0)
    assert first.epoch_batches(0) != first.epoch_batches(1)


def test_every_micro_batch_fits_batch_tokens_on_both_sides():
    batcher = run_batcher(PAIRS, settings(), 1)
    src = np.asarray(PAIRS.src_lengths) + 1  # + eos
    tgt = np.asarray(PAIRS.tgt_lengths) + 2  # + bos and eos
    for batch in batcher.epoch_batches(0):
        assert src[batch].max() * len(batch) <= 96
        assert tgt[batch].max() * len(batch) <= 96


def test_a_pair_too_long_for_a_micro_batch_is_left_out_not_fatal():
    long_pair = list(range(4, 24)) * 5  # 100 tokens: more than 96 slots alone
    seqs = [list(PAIRS[i][0]) for i in range(len(PAIRS))] + [long_pair]
    pairs = EncodedPairs(seqs, seqs)
    batcher = run_batcher(pairs, settings(), 1)
    assert batcher.too_long == [len(PAIRS)]
    used = sorted(i for batch in batcher.epoch_batches(0) for i in batch)
    assert used == list(range(len(PAIRS)))


def test_a_bucketed_plan_pads_to_a_few_shapes_and_keeps_every_pair_once():
    from annotated_transformer.training.global_batches import run_buckets

    plain = run_batcher(PAIRS, settings(), 1)
    bucketed = run_batcher(PAIRS, settings(length_buckets=True), 1)
    buckets = run_buckets(PAIRS)
    # the copy pairs are 3..9 tokens: widths 4..10 (source + eos) and 5..11 (bos + target + eos);
    # the widest source, 10, is a size of its own
    assert buckets.sizes == (8, 10, 11) and bucketed.buckets is not None
    assert plain.buckets is None and plain.padded_shape([0, 1]) is None
    shapes = set()
    for epoch in range(3):
        batches = bucketed.epoch_batches(epoch)
        assert sorted(i for b in batches for i in b) == list(range(len(PAIRS)))
        for batch in batches:
            rows, src, tgt = bucketed.padded_shape(batch)
            assert src in buckets.sizes and tgt in buckets.sizes
            assert rows >= len(batch) and rows * max(src, tgt) <= 96
            shapes.add((rows, src, tgt))
    assert len(shapes) <= len(buckets) ** 2


def test_no_source_is_padded_past_the_widest_source():
    # Targets carry bos and eos, so the widest target can be one position wider than the widest
    # source, which may already fill the encoder's positions: 97 + eos = 98 source positions,
    # 97 + bos + eos = 99 target positions. Buckets up to 99 alone would pad that source to 99.
    from annotated_transformer.training.global_batches import run_buckets

    pairs = EncodedPairs([[5] * 97, [6] * 40, [7] * 3], [[5] * 97, [6] * 40, [7] * 3])
    buckets = run_buckets(pairs)
    assert 98 in buckets.sizes and buckets.largest == 99
    batcher = run_batcher(
        pairs, TrainSettings(max_steps=1, batch_tokens=100, length_buckets=True), 1
    )
    for batch in batcher.epoch_batches(0):
        rows, src, tgt = batcher.padded_shape(batch)
        assert src <= 98 and tgt <= 99

"""Length buckets: off, batches are exactly today's; on, every batch takes one of a few shapes and
its loss is the unpadded batch's loss."""

import numpy as np
import pytest
import torch

from annotated_transformer import Transformer, preset
from annotated_transformer.data import LengthBuckets, TokenBatcher, collate_pairs
from annotated_transformer.training.teacher_forcing import batch_loss

V = 60


def corpus(n=600, seed=0):
    """Sentence pairs with caption-like lengths (2 to 40 subwords, most near 12), targets
    correlated with sources as in a translation corpus."""
    rng = np.random.default_rng(seed)
    src_len = np.clip(rng.gamma(4.0, 3.0, n).astype(int), 2, 40)
    tgt_len = np.clip(src_len + rng.integers(-3, 4, n), 2, 40)
    pairs = [
        (rng.integers(4, V, s).tolist(), rng.integers(4, V, t).tolist())
        for s, t in zip(src_len, tgt_len)
    ]
    return pairs, src_len, tgt_len


def test_doubling_buckets_grow_by_halves_and_end_at_the_largest():
    assert LengthBuckets.doubling(64).sizes == (8, 12, 16, 24, 32, 48, 64)
    assert LengthBuckets.doubling(50).sizes == (8, 12, 16, 24, 32, 48, 50)
    assert LengthBuckets.doubling(6).sizes == (6,)
    b = LengthBuckets([8, 16, 32])
    assert b.widths([1, 8, 9, 16, 17, 32, 40]).tolist() == [8, 8, 16, 16, 32, 32, 40]
    with pytest.raises(ValueError):
        LengthBuckets([16, 8])


def test_without_buckets_the_batches_and_tensors_are_todays():
    pairs, src_len, tgt_len = corpus()
    plain = TokenBatcher(src_len, tgt_len, 300, seed=3)
    off = TokenBatcher(src_len, tgt_len, 300, seed=3, buckets=None)
    for epoch in (0, 1):
        assert plain.epoch_batches(epoch) == off.epoch_batches(epoch)
    for batch in off.epoch_batches(0)[:20]:
        assert off.padded_shape(batch) is None
        a = collate_pairs([pairs[i] for i in batch])
        b = collate_pairs([pairs[i] for i in batch], pad_to=off.padded_shape(batch))
        assert all(torch.equal(x, y) for x, y in zip(a, b))


def test_bucketed_batches_take_at_most_buckets_squared_shapes():
    # An epoch of caption-length pairs (corpus above): rows follow from the two bucketed widths,
    # so the number of (rows, source width, target width) shapes is at most len(buckets) ** 2.
    pairs, src_len, tgt_len = corpus(2000)
    buckets = LengthBuckets.doubling(48)
    batcher = TokenBatcher(src_len, tgt_len, 400, seed=1, buckets=buckets)
    shapes = set()
    seen = []
    for batch in batcher.epoch_batches(0):
        shape = batcher.padded_shape(batch)
        src, tgt = collate_pairs([pairs[i] for i in batch], pad_to=shape)
        assert tuple(src.shape) == shape[:2] and tuple(tgt.shape) == (shape[0], shape[2])
        assert shape[1] in buckets.sizes and shape[2] in buckets.sizes
        assert src.numel() <= 400 and tgt.numel() <= 400
        shapes.add(shape)
        seen += batch
    assert sorted(seen) == list(range(len(pairs)))  # every pair once
    plain_shapes = {
        (len(b), int(src_len[b].max()), int(tgt_len[b].max()))
        for b in TokenBatcher(src_len, tgt_len, 400, seed=1).epoch_batches(0)
    }
    assert len(shapes) <= len(buckets) ** 2 < len(plain_shapes)


@pytest.mark.parametrize("real_rows_only", [True, False])
def test_a_bucketed_batch_has_the_unbucketed_loss(real_rows_only):
    pairs, src_len, tgt_len = corpus(200, seed=2)
    torch.manual_seed(0)
    model = Transformer(preset("tiny", dropout=0.0), V, V).eval()
    batcher = TokenBatcher(
        src_len, tgt_len, 300, seed=0, buckets=LengthBuckets.doubling(48)
    )
    for batch in batcher.epoch_batches(0)[:6]:
        chosen = [pairs[i] for i in batch]
        shape = batcher.padded_shape(batch)
        assert shape[0] >= len(batch)
        losses = []
        for pad_to in (None, shape):
            src, tgt = collate_pairs(chosen, pad_to=pad_to)
            with torch.no_grad():
                parts = batch_loss(
                    model,
                    src,
                    tgt,
                    smoothing=0.1,
                    pad_id=0,
                    real_rows_only=real_rows_only,
                )
            losses.append(parts)
        plain, bucketed = losses
        assert float(bucketed.tokens) == float(plain.tokens)
        torch.testing.assert_close(bucketed.loss, plain.loss, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(bucketed.nll, plain.nll, rtol=1e-5, atol=1e-5)


def test_pairs_past_the_largest_bucket_count_as_too_long():
    with pytest.raises(ValueError, match="do not fit"):
        TokenBatcher([5, 30], [5, 5], 100, buckets=LengthBuckets([8, 16]))
    batcher = TokenBatcher(
        [5, 30, 6], [5, 5, 6], 100, buckets=LengthBuckets([8, 16]), skip_too_long=True
    )
    assert batcher.too_long == [1]

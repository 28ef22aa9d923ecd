"""The decoder reads the reference shifted right and is scored on every next token; validation
measures exactly that, per target subword, eos included."""

import math

import pytest
import torch

from annotated_transformer import Transformer
from annotated_transformer.data.batching import collate_pairs
from annotated_transformer.runtime.distributed import DistributedContext
from annotated_transformer.training import teacher_forcing
from annotated_transformer.training.loss import label_smoothed_cross_entropy
from annotated_transformer.training.teacher_forcing import batch_loss, teacher_forced_loss
from tests.support.training import VOCAB, copy_pairs, tiny_profile

CONFIG = tiny_profile().model_config()
PAIRS = copy_pairs(12, 0)


@pytest.fixture(scope="module")
def model() -> Transformer:
    torch.manual_seed(0)
    return Transformer(CONFIG, VOCAB, VOCAB).eval()


def batch(indices=range(6)):
    return collate_pairs(
        [PAIRS[i] for i in indices], CONFIG.pad_id, CONFIG.bos_id, CONFIG.eos_id
    )


def target_tokens(indices) -> int:
    return sum(len(PAIRS[i][1]) + 1 for i in indices)  # each pair's tokens and its eos


def test_real_rows_only_gives_the_all_rows_loss(model):
    src, tgt = batch()
    assert (tgt == CONFIG.pad_id).any()  # there is padding to leave out
    kwargs = dict(smoothing=0.1, pad_id=CONFIG.pad_id)
    real = batch_loss(model, src, tgt, real_rows_only=True, **kwargs)
    every = batch_loss(model, src, tgt, real_rows_only=False, **kwargs)
    torch.testing.assert_close(real.loss, every.loss, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(real.nll, every.nll, rtol=1e-5, atol=1e-5)
    assert real.tokens == every.tokens == target_tokens(range(6))


def test_the_decoder_reads_the_reference_shifted_right(model):
    src, tgt = batch()
    parts = batch_loss(
        model, src, tgt, smoothing=0.0, pad_id=CONFIG.pad_id, real_rows_only=False
    )
    with torch.no_grad():
        logits = model(src, tgt[:, :-1])
    expected = label_smoothed_cross_entropy(logits, tgt[:, 1:], 0.0, CONFIG.pad_id)
    torch.testing.assert_close(parts.loss, expected.loss)
    assert (tgt[:, 0] == CONFIG.bos_id).all()  # bos is read, never predicted


def test_the_loss_function_given_scores_the_batch(model):
    seen = []

    def loss_fn(logits, target, smoothing, pad_id):
        seen.append((logits.shape[-1], smoothing, pad_id))
        return label_smoothed_cross_entropy(logits, target, smoothing, pad_id)

    src, tgt = batch()
    batch_loss(model, src, tgt, smoothing=0.2, pad_id=CONFIG.pad_id, loss_fn=loss_fn)
    assert seen == [(VOCAB, 0.2, CONFIG.pad_id)]


def test_validation_is_a_mean_per_target_token_with_eos(model):
    result = teacher_forced_loss(model, PAIRS, batch_tokens=10_000, label_smoothing=0.0)
    assert result["tokens"] == target_tokens(range(len(PAIRS)))
    assert result["loss"] == pytest.approx(result["nll"])  # no smoothing
    assert result["ppl"] == pytest.approx(math.exp(result["nll"]))
    src, tgt = batch(range(len(PAIRS)))
    whole = batch_loss(model, src, tgt, smoothing=0.0, pad_id=CONFIG.pad_id)
    assert result["nll"] == pytest.approx(whole.nll.item() / result["tokens"], rel=1e-5)


def test_validation_does_not_depend_on_the_batch_size(model):
    big = teacher_forced_loss(model, PAIRS, batch_tokens=10_000)
    small = teacher_forced_loss(model, PAIRS, batch_tokens=40)
    assert small["tokens"] == big["tokens"]
    assert small["loss"] == pytest.approx(big["loss"], rel=1e-5)
    assert small["nll"] == pytest.approx(big["nll"], rel=1e-5)


def test_the_loss_entry_smooths_like_the_model_unless_told(model):
    default = teacher_forced_loss(model, PAIRS)
    told = teacher_forced_loss(model, PAIRS, label_smoothing=CONFIG.label_smoothing)
    plain = teacher_forced_loss(model, PAIRS, label_smoothing=0.0)
    assert CONFIG.label_smoothing > 0 and default == told
    assert plain["nll"] == default["nll"] and plain["loss"] != default["loss"]


@pytest.mark.parametrize("training", [True, False])
def test_validation_runs_without_dropout_and_leaves_the_mode_as_it_was(training):
    torch.manual_seed(0)
    model = Transformer(CONFIG, VOCAB, VOCAB).train(training)
    assert CONFIG.dropout > 0
    first = teacher_forced_loss(model, PAIRS)
    assert teacher_forced_loss(model, PAIRS) == first
    assert model.training is training


def test_ranks_share_the_batches_out_and_add_the_sums(model, monkeypatch):
    partial = []

    def this_rank_only(tensor, context):
        partial.append(tensor.clone())
        return tensor

    monkeypatch.setattr(teacher_forcing, "all_reduce_sum", this_rank_only)
    for rank in (0, 1):
        context = DistributedContext(rank=rank, world_size=2)
        teacher_forced_loss(model, PAIRS, batch_tokens=40, context=context)
    whole = teacher_forced_loss(model, PAIRS, batch_tokens=40)
    loss, nll, tokens = (partial[0] + partial[1]).tolist()
    assert partial[0][2] > 0 and partial[1][2] > 0  # each rank had batches of its own
    assert tokens == whole["tokens"]
    assert nll / tokens == pytest.approx(whole["nll"], rel=1e-6)


def test_pairs_longer_than_a_batch_are_left_out(model):
    result = teacher_forced_loss(
        model, PAIRS, batch_tokens=8
    )  # 6 tokens with bos and eos
    fits = [
        i
        for i in range(len(PAIRS))
        if len(PAIRS[i][1]) + 2 <= 8 and len(PAIRS[i][0]) + 1 <= 8
    ]
    assert 0 < len(fits) < len(PAIRS)
    assert result["tokens"] == target_tokens(fits)

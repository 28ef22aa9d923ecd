"""What `model(...)`, `encode`, `decode` and `attention_maps` accept: one row of targets per row of
sources, masks of the same batch, and no more positions than the model's max_len; anything else
is one ValueError line naming the shapes and the limit. The checks read Python ints from .shape,
so the compiled graph and the ONNX export keep working (tests/web/test_onnx_export.py)."""

from __future__ import annotations

import pytest
import torch

from annotated_transformer import Transformer, attention_maps, preset
from annotated_transformer.model.decoding import beam_search, greedy_decode

MAX_LEN = 8


def tiny(positional: str = "sinusoidal") -> Transformer:
    torch.manual_seed(0)
    return Transformer(
        preset("tiny", max_len=MAX_LEN, dropout=0.0, positional=positional), 50, 50
    ).eval()


def ids(rows: int, length: int) -> torch.Tensor:
    return torch.randint(4, 50, (rows, length))


def one_line(caught) -> str:
    message = str(caught.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize("rows", [(1, 3), (3, 1), (2, 3)])
def test_model_refuses_sources_and_targets_of_different_batches(rows):
    model = tiny()
    src, tgt = ids(rows[0], 5), ids(rows[1], 4)
    with pytest.raises(ValueError) as caught:
        model(src, tgt)
    message = one_line(caught)
    assert (
        f"src {tuple(src.shape)}" in message and f"tgt_in {tuple(tgt.shape)}" in message
    )
    with pytest.raises(ValueError, match="rows"):
        attention_maps(model, src, tgt)


@pytest.mark.parametrize("positional", ["sinusoidal", "learned"])
@pytest.mark.parametrize("src_len, tgt_len", [(MAX_LEN + 1, 3), (3, MAX_LEN + 1)])
def test_model_refuses_sequences_longer_than_max_len(positional, src_len, tgt_len):
    model = tiny(positional)
    src, tgt = ids(2, src_len), ids(2, tgt_len)
    with pytest.raises(ValueError) as caught:
        model(src, tgt)
    message = one_line(caught)
    assert f"max_len={MAX_LEN}" in message and f"{MAX_LEN + 1} positions" in message
    assert str(tuple((src if src_len > MAX_LEN else tgt).shape)) in message
    with pytest.raises(ValueError, match=f"max_len={MAX_LEN}"):
        attention_maps(model, src, tgt)


def test_sequences_of_exactly_max_len_and_matching_batches_run():
    for positional in ("sinusoidal", "learned"):
        model = tiny(positional)
        out = model(ids(3, MAX_LEN), ids(3, MAX_LEN))
        assert out.shape == (3, MAX_LEN, 50) and torch.isfinite(out).all()
        maps = attention_maps(model, ids(1, MAX_LEN), ids(1, MAX_LEN))
        assert maps["decoder_cross"][0].shape[-2:] == (MAX_LEN, MAX_LEN)


def test_attention_maps_refuse_a_long_source_without_targets():
    with pytest.raises(ValueError, match=rf"src \(1, {MAX_LEN + 3}\).*max_len={MAX_LEN}"):
        attention_maps(tiny(), ids(1, MAX_LEN + 3))


def test_encode_and_decode_refuse_masks_and_memory_of_another_batch():
    model = tiny()
    src = ids(2, 5)
    with pytest.raises(ValueError) as caught:
        model.encode(src, model.source_mask(src[:1]))
    assert "src_mask (1, 1, 1, 5)" in one_line(caught) and "(2, 1, 1, 5)" in str(
        caught.value
    )
    memory = model.encode(src)
    with pytest.raises(ValueError) as caught:
        model.decode(ids(3, 4), memory, model.source_mask(src))
    assert "memory (2, 5, " in one_line(caught) and "tgt_in (3, 4)" in str(caught.value)
    with pytest.raises(
        ValueError, match=r"src_mask \(1, 1, 1, 5\) does not fit the 2 rows"
    ):
        model.decode(ids(2, 4), memory, model.source_mask(src[:1]))
    with pytest.raises(ValueError, match="batch, length"):
        model.encode(src[0])


def test_incremental_decoding_refuses_steps_past_max_len_and_other_batches():
    model = tiny()
    memory, state = model.start_decoding(ids(2, 4), cache_size=MAX_LEN + 2)
    with pytest.raises(ValueError, match="does not fit the 3 rows"):
        model.decode(ids(3, 1), None, state.src_mask, state)
    step = ids(2, 1)
    for _ in range(MAX_LEN):
        model.decode(step, None, state.src_mask, state)
    with pytest.raises(ValueError) as caught:
        model.decode(step, None, state.src_mask, state)
    assert f"positions {MAX_LEN}..{MAX_LEN}" in one_line(caught)


# ------------------------------------------------------------------------------------------ values
# Token ids the embedding holds, of an integer dtype it looks up with, and boolean masks: anything
# else is one ValueError line naming the tensor, before any layer runs (an id past the vocabulary
# was an IndexError deep inside the embedding, a device-side assert on a GPU; a float mask was
# refused by attention in words about SDPA, or added to the scores).
VOCAB = 50


@pytest.mark.parametrize("bad", [VOCAB, VOCAB + 7, -1])
@pytest.mark.parametrize("where", ["src", "tgt_in"])
def test_ids_outside_the_vocabulary_are_refused_in_one_line(bad, where):
    model = tiny()
    src, tgt = ids(2, 5), ids(2, 4)
    (src if where == "src" else tgt)[1, 2] = bad
    calls = [lambda: model(src, tgt)]
    if where == "src":
        calls += [
            lambda: model.encode(src),
            lambda: greedy_decode(model, src, 3),
            lambda: beam_search(model, src, 2),
            lambda: attention_maps(model, src),
        ]
    else:
        memory = model.encode(src)
        calls += [lambda: model.decode(tgt, memory, model.source_mask(src))]
    for call in calls:
        with pytest.raises(ValueError) as caught:
            call()
        assert one_line(caught).startswith(f"{where} holds token id {bad}, outside")
        assert f"vocabulary 0..{VOCAB - 1}" in str(caught.value)


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.float64, torch.bfloat16, torch.bool, torch.uint8]
)
def test_ids_of_another_dtype_are_refused_in_one_line(dtype):
    model = tiny()
    src, tgt = ids(2, 5), ids(2, 4)
    for bad_src, bad_tgt in ((src.to(dtype), tgt), (src, tgt.to(dtype))):
        with pytest.raises(ValueError) as caught:
            model(bad_src, bad_tgt)
        name = "src" if bad_src.dtype == dtype else "tgt_in"
        assert one_line(caught).startswith(f"{name} must hold integer token ids")
        assert str(dtype) in str(caught.value)
    with pytest.raises(ValueError, match="src must hold integer token ids"):
        greedy_decode(model, src.to(dtype), 3)


def test_int32_ids_run_as_long_ones_do():
    model = tiny()
    src, tgt = ids(2, 5), ids(2, 4)
    torch.testing.assert_close(model(src.int(), tgt.int()), model(src, tgt))


@pytest.mark.parametrize(
    "mask_dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.uint8]
)
def test_a_mask_that_is_not_boolean_is_refused_not_added(mask_dtype):
    """An additive 0/-inf mask is what other code bases pass; attention here obeys booleans."""
    model = tiny()
    src, tgt = ids(2, 5), ids(2, 4)
    good = model.source_mask(src)
    additive = torch.zeros(good.shape).masked_fill(~good, float("-inf"))
    bad = (additive if mask_dtype.is_floating_point else good).to(mask_dtype)
    memory = model.encode(src)
    for call in (
        lambda: model.encode(src, bad),
        lambda: model.decode(tgt, memory, bad),
    ):
        with pytest.raises(ValueError) as caught:
            call()
        assert one_line(caught).startswith("src_mask must be a boolean mask")
        assert str(mask_dtype) in str(caught.value)
    memory, state = model.start_decoding(src, cache_size=4)
    state.src_mask = state.src_mask.float()
    with pytest.raises(
        ValueError, match="the decoder state's src_mask must be a boolean"
    ):
        model.decode(ids(2, 1), None, state.src_mask, state)


def test_the_value_check_is_one_reduction_and_off_while_compiling(monkeypatch):
    """The ids' range is read once per call, and not inside a traced graph (a graph break)."""
    from annotated_transformer.model import transformer

    model = tiny()
    src, tgt = ids(2, 5), ids(2, 4)
    reads = []
    real = torch.aminmax
    monkeypatch.setattr(
        torch, "aminmax", lambda t, *a, **k: reads.append(t.shape) or real(t, *a, **k)
    )
    model(src, tgt)
    assert reads == [src.shape, tgt.shape]  # one read-back for the two
    reads.clear()
    # a decoder's own steps feed back its own argmax: only the source is read, no step's ids
    greedy_decode(model, src, 4)
    beam_search(model, src, 2, 0.6, 0.0, 4)
    assert reads and all(shape == src.shape for shape in reads)
    reads.clear()
    monkeypatch.setattr(transformer, "is_compiling", lambda: True)
    model(src, tgt)
    assert reads == []

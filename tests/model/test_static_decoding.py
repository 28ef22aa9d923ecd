"""The static-shape decoders (what a CUDA graph replays) return greedy_decode's tokens and
beam_search's hypotheses and scores."""

import pytest
import torch

from annotated_transformer import Transformer, beam_search, greedy_decode, preset
from annotated_transformer.model.static_decoding import (
    StaticBeamDecoder,
    StaticGreedyDecoder,
    capture_step,
    static_beam_search,
    static_greedy_decode,
)
from annotated_transformer.runtime.precision import autocast_context
from tests.support.gpu import NEEDS_GPU, on_a_gpu

V = 40


def random_model(eos_above: float | None = None, sharpen: float = 1.0, **overrides):
    """A random model; with `eos_above`, end-of-sentence wins wherever the sum of the decoder's
    first four output features exceeds it, so rows end at different, content-dependent steps
    (a constant bias ends every row at once or never)."""
    model = Transformer(preset("tiny", dropout=0.0, **overrides), V, V).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(sharpen)
    if eos_above is not None:
        eos = model.config.eos_id

        def push_eos(module, inputs, output):
            output[..., eos] += 1000.0 * (inputs[0][..., :4].sum(-1) > eos_above)
            return output

        model.generator.register_forward_hook(push_eos)
    return model


def random_sources(rows: int, width: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, V, (rows, width), generator=g)
    lengths = torch.randint(1, width + 1, (rows,), generator=g)
    for i, n in enumerate(lengths.tolist()):
        src[i, n - 1] = 2  # eos
        src[i, n:] = 0
    return src


@pytest.mark.parametrize("positional", ["sinusoidal", "learned"])
@pytest.mark.parametrize("eos_above", [None, 1.0, 1.5])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_static_decoder_returns_greedy_tokens(positional, eos_above, seed):
    torch.manual_seed(seed)
    model = random_model(eos_above, sharpen=3.0, positional=positional)
    rows, width = (1, 3, 5)[seed], (4, 7, 9)[seed]
    src = random_sources(rows, width, seed)
    for max_new in (1, 5, 17):
        expected = greedy_decode(model, src, max_new)
        assert torch.equal(static_greedy_decode(model, src, max_new), expected)
        assert torch.equal(greedy_decode(model, src, max_new, use_cache=False), expected)


def test_rows_end_at_different_steps_and_checks_run_past_them():
    # These rows end after 1, 1, 2, 26, 1 and 1 tokens; a check every 5 steps runs past the last
    # eos, and those steps must be trimmed away.
    torch.manual_seed(5)
    model = random_model(1.5)
    src = random_sources(6, 8, seed=5)
    expected = greedy_decode(model, src, 30)
    ends = [row.index(model.config.eos_id) for row in expected.tolist()]
    assert len(set(ends)) > 2 and expected.size(1) == max(ends) + 1 < 31
    for every in (1, 2, 5, 64):
        out = static_greedy_decode(model, src, 30, check_every=every)
        assert torch.equal(out, expected), every
        # the eager decoder checks late on a GPU by default, and trims the same way
        for use_cache in (True, False):
            out = greedy_decode(model, src, 30, use_cache=use_cache, check_every=every)
            assert torch.equal(out, expected), (every, use_cache)


def test_eager_greedy_checks_late_with_a_hook_and_at_the_length_limit():
    # a hook that forbids eos for the first rows' first tokens: rows end late, at different steps,
    # and the hook is called past the end without changing what is returned
    torch.manual_seed(5)
    model = random_model(1.5)
    src = random_sources(6, 8, seed=5)

    def late_eos(tokens, source, left):
        allowed = torch.ones(tokens.size(0), V, dtype=torch.bool)
        allowed[:, model.config.eos_id] = tokens.size(1) > 3 + source
        return allowed

    for limit in (4, 7, 30):  # 4 and 7: some rows still running at the limit
        expected = greedy_decode(model, src, limit, allowed_tokens=late_eos)
        for every in (2, 3, 64):
            out = greedy_decode(
                model, src, limit, allowed_tokens=late_eos, check_every=every
            )
            assert torch.equal(out, expected), (limit, every)
    ends = [row.index(model.config.eos_id) for row in expected.tolist()]
    assert len(set(ends)) > 2 and expected.size(1) == max(ends) + 1 < 31
    with pytest.raises(ValueError, match="check_every"):
        greedy_decode(model, src, 5, check_every=0)


def test_one_decoder_serves_smaller_batches_and_repeated_calls():
    torch.manual_seed(4)
    model = random_model(1.0)
    decoder = StaticGreedyDecoder(model, batch_size=5, src_len=9, max_new_tokens=12)
    for seed, (rows, width) in enumerate([(5, 9), (3, 6), (5, 9), (1, 2)]):
        src = random_sources(rows, width, seed + 10)
        expected = greedy_decode(model, src, 12)
        assert torch.equal(decoder(src), expected), (rows, width)
    with pytest.raises(ValueError, match="holds 5 sources"):
        decoder(random_sources(6, 9, 0))


def test_pre_norm_and_float64():
    torch.manual_seed(5)
    model = random_model(1.0, norm_position="pre").double()
    src = random_sources(4, 6, seed=5)
    assert torch.equal(
        static_greedy_decode(model, src, 15), greedy_decode(model, src, 15)
    )


def test_on_a_cpu_graph_capture_falls_back_to_the_static_step():
    calls = []

    def step():
        calls.append(1)

    assert capture_step(step, torch.device("cpu")) is step
    assert calls == []  # no warm-up calls either
    model = random_model(1.0)
    decoder = StaticGreedyDecoder(model, 2, 5, 8, graphs=True)
    assert not decoder.graphed
    src = random_sources(2, 5, seed=6)
    assert torch.equal(
        decoder(src), StaticGreedyDecoder(model, 2, 5, 8, graphs=False)(src)
    )
    assert torch.equal(decoder(src), greedy_decode(model, src, 8))
    assert model.training is False


# ------------------------------------------------------------------------------------ beam search


@pytest.mark.parametrize("positional", ["sinusoidal", "learned"])
@pytest.mark.parametrize("eos_above", [None, 1.0, 1.5])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_static_beam_returns_beam_search_hypotheses_and_scores(
    positional, eos_above, seed
):
    # float64, so that rounding (the static cache attends over its whole capacity, masked) cannot
    # reorder hypotheses; the scores agree to rounding
    torch.manual_seed(seed)
    model = random_model(eos_above, sharpen=3.0, positional=positional).double()
    rows, width = (1, 3, 5)[seed], (4, 7, 9)[seed]
    src = random_sources(rows, width, seed)
    for k, alpha, a, b in [
        (1, 0.6, 1.0, 5),
        (2, 0.0, 0.5, 3),
        (4, 0.6, 1.0, 10),
        (5, 1.0, 0.0, 17),
    ]:
        expected, expected_scores = beam_search(
            model, src, k, alpha, a, b, return_scores=True
        )
        out, scores = static_beam_search(model, src, k, alpha, a, b, return_scores=True)
        assert torch.equal(out, expected), (k, alpha, a, b)
        torch.testing.assert_close(scores, expected_scores, rtol=1e-12, atol=1e-12)


def test_static_beam_in_float32_and_pre_norm():
    torch.manual_seed(7)
    model = random_model(1.0, sharpen=3.0, norm_position="pre")
    src = random_sources(6, 8, seed=7)
    expected, expected_scores = beam_search(
        model, src, 4, 0.6, 1.0, 12, return_scores=True
    )
    out, scores = static_beam_search(model, src, 4, 0.6, 1.0, 12, return_scores=True)
    assert torch.equal(out, expected)
    assert scores.dtype == expected_scores.dtype == torch.float32
    torch.testing.assert_close(scores, expected_scores)


def test_static_beam_sources_stop_at_different_steps_and_checks_run_past_them():
    # Some sources gather their k finished hypotheses early, others run to their own length
    # limit (a * length + b differs by source) and end their open beams there.
    torch.manual_seed(5)
    model = random_model(1.0, sharpen=3.0).double()
    src = random_sources(6, 8, seed=5)
    expected = beam_search(model, src, 3, 0.6, 1.0, 8)
    lengths = (expected[:, 1:] != model.config.pad_id).sum(dim=1).tolist()
    assert len(set(lengths)) > 2, lengths
    ends_without_eos = [model.config.eos_id not in row for row in expected.tolist()]
    assert any(ends_without_eos) and not all(ends_without_eos)
    for every in (1, 2, 5, 64):
        assert torch.equal(
            static_beam_search(model, src, 3, 0.6, 1.0, 8, check_every=every), expected
        )


def test_one_beam_decoder_serves_smaller_batches_and_repeated_calls():
    torch.manual_seed(4)
    model = random_model(1.0, sharpen=3.0).double()
    decoder = StaticBeamDecoder(model, batch_size=4, src_len=9, beam_size=3, max_len_b=8)
    for seed, (rows, width) in enumerate([(4, 9), (2, 6), (4, 9), (1, 2)]):
        src = random_sources(rows, width, seed + 10)
        expected = beam_search(model, src, 3, 0.6, 1.0, 8)
        assert torch.equal(decoder(src), expected), (rows, width)
    with pytest.raises(ValueError, match="holds 4 sources"):
        decoder(random_sources(5, 9, 0))
    with pytest.raises(ValueError, match="up to 9 positions"):
        decoder(random_sources(2, 10, 0))


def test_static_beam_keeps_the_model_limit_and_the_eval_mode():
    torch.manual_seed(3)
    model = random_model(None, sharpen=3.0, max_len=12).double().train()
    src = random_sources(2, 6, seed=3)
    decoder = StaticBeamDecoder(model, 2, 6, beam_size=2, max_len_b=50, graphs=True)
    assert decoder.capacity == 11  # max_len - 1, whatever a and b ask for
    assert not decoder.graphed  # no graph on a CPU
    out = decoder(src)
    assert torch.equal(out, beam_search(model, src, 2, 0.6, 1.0, 50))
    assert out.size(1) <= 12 and model.training is True


# ------------------------------------------------------------------------------------ autocast


def test_a_precision_is_one_of_the_autocasts_over_float32_weights():
    model = random_model(1.0)
    with pytest.raises(ValueError, match="precision must be one of fp32, bf16, fp16"):
        StaticGreedyDecoder(model, 2, 5, 8, precision="auto")
    with pytest.raises(ValueError, match=r"autocasts float32 weights.*model.float\(\)"):
        StaticBeamDecoder(model.double(), 2, 5, precision="bf16")


@pytest.mark.parametrize("precision", ["fp32", "bf16", "fp16"])
def test_the_step_and_the_encoding_run_in_the_autocast_asked(precision):
    # What the tolerance test below cannot see: a decoder that ignored `precision` would agree
    # with the eager bf16 search about as well as fp32 does.
    expected = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
    torch.manual_seed(2)
    model = random_model(1.0)
    seen = {"step": set(), "encoding": set()}
    model.decoder_layers[0].self_attn.qkv_proj.register_forward_hook(
        lambda m, i, out: seen["step"].add(out.dtype)
    )
    model.decoder_layers[0].cross_attn.kv_proj.register_forward_hook(
        lambda m, i, out: seen["encoding"].add(out.dtype)
    )
    src = random_sources(3, 6, seed=2)
    for decoder in (
        StaticGreedyDecoder(model, 3, 6, 9, precision=precision),
        StaticBeamDecoder(model, 3, 6, beam_size=2, max_len_b=9, precision=precision),
    ):
        seen["step"].clear(), seen["encoding"].clear()
        decoder(src)
        assert seen == {"step": {expected[precision]}, "encoding": {expected[precision]}}
    assert not torch.is_autocast_enabled("cpu")  # nothing left switched on


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_in_autocast_the_decoders_differ_from_the_eager_ones_by_rounding_only(precision):
    # In bf16 or fp16 the static cache (attention over its whole capacity, masked) rounds
    # otherwise than the growing one, so near-ties may go either way: over many searches the
    # fixed-shape decoders may disagree with the eager ones in that precision no more often
    # than the eager ones in that precision disagree with float32. A wrong position, mask or
    # cache would change most outputs.
    searches = rounding = static_off = 0
    for positional in ("sinusoidal", "learned"):
        for seed in range(6):
            torch.manual_seed(seed)
            model = random_model(1.0, sharpen=1.0, positional=positional)
            src = random_sources(1 + seed, 3 + seed, seed)
            fp32 = greedy_decode(model, src, 12), beam_search(model, src, 3, 0.6, 1.0, 10)
            with autocast_context("cpu", precision):
                eager = (
                    greedy_decode(model, src, 12),
                    beam_search(model, src, 3, 0.6, 1.0, 10),
                )
            static = (
                static_greedy_decode(model, src, 12, precision=precision),
                static_beam_search(model, src, 3, 0.6, 1.0, 10, precision=precision),
            )
            for f, e, s in zip(fp32, eager, static):
                searches += 1
                rounding += not torch.equal(e, f)
                static_off += not torch.equal(s, e)
    assert searches == 24 and rounding < 12  # most searches do not meet a near-tie
    assert static_off <= rounding + 2, (static_off, rounding)


@on_a_gpu
@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_on_a_gpu_the_captured_step_replays_what_the_eager_step_computes(precision):
    # the same kernels replayed: the same tokens, in autocast too (casts uncached in both)
    torch.manual_seed(8)
    model = random_model(1.0).cuda()
    src = random_sources(5, 7, seed=8).cuda()
    for graphs in (True, False):
        greedy = StaticGreedyDecoder(model, 5, 7, 12, graphs=graphs, precision=precision)
        beam = StaticBeamDecoder(model, 5, 7, 3, graphs=graphs, precision=precision)
        assert greedy.graphed == beam.graphed == graphs
        out = greedy(src), beam(src)
        if graphs:
            captured = out
    assert all(torch.equal(a, b) for a, b in zip(captured, out))


@on_a_gpu
def test_on_a_gpu_eager_greedy_checks_every_few_steps_and_returns_the_same_tokens():
    torch.manual_seed(5)
    model = random_model(1.5).cuda()
    src = random_sources(6, 8, seed=5).cuda()
    expected = greedy_decode(model, src, 30, check_every=1)
    assert torch.equal(
        greedy_decode(model, src, 30), expected
    )  # the default: CHECK_EVERY


@on_a_gpu
def test_on_a_gpu_a_decoder_of_one_position_captures_its_step():
    # the warm-up steps before the capture advance the position: never past the capacity
    torch.manual_seed(9)
    model = random_model(1.0).cuda()
    src = random_sources(2, 5, seed=9).cuda()
    greedy = StaticGreedyDecoder(model, 2, 5, 1)
    beam = StaticBeamDecoder(model, 2, 5, 2, max_len_a=0.0, max_len_b=1)
    assert greedy.graphed and beam.graphed and beam.capacity == 1
    assert torch.equal(greedy(src), greedy_decode(model, src, 1))
    assert torch.equal(beam(src), beam_search(model, src, 2, 0.6, 0.0, 1))


@pytest.mark.parametrize(
    "device",
    [
        "cpu",
        pytest.param("cuda", marks=NEEDS_GPU),
    ],
)
@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_in_autocast_keys_and_values_are_kept_as_computed_and_change_nothing(
    precision, device, monkeypatch
):
    # Under autocast the projections give bf16/fp16 keys and values and attention runs in that
    # dtype, so a float32 buffer only casts them up and back down every step. Kept in their own
    # dtype (nothing cast at any step), every decoder returns bit for bit what it did with
    # float32 buffers.
    import annotated_transformer.model.static_decoding as static_module
    from annotated_transformer.model import attention, transformer
    from annotated_transformer.runtime.precision import AUTOCAST_DTYPES

    torch.manual_seed(3)
    model = random_model(1.0).to(device)
    src = random_sources(4, 7, seed=3).to(device)
    kv_dtype = AUTOCAST_DTYPES[precision]

    def decode_all():
        with autocast_context(device, precision):
            eager = [
                greedy_decode(model, src, 12),
                *beam_search(model, src, 3, 0.6, 1.0, 10, return_scores=True),
            ]
        static = [
            static_greedy_decode(model, src, 12, precision=precision),
            *static_beam_search(
                model, src, 3, 0.6, 1.0, 10, precision=precision, return_scores=True
            ),
        ]
        return eager + static

    with autocast_context(device, precision):
        _, state = model.start_decoding(src, 8)
    assert {c.k.dtype for c in state.caches} == {kv_dtype}
    decoder = StaticGreedyDecoder(model, 4, 7, 12, precision=precision)
    assert {c.k.dtype for c in decoder.caches} == {kv_dtype}
    assert {k.dtype for k, _ in decoder.memory_kv} == {kv_dtype}
    kept = decode_all()

    class Float32Cache(attention.KVCache):
        def __init__(self, *args, dtype, **kwargs):
            super().__init__(*args, dtype=torch.float32, **kwargs)

    monkeypatch.setattr(transformer, "KVCache", Float32Cache)
    monkeypatch.setattr(static_module, "AUTOCAST_DTYPES", {})
    with autocast_context(device, precision):
        _, state = model.start_decoding(src, 8)
    assert {c.k.dtype for c in state.caches} == {torch.float32}
    assert StaticGreedyDecoder(model, 4, 7, 12, precision=precision).caches[
        0
    ].k.dtype == (torch.float32)
    for new, old in zip(kept, decode_all()):
        assert torch.equal(new, old)

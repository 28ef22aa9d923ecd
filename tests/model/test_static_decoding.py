"""The static-shape greedy decoder (what a CUDA graph replays) returns greedy_decode's tokens."""

import pytest
import torch

from annotated_transformer import Transformer, greedy_decode, preset
from annotated_transformer.model.decoding import (
    StaticGreedyDecoder,
    capture_step,
    static_greedy_decode,
)

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
    assert decoder._step == decoder._eager_step
    src = random_sources(2, 5, seed=6)
    assert torch.equal(
        decoder(src), StaticGreedyDecoder(model, 2, 5, 8, graphs=False)(src)
    )
    assert torch.equal(decoder(src), greedy_decode(model, src, 8))
    assert model.training is False

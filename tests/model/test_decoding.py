"""Incremental decoding equals recomputation; beam search is exact where it can be checked."""

import itertools

import pytest
import torch

from annotated_transformer import Transformer, beam_search, greedy_decode, preset
from annotated_transformer.model.decoding import gnmt_length_penalty


def random_model(vocab=40, **overrides):
    model = Transformer(preset("tiny", dropout=0.0, **overrides), vocab, vocab).eval()
    with (
        torch.no_grad()
    ):  # sharpen the random model so its outputs are not near-uniform ties
        for p in model.parameters():
            p.mul_(3.0)
    return model


def sources(vocab=40):
    src = torch.randint(4, vocab, (3, 8))
    src[1, 5:] = 0  # a padded source
    src[2, 3:] = 0
    src[torch.arange(3), torch.tensor([7, 4, 2])] = 2
    return src


def check_format(out, model):
    c = model.config
    assert (out[:, 0] == c.bos_id).all()
    for row in out.tolist():
        if c.eos_id in row:
            end = row.index(c.eos_id)
            assert all(t == c.pad_id for t in row[end + 1 :])
            assert c.pad_id not in row[1:end]


@pytest.mark.parametrize("positional", ["sinusoidal", "learned"])
def test_greedy_kv_cache_equals_recomputation(positional):
    model = random_model(positional=positional)
    src = sources()
    cached = greedy_decode(model, src, max_new_tokens=20)
    full = greedy_decode(model, src, max_new_tokens=20, use_cache=False)
    assert torch.equal(cached, full)
    check_format(cached, model)


def test_greedy_matches_step_by_step_argmax():
    model = random_model()
    src = sources()[:1]
    out = greedy_decode(model, src, max_new_tokens=10)
    prefix = out[:, :1]
    for t in range(1, out.size(1)):
        logits = model(src, prefix)[:, -1]
        logits[:, [0, 1]] = float("-inf")
        nxt = logits.argmax(-1, keepdim=True)
        assert nxt.item() == out[0, t].item()
        prefix = torch.cat([prefix, nxt], 1)
        if nxt.item() == 2:
            break


# How close the cached and recomputed beam scores must be, by the model's dtype.
# float64: the two differ only by summation order (~1e-15), so float64's default tolerance holds on
#   every CPU.
# float32: a one-row product (the cache) and a whole-prefix product sum in different orders, and the
#   order depends on the CPU's kernels (AVX2 against AVX-512). A score is a sum of at most 14
#   log-probabilities, each below 10 in size and off by a few float32 ulps (~1e-6 relative), so the
#   sums may differ by up to about 14 * 10 * 1e-6 = 1.4e-4: 3e-4 bounds that with margin.
SCORE_TOLERANCE = {torch.float64: {}, torch.float32: {"atol": 3e-4, "rtol": 0}}


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("beam_size", [2, 4])
def test_beam_kv_cache_equals_recomputation(beam_size, dtype):
    model = random_model().to(dtype)
    src = sources()

    def search(use_cache: bool):
        return beam_search(
            model,
            src,
            beam_size=beam_size,
            max_len_a=1.0,
            max_len_b=6,
            use_cache=use_cache,
            return_scores=True,
        )

    (cached, s1), (full, s2) = search(True), search(False)
    assert torch.equal(cached, full)
    assert s1.dtype == dtype
    torch.testing.assert_close(s1, s2, **SCORE_TOLERANCE[dtype])
    check_format(cached, model)


def test_beam_of_one_is_greedy():
    model = random_model()
    src = sources()
    src[:, :] = torch.randint(
        4, 40, src.shape
    )  # equal source lengths: one length limit for all rows
    src[:, -1] = 2
    beam = beam_search(model, src, beam_size=1, alpha=0.6, max_len_a=0.0, max_len_b=12)
    greedy = greedy_decode(model, src, max_new_tokens=12)
    width = max(beam.size(1), greedy.size(1))
    pad = lambda t: torch.nn.functional.pad(t, (0, width - t.size(1)))
    assert torch.equal(pad(beam), pad(greedy))


def sequence_log_prob(model, src, hyp):
    """log p(hyp | src) by running the full model once on the whole hypothesis."""
    tokens = torch.tensor([[1, *hyp]])
    logits = model(src, tokens[:, :-1]).float()
    logits[..., [0, 1]] = float("-inf")
    log_probs = logits.log_softmax(-1)
    return log_probs[0, torch.arange(len(hyp)), torch.tensor(hyp)].sum().item()


@pytest.mark.parametrize("alpha", [0.0, 0.6, 2.0])
def test_beam_search_finds_the_exhaustive_optimum_on_a_tiny_vocabulary(alpha):
    """With room for every prefix, beam search must return the best of all hypotheses."""
    vocab, max_len = 7, 3  # tokens that may be emitted: eos, unk and 3 others
    model = random_model(vocab=vocab)
    src = torch.tensor([[4, 5, 6, 2]])
    emit = [2, 3, 4, 5, 6]
    best_score, best_hyp = float("-inf"), None
    for length in range(1, max_len + 1):
        for body in itertools.product([t for t in emit if t != 2], repeat=length - 1):
            for last in emit:
                hyp = [*body, last]
                if len(hyp) < max_len and last != 2:
                    continue  # an unfinished hypothesis shorter than the limit is not an answer
                score = sequence_log_prob(model, src, hyp) / gnmt_length_penalty(
                    len(hyp), alpha
                )
                if score > best_score:
                    best_score, best_hyp = score, hyp
    n_prefixes = 4 ** (max_len - 1)
    out, score = beam_search(
        model,
        src,
        beam_size=n_prefixes * 5,
        alpha=alpha,
        max_len_a=0.0,
        max_len_b=max_len,
        return_scores=True,
    )
    got = [t for t in out[0, 1:].tolist() if t != 0]
    assert got == best_hyp
    assert score.item() == pytest.approx(best_score, abs=1e-4)


def test_beam_search_respects_length_limits():
    model = random_model()
    src = sources()
    out = beam_search(model, src, beam_size=3, max_len_a=0.5, max_len_b=2)
    src_len = (src != 0).sum(1)
    for row, n in zip(out.tolist(), src_len.tolist()):
        generated = [t for t in row[1:] if t != 0]
        assert len(generated) <= int(0.5 * n + 2)


def test_decoding_restores_training_mode():
    model = random_model().train()
    greedy_decode(model, sources(), max_new_tokens=3)
    beam_search(model, sources(), beam_size=2, max_len_b=3)
    assert model.training


# ------------------------------------------------------------------------------ the allowed_tokens hook
def test_a_hook_that_allows_everything_changes_nothing():
    model, src = random_model(), sources()
    everything = lambda tokens, source, left: torch.ones(
        tokens.size(0), 40, dtype=torch.bool
    )
    assert torch.equal(
        greedy_decode(model, src, 12),
        greedy_decode(model, src, 12, allowed_tokens=everything),
    )
    plain = beam_search(model, src, beam_size=3, max_len_b=6, return_scores=True)
    hooked = beam_search(
        model,
        src,
        beam_size=3,
        max_len_b=6,
        return_scores=True,
        allowed_tokens=everything,
    )
    assert torch.equal(plain[0], hooked[0]) and torch.equal(plain[1], hooked[1])


@pytest.mark.parametrize("beam_size", [0, 1, 3])  # 0: greedy_decode
def test_the_hook_sees_each_rows_source_and_budget_and_is_obeyed(beam_size):
    model, src = random_model(), sources()
    limits = ((src != 0).sum(1) + 5).tolist()  # max_len_a 1, max_len_b 5
    seen = []

    def odd_only(tokens, source, left):
        """Only odd tokens (eos is 2, so rows end at their length limit)."""
        seen.append((tokens.clone(), source.clone(), left.clone()))
        allowed = torch.zeros(tokens.size(0), 40, dtype=torch.bool)
        allowed[:, 1::2] = True
        return allowed

    if beam_size == 0:
        out = greedy_decode(model, src, 9, allowed_tokens=odd_only)
        first_left = [9, 9, 9]
    else:
        out = beam_search(
            model, src, beam_size=beam_size, max_len_b=5, allowed_tokens=odd_only
        )
        first_left = [n for n in limits for _ in range(beam_size)]
    tokens, source, left = seen[0]
    k = max(beam_size, 1)
    assert tokens.shape == (3 * k, 1) and (tokens == 1).all()
    assert source.tolist() == [b for b in range(3) for _ in range(k)]
    assert left.tolist() == first_left
    assert (seen[1][2] == left - 1).all()
    generated = out[:, 1:]
    assert ((generated % 2 == 1) | (generated == 0)).all()  # bos (1) is banned, pad fills
    assert not (generated == 1).any()


def test_a_hook_that_allows_nothing_ends_the_rows():
    model, src = random_model(), sources()
    nothing = lambda tokens, source, left: torch.zeros(
        tokens.size(0), 40, dtype=torch.bool
    )
    assert greedy_decode(model, src, 9, allowed_tokens=nothing)[:, 1].eq(2).all()
    out, scores = beam_search(
        model, src, beam_size=3, max_len_b=5, allowed_tokens=nothing, return_scores=True
    )
    assert out[:, 1].eq(2).all() and torch.isfinite(scores).all()

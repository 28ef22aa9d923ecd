"""Greedy decoding and batched beam search with a KV cache (paper section 6.1).

Both functions encode each source once, precompute the encoder keys and values of every
decoder layer, and then feed one token per step through cached self-attention. Passing
`use_cache=False` recomputes the whole prefix at every step instead: slower, and kept so tests
can prove the cache changes nothing.

Output format: a LongTensor (batch, length) whose rows start with bos, end at eos (or at the
length limit) and hold pad after it.

Both take an optional `allowed_tokens` hook, for outputs that must obey a grammar (the parser's
trees): called before every step as ``allowed_tokens(tokens, source_index, steps_left)`` with the
rows' prefixes (rows, t) starting with bos, the source each row decodes (rows,) and how many tokens
each row may still write, this step's included (rows,); it returns a boolean (rows, vocab), True
where a token may come next. Other tokens get -inf before the softmax; a row with nothing allowed
may end (eos), so no score becomes NaN. Without the hook decoding is exactly what it was.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Callable

import torch

from ..runtime.checks import (
    COUNT,
    LARGEST_INT,
    NON_NEGATIVE,
    NON_NEGATIVE_INT,
    Bounds,
    check_all,
    check_types,
)
from .transformer import Transformer

# How often a decoder on a GPU asks whether every row has finished: each ask waits for the device,
# and the steps a late ask runs past the end are trimmed away.
CHECK_EVERY = 8

# (prefixes (rows, t), source of each row (rows,), tokens left (rows,)) -> allowed (rows, vocab)
AllowedTokens = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]

# What each field of DecodeSettings may be (the profile's beam fields share these).
BOUNDS: dict[str, Bounds] = {
    "beam_size": COUNT,
    "alpha": NON_NEGATIVE,
    "max_len_a": NON_NEGATIVE,
    "max_len_b": NON_NEGATIVE_INT,
    "batch_tokens": COUNT,
}


# The autocasts decoding runs in (runtime.precision.autocast_context); "auto" is the profile's, resolved
# for a device before it reaches here.
DECODE_PRECISIONS = ("fp32", "bf16", "fp16")


def check_decode_precision(precision: str) -> str:
    """`precision` when decoding can run in it; else one ValueError naming the choices."""
    if precision not in DECODE_PRECISIONS:
        raise ValueError(
            f"precision must be one of {', '.join(DECODE_PRECISIONS)}, got {precision!r} "
            "(a profile's 'auto' is resolved for the device by Profile.decode_settings)"
        )
    return precision


@dataclass(frozen=True)
class DecodeSettings:
    """How to translate, as one record from the profile to evaluation and the chapters.

    beam_size 1 is greedy decoding; alpha is the GNMT length penalty's exponent; an output may be
    max_len_a * source length + max_len_b pieces long (section 6.1: beam 4, alpha 0.6, +50).
    `batch_tokens` packs sources (times the beam) into batches; `precision` is the autocast of the
    forward passes ("fp32", "bf16" or "fp16").
    """

    beam_size: int = 4
    alpha: float = 0.6
    max_len_a: float = 1.0
    max_len_b: int = 50
    batch_tokens: int = 4000
    precision: str = "fp32"

    def __post_init__(self):
        check_types(self, "")
        check_all("", self.to_dict(), BOUNDS)
        check_decode_precision(self.precision)

    def replace(self, **changes) -> "DecodeSettings":
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def search_arguments(self) -> dict:
        """The beam's settings as beam_search and StaticBeamDecoder take them by name."""
        return dict(
            beam_size=self.beam_size,
            alpha=self.alpha,
            max_len_a=self.max_len_a,
            max_len_b=self.max_len_b,
        )

    def max_new_tokens(self, src_len: int) -> int:
        """The output allowance for a source of `src_len` positions: at least one token, and
        computed in floats, so no setting the bounds allow can overflow it."""
        allowance = self.max_len_a * float(src_len) + self.max_len_b
        return int(max(1.0, min(float(LARGEST_INT), allowance)))


def _banned_tokens(model: Transformer) -> list[int]:
    # A hypothesis may never emit padding or a second beginning-of-sentence.
    return [model.config.pad_id, model.config.bos_id]


def _mask_logits(
    logits, banned, eos_id, allowed_tokens, tokens, source_index, steps_left
):
    """Bans pad and bos everywhere, and with a hook whatever it does not allow (in place)."""
    if allowed_tokens is None:
        logits[:, banned] = float("-inf")
        return logits
    allowed = allowed_tokens(tokens, source_index, steps_left).to(logits.device).clone()
    if allowed.shape != logits.shape or allowed.dtype != torch.bool:
        raise ValueError(
            f"allowed_tokens must return a boolean {tuple(logits.shape)} tensor, got "
            f"{allowed.dtype} {tuple(allowed.shape)}"
        )
    allowed[:, banned] = False
    allowed[~allowed.any(dim=-1), eos_id] = True  # a row the hook leaves stuck may end
    return logits.masked_fill_(~allowed, float("-inf"))


def check_source(model: Transformer, src) -> torch.Tensor:
    """`src` when it is what decoding takes: a non-empty 2-D tensor (batch, source length) of
    integer ids the model's source embedding holds, within its positions (the model's own check,
    `Transformer._check_tokens`); else one ValueError saying what it is instead."""
    if not isinstance(src, torch.Tensor):
        raise ValueError(
            f"src must be a tensor of token ids (batch, source length), got {type(src).__name__}: "
            "encode sentences with the tokenizer (or call scoring.translate with a list of them)"
        )
    if src.dim() != 2 or src.size(0) == 0 or src.size(1) == 0:
        hint = " (one sentence: src[None])" if src.dim() == 1 else ""
        raise ValueError(
            f"src must be 2-D (batch, source length) and non-empty, got shape {tuple(src.shape)}{hint}"
        )
    model._check_tokens("src", src)
    return src


def _source_lengths(model: Transformer, src: torch.Tensor) -> torch.Tensor:
    return (src != model.config.pad_id).sum(dim=1)


def _step_logits(model, tokens, memory, src_mask, state, use_cache: bool) -> torch.Tensor:
    """Logits (rows, vocab) for the next token after `tokens` (rows, t), in float32 or wider: bf16
    and fp16 logits are scored in float32, and a float64 model (the tests' exact checks) stays
    float64."""
    if use_cache:
        logits = model.decode(tokens[:, -1:], None, src_mask, state)[:, -1]
    else:
        logits = model.decode(tokens, memory, src_mask)[:, -1]
    return logits if logits.dtype == torch.float64 else logits.float()


@torch.no_grad()
def greedy_decode(
    model: Transformer,
    src: torch.Tensor,
    max_new_tokens: int | None = None,
    *,
    max_len_a: float | None = None,
    max_len_b: int | None = None,
    use_cache: bool = True,
    allowed_tokens: AllowedTokens | None = None,
    check_every: int | None = None,
) -> torch.Tensor:
    """The most probable next token at every step; `allowed_tokens` as above.

    Each row may generate `max_new_tokens` tokens (eos included), or, with `max_len_a` and
    `max_len_b` instead, `max_len_a * its source length + max_len_b`, as `beam_search` allows: its
    own sentence's length, not the padded batch's, so a sentence's translation is the same alone
    or in any batch. Never more than the model's positions can hold.

    Whether every row has finished is read back every `check_every` steps: by default every step on a
    CPU, where a step past the end costs a whole step of work, and every `CHECK_EVERY` steps
    elsewhere, where each read-back makes the host wait for the device and stops it queueing the
    next step's kernels. Steps past the end write only padding and are trimmed, so the tokens are
    the same either way."""
    c = model.config
    check_source(model, src)
    limits = None  # each row's own allowance, when it has one
    if (max_len_a is None) != (max_len_b is None) or (max_new_tokens is None) == (
        max_len_a is None
    ):
        raise ValueError(
            "greedy_decode takes max_new_tokens (one allowance for every row) or max_len_a and "
            "max_len_b (a * each source's length + b), one of the two"
        )
    if max_new_tokens is None:
        NON_NEGATIVE.check("max_len_a", max_len_a)
        NON_NEGATIVE_INT.check("max_len_b", max_len_b)
        limits = length_limits(model, src, max_len_a, max_len_b)
        max_new_tokens = int(limits.max())
    max_new_tokens = min(COUNT.check("max_new_tokens", max_new_tokens), c.max_len - 1)
    if check_every is None:
        check_every = 1 if src.device.type == "cpu" else CHECK_EVERY
    check_every = COUNT.check("check_every", check_every)
    was_training = model.training
    model.eval()
    try:
        memory, state = model.start_decoding(src, max_new_tokens + 1)
        state.own_ids = (
            True  # every step feeds back an argmax over the model's own logits
        )
        src_mask = state.src_mask
        batch = src.size(0)
        tokens = torch.full((batch, 1), c.bos_id, dtype=torch.long, device=src.device)
        finished = torch.zeros(batch, dtype=torch.bool, device=src.device)
        banned = _banned_tokens(model)
        source_index = torch.arange(batch, device=src.device)
        for step in range(max_new_tokens):
            logits = _step_logits(model, tokens, memory, src_mask, state, use_cache)
            # what each row may still write, for the hook alone (no kernel launch without one)
            left = None
            if allowed_tokens is not None:
                left = (
                    torch.full_like(source_index, max_new_tokens - step)
                    if limits is None
                    else limits - step
                )
            _mask_logits(
                logits, banned, c.eos_id, allowed_tokens, tokens, source_index, left
            )
            next_token = logits.argmax(dim=-1)
            next_token = next_token.masked_fill(finished, c.pad_id)
            tokens = torch.cat([tokens, next_token[:, None]], dim=1)
            finished |= next_token == c.eos_id
            if limits is not None:  # a row at its own allowance ends there, without eos
                finished |= limits <= step + 1
            if (step + 1) % check_every == 0 and bool(finished.all()):
                break
        return _trim_padding_columns(tokens, c.pad_id) if check_every > 1 else tokens
    finally:
        model.train(was_training)


def _trim_padding_columns(tokens: torch.Tensor, pad_id: int) -> torch.Tensor:
    """`tokens` without its trailing columns of padding only: the steps run after every row had
    finished. A row that has not finished never writes padding (it is banned), so no earlier column
    is all padding, and what is left is what stopping at the last eos would have returned."""
    written = (tokens != pad_id).any(dim=0).nonzero()
    return tokens[:, : int(written[-1]) + 1]


def length_limits(
    model: Transformer, src: torch.Tensor, max_len_a: float, max_len_b: int
) -> torch.Tensor:
    """Each source's output allowance, a * length + b tokens (eos included), at least 1 and at most
    what the positions hold; clamped in float64 before the cast, so a huge b cannot wrap around
    to a tiny limit. A LongTensor (batch,) on `src`'s device."""
    allowance = max_len_a * _source_lengths(model, src).double() + float(max_len_b)
    return allowance.clamp(1, model.config.max_len - 1).long()


def gnmt_length_penalty(length: int | torch.Tensor, alpha: float):
    """GNMT's ((5 + |Y|) / 6) ** alpha, by which a hypothesis' log-probability is divided."""
    return ((5.0 + length) / 6.0) ** alpha


@torch.no_grad()
def beam_search(
    model: Transformer,
    src: torch.Tensor,
    beam_size: int = 4,
    alpha: float = 0.6,
    max_len_a: float = 1.0,
    max_len_b: int = 50,
    *,
    use_cache: bool = True,
    return_scores: bool = False,
    allowed_tokens: AllowedTokens | None = None,
):
    """Batched beam search; the best hypothesis per source under the GNMT length penalty.

    Each source may generate at most `max_len_a * source_length + max_len_b` tokens (eos
    included; the paper uses a=1, b=50), and at most `max_len - 1`, what the positions hold. A
    source stops as soon as it holds `beam_size` finished hypotheses, and the search stops when
    every source has stopped. `allowed_tokens` restricts every step (module docstring).
    """
    COUNT.check("beam_size", beam_size)
    NON_NEGATIVE.check("alpha", alpha)
    NON_NEGATIVE.check("max_len_a", max_len_a)
    NON_NEGATIVE_INT.check("max_len_b", max_len_b)
    check_source(model, src)
    c = model.config
    was_training = model.training
    model.eval()
    try:
        batch, k = src.size(0), beam_size
        device = src.device
        # Outputs stop where the model's positions end, whatever a and b ask for.
        limits = length_limits(model, src, max_len_a, max_len_b).tolist()
        longest = max(limits)
        # Every source is encoded once and its memory repeated k times: rows b*k .. b*k+k-1 are
        # its beams.
        memory, state = model.start_decoding(src, longest + 1, beams=k)
        state.own_ids = True  # every step feeds back tokens of the model's own top k
        src_mask = state.src_mask
        tokens = torch.full((batch * k, 1), c.bos_id, dtype=torch.long, device=device)
        scores = torch.full(
            (batch, k),
            float("-inf"),
            device=device,
            dtype=torch.float64
            if next(model.parameters()).dtype == torch.float64
            else torch.float32,
        )
        # one live beam at the start, so the k beams do not start as copies
        scores[:, 0] = 0.0
        finished: list[list[tuple[float, list[int]]]] = [[] for _ in range(batch)]
        done = [False] * batch
        banned = _banned_tokens(model)
        row_base = (torch.arange(batch, device=device) * k)[:, None]
        source_index = torch.arange(batch, device=device).repeat_interleave(k)
        row_limits = torch.tensor(limits, device=device).repeat_interleave(k)
        for step in range(1, longest + 1):
            logits = _step_logits(model, tokens, memory, src_mask, state, use_cache)
            _mask_logits(
                logits,
                banned,
                c.eos_id,
                allowed_tokens,
                tokens,
                source_index,
                row_limits - (step - 1),
            )
            log_probs = logits.log_softmax(dim=-1)  # (batch*k, V)
            vocab = log_probs.size(-1)
            candidates = (scores.view(-1, 1) + log_probs).view(batch, k * vocab)
            n_cand = min(2 * k, k * vocab)
            cand_scores, cand_index = candidates.topk(n_cand, dim=-1)  # (batch, 2k)
            cand_beam, cand_token = cand_index // vocab, cand_index % vocab
            is_eos = cand_token == c.eos_id
            # Finished hypotheses: eos among the k best candidates of a source still searching.
            # Their sources, scores and prefixes come to the host in one transfer each, not one
            # per hypothesis: on a GPU every transfer waits for the device.
            hit_b, hit_j = (is_eos[:, :k] & torch.isfinite(cand_scores[:, :k])).nonzero(
                as_tuple=True
            )
            sources = hit_b.tolist()
            # sources that stopped keep meeting eos; their hits are dropped before any transfer
            if any(not done[b] for b in sources):
                rows = hit_b * k + cand_beam[hit_b, hit_j]
                prefixes = tokens.index_select(0, rows)[:, 1:].tolist()
                hit_scores = cand_scores[hit_b, hit_j].tolist()
                for b, score, prefix in zip(sources, hit_scores, prefixes):
                    if not done[b]:
                        finished[b].append(
                            (
                                score / gnmt_length_penalty(step, alpha),
                                prefix + [c.eos_id],
                            )
                        )
            # The k best candidates that do not end go on as the new beams.
            open_scores = cand_scores.masked_fill(is_eos, float("-inf"))
            new_scores, pick = open_scores.topk(k, dim=-1)
            parent = (row_base + cand_beam.gather(1, pick)).view(-1)
            next_token = cand_token.gather(1, pick).view(-1)
            tokens = torch.cat(
                [tokens.index_select(0, parent), next_token[:, None]], dim=1
            )
            scores = new_scores
            if use_cache:
                # Parents come from the same sentence's beams, which share one source.
                state.reorder(parent, same_source=True)
            at_limit = []
            for b in range(batch):
                if done[b]:
                    continue
                if len(finished[b]) >= k:
                    done[b] = True
                elif step >= limits[b]:
                    at_limit.append(b)
                    done[b] = True
            if at_limit:
                # At the length limit the open beams end without eos (one transfer for them all).
                limit_scores = scores[at_limit].tolist()
                limit_rows = tokens.reshape(batch, k, -1)[at_limit, :, 1:].tolist()
                for b, row_scores, row_tokens in zip(at_limit, limit_scores, limit_rows):
                    for score, hyp in zip(row_scores, row_tokens):
                        if math.isfinite(score):
                            finished[b].append(
                                (score / gnmt_length_penalty(step, alpha), hyp)
                            )
            if all(done):
                break
        best = [max(f, key=lambda item: item[0]) for f in finished]
        width = 1 + max(len(hyp) for _, hyp in best)
        out = torch.full((batch, width), c.pad_id, dtype=torch.long, device=device)
        out[:, 0] = c.bos_id
        for b, (_, hyp) in enumerate(best):
            out[b, 1 : 1 + len(hyp)] = torch.tensor(hyp, dtype=torch.long, device=device)
        if return_scores:
            return out, torch.tensor([s for s, _ in best], dtype=scores.dtype)
        return out
    finally:
        model.train(was_training)

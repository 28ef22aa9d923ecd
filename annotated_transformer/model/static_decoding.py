"""Greedy decoding and beam search in tensors of fixed shape: steps a CUDA graph can replay.

`decoding.greedy_decode` and `decoding.beam_search` grow their caches and token tensors by a
position each step and read values back to Python (a finished row, a beam's hypothesis), so on a GPU
every step is a handful of tiny kernel launches paid for by the host. The decoders here are built
once for a fixed (batch, source length, output allowance) and return exactly what those functions
return. Every step is the same function of the same buffers, updated in place: embed the last
tokens at `position` (a 0-dim device tensor), write their keys and values at that position of each
layer's `StaticKVCache`, attend over the whole cache under the `visible` mask, and choose the next
tokens. No step reads a value back to Python; the loop asks whether everything has finished once
every `check_every` steps, the only host synchronisation, so it may run a few steps past the end,
and those steps change nothing that is returned. With `graphs` on a GPU the step is captured once
as a CUDA graph and replayed (`capture_step`); on a CPU, or with graphs=False, it is called eagerly.

Float32 or float64 weights and no `allowed_tokens` hook. `precision` "bf16" or "fp16" (float32
weights) runs the forward passes in autocast as `scoring.translate` runs the eager decoders, with
the weights cast at every step rather than cached (`autocast_context(cache_casts=False)`), which a
CUDA graph needs; keys and values are kept in the autocast's dtype, as the eager decoders keep them.
"""

from __future__ import annotations

import math
from typing import Callable

import torch

from ..runtime.checks import COUNT, NON_NEGATIVE, NON_NEGATIVE_INT
from ..runtime.precision import AUTOCAST_DTYPES, autocast_context
from .attention import StaticKVCache
from .decoding import (
    CHECK_EVERY,
    _banned_tokens,
    check_decode_precision,
    check_source,
    gnmt_length_penalty,
    length_limits,
)
from .transformer import Transformer


def capture_step(step: Callable[[], None], device: torch.device, warmup: int = 2):
    """`step` as a replayable CUDA graph on a GPU; elsewhere `step` itself (the same static path).

    `step` must read and write only tensors that live as long as the graph (static buffers, updated
    in place) and synchronise nothing with the host. The warm-up calls (on a side stream, as
    torch.cuda.graphs asks) run it for real, so its owner resets its buffers before every use; the
    capture itself computes nothing.
    """
    if device.type != "cuda":
        return step
    # on the decoder's device, which need not be the current one (a single process on cuda:1)
    with torch.cuda.device(device):
        stream = torch.cuda.Stream(device)
        stream.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(stream):
            for _ in range(warmup):
                step()
        torch.cuda.current_stream(device).wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            step()
    return graph.replay


class _StaticDecoder:
    """The buffers both decoders share, for `rows` decoding rows of `src_len` source positions and
    `capacity` output tokens, and the step's forward pass through them (`_next_logits`)."""

    def __init__(
        self,
        model: Transformer,
        rows: int,
        src_len: int,
        capacity: int,
        check_every: int,
        precision: str,
    ):
        c = model.config
        self.model = model
        self.src_len = COUNT.check("src_len", src_len)
        self.check_every = COUNT.check("check_every", check_every)
        param = next(model.parameters())
        device, dtype = param.device, param.dtype
        if check_decode_precision(precision) != "fp32" and dtype != torch.float32:
            raise ValueError(
                f"precision {precision} autocasts float32 weights; this model's are {dtype}: "
                "decode it in fp32, or convert it with model.float()"
            )
        self.precision = precision
        self.device = device
        # keys and values in the autocast's dtype, as the projections give them (the eager caches' too)
        kv_dtype = AUTOCAST_DTYPES.get(precision, dtype)
        n = self.capacity = capacity
        self.position = torch.zeros((), dtype=torch.long, device=device)
        self._arange = torch.arange(n, device=device)
        self.visible = torch.zeros(1, 1, 1, n, dtype=torch.bool, device=device)
        self.caches = [
            StaticKVCache(
                rows,
                c.n_heads,
                n,
                c.head_dim_k,
                c.head_dim_v,
                position=self.position,
                visible=self.visible,
                device=device,
                dtype=kv_dtype,
            )
            for _ in model.decoder_layers
        ]
        self.src_mask = torch.zeros(rows, 1, 1, src_len, dtype=torch.bool, device=device)
        self.memory_kv = [
            (
                torch.zeros(
                    rows, c.n_heads, src_len, c.head_dim_k, device=device, dtype=kv_dtype
                ),
                torch.zeros(
                    rows, c.n_heads, src_len, c.head_dim_v, device=device, dtype=kv_dtype
                ),
            )
            for _ in model.decoder_layers
        ]
        self.tokens = torch.full((rows, n + 1), c.pad_id, dtype=torch.long, device=device)
        self.last = torch.full((rows, 1), c.bos_id, dtype=torch.long, device=device)
        self._banned = torch.tensor(_banned_tokens(model), device=device)
        positions = model.tgt_positions
        positions.positions(0, n)  # sinusoids: extend the table now, never inside a step
        self._table = (
            positions.table.weight if positions.kind == "learned" else positions.table
        )
        self._step = self._autocast_step
        self.graphed = False  # whether the step replays as a CUDA graph (`_capture`)

    def _capture(self, graphs: bool) -> None:
        if graphs and self.device.type == "cuda":
            model = self.model
            was_training = model.training
            model.eval()
            try:
                with torch.no_grad():
                    # the warm-up steps advance `position`: no more of them than it has room for
                    self._step = capture_step(
                        self._autocast_step, self.device, warmup=min(2, self.capacity)
                    )
                self.graphed = True
            finally:
                model.train(was_training)

    def _autocast(self, cache_casts: bool = True):
        """The decoder's autocast (none in fp32); a step's casts are never cached (a graph)."""
        return autocast_context(self.device, self.precision, cache_casts=cache_casts)

    def _autocast_step(self) -> None:
        with self._autocast(cache_casts=False):
            self._eager_step()

    def _eager_step(self) -> None:
        raise NotImplementedError

    def _next_logits(self) -> torch.Tensor:
        """Logits (rows, vocab) after `last` at `position`, in float32 or wider, pad and bos banned."""
        model, c = self.model, self.model.config
        index = self.position.view(1)
        self.visible.copy_((self._arange <= self.position).view(1, 1, 1, -1))
        x = model.tgt_embed(self.last) * math.sqrt(c.d_model)
        x = model.dropout(x + self._table.index_select(0, index).to(x.dtype))
        for i, layer in enumerate(model.decoder_layers):
            x = layer(
                x, None, self.src_mask, cache=self.caches[i], memory_kv=self.memory_kv[i]
            )
        logits = model.generator(model.decoder_norm(x))[:, -1]
        logits = logits if logits.dtype == torch.float64 else logits.float()
        return logits.index_fill_(1, self._banned, float("-inf"))

    def _padded(self, src: torch.Tensor, batch_size: int) -> torch.Tensor:
        """`src` checked and padded to (batch_size, src_len)."""
        check_source(self.model, src)
        rows, width = src.shape
        if rows > batch_size or width > self.src_len:
            raise ValueError(
                f"this decoder holds {batch_size} sources of up to {self.src_len} positions, "
                f"got {tuple(src.shape)}: build one for that shape"
            )
        if (rows, width) == (batch_size, self.src_len):
            return src
        padded = torch.full(
            (batch_size, self.src_len),
            self.model.config.pad_id,
            dtype=src.dtype,
            device=src.device,
        )
        padded[:rows, :width] = src
        return padded

    def _encode(self, src: torch.Tensor, beams: int = 1) -> None:
        """Encode `src` (padded) into the cross-attention buffers, each source's rows repeated
        `beams` times, and reset the cache, the position and the tokens."""
        model, c = self.model, self.model.config
        src_mask = model.source_mask(src)
        with self._autocast():
            memory = model.encode(src, src_mask)
            kv = [layer.cross_attn.project_kv(memory) for layer in model.decoder_layers]
        self.src_mask.copy_(src_mask.repeat_interleave(beams, dim=0))
        for (k, v), (new_k, new_v) in zip(self.memory_kv, kv):
            k.copy_(new_k.repeat_interleave(beams, dim=0))
            v.copy_(new_v.repeat_interleave(beams, dim=0))
        for cache in self.caches:
            cache.k.zero_()
            cache.v.zero_()
        self.position.zero_()
        self.tokens.fill_(c.pad_id)
        self.tokens[:, 0] = c.bos_id
        self.last.fill_(c.bos_id)

    def _run(self, steps_at_most: int, all_done: torch.Tensor) -> int:
        """Runs steps until `all_done` (a buffer the step updates) holds at a check, or
        `steps_at_most`; returns how many ran."""
        steps = 0
        while steps < steps_at_most:
            self._step()
            steps += 1
            if steps % self.check_every == 0 and bool(all_done.all()):
                break
        return steps

    @staticmethod
    def _trimmed(tokens: torch.Tensor, pad_id: int) -> torch.Tensor:
        """`tokens` without the trailing columns that hold padding only (steps past every end)."""
        written = (tokens[:, 1:] != pad_id).any(dim=0)
        width = 1 + int(written.nonzero().max()) + 1 if bool(written.any()) else 1
        return tokens[:, :width].clone()


class StaticGreedyDecoder(_StaticDecoder):
    """greedy_decode with fixed shapes: built for (batch_size, src_len) and an allowance,
    `max_new_tokens` for every row or `max_len_a` and `max_len_b` (a * each source's length + b),
    `decoder(src)` takes up to batch_size sources of up to src_len positions (padded to that shape:
    rows of padding start finished) and returns what `greedy_decode` returns with the same
    allowance, bos to eos, pad after. Each step takes the argmax, pads it where a row has finished,
    ends a row at its allowance and advances `position`; steps past the last end write padding and
    are trimmed off."""

    def __init__(
        self,
        model: Transformer,
        batch_size: int,
        src_len: int,
        max_new_tokens: int | None = None,
        *,
        max_len_a: float | None = None,
        max_len_b: int | None = None,
        check_every: int = CHECK_EVERY,
        graphs: bool = True,
        precision: str = "fp32",
    ):
        self.batch_size = COUNT.check("batch_size", batch_size)
        if (max_len_a is None) != (max_len_b is None) or (max_new_tokens is None) == (
            max_len_a is None
        ):
            raise ValueError(
                "StaticGreedyDecoder takes max_new_tokens (one allowance for every row) or "
                "max_len_a and max_len_b (a * each source's length + b), one of the two"
            )
        self.max_len_a, self.max_len_b = max_len_a, max_len_b
        if max_new_tokens is None:
            # the longest any source of src_len positions may write, as greedy_decode limits it
            NON_NEGATIVE.check("max_len_a", max_len_a)
            NON_NEGATIVE_INT.check("max_len_b", max_len_b)
            widest = max_len_a * float(COUNT.check("src_len", src_len)) + max_len_b
            max_new_tokens = int(min(max(widest, 1), model.config.max_len - 1))
        self.max_new_tokens = min(
            COUNT.check("max_new_tokens", max_new_tokens), model.config.max_len - 1
        )
        super().__init__(
            model, batch_size, src_len, self.max_new_tokens, check_every, precision
        )
        self.finished = torch.zeros(batch_size, dtype=torch.bool, device=self.device)
        # each row's allowance, filled per call (every row's the same with max_new_tokens)
        self.limits = torch.full(
            (batch_size,), self.max_new_tokens, dtype=torch.long, device=self.device
        )
        self._capture(graphs)

    def _eager_step(self) -> None:
        """One greedy step on the static buffers, everything in place."""
        c = self.model.config
        logits = self._next_logits()
        next_token = logits.argmax(dim=-1).masked_fill_(self.finished, c.pad_id)
        self.tokens.index_copy_(1, self.position.view(1) + 1, next_token[:, None])
        self.finished |= next_token == c.eos_id
        self.finished |= self.limits <= self.position + 1  # a row at its allowance ends
        self.last.copy_(next_token[:, None])
        self.position += 1

    @torch.no_grad()
    def __call__(self, src: torch.Tensor) -> torch.Tensor:
        model = self.model
        was_training = model.training
        model.eval()
        try:
            rows = src.size(0) if src.dim() == 2 else 0
            self._encode(self._padded(src, self.batch_size))
            if self.max_len_a is not None:
                self.limits[:rows] = length_limits(
                    model, src, self.max_len_a, self.max_len_b
                ).to(self.device)
            self.finished.zero_()
            self.finished[rows:] = True  # rows of padding take no part
            steps = self._run(self.max_new_tokens, self.finished)
            # greedy_decode stops at the step where the last row ended: the padding-only steps
            # after it are trimmed (pad is never generated).
            return self._trimmed(self.tokens[:rows, : steps + 1], model.config.pad_id)
        finally:
            model.train(was_training)


class StaticBeamDecoder(_StaticDecoder):
    """beam_search with fixed shapes: built for (batch_size, src_len) and the search's settings,
    `decoder(src)` takes up to batch_size sources of up to src_len positions and returns what
    `beam_search(model, src, beam_size, alpha, max_len_a, max_len_b)` returns (the same
    hypotheses; `return_scores` for their scores too, equal up to float rounding: the static cache
    attends over its whole capacity under a mask).

    Where beam_search keeps each source's finished hypotheses in a Python list, this keeps the best
    `beam_size` of them in tensors (`finished_scores` (batch, k), float64 as beam_search's Python
    floats, and `finished_tokens` (batch, k, capacity + 1)), merged each step by a stable sort, so
    that of equal scores the one that finished first wins, as beam_search's max does. The best is
    among the k best, so nothing returned is lost. A count of everything finished decides, as there,
    when a source has its `beam_size` and stops; a source at its length limit ends its open beams.
    The GNMT penalty comes from a table made on the host with beam_search's own arithmetic.
    """

    def __init__(
        self,
        model: Transformer,
        batch_size: int,
        src_len: int,
        beam_size: int = 4,
        alpha: float = 0.6,
        max_len_a: float = 1.0,
        max_len_b: int = 50,
        *,
        check_every: int = CHECK_EVERY,
        graphs: bool = True,
        precision: str = "fp32",
    ):
        c = model.config
        self.batch_size = COUNT.check("batch_size", batch_size)
        self.beam_size = k = COUNT.check("beam_size", beam_size)
        self.alpha = NON_NEGATIVE.check("alpha", alpha)
        self.max_len_a = NON_NEGATIVE.check("max_len_a", max_len_a)
        self.max_len_b = NON_NEGATIVE_INT.check("max_len_b", max_len_b)
        # the longest any source of src_len positions may write, as beam_search limits it
        capacity = int(
            min(
                max(max_len_a * float(COUNT.check("src_len", src_len)) + max_len_b, 1),
                c.max_len - 1,
            )
        )
        super().__init__(model, batch_size * k, src_len, capacity, check_every, precision)
        device, n = self.device, capacity
        # live beams score in the logits' dtype (float32, or float64 for a float64 model)
        param_dtype = next(model.parameters()).dtype
        self.score_dtype = (
            torch.float64 if param_dtype == torch.float64 else torch.float32
        )
        self.scores = torch.zeros(batch_size, k, device=device, dtype=self.score_dtype)
        self.finished_scores = torch.zeros(
            batch_size, k, device=device, dtype=torch.float64
        )
        self.finished_tokens = torch.zeros(
            batch_size, k, n + 1, dtype=torch.long, device=device
        )
        self.finished_count = torch.zeros(batch_size, dtype=torch.long, device=device)
        self.done = torch.zeros(batch_size, dtype=torch.bool, device=device)
        self.limits = torch.zeros(batch_size, dtype=torch.long, device=device)
        self._row_base = (torch.arange(batch_size, device=device) * k)[:, None]
        self._penalty = torch.tensor(
            [gnmt_length_penalty(step, alpha) for step in range(n + 1)],
            dtype=torch.float64,
            device=device,
        )
        self._capture(graphs)

    def _keep_best(self, scores: torch.Tensor, tokens: torch.Tensor) -> None:
        """Merges hypotheses (batch, m) with their tokens (batch, m, capacity + 1) into the k best
        finished ones; -inf scores are no hypothesis."""
        k = self.beam_size
        all_scores = torch.cat([self.finished_scores, scores], dim=1)
        all_tokens = torch.cat([self.finished_tokens, tokens], dim=1)
        order = all_scores.sort(dim=1, descending=True, stable=True).indices[:, :k]
        self.finished_scores.copy_(all_scores.gather(1, order))
        self.finished_tokens.copy_(
            all_tokens.gather(1, order[..., None].expand(-1, -1, all_tokens.size(-1)))
        )

    def _eager_step(self) -> None:
        """One beam step on the static buffers, everything in place."""
        c = self.model.config
        batch, k, width = self.batch_size, self.beam_size, self.capacity + 1
        step = self.position + 1  # beam_search's 1-based step
        penalty = self._penalty.index_select(0, step.view(1))
        log_probs = self._next_logits().log_softmax(dim=-1)
        vocab = log_probs.size(-1)
        candidates = (self.scores.view(-1, 1) + log_probs).view(batch, k * vocab)
        cand_scores, cand_index = candidates.topk(min(2 * k, k * vocab), dim=-1)
        cand_beam, cand_token = cand_index // vocab, cand_index % vocab
        is_eos = cand_token == c.eos_id
        # eos among the k best candidates of a source still searching ends a hypothesis
        hit = is_eos[:, :k] & torch.isfinite(cand_scores[:, :k]) & ~self.done[:, None]
        ended = self.tokens.index_select(0, (self._row_base + cand_beam[:, :k]).view(-1))
        ended.index_fill_(1, step.view(1), c.eos_id)
        self._keep_best(
            (cand_scores[:, :k].double() / penalty).masked_fill(~hit, float("-inf")),
            ended.view(batch, k, width),
        )
        self.finished_count += hit.sum(dim=1)
        # the k best candidates that do not end go on as the beams
        open_scores, pick = cand_scores.masked_fill(is_eos, float("-inf")).topk(k, dim=-1)
        parent = (self._row_base + cand_beam.gather(1, pick)).view(-1)
        next_token = cand_token.gather(1, pick).view(-1)
        self.tokens.copy_(self.tokens.index_select(0, parent))
        self.tokens.index_copy_(1, step.view(1), next_token[:, None])
        self.scores.copy_(open_scores)
        for cache in self.caches:
            cache.reorder(parent)
        self.last.copy_(next_token[:, None])
        # a source with k finished stops; one at its length limit ends its open beams
        full = (self.finished_count >= k) & ~self.done
        at_limit = (step >= self.limits) & ~self.done & ~full
        ends = at_limit[:, None] & torch.isfinite(self.scores)
        self._keep_best(
            (self.scores.double() / penalty).masked_fill(~ends, float("-inf")),
            self.tokens.view(batch, k, width),
        )
        self.done |= full | at_limit
        self.position += 1

    @torch.no_grad()
    def __call__(self, src: torch.Tensor, return_scores: bool = False):
        model, c = self.model, self.model.config
        was_training = model.training
        model.eval()
        try:
            rows = src.size(0) if src.dim() == 2 else 0
            padded = self._padded(src, self.batch_size)
            self._encode(padded, beams=self.beam_size)
            limits = length_limits(model, padded, self.max_len_a, self.max_len_b)
            self.limits.copy_(limits)
            self.scores.fill_(float("-inf"))
            self.scores[:, 0] = (
                0.0  # one live beam at the start, so the k do not start as copies
            )
            self.finished_scores.fill_(float("-inf"))
            self.finished_tokens.fill_(c.pad_id)
            self.finished_count.zero_()
            self.done.zero_()
            self.done[rows:] = True  # sources of padding take no part
            self._run(int(limits[:rows].max()), self.done)
            best = self._trimmed(self.finished_tokens[:rows, 0], c.pad_id)
            if return_scores:
                return best, self.finished_scores[:rows, 0].to(self.score_dtype).cpu()
            return best
        finally:
            model.train(was_training)


def static_greedy_decode(
    model: Transformer,
    src: torch.Tensor,
    max_new_tokens: int | None = None,
    *,
    max_len_a: float | None = None,
    max_len_b: int | None = None,
    check_every: int = CHECK_EVERY,
    graphs: bool = True,
    precision: str = "fp32",
) -> torch.Tensor:
    """greedy_decode's tokens through a `StaticGreedyDecoder` built for `src`'s shape (one call;
    keep the decoder to reuse its buffers and graph across batches of that shape)."""
    decoder = StaticGreedyDecoder(
        model,
        src.size(0),
        src.size(1),
        max_new_tokens,
        max_len_a=max_len_a,
        max_len_b=max_len_b,
        check_every=check_every,
        graphs=graphs,
        precision=precision,
    )
    return decoder(src)


def static_beam_search(
    model: Transformer,
    src: torch.Tensor,
    beam_size: int = 4,
    alpha: float = 0.6,
    max_len_a: float = 1.0,
    max_len_b: int = 50,
    *,
    return_scores: bool = False,
    check_every: int = CHECK_EVERY,
    graphs: bool = True,
    precision: str = "fp32",
):
    """beam_search's hypotheses through a `StaticBeamDecoder` built for `src`'s shape (one call)."""
    decoder = StaticBeamDecoder(
        model,
        src.size(0),
        src.size(1),
        beam_size,
        alpha,
        max_len_a,
        max_len_b,
        check_every=check_every,
        graphs=graphs,
        precision=precision,
    )
    return decoder(src, return_scores=return_scores)

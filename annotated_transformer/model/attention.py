"""Multi-head attention (paper section 3.2) with a fused fast path and an explicit path.

The fast path calls `F.scaled_dot_product_attention`, which picks flash / memory-efficient kernels
on GPUs and a fused kernel on CPUs, and never materialises the weights. Pictures need the weights,
so `explicit_attention` computes the same function step by step; a module only takes it when
someone has asked for the weights (`MultiHeadAttention.record`), so training never pays for it.

Masks are boolean with True meaning "may attend". Boolean masks never add a large negative
constant, so nothing overflows in bf16/fp16, and a query whose every key is masked returns zeros
instead of the NaN a softmax over nothing would give.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..runtime.compat import is_compiling, is_vmapped


def _guard_fully_masked(
    mask: torch.Tensor | None,
) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """Unmask rows with no allowed key (so no NaN appears) and return which rows were empty.

    On the CPU, asking whether any row is empty costs nothing and usually saves the fix-up. On a GPU
    (or inside torch.compile) that question is a host sync (a graph break when compiled), so there
    the fix-up is always applied: two cheap elementwise passes instead of a stall per attention call;
    likewise under `torch.func.vmap` (stacked models), where no tensor may steer Python.
    """
    if mask is None:
        return None, None
    has_key = mask.any(dim=-1, keepdim=True)
    if (
        mask.device.type == "cpu"
        and not is_compiling()
        and not is_vmapped(has_key)
        and bool(has_key.all())
    ):
        return mask, None
    return mask | ~has_key, has_key


def explicit_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    is_causal: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(Q K^T / sqrt(d_k)) V, returning (output, weights); shapes (..., T, d) as for SDPA."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if is_causal:
        causal = torch.ones(
            q.size(-2), k.size(-2), dtype=torch.bool, device=q.device
        ).tril()
        mask = causal if mask is None else mask & causal
    empty = None
    if mask is not None:
        has_key = mask.any(dim=-1, keepdim=True)
        scores = scores.masked_fill(~mask, float("-inf"))
        scores = scores.masked_fill(
            ~has_key, 0.0
        )  # any finite value: the row is zeroed below
        empty = ~has_key
    weights = scores.softmax(dim=-1)
    if empty is not None:
        weights = weights.masked_fill(empty, 0.0)
    return weights @ v, weights


#: On a CPU, attention of bf16 or fp16 inputs that gradients flow through runs in float32 when
#: True. The CPU's fused kernel computes its backward in bf16 at a fraction of its float32 speed
#: (torch 2.13, the `cpu` recipe on a 2-core AMX Xeon: 80 ms of a 197 ms bf16 step, against 6.5 ms
#: in float32, and the step 1.57x as fast; `results/benchmarks/cpu_step_profile_xeon_amx.json`),
#: while attention holds a few percent of the model's multiply-adds. Without gradients (decoding)
#: the bf16 kernel stays: there a float32 copy of the growing key/value cache every step made
#: greedy and beam search about 1.3x slower. A switch so that `benchmarks/bench_step.py` can time
#: the step both ways in one process (its `eager_half_attention` variant).
CPU_ATTENTION_IN_FLOAT32 = True


def fused_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    is_causal: bool = False,
) -> torch.Tensor:
    """The same function as `explicit_attention` through PyTorch's fused kernel."""
    if is_causal and mask is not None:
        causal = torch.ones(
            q.size(-2), k.size(-2), dtype=torch.bool, device=q.device
        ).tril()
        mask, is_causal = mask & causal, False
    mask, has_key = _guard_fully_masked(mask)
    if (
        CPU_ATTENTION_IN_FLOAT32
        and q.device.type == "cpu"
        and q.dtype in (torch.bfloat16, torch.float16)
        and q.requires_grad
        and torch.is_grad_enabled()
    ):
        with torch.autocast("cpu", enabled=False):
            out = F.scaled_dot_product_attention(
                q.float(), k.float(), v.float(), attn_mask=mask, is_causal=is_causal
            ).to(q.dtype)
    else:
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal)
    if has_key is not None:
        out = out.masked_fill(~has_key, 0.0)
    return out


class KVCache:
    """Keys and values of one self-attention layer during incremental decoding.

    Buffers are allocated once for the longest output and filled one step at a time, so a step
    costs one write instead of a concatenation of the whole prefix. Beam search reorders the rows
    of the filled prefix.
    """

    def __init__(
        self,
        batch_size: int,
        n_heads: int,
        capacity: int,
        d_k: int,
        d_v: int,
        *,
        device,
        dtype,
    ):
        self.k = torch.empty(
            batch_size, n_heads, capacity, d_k, device=device, dtype=dtype
        )
        self.v = torch.empty(
            batch_size, n_heads, capacity, d_v, device=device, dtype=dtype
        )
        self.length = 0

    # Which cached positions a query may see: None for this cache (the filled prefix, all of it);
    # a StaticKVCache's boolean mask over its whole capacity.
    visible: torch.Tensor | None = None

    def update(
        self, k: torch.Tensor, v: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        t = k.size(-2)
        if self.length + t > self.k.size(-2):
            raise ValueError(
                f"KV cache holds {self.k.size(-2)} positions; cannot add {t} more to {self.length}"
            )
        self.k[:, :, self.length : self.length + t] = k
        self.v[:, :, self.length : self.length + t] = v
        self.length += t
        return self.k[:, :, : self.length], self.v[:, :, : self.length]

    def reorder(self, index: torch.Tensor) -> None:
        """Rows follow `index` (beam search's parents). Only the filled prefix moves: the rest of the
        reserved buffer holds nothing yet, and copying it made up most of a beam step's cost."""
        n = self.length
        if n:
            self.k[:, :, :n] = self.k[:, :, :n].index_select(0, index)
            self.v[:, :, :n] = self.v[:, :, :n].index_select(0, index)


class StaticKVCache(KVCache):
    """A KV cache whose tensors never change shape: what a CUDA graph can replay.

    Every step writes one position, the one `position` (a 0-dim long tensor on the device, advanced
    by the decoder in place) points at, and attention reads the whole capacity with `visible`
    (1, 1, 1, capacity), True at positions up to `position`: no Python integer follows the
    decoding, so one step's kernels and shapes are every step's. Masked positions weigh exactly
    zero in the softmax, so the output is the growing cache's up to float rounding. `position` and
    `visible` are shared by a decoder's layers; the static decoders (`static_decoding`) own and advance them.
    """

    def __init__(
        self,
        batch_size: int,
        n_heads: int,
        capacity: int,
        d_k: int,
        d_v: int,
        *,
        position: torch.Tensor,
        visible: torch.Tensor,
        device,
        dtype,
    ):
        super().__init__(
            batch_size, n_heads, capacity, d_k, d_v, device=device, dtype=dtype
        )
        self.k.zero_()
        self.v.zero_()
        self.position, self.visible = position, visible

    def update(
        self, k: torch.Tensor, v: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if k.size(-2) != 1:
            raise ValueError("a static KV cache takes one position per step")
        index = self.position.view(1)
        # k and v in the cache's dtype, as KVCache's slice assignment converts them (index_copy_
        # would refuse a mix); the decoders make the two agree, so this casts nothing there
        self.k.index_copy_(2, index, k.to(self.k.dtype))
        self.v.index_copy_(2, index, v.to(self.v.dtype))
        return self.k, self.v

    def reorder(self, index: torch.Tensor) -> None:
        self.k.copy_(self.k.index_select(0, index))
        self.v.copy_(self.v.index_select(0, index))


class MultiHeadAttention(nn.Module):
    """Multi-head attention with one fused projection: QKV for self-attention, KV for cross-attention.

    Args:
        d_model: width of the residual stream.
        n_heads: number of heads h.
        d_k, d_v: per-head query/key and value widths (the paper uses d_model / h for both).
        self_attention: project queries, keys and values from one input with a single matmul.
    """

    def __init__(
        self, d_model: int, n_heads: int, d_k: int, d_v: int, *, self_attention: bool
    ):
        super().__init__()
        self.n_heads, self.d_k, self.d_v = n_heads, d_k, d_v
        self.self_attention = self_attention
        if self_attention:
            self.qkv_proj = nn.Linear(d_model, n_heads * (2 * d_k + d_v))
        else:
            self.q_proj = nn.Linear(d_model, n_heads * d_k)
            self.kv_proj = nn.Linear(d_model, n_heads * (d_k + d_v))
        self.out_proj = nn.Linear(n_heads * d_v, d_model)
        # When a list, the explicit path runs and appends its (batch, heads, q, k) weights here.
        self.record: list[torch.Tensor] | None = None

    def _heads(self, x: torch.Tensor, d: int) -> torch.Tensor:
        b, t, _ = x.shape
        return x.view(b, t, self.n_heads, d).transpose(1, 2)  # (B, h, T, d)

    def project_kv(self, memory: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Keys and values of the encoder output: computed once per source when decoding."""
        k, v = self.kv_proj(memory).split(
            [self.n_heads * self.d_k, self.n_heads * self.d_v], dim=-1
        )
        return self._heads(k, self.d_k), self._heads(v, self.d_v)

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor | None = None,
        *,
        mask: torch.Tensor | None = None,
        is_causal: bool = False,
        cache: KVCache | None = None,
        memory_kv: tuple[torch.Tensor, torch.Tensor] | None = None,
    ) -> torch.Tensor:
        """x: (B, T, d_model). Self-attention when memory and memory_kv are None.

        mask broadcasts to (B, h, T, S) with True = may attend; is_causal adds the decoder's
        "no peeking ahead" mask; cache appends this step's keys/values to earlier ones.
        """
        h, dk, dv = self.n_heads, self.d_k, self.d_v
        if self.self_attention:
            q, k, v = self.qkv_proj(x).split([h * dk, h * dk, h * dv], dim=-1)
            q, k, v = self._heads(q, dk), self._heads(k, dk), self._heads(v, dv)
            if cache is not None:
                # Cached decoding feeds only new positions; they may see every cached one.
                k, v = cache.update(k, v)
                if (
                    cache.visible is not None
                ):  # a static cache: its mask says what is filled
                    mask, is_causal = cache.visible, False
                elif q.size(-2) == 1:
                    is_causal = False
                elif cache.length != q.size(-2):
                    raise ValueError(
                        "a multi-token step is only supported on an empty cache"
                    )
        else:
            q = self._heads(self.q_proj(x), dk)
            k, v = memory_kv if memory_kv is not None else self.project_kv(memory)
        if self.record is not None:
            out, weights = explicit_attention(q, k, v, mask, is_causal)
            self.record.append(weights.detach())
        else:
            out = fused_attention(q, k, v, mask, is_causal)
        b, _, t, _ = out.shape
        return self.out_proj(out.transpose(1, 2).reshape(b, t, h * dv))

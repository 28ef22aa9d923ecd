"""The building blocks of the encoder and decoder stacks (paper sections 3.1, 3.3-3.5)."""

from __future__ import annotations

import math

import torch
import torch.nn as nn

from ..runtime.compat import is_compiling
from .attention import KVCache, MultiHeadAttention


class PositionwiseFeedForward(nn.Module):
    """FFN(x) = max(0, x W1 + b1) W2 + b2, the same at every position (two kernel-size-1 convolutions)."""

    def __init__(self, d_model: int, d_ff: int):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear2(torch.relu(self.linear1(x)))


# The CPU mask compares 16-bit lanes of random bits with p's share of their 65,536 values.
_LANE_VALUES = 1 << 16


class Dropout(nn.Dropout):
    """Residual dropout (section 5.4) with a cheaper mask on a CPU.

    A mask drawn a float per element (PyTorch's `bernoulli_`, or `rand_like` and a comparison) makes
    one generator call each, on one thread: at the `cpu` recipe's 1,024-token batches, drawing its
    17 masks with `rand_like` took 14 of a 161 ms bf16 step. Here one 64-bit draw makes four masks'
    elements: each 16-bit lane is dropped when it falls below round(p x 65,536), and the kept ones
    are scaled by the inverse of the share kept. That is p to within 1 / 131,072; in float32 the
    output's expectation is the input, and in bf16 the scale is rounded to bf16 as nn.Dropout's is
    (1.109375 for p = 0.1, 0.16% low). Elsewhere (GPU, or under torch.compile, which fuses its own
    mask) it is `nn.Dropout`.
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0.0 or x.device.type != "cpu" or is_compiling():
            return super().forward(x)
        return x * _scaled_keep_mask(x, self.p)


def _scaled_keep_mask(x: torch.Tensor, p: float) -> torch.Tensor:
    """x's shape and dtype: 0 where dropped, 1 / (share kept) elsewhere."""
    dropped = round(p * _LANE_VALUES)
    if dropped >= _LANE_VALUES:
        return torch.zeros(x.shape, dtype=x.dtype, device=x.device)
    n = x.numel()
    # random_ from the smallest int64 with no upper bound draws all 64 bits uniformly
    bits = torch.empty((n + 3) // 4, dtype=torch.int64, device=x.device)
    bits.random_(-(1 << 63), None)
    lanes = bits.view(torch.int16)[:n].view(x.shape)  # uniform over -32,768 .. 32,767
    mask = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    torch.ge(lanes, dropped - _LANE_VALUES // 2, out=mask)
    return mask.mul_(_LANE_VALUES / (_LANE_VALUES - dropped))


NORM_POSITIONS = ("post", "pre")


def _check_norm_position(norm_position: str) -> str:
    if norm_position not in NORM_POSITIONS:
        raise ValueError(
            f"norm_position must be 'post' (the paper's) or 'pre', got {norm_position!r}"
        )
    return norm_position


class EncoderLayer(nn.Module):
    """Self-attention then FFN, each as LayerNorm(x + Dropout(Sublayer(x))) (post-norm, section 3.1/5.4).

    norm_position="pre" computes x + Dropout(Sublayer(LayerNorm(x))) instead: the residual path carries
    the input unnormalised, and the stack's output needs a final LayerNorm (the model adds it).
    """

    def __init__(
        self,
        d_model: int,
        d_ff: int,
        n_heads: int,
        d_k: int,
        d_v: int,
        dropout: float,
        *,
        norm_position: str = "post",
    ):
        super().__init__()
        self.self_attn = MultiHeadAttention(
            d_model, n_heads, d_k, d_v, self_attention=True
        )
        self.ffn = PositionwiseFeedForward(d_model, d_ff)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout = Dropout(dropout)
        self.pre_norm = _check_norm_position(norm_position) == "pre"

    def forward(self, x: torch.Tensor, src_mask: torch.Tensor | None) -> torch.Tensor:
        if self.pre_norm:
            x = x + self.dropout(self.self_attn(self.norm1(x), mask=src_mask))
            return x + self.dropout(self.ffn(self.norm2(x)))
        x = self.norm1(x + self.dropout(self.self_attn(x, mask=src_mask)))
        return self.norm2(x + self.dropout(self.ffn(x)))


class DecoderLayer(nn.Module):
    """Masked self-attention, attention over the encoder output, then FFN; post-norm residuals
    (or pre-norm with norm_position="pre", as in `EncoderLayer`)."""

    def __init__(
        self,
        d_model: int,
        d_ff: int,
        n_heads: int,
        d_k: int,
        d_v: int,
        dropout: float,
        *,
        norm_position: str = "post",
    ):
        super().__init__()
        self.self_attn = MultiHeadAttention(
            d_model, n_heads, d_k, d_v, self_attention=True
        )
        self.cross_attn = MultiHeadAttention(
            d_model, n_heads, d_k, d_v, self_attention=False
        )
        self.ffn = PositionwiseFeedForward(d_model, d_ff)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.norm3 = nn.LayerNorm(d_model)
        self.dropout = Dropout(dropout)
        self.pre_norm = _check_norm_position(norm_position) == "pre"

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor | None,
        src_mask: torch.Tensor | None,
        *,
        cache: KVCache | None = None,
        memory_kv: tuple[torch.Tensor, torch.Tensor] | None = None,
    ) -> torch.Tensor:
        if self.pre_norm:
            # The cache holds keys and values of the normalised inputs; LayerNorm acts on each position
            # alone, so the positions cached earlier are what a full recomputation would give.
            x = x + self.dropout(
                self.self_attn(self.norm1(x), is_causal=True, cache=cache)
            )
            x = x + self.dropout(
                self.cross_attn(self.norm2(x), memory, mask=src_mask, memory_kv=memory_kv)
            )
            return x + self.dropout(self.ffn(self.norm3(x)))
        x = self.norm1(x + self.dropout(self.self_attn(x, is_causal=True, cache=cache)))
        x = self.norm2(
            x
            + self.dropout(self.cross_attn(x, memory, mask=src_mask, memory_kv=memory_kv))
        )
        return self.norm3(x + self.dropout(self.ffn(x)))


def sinusoidal_positions(length: int, d_model: int) -> torch.Tensor:
    """PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(...) as a (length, d_model) table."""
    position = torch.arange(length, dtype=torch.float64).unsqueeze(1)
    inv_freq = torch.exp(
        torch.arange(0, d_model, 2, dtype=torch.float64) * (-math.log(10000.0) / d_model)
    )
    pe = torch.zeros(length, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(position * inv_freq)
    pe[:, 1::2] = torch.cos(position * inv_freq[: d_model // 2])
    return pe.float()


class PositionalEncoding(nn.Module):
    """Adds positions to scaled token embeddings: fixed sinusoids or a learned table (Table 3 row E)."""

    def __init__(self, d_model: int, max_len: int, kind: str):
        super().__init__()
        self.kind, self.d_model, self.max_len = kind, d_model, max_len
        if kind == "learned":
            self.table = nn.Embedding(max_len, d_model)
            nn.init.normal_(self.table.weight, std=d_model**-0.5)
        else:
            # Not a parameter and not saved: sinusoids are recomputed, so this layer extends them
            # past max_len when asked (`positions`), the paper's argument for them (section 3.5).
            # The Transformer does not ask: it refuses positions past its max_len
            # (Transformer._check_tokens), which no training saw; since the table is not in the
            # weights, a longer sequence needs the same weights loaded at a larger max_len.
            self.register_buffer(
                "table", sinusoidal_positions(max_len, d_model), persistent=False
            )

    def positions(self, start: int, length: int) -> torch.Tensor:
        end = start + length
        if self.kind == "learned":
            if end > self.max_len:
                raise ValueError(
                    f"learned positions stop at max_len={self.max_len}; got a sequence reaching {end}"
                )
            return self.table.weight[start:end]
        if end > self.table.size(0):
            self.table = sinusoidal_positions(
                max(end, 2 * self.table.size(0)), self.d_model
            ).to(self.table.device)
        return self.table[start:end]

    def forward(self, x: torch.Tensor, start: int = 0) -> torch.Tensor:
        return x + self.positions(start, x.size(1)).to(x.dtype)

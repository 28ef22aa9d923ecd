"""A straightforward Transformer in the classic "annotated" style, the baseline of our benchmarks.

Written the way the well-known 2018/2022 walkthroughs write it, on purpose: separate Q, K and V
`nn.Linear` per attention, an explicit softmax over scores masked with `masked_fill(-1e9)`,
layers built by deep-copying one prototype (`clones`), a `Generator` that ends in
`log_softmax`, a label-smoothed loss that materialises the whole smoothed target distribution,
and greedy decoding that re-runs the decoder over the whole prefix at every step.

It computes the same function as `annotated_transformer.Transformer` (post-norm sub-layers,
dropout where section 5.4 puts it and nowhere else, three-way tied embeddings, sinusoidal
positions), so `load_from_ours` can copy our weights into it and the benchmark compares two
implementations of one model, not two models. `tests/test_benchmarks.py` checks that.
It is a baseline, not part of the package.
"""

from __future__ import annotations

import copy
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def clones(module: nn.Module, n: int) -> nn.ModuleList:
    """n independent deep copies of one layer (the classic way of building a stack)."""
    return nn.ModuleList(copy.deepcopy(module) for _ in range(n))


def subsequent_mask(size: int) -> torch.Tensor:
    """(1, size, size) boolean, True where position i may look at position j <= i."""
    return torch.triu(torch.ones(1, size, size, dtype=torch.uint8), diagonal=1) == 0


def attention(query, key, value, mask=None):
    """softmax(Q K^T / sqrt(d_k)) V, step by step; masked scores are set to -1e9."""
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    p_attn = scores.softmax(dim=-1)
    # No dropout on the weights: the paper (section 5.4) and our package put none there.
    return torch.matmul(p_attn, value), p_attn


class MultiHeadedAttention(nn.Module):
    """Four separate projections (Q, K, V, output), heads split by view/transpose."""

    def __init__(self, h: int, d_model: int, d_k: int, d_v: int):
        super().__init__()
        self.h, self.d_k, self.d_v = h, d_k, d_v
        self.linear_q = nn.Linear(d_model, h * d_k)
        self.linear_k = nn.Linear(d_model, h * d_k)
        self.linear_v = nn.Linear(d_model, h * d_v)
        self.linear_out = nn.Linear(h * d_v, d_model)
        self.attn = None

    def forward(self, query, key, value, mask=None):
        if mask is not None:
            mask = mask.unsqueeze(1)  # the same mask for every head
        nbatches = query.size(0)
        q = self.linear_q(query).view(nbatches, -1, self.h, self.d_k).transpose(1, 2)
        k = self.linear_k(key).view(nbatches, -1, self.h, self.d_k).transpose(1, 2)
        v = self.linear_v(value).view(nbatches, -1, self.h, self.d_v).transpose(1, 2)
        x, self.attn = attention(q, k, v, mask=mask)
        x = x.transpose(1, 2).contiguous().view(nbatches, -1, self.h * self.d_v)
        return self.linear_out(x)


class PositionwiseFeedForward(nn.Module):
    def __init__(self, d_model: int, d_ff: int):
        super().__init__()
        self.w_1 = nn.Linear(d_model, d_ff)
        self.w_2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        return self.w_2(self.w_1(x).relu())


class SublayerConnection(nn.Module):
    """LayerNorm(x + Dropout(sublayer(x))): the paper's post-norm residual."""

    def __init__(self, size: int, dropout: float):
        super().__init__()
        self.norm = nn.LayerNorm(size)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, sublayer):
        return self.norm(x + self.dropout(sublayer(x)))


class EncoderLayer(nn.Module):
    def __init__(self, size, self_attn, feed_forward, dropout):
        super().__init__()
        self.self_attn, self.feed_forward = self_attn, feed_forward
        self.sublayer = clones(SublayerConnection(size, dropout), 2)

    def forward(self, x, mask):
        x = self.sublayer[0](x, lambda x: self.self_attn(x, x, x, mask))
        return self.sublayer[1](x, self.feed_forward)


class DecoderLayer(nn.Module):
    def __init__(self, size, self_attn, src_attn, feed_forward, dropout):
        super().__init__()
        self.self_attn, self.src_attn = self_attn, src_attn
        self.feed_forward = feed_forward
        self.sublayer = clones(SublayerConnection(size, dropout), 3)

    def forward(self, x, memory, src_mask, tgt_mask):
        x = self.sublayer[0](x, lambda x: self.self_attn(x, x, x, tgt_mask))
        x = self.sublayer[1](x, lambda x: self.src_attn(x, memory, memory, src_mask))
        return self.sublayer[2](x, self.feed_forward)


class Encoder(nn.Module):
    def __init__(self, layer, n):
        super().__init__()
        self.layers = clones(layer, n)

    def forward(self, x, mask):
        for layer in self.layers:
            x = layer(x, mask)
        return x


class Decoder(nn.Module):
    def __init__(self, layer, n):
        super().__init__()
        self.layers = clones(layer, n)

    def forward(self, x, memory, src_mask, tgt_mask):
        for layer in self.layers:
            x = layer(x, memory, src_mask, tgt_mask)
        return x


class Embeddings(nn.Module):
    def __init__(self, d_model: int, vocab: int, padding_idx: int | None = None):
        super().__init__()
        # padding_idx keeps the padding row's gradient at zero, as in our package.
        self.lut = nn.Embedding(vocab, d_model, padding_idx=padding_idx)
        self.d_model = d_model

    def forward(self, x):
        return self.lut(x) * math.sqrt(self.d_model)


class PositionalEncoding(nn.Module):
    """Adds a precomputed sinusoid table, then dropout."""

    def __init__(self, d_model: int, dropout: float, max_len: int = 5000):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        pe = torch.zeros(max_len, d_model, dtype=torch.float64)
        position = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)
        div_term = torch.exp(
            torch.arange(0, d_model, 2, dtype=torch.float64)
            * -(math.log(10000.0) / d_model)
        )
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term[: d_model // 2])
        self.register_buffer("pe", pe.float().unsqueeze(0), persistent=False)

    def forward(self, x):
        return self.dropout(x + self.pe[:, : x.size(1)])


class Generator(nn.Module):
    """Linear projection to the vocabulary followed by log_softmax."""

    def __init__(self, d_model: int, vocab: int):
        super().__init__()
        self.proj = nn.Linear(d_model, vocab, bias=False)

    def forward(self, x):
        return F.log_softmax(self.proj(x), dim=-1)


class EncoderDecoder(nn.Module):
    """The classic container: encode, decode, and a separate generator for log-probabilities."""

    def __init__(
        self, encoder, decoder, src_embed, tgt_embed, generator, pad_id: int = 0
    ):
        super().__init__()
        self.encoder, self.decoder = encoder, decoder
        self.src_embed, self.tgt_embed = src_embed, tgt_embed
        self.generator = generator
        self.pad_id = pad_id

    def encode(self, src, src_mask):
        return self.encoder(self.src_embed(src), src_mask)

    def decode(self, memory, src_mask, tgt, tgt_mask):
        return self.decoder(self.tgt_embed(tgt), memory, src_mask, tgt_mask)

    def forward(self, src, tgt, src_mask, tgt_mask):
        return self.decode(self.encode(src, src_mask), src_mask, tgt, tgt_mask)

    def masks(self, src, tgt):
        """Source padding mask (B, 1, S) and target padding-and-future mask (B, T, T)."""
        src_mask = (src != self.pad_id).unsqueeze(-2)
        tgt_mask = (tgt != self.pad_id).unsqueeze(-2) & subsequent_mask(tgt.size(-1)).to(
            tgt.device
        )
        return src_mask, tgt_mask

    def log_probs(self, src, tgt):
        """Log-probabilities (B, T, V) of the next target token: the whole training forward."""
        src_mask, tgt_mask = self.masks(src, tgt)
        return self.generator(self.forward(src, tgt, src_mask, tgt_mask))


def make_model_like(config, vocab: int) -> EncoderDecoder:
    """The reference with the hyper-parameters of an `annotated_transformer` config, built from
    prototypes with deepcopy, its three embedding matrices tied, Xavier-initialised."""
    if (
        config.positional != "sinusoidal"
        or config.encoder_layers != config.decoder_layers
    ):
        raise ValueError(
            "the reference supports sinusoidal positions and equal encoder/decoder depth only"
        )
    d_model, dropout, pad_id = config.d_model, config.dropout, config.pad_id
    c = copy.deepcopy
    attn = MultiHeadedAttention(
        config.n_heads, d_model, config.head_dim_k, config.head_dim_v
    )
    ff = PositionwiseFeedForward(d_model, config.d_ff)
    position = PositionalEncoding(d_model, dropout, config.max_len)
    embed = Embeddings(d_model, vocab, pad_id)
    n = config.n_layers
    model = EncoderDecoder(
        Encoder(EncoderLayer(d_model, c(attn), c(ff), dropout), n),
        Decoder(DecoderLayer(d_model, c(attn), c(attn), c(ff), dropout), n),
        nn.Sequential(embed, c(position)),
        # the same Embeddings module: tied source/target
        nn.Sequential(embed, c(position)),
        Generator(d_model, vocab),
        pad_id,
    )
    for p in model.parameters():
        if p.dim() > 1:
            nn.init.xavier_uniform_(p)
    model.generator.proj.weight = embed.lut.weight  # tied pre-softmax projection
    return model


class LabelSmoothing(nn.Module):
    """Cross-entropy against an explicit smoothed target: (1 - eps) on the label, eps / V everywhere.

    The classic way: build the (N, V) target distribution with fill_ and scatter_, multiply it with
    the log-probabilities, sum over real tokens. Same value as our `label_smoothed_cross_entropy`.
    """

    def __init__(self, size: int, padding_idx: int, smoothing: float = 0.1):
        super().__init__()
        self.size, self.padding_idx, self.smoothing = size, padding_idx, smoothing

    def forward(self, log_probs, target):
        log_probs = log_probs.reshape(-1, self.size)
        target = target.reshape(-1)
        true_dist = torch.full_like(log_probs, self.smoothing / self.size)
        true_dist.scatter_(
            1, target.unsqueeze(1), 1.0 - self.smoothing + self.smoothing / self.size
        )
        true_dist[target == self.padding_idx] = 0
        return -(true_dist.detach() * log_probs).sum()


@torch.no_grad()
def greedy_decode(
    model: EncoderDecoder, src, max_len: int, bos_id: int, eos_id: int, banned=()
) -> torch.Tensor:
    """Greedy decoding that runs the decoder over the whole prefix at every step (no cache).

    Rows stop at eos and are padded after it; `banned` ids are never emitted, as in our package.
    """
    model.eval()
    src_mask = (src != model.pad_id).unsqueeze(-2)
    memory = model.encode(src, src_mask)
    ys = torch.full((src.size(0), 1), bos_id, dtype=torch.long, device=src.device)
    finished = torch.zeros(src.size(0), dtype=torch.bool, device=src.device)
    for _ in range(max_len):
        out = model.decode(
            memory, src_mask, ys, subsequent_mask(ys.size(1)).to(src.device)
        )
        prob = model.generator(out[:, -1])
        prob[:, list(banned)] = float("-inf")
        next_word = prob.argmax(dim=-1).masked_fill(finished, model.pad_id)
        ys = torch.cat([ys, next_word.unsqueeze(1)], dim=1)
        finished |= next_word == eos_id
        if bool(finished.all()):
            break
    return ys


@torch.no_grad()
def load_from_ours(reference: EncoderDecoder, ours: nn.Module) -> None:
    """Copy the weights of an `annotated_transformer.Transformer` into the reference.

    Our fused QKV projection stacks [W_q; W_k; W_v] by rows, and the cross-attention's fused
    KV projection stacks [W_k; W_v]; the reference keeps them as separate matrices.
    """
    cfg = ours.config
    hk, _hv = cfg.n_heads * cfg.head_dim_k, cfg.n_heads * cfg.head_dim_v

    def copy_linear(dst: nn.Linear, weight, bias) -> None:
        dst.weight.copy_(weight)
        dst.bias.copy_(bias)

    def copy_self(dst: MultiHeadedAttention, src_attn) -> None:
        w, b = src_attn.qkv_proj.weight, src_attn.qkv_proj.bias
        copy_linear(dst.linear_q, w[:hk], b[:hk])
        copy_linear(dst.linear_k, w[hk : 2 * hk], b[hk : 2 * hk])
        copy_linear(dst.linear_v, w[2 * hk :], b[2 * hk :])
        copy_linear(dst.linear_out, src_attn.out_proj.weight, src_attn.out_proj.bias)

    def copy_cross(dst: MultiHeadedAttention, src_attn) -> None:
        copy_linear(dst.linear_q, src_attn.q_proj.weight, src_attn.q_proj.bias)
        w, b = src_attn.kv_proj.weight, src_attn.kv_proj.bias
        copy_linear(dst.linear_k, w[:hk], b[:hk])
        copy_linear(dst.linear_v, w[hk:], b[hk:])
        copy_linear(dst.linear_out, src_attn.out_proj.weight, src_attn.out_proj.bias)

    def copy_ffn(dst: PositionwiseFeedForward, src_ffn) -> None:
        copy_linear(dst.w_1, src_ffn.linear1.weight, src_ffn.linear1.bias)
        copy_linear(dst.w_2, src_ffn.linear2.weight, src_ffn.linear2.bias)

    def copy_norm(dst: SublayerConnection, src_norm) -> None:
        copy_linear(dst.norm, src_norm.weight, src_norm.bias)

    # tied: also the target embedding and the generator
    reference.src_embed[0].lut.weight.copy_(ours.src_embed.weight)
    for dst, src in zip(reference.encoder.layers, ours.encoder_layers):
        copy_self(dst.self_attn, src.self_attn)
        copy_ffn(dst.feed_forward, src.ffn)
        copy_norm(dst.sublayer[0], src.norm1)
        copy_norm(dst.sublayer[1], src.norm2)
    for dst, src in zip(reference.decoder.layers, ours.decoder_layers):
        copy_self(dst.self_attn, src.self_attn)
        copy_cross(dst.src_attn, src.cross_attn)
        copy_ffn(dst.feed_forward, src.ffn)
        for i, norm in enumerate((src.norm1, src.norm2, src.norm3)):
            copy_norm(dst.sublayer[i], norm)

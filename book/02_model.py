# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 2. The model (sections 3.1, 3.3-3.5, Figure 1)
#
# Chapter 01 built attention. This chapter assembles the rest of the Transformer
# {cite:p}`vaswani2017attention` around it: the encoder and decoder stacks of Figure 1, the
# residual connection and layer normalisation around every sub-layer, the feed-forward network
# applied at each position, the embeddings and their shared weights, and the sinusoids that tell
# positions apart. It ends by counting parameters for every model of Table 3 and comparing the
# counts with the paper's.

# %% tags=["hide-input"]
# Colab or a fresh environment: install the package with what the chapters import (its
# `notebook` extra) when it is missing. A clone (this folder's parent) or an installed copy is
# used as it is. REPOSITORY is `repository.url` of _config.yml, written here by
# `python -m annotated_transformer book --sync`; AT_INSTALL_FROM installs from elsewhere (a
# local clone's path, or a pip URL).
import importlib.util
import os
import pathlib
import subprocess
import sys

REPOSITORY = "https://github.com/annotated-transformer/annotated-transformer"
if importlib.util.find_spec("annotated_transformer") is None:
    clone = pathlib.Path.cwd().parent
    if (clone / "annotated_transformer").is_dir():
        sys.path.insert(0, str(clone))
    else:
        source = os.environ.get("AT_INSTALL_FROM") or f"git+{REPOSITORY}"
        if "://" not in source:
            source = pathlib.Path(source).resolve().as_uri()
        package = f"annotated-transformer[notebook] @ {source}"
        subprocess.check_call([sys.executable, "-m", "pip", "install", "-q", package])
        importlib.invalidate_caches()

# %%
import math
import time

import pandas as pd
import torch
import torch.nn as nn
from IPython.display import Markdown, display
from torch.utils.flop_counter import FlopCounterMode

from annotated_transformer import (
    Transformer,
    count_parameters,
    expected_parameter_count,
    preset,
    viz,
)
from annotated_transformer.book.parameters import chapter_profile
from annotated_transformer.chapters.model import figures, record, sentences
from annotated_transformer.chapters.model import sizes as chapter_sizes
from annotated_transformer.evaluation.paper import TABLE3 as PAPER_TABLE3
from annotated_transformer.model.config import TABLE3_ALL_ROWS
from annotated_transformer.model.layers import (
    DecoderLayer,
    EncoderLayer,
    PositionwiseFeedForward,
    sinusoidal_positions,
)
from annotated_transformer.runtime.devices import resolve_device
from annotated_transformer.training.teacher_forcing import batch_loss

# %% tags=["parameters"]
# auto: the machine's (gpu where CUDA is visible, else cpu); or smoke | cpu | gpu | paper
profile_name = "auto"  # sets the sizes of the checks below
# this chapter counts and compares; it runs on the CPU whatever the device
device = "auto"
seed = 0  # every random tensor of the chapter follows from it
vocab_size = 37_000  # the paper's shared BPE vocabulary, as rounded in section 5.1

# %% [markdown]
# The profile only changes how many positions and shifts the positional-encoding checks cover:

# %%
profile = chapter_profile(profile_name, "02")
profile_name = profile.name  # the machine's profile where it was auto
device = resolve_device(device)
chapter_start = time.perf_counter()
torch.manual_seed(seed)
sizes = chapter_sizes.of(profile.name)
viz.show_table(chapter_sizes.table(profile.name))

# %% [markdown]
# ## 2.1 The shape of the model (Figure 1)
#
# The Transformer is an encoder-decoder. The **encoder** turns the source sentence into one vector
# per source token: embeddings plus positional encodings go through $N = 6$ identical layers, each
# a self-attention sub-layer followed by a feed-forward sub-layer. The **decoder** produces the
# target one token at a time: its $N = 6$ layers have a masked self-attention sub-layer over the
# target prefix, an attention sub-layer whose keys and values are the encoder's output, and a
# feed-forward sub-layer. A linear map and a softmax turn the decoder's last vectors into a
# distribution over the next token. Every sub-layer and embedding produces vectors of the same
# width, $d_\text{model} = 512$, so the sub-layers can be chained and added to their inputs.
#
# The package's `Transformer` follows that plan. The base model, built on PyTorch's `meta` device
# (shapes without memory, so even the big model costs nothing to build), has this structure; one
# encoder layer and one decoder layer print as:

# %%
base = preset("base")
with torch.device("meta"):
    base_model = Transformer(base, vocab_size, vocab_size)
print(base_model.encoder_layers[0])
print(base_model.decoder_layers[0])
assert (
    len(base_model.encoder_layers) == len(base_model.decoder_layers) == base.n_layers == 6
)

# %% [markdown]
# Figure 1 redrawn from the model object: each box is a module of the package, labelled with its
# parameter count in the base model (the frames repeat $N$ times; the arrow carries the encoder's
# output into every decoder layer). First the counts, module by module, for the first layer of
# each stack; the output embedding and the final linear map have none of their own, since they
# reuse the input embedding's matrix (section 2.4):


# %%
def n_params(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


enc, dec = base_model.encoder_layers[0], base_model.decoder_layers[0]
module_parameters = {"src_embed": n_params(base_model.src_embed)}
for name in ("self_attn", "norm1", "ffn", "norm2"):
    module_parameters[f"encoder.{name}"] = n_params(getattr(enc, name))
for name in ("self_attn", "norm1", "cross_attn", "norm2", "ffn", "norm3"):
    module_parameters[f"decoder.{name}"] = n_params(getattr(dec, name))

# %% [markdown]
# `figures.figure1_chart` places one box per module, bottom up as in the paper, and prints each
# count in its box:

# %%
viz.show(
    figures.figure1_chart(
        module_parameters,
        len(base_model.encoder_layers),
        len(base_model.decoder_layers),
        title="Figure 1 of the paper, rebuilt from the base model's modules",
    )
)

# %% [markdown]
# ## 2.2 Sub-layers: a residual connection, then layer normalisation
#
# Every sub-layer (attention or feed-forward) is wrapped the same way: its output, after dropout,
# is added to its input, and the sum is normalised,
# $\mathrm{LayerNorm}(x + \mathrm{Dropout}(\mathrm{Sublayer}(x)))$. The addition
# {cite:p}`he2016residual` gives gradients a path around every sub-layer; the normalisation
# {cite:p}`ba2016layernorm` keeps each position's vector at zero mean and unit variance across its
# $d_\text{model}$ components (then rescales it with a learned gain and bias). Normalising after
# the addition is called *post-norm*; it is what the paper does, and what the package does. Here is
# an encoder layer written out with the package's weights and compared with `EncoderLayer`. First
# a small layer, with every weight, bias and gain drawn at random so that norms and biases are
# away from their trivial initial values:

# %%
d_model, d_ff, n_heads = 64, 256, 4
layer = EncoderLayer(
    d_model, d_ff, n_heads, d_model // n_heads, d_model // n_heads, dropout=0.0
).eval()
with torch.no_grad():
    for p in layer.parameters():
        p.normal_(0, 0.3)

# %% [markdown]
# The layer by hand, dropout off: the fused projection split into queries, keys and values, the
# heads as a batch dimension, masked scores, then the two residual additions each followed by a
# layer norm:


# %%
def encoder_layer_by_hand(x, keep):
    """Post-norm: LayerNorm(x + SelfAttention(x)), then LayerNorm(x + FFN(x))."""
    attn, norm = layer.self_attn, nn.functional.layer_norm
    q, k, v = attn.qkv_proj(x).split(d_model, dim=-1)
    heads = lambda t: t.view(*t.shape[:2], n_heads, -1).transpose(1, 2)  # (B, h, T, d_k)
    scores = heads(q) @ heads(k).transpose(-2, -1) / math.sqrt(d_model // n_heads)
    scores = scores.masked_fill(~keep[:, None, None, :], float("-inf"))
    mixed = (scores.softmax(-1) @ heads(v)).transpose(1, 2).reshape(x.shape)
    x = norm(x + attn.out_proj(mixed), (d_model,), layer.norm1.weight, layer.norm1.bias)
    ffn = layer.ffn.linear2(torch.relu(layer.ffn.linear1(x)))
    return norm(x + ffn, (d_model,), layer.norm2.weight, layer.norm2.bias)


# %% [markdown]
# Three sentences of 6, 3 and 5 tokens, padded to 6:

# %%
x = torch.randn(3, 6, d_model)
keep = torch.tensor([6, 3, 5])[:, None] > torch.arange(6)
ours = layer(x, keep[:, None, None, :])
torch.testing.assert_close(ours, encoder_layer_by_hand(x, keep), atol=1e-5, rtol=1e-5)

# %% [markdown]
# The function by hand and the package's layer agree (checked above). The package's
# `EncoderLayer`, which also knows the other arrangement (below):

# %%
viz.show_source(EncoderLayer)

# %% [markdown]
# **Post-norm and pre-norm.** The paper normalises after the addition (post-norm, as above). The
# annotated versions most readers know, and most later models, normalise the sub-layer's input
# instead, $x + \mathrm{Sublayer}(\mathrm{LayerNorm}(x))$, with one last LayerNorm after the
# stack (pre-norm). Pre-norm leaves an identity path from the input to the output of the whole
# stack, so gradients reach the first layers unscaled and training tolerates a shorter warm-up or
# none; post-norm sends every path through $2N$ normalisations and is known to need the warm-up
# {cite:p}`xiong2020layernorm`. The package follows the paper by default and builds pre-norm with
# `TransformerConfig(norm_position="pre")`; chapter 04 trains both side by side.

# %% [markdown]
# PyTorch ships the same layers as `nn.TransformerEncoderLayer` and `nn.TransformerDecoderLayer`
# (with `norm_first=False`, its default, for post-norm). Copying our weights into them gives the
# same outputs; the test suite proves this too (`tests/model/test_model.py`). PyTorch stores its
# query, key and value projections stacked in one matrix, exactly like the package's fused
# projection, so the copy is direct:


# %%
def copy_attention(theirs: nn.MultiheadAttention, ours_attn, fused: bool) -> None:
    if fused:
        weight, bias = ours_attn.qkv_proj.weight, ours_attn.qkv_proj.bias
    else:  # cross-attention keeps Q apart from the fused K,V projection
        weight = torch.cat([ours_attn.q_proj.weight, ours_attn.kv_proj.weight])
        bias = torch.cat([ours_attn.q_proj.bias, ours_attn.kv_proj.bias])
    theirs.in_proj_weight.copy_(weight)
    theirs.in_proj_bias.copy_(bias)
    theirs.out_proj.load_state_dict(ours_attn.out_proj.state_dict())


def copy_modules(pairs) -> None:
    for ours_module, theirs_module in pairs:
        theirs_module.load_state_dict(ours_module.state_dict())


# %% [markdown]
# The encoder layer of section 2.2, copied into PyTorch's. PyTorch's inference fast path may
# zero the rows of padded queries, so the comparison is on the real tokens:

# %%
torch_encoder = nn.TransformerEncoderLayer(
    d_model, n_heads, d_ff, dropout=0.0, batch_first=True
).eval()
with torch.no_grad():
    copy_attention(torch_encoder.self_attn, layer.self_attn, fused=True)
    copy_modules(
        [
            (layer.ffn.linear1, torch_encoder.linear1),
            (layer.ffn.linear2, torch_encoder.linear2),
            (layer.norm1, torch_encoder.norm1),
            (layer.norm2, torch_encoder.norm2),
        ]
    )
theirs = torch_encoder(x, src_key_padding_mask=~keep)
torch.testing.assert_close(ours[keep], theirs[keep], atol=1e-5, rtol=1e-5)

# %% [markdown]
# A decoder layer, with random weights of its own, copied the same way; cross-attention's
# separate query projection and fused key-value projection are stacked into PyTorch's one
# matrix:

# %%
dec_layer = DecoderLayer(
    d_model, d_ff, n_heads, d_model // n_heads, d_model // n_heads, dropout=0.0
).eval()
torch_decoder = nn.TransformerDecoderLayer(
    d_model, n_heads, d_ff, dropout=0.0, batch_first=True
).eval()
with torch.no_grad():
    for p in dec_layer.parameters():
        p.normal_(0, 0.3)
    copy_attention(torch_decoder.self_attn, dec_layer.self_attn, fused=True)
    copy_attention(torch_decoder.multihead_attn, dec_layer.cross_attn, fused=False)
    copy_modules(
        [
            (dec_layer.ffn.linear1, torch_decoder.linear1),
            (dec_layer.ffn.linear2, torch_decoder.linear2),
            (dec_layer.norm1, torch_decoder.norm1),
            (dec_layer.norm2, torch_decoder.norm2),
            (dec_layer.norm3, torch_decoder.norm3),
        ]
    )

# %% [markdown]
# Five random target positions attend to the three padded sentences `x` of section 2.2 as their
# memory; PyTorch gets its causal mask from `generate_square_subsequent_mask`. Both layers, with
# the largest difference from PyTorch's:

# %%
y, memory = torch.randn(3, 5, d_model), x
ours_dec = dec_layer(y, memory, keep[:, None, None, :])
theirs_dec = torch_decoder(
    y,
    memory,
    tgt_mask=nn.Transformer.generate_square_subsequent_mask(5),
    memory_key_padding_mask=~keep,
)
torch.testing.assert_close(ours_dec, theirs_dec, atol=1e-5, rtol=1e-5)
pytorch_check = pd.DataFrame(
    [
        ("encoder layer", "nn.TransformerEncoderLayer", (ours - theirs)[keep]),
        ("decoder layer", "nn.TransformerDecoderLayer", ours_dec - theirs_dec),
    ],
    columns=["layer", "pytorch", "max_abs_difference"],
)
pytorch_check["max_abs_difference"] = [
    d.abs().max().item() for d in pytorch_check.max_abs_difference
]
viz.show_table(pytorch_check, max_abs_difference="{:.1e}")

# %% [markdown]
# ## 2.3 The position-wise feed-forward network
#
# The second sub-layer of every layer is a two-layer network with a ReLU between,
# $\mathrm{FFN}(x) = \max(0, x W_1 + b_1) W_2 + b_2$, with $W_1 \in \mathbb{R}^{d_\text{model}
# \times d_{ff}}$ and $d_{ff} = 2048$. "Position-wise" means that it is applied to each position
# separately, with the same weights at every position (and different weights in every layer).
# Attention mixes information across positions; the feed-forward network transforms each
# position's vector on its own. The formula by hand against the package's module:

# %%
ffn = PositionwiseFeedForward(d_model, d_ff)
x = torch.randn(2, 9, d_model)


def ffn_by_hand(x):
    hidden = torch.relu(x @ ffn.linear1.weight.T + ffn.linear1.bias)
    return hidden @ ffn.linear2.weight.T + ffn.linear2.bias


torch.testing.assert_close(ffn(x), ffn_by_hand(x), atol=1e-5, rtol=1e-5)

# %% [markdown]
# The package's module:

# %%
viz.show_source(PositionwiseFeedForward)

# %% [markdown]
# Applying the same matrix at every position of a sequence is exactly what a one-dimensional
# convolution with a kernel of size 1 does: the kernel slides along the positions and sees one
# position at a time. A Linear's (out, in) weight is a kernel-size-1 Conv1d's (out, in, 1)
# weight, and Conv1d wants its input as (B, d, T):

# %%
conv1 = nn.Conv1d(d_model, d_ff, kernel_size=1)
conv2 = nn.Conv1d(d_ff, d_model, kernel_size=1)
with torch.no_grad():
    conv1.weight.copy_(ffn.linear1.weight[:, :, None])
    conv1.bias.copy_(ffn.linear1.bias)
    conv2.weight.copy_(ffn.linear2.weight[:, :, None])
    conv2.bias.copy_(ffn.linear2.bias)
as_convolution = conv2(torch.relu(conv1(x.transpose(1, 2)))).transpose(1, 2)
torch.testing.assert_close(ffn(x), as_convolution, atol=1e-5, rtol=1e-5)

# %% [markdown]
# Position-wise: position by position gives the same result, and shuffling positions commutes
# with it:

# %%
one_at_a_time = torch.stack([ffn(x[:, t]) for t in range(x.size(1))], dim=1)
torch.testing.assert_close(ffn(x), one_at_a_time, atol=1e-6, rtol=1e-5)
shuffle = torch.randperm(x.size(1))
torch.testing.assert_close(ffn(x[:, shuffle]), ffn(x)[:, shuffle])

# %% [markdown]
# ### Why widen to $4 \times d_\text{model}$?
#
# The paper does not argue for the factor of four; it reports that a wider feed-forward network
# helps (rows C6 and C7 of Table 3 halve and double $d_{ff}$). What the factor decides is how a
# layer's budget is split. In parameters, the attention sub-layer's four projections hold
# $4 d_\text{model}^2$ and the feed-forward network $2 d_\text{model} d_{ff}$: at
# $d_{ff} = 4 d_\text{model}$ the network holds two thirds of an encoder layer's parameters. In
# FLOPs per position, the projections cost $8 d_\text{model}^2$, the scores and weighted sum
# $4 n d_\text{model}$ for a sentence of $n$ tokens, and the feed-forward network
# $4 d_\text{model} d_{ff}$. The FLOP counter measures the split on the package's encoder layer
# (the cell checks its counts against these closed forms):


# %%
def layer_split(d_model: int, d_ff: int, n: int) -> dict:
    layer = EncoderLayer(d_model, d_ff, 8, d_model // 8, d_model // 8, dropout=0.0)
    # the explicit path: the FLOP counter sees its matrix products on any device
    layer.self_attn.record = []
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        layer(torch.randn(1, n, d_model), None)
    flops = counter.get_flop_counts()
    attention_flops = sum(flops.get("EncoderLayer.self_attn", {}).values())
    ffn_flops = sum(flops.get("EncoderLayer.ffn", {}).values())
    assert (
        ffn_flops == 4 * n * d_model * d_ff
        and attention_flops == 8 * n * d_model**2 + 4 * n * n * d_model
    )
    return dict(
        d_ff_over_d_model=d_ff // d_model,
        n=n,
        ffn_parameter_share=n_params(layer.ffn) / n_params(layer),
        ffn_flop_share=ffn_flops / (ffn_flops + attention_flops),
    )


split = pd.DataFrame(
    [layer_split(512, ratio * 512, n) for ratio in (1, 2, 4, 8) for n in (32, 128, 512)]
)
viz.show_table(split, ffn_parameter_share="{:.1%}", ffn_flop_share="{:.1%}")

# %% [markdown]
# The feed-forward share of the FLOPs against the ratio $d_{ff} / d_\text{model}$, one line per
# sentence length:

# %%
viz.show(
    viz.tighten(
        viz.line_chart(
            split.assign(n=split.n.map(lambda n: f"n = {n} tokens")),
            "d_ff_over_d_model",
            "ffn_flop_share",
            "n",
            log_x=True,
            points=True,
            title="Feed-forward share of an encoder layer's FLOPs (d_model = 512)",
            x_title="d_ff / d_model",
            y_title="feed-forward share of FLOPs",
        )
    )
)

# %%
display(Markdown(sentences.describe_ffn_share(record.ffn_share_at_4x(split))))

# %% [markdown]
# What the extra width buys is a question for training, not for counting. The paper's Table 3
# reports that halving $d_{ff}$ (row C6) raised the dev perplexity and doubling it (C7) lowered it;
# this chapter quotes that and does not reproduce it. Chapter 06 trains those rows at the
# profile's scale.

# %% [markdown]
# ## 2.4 Embeddings, their scale, and one shared matrix
#
# Tokens enter as learned embedding vectors of width $d_\text{model}$. Three matrices in the model
# have one row per vocabulary entry: the source embedding, the target embedding, and the output
# projection before the softmax (which scores every vocabulary entry against the decoder's last
# vector). With a source-target vocabulary shared by byte-pair encoding, the paper uses one matrix
# for all three {cite:p}`press2017tying`. The embeddings are multiplied by $\sqrt{d_\text{model}}$
# before the positional encodings are added. By hand on a tiny model: look up, scale, add the
# positions (dropout is off in eval mode):

# %%
tiny = preset("tiny", dropout=0.0)
model = Transformer(tiny, 100, 100).eval()
tokens = torch.randint(4, 100, (2, 12))
scaled = model.src_embed.weight[tokens] * math.sqrt(tiny.d_model)
by_hand = scaled + sinusoidal_positions(12, tiny.d_model)
torch.testing.assert_close(
    model.embed(tokens, model.src_embed, model.src_positions), by_hand
)

# %% [markdown]
# The package's `Transformer.embed`:

# %%
viz.show_source(Transformer.embed)

# %% [markdown]
# Three-way tying is one `Parameter` object, counted once. With `share_embeddings=False` the
# source embedding gets its own matrix, and the output projection still shares the target
# embedding's (the two-way tying of {cite:p}`press2017tying`):

# %%
assert model.src_embed.weight is model.tgt_embed.weight is model.generator.weight
untied = Transformer(tiny, 100, 100, share_embeddings=False)
assert untied.src_embed.weight is not untied.tgt_embed.weight

# %% [markdown]
# For the count below, the base model with three separate matrices: `share_embeddings=False`,
# and the output projection given a matrix of its own:

# %%
with torch.device("meta"):
    untied_base = Transformer(base, vocab_size, vocab_size, share_embeddings=False)
    untied_base.generator.weight = nn.Parameter(torch.empty(vocab_size, base.d_model))
assert untied_base.generator.weight is not untied_base.tgt_embed.weight

# %% [markdown]
# Why the scale? The paper does not say. It matters for how loud the positions are beside the
# words. The package initialises embedding entries with standard deviation
# $d_\text{model}^{-1/2}$ (each embedding vector has a norm near 1, a sensible size for the same
# matrix used as the output projection); times $\sqrt{d_\text{model}}$ the entries have unit
# variance, comparable with the sinusoids (root mean square $\sqrt{1/2} \approx 0.71$). With
# PyTorch's default `nn.Embedding` initialisation, $N(0, 1)$, the same multiplication would give
# entries of standard deviation $\sqrt{512} \approx 22.6$ in the base model, and the positional
# signal would be a small ripple on top of the words. The cell measures all of these:

# %%
embedding = model.src_embed.weight[4:]
rms = lambda t: t.pow(2).mean().sqrt().item()
scale_check = pd.DataFrame(
    [
        ("embedding entries, std", embedding.std().item()),
        (
            "scaled embedding entries, std",
            (embedding * math.sqrt(tiny.d_model)).std().item(),
        ),
        (
            "positional encoding entries, root mean square",
            rms(sinusoidal_positions(512, tiny.d_model)),
        ),
        (
            f"N(0, 1) embedding x sqrt({base.d_model}), std (base width)",
            (torch.randn(1000, base.d_model) * math.sqrt(base.d_model)).std().item(),
        ),
        (
            f"positional encoding at d_model = {base.d_model}, root mean square",
            rms(sinusoidal_positions(512, base.d_model)),
        ),
    ],
    columns=["quantity", "value"],
)

# %% [markdown]
# The table, with the two numbers quoted above checked: 22.6 for $N(0, 1) \times \sqrt{512}$
# and 0.71 for the sinusoids:

# %%
assert abs(scale_check.value.iloc[3] - math.sqrt(512)) < 0.5
assert abs(scale_check.value.iloc[4] - math.sqrt(0.5)) < 0.01
viz.show_table(scale_check, value="{:.3f}")

# %% [markdown]
# And what the shared matrix saves in the base model (the cell checks that two of the three
# matrices disappear):

# %%
saved = count_parameters(untied_base) - count_parameters(base_model)
assert saved == 2 * vocab_size * base.d_model
tied_m = count_parameters(base_model) / 1e6
display(Markdown(sentences.describe_tying(saved / 1e6, tied_m, vocab_size)))

# %% [markdown]
# The constraint also makes sense: a token's input vector and the vector its output score is
# measured against live in the same space.

# %% [markdown]
# ## 2.5 Positional encoding
#
# Attention treats its keys as a set: permute the source words and each output is permuted the
# same way, with no change in value. Word order has to be written into the vectors themselves. The
# paper adds to each embedding a vector of sinusoids of the position $pos$,
#
# $$PE_{(pos, 2i)} = \sin\!\left(pos / 10000^{2i/d_\text{model}}\right), \qquad
#   PE_{(pos, 2i+1)} = \cos\!\left(pos / 10000^{2i/d_\text{model}}\right),$$
#
# a sine and a cosine for each of $d_\text{model}/2$ frequencies, whose wavelengths grow
# geometrically from $2\pi$ to $10000 \cdot 2\pi$. First the claim that attention ignores order:

# %%
attn = model.encoder_layers[0].self_attn
x = torch.randn(1, 7, tiny.d_model)
perm = torch.randperm(7)
with torch.no_grad():
    torch.testing.assert_close(attn(x[:, perm]), attn(x)[:, perm], atol=1e-5, rtol=1e-5)

# %% [markdown]
# The formula in a few lines, and the package's table:


# %%
def positional_encoding(length: int, d_model: int) -> torch.Tensor:
    pos = torch.arange(length, dtype=torch.float64)[:, None]  # (length, 1)
    i = torch.arange(0, d_model, 2, dtype=torch.float64)  # the even dimensions 2i
    angle = pos / 10000 ** (i / d_model)  # (length, d_model / 2)
    pe = torch.empty(length, d_model, dtype=torch.float64)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(angle), torch.cos(angle)
    return pe


pe = positional_encoding(sizes.positions, base.d_model)
torch.testing.assert_close(
    sinusoidal_positions(sizes.positions, base.d_model), pe.float(), atol=1e-6, rtol=0
)

# %% [markdown]
# The package's function, which builds the same table in float32:

# %%
viz.show_source(sinusoidal_positions)

# %% [markdown]
# The wavelengths, and the start of the table as a picture: its first 64 dimensions against the
# first 100 positions (the fast dimensions; the slower ones change too little over 100 positions
# to see), and five dimensions as curves, one panel each, named with their wavelengths:

# %%
two_i = torch.arange(0, base.d_model, 2, dtype=torch.float64)
wavelengths = 2 * math.pi * 10000 ** (two_i / base.d_model)
print(
    f"{base.d_model // 2} wavelengths from {wavelengths[0]:.3f} (2 pi) to "
    f"{wavelengths[-1]:,.0f} positions "
    f"(the last is 10000^({base.d_model - 2}/{base.d_model}) x 2 pi)"
)
viz.show(
    figures.positional_encoding_chart(pe, dims=(4, 5, 20, 21, 60), max_positions=100)
)

# %% [markdown]
# ### $PE(pos + k)$ is a rotation of $PE(pos)$
#
# The paper chose sinusoids partly because a fixed shift in position is a fixed linear map of the
# encoding, which attention could learn to use for relative positions. The trigonometric addition
# formulas make this exact. For one frequency $\omega$, the pair $(\sin \omega p, \cos \omega p)$
# at $p = pos + k$ is
#
# $$\begin{pmatrix} \sin \omega(pos+k) \\ \cos \omega(pos+k) \end{pmatrix} =
#   \begin{pmatrix} \cos \omega k & \sin \omega k \\ -\sin \omega k & \cos \omega k \end{pmatrix}
#   \begin{pmatrix} \sin \omega\, pos \\ \cos \omega\, pos \end{pmatrix},$$
#
# a rotation by the angle $\omega k$ that depends on $k$ but not on $pos$. Stacking one such
# $2 \times 2$ block per frequency gives a block-diagonal matrix $M_k$ with
# $PE(pos + k) = M_k\, PE(pos)$ for every $pos$. Built:


# %%
def shift_matrix(k: int, d_model: int) -> torch.Tensor:
    """Block-diagonal M_k with PE(pos + k) = M_k @ PE(pos), a rotation per frequency."""
    omega = 1.0 / 10000 ** (torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    c, s = torch.cos(omega * k), torch.sin(omega * k)
    blocks = [
        torch.stack([torch.stack([ci, si]), torch.stack([-si, ci])])
        for ci, si in zip(c, s)
    ]
    return torch.block_diag(*blocks)


# %% [markdown]
# And checked, on the package's table, for every shift $k$ of the profile. The table is float32
# (about 6e-8 relative); the rotation adds no error of its own, and each $M_k$ is orthogonal:

# %%
package_pe = sinusoidal_positions(
    sizes.positions + max(sizes.shifts), base.d_model
).double()
shift_errors = []
for k in sizes.shifts:
    M = shift_matrix(k, base.d_model)
    predicted = package_pe[: sizes.positions] @ M.T  # row pos becomes M_k @ PE(pos)
    actual = package_pe[k : k + sizes.positions]
    torch.testing.assert_close(predicted, actual, atol=1e-6, rtol=0)
    torch.testing.assert_close(M @ M.T, torch.eye(base.d_model, dtype=torch.float64))
    error = (predicted - actual).abs().max().item()
    shift_errors.append(dict(k=k, positions_checked=sizes.positions, max_abs_error=error))
viz.show_table(pd.DataFrame(shift_errors), max_abs_error="{:.1e}")

# %% [markdown]
# The same matrices also make the similarity of two encodings a function of their distance
# alone: $PE(pos) = M_{pos}\, PE(0)$, and a rotation preserves dot products, so
# $PE(pos) \cdot PE(pos + k) = PE(0) \cdot PE(k)$ whatever $pos$ is. The cell computes the dot
# product for offsets 0 to 100 from three starting positions and checks that the three curves
# agree:

# %%
offsets = list(range(0, 101))
similarity = pd.DataFrame(
    [
        dict(
            offset=k,
            start=f"pos = {p}",
            dot_product=float(package_pe[p] @ package_pe[p + k]),
        )
        for p in (0, 17, 100)
        if p + max(offsets) < package_pe.size(0)
        for k in offsets
    ]
)
by_offset = similarity.pivot(index="offset", columns="start", values="dot_product")
# the same curve whatever the start
assert (by_offset.max(axis=1) - by_offset.min(axis=1)).max() < 1e-3

# %% [markdown]
# The curves lie on top of each other. The similarity is largest at $k = 0$ and falls off, with
# ripples, as the offset grows: a built-in notion of nearness.

# %%
viz.show(
    viz.line_chart(
        similarity,
        "offset",
        "dot_product",
        "start",
        x_title="offset k",
        y_title="PE(pos) . PE(pos + k)",
        title="Dot product of two encodings depends only on their offset",
    )
)

# %% [markdown]
# ## 2.6 The whole model: shifted input, causal output
#
# During training the decoder reads the target sentence shifted right by one position: its input
# is the beginning-of-sentence token followed by the target words, and at each position it must
# predict the next word. The package writes the shift once, in `teacher_forcing.batch_loss`:

# %%
viz.show_source(batch_loss)

# %% [markdown]
# The model must not use the word it is asked to predict, nor any later one. The causal mask
# inside every decoder layer is what guarantees it; here it is checked on the whole model: change
# the target tokens after position $t$, and the logits at positions up to $t$ do not move. Two
# random target sentences of ten tokens, shifted:

# %%
torch.manual_seed(seed)
tgt = torch.randint(4, 100, (2, 10))
tgt[:, 0] = tiny.bos_id
tgt_in, tgt_out = tgt[:, :-1], tgt[:, 1:]  # the shift: read up to t, predict t + 1
assert torch.equal(tgt_in[:, 1:], tgt_out[:, :-1])
src = torch.randint(4, 100, (2, 12))

# %% [markdown]
# For every second position $t$, the cell redraws the tokens after $t$ and measures how far the
# logits move at each position; it checks that nothing up to $t$ moves by more than 1e-5 and
# everything after $t$ by more than 1e-3:

# %%
causality = []
with torch.no_grad():
    logits = model(src, tgt_in)
    for t in range(0, tgt_in.size(1) - 1, 2):
        changed = tgt_in.clone()
        changed[:, t + 1 :] = torch.randint(4, 100, changed[:, t + 1 :].shape)
        moved = (model(src, changed) - logits).abs().amax(dim=(0, 2))  # per position
        assert moved[: t + 1].max() < 1e-5 and moved[t + 1 :].min() > 1e-3
        causality.append(
            {
                "targets changed after position": t,
                "largest change of logits up to it": moved[: t + 1].max().item(),
                "smallest change after it": moved[t + 1 :].min().item(),
            }
        )
viz.show_table(
    pd.DataFrame(causality),
    **{
        "largest change of logits up to it": "{:.1e}",
        "smallest change after it": "{:.2f}",
    },
)

# %% [markdown]
# ## 2.7 Counting parameters: every model of Table 3
#
# The package's `expected_parameter_count` adds up the closed form (embeddings, and per layer the
# attention projections, the feed-forward matrices, biases and layer-norm gains):

# %%
viz.show_source(expected_parameter_count)

# %% [markdown]
# `count_parameters` counts the actual tensors of a built model, tied weights once. Both agree
# for every row (the cell checks it), and the table sets them beside the paper's column (which
# the paper rounds to millions and leaves empty where a row does not change the size). Each
# model is built on the `meta` device: shapes only, so building the big model costs no memory.

# %%
counts = []
for row in TABLE3_ALL_ROWS:
    config = preset(row)
    with torch.device("meta"):
        built = Transformer(config, vocab_size, vocab_size)
    counted = count_parameters(built)
    assert counted == expected_parameter_count(config, vocab_size), row
    counts.append(
        dict(
            row=row,
            N=config.n_layers,
            d_model=config.d_model,
            d_ff=config.d_ff,
            h=config.n_heads,
            d_k=config.head_dim_k,
            d_v=config.head_dim_v,
            ours_m=counted / 1e6,
            paper_m=PAPER_TABLE3[row].params_m,
        )
    )
counts = pd.DataFrame(counts)

# %% [markdown]
# The gap between the paper's count and ours, in millions and in how many extra vocabulary rows
# of width $d_\text{model}$ would close it (rows that do not change the size have no count in
# the paper and are left blank):

# %%
counts["gap_m"] = counts.paper_m - counts.ours_m
counts["gap_in_vocabulary_rows"] = counts.gap_m * 1e6 / counts.d_model
viz.show_table(
    counts,
    ours_m="{:.1f}",
    paper_m="{:.0f}",
    gap_m="{:+.1f}",
    gap_in_vocabulary_rows="{:+,.0f}",
)

# %% [markdown]
# The rows the paper counts, ours beside theirs, and the gap in rows of width $d_\text{model}$:

# %%
viz.show(
    figures.parameter_count_chart(counts, ours_label=f"ours (vocabulary {vocab_size:,})")
)

# %% [markdown]
# The paper rounds to whole millions, so each gap is uncertain by $0.5\text{M} / d_\text{model}$
# rows. The cell checks that the big model is the one row above the paper's count:

# %%
gaps = record.gaps(counts)
assert gaps["big"] < 0 and all(gap > 0 for row, gap in gaps.items() if row != "big")
paper_m = {row: PAPER_TABLE3[row].params_m for row in gaps}
display(Markdown(sentences.describe_parameter_gaps(gaps, paper_m, vocab_size)))

# %% [markdown]
# A gap measured in rows of the embedding matrix, and roughly the same across depths, widths
# of the feed-forward network and numbers of heads, points at the one matrix whose size we had
# to guess: the vocabulary. Section 5.1 rounds it to about 37,000 tokens; the counts above
# suggest a somewhat larger one. The exception is the big model, whose count is above the
# paper's: with the same vocabulary as the others it would be further above, so its count in
# the paper seems to use a different convention we could not pin down.

# %% tags=["remove-cell"]
written = record.write(
    record.build(
        sizes=sizes, vocab_size=vocab_size, counts=counts, split=split,
        shift_errors=shift_errors, tying_saves=saved,
    ),
    profile_name, time.perf_counter() - chapter_start,
)  # fmt: skip

# %% [markdown]
# ## What this run shows
#
# The chapter's counts and checks, read back from its results record:

# %%
display(Markdown(sentences.closing(record.read(profile_name))))

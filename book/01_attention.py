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
# # 1. Attention (section 3.2)
#
# In the Transformer, attention is the only operation that moves information from one position of
# a sentence to another; everything else happens at each position on its own. This chapter
# builds it from its formula {cite:p}`vaswani2017attention`: the scaled dot product and the reason
# for its scale, the masks that hide padding and the future, the multi-head version and what it
# costs, the three places the model uses it, and the two code paths of the package (a fused
# kernel for speed, an explicit one that keeps the weights for pictures).
#
# Every idea below comes as a few lines of plain PyTorch, then the package's version, then an
# assertion that the two agree, then a table or a chart.

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

from annotated_transformer import Transformer, attention_maps, preset, viz
from annotated_transformer.book.parameters import chapter_profile
from annotated_transformer.chapters.attention import figures, record, sentences
from annotated_transformer.chapters.attention import sizes as chapter_sizes
from annotated_transformer.model.attention import (
    MultiHeadAttention,
    explicit_attention,
    fused_attention,
)
from annotated_transformer.runtime.devices import device_name, resolve_device

# %% tags=["parameters"]
# auto: the machine's (gpu where CUDA is visible, else cpu); or smoke | cpu | gpu | paper
profile_name = "auto"  # sets the sizes of the experiments below
# "auto" picks CUDA when a GPU is visible; used for the timing comparisons
device = "auto"
seed = 0  # every random tensor of the chapter follows from it

# %% [markdown]
# The sizes of this chapter's experiments come from the profile record. Everything here is
# cheap; the profile only decides how many samples the statistics average over and how large
# the timed inputs are.

# %%
profile = chapter_profile(profile_name, "01")
profile_name = profile.name  # the machine's profile where it was auto
device = resolve_device(device)
chapter_start = time.perf_counter()
torch.manual_seed(seed)
sizes = chapter_sizes.of(profile.name)
viz.show_table(chapter_sizes.table(profile.name))

# %% [markdown]
# ## 1.1 Scaled dot-product attention
#
# Think of every position as asking a question and offering an answer. The question is a *query*
# vector $q$, the label under which a position can be found is a *key* vector $k$, and what it
# hands over when found is a *value* vector $v$. A query is compared with every key by a dot
# product; a softmax over the keys turns the comparisons into positive weights that sum to one; the
# output is the weighted average of the values. With the queries as the rows of $Q$, the keys as
# the rows of $K$ and the values as the rows of $V$, all positions are served at once by two matrix
# products and a softmax:
#
# $$\mathrm{Attention}(Q, K, V) = \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right) V,$$
#
# where $d_k$ is the width of queries and keys. The division by $\sqrt{d_k}$ is the "scaled" of the
# name; section 1.2 measures why it is there. Here it is in plain PyTorch; the optional boolean
# `allowed` matrix (True where a query may look at a key) is the subject of section 1.3.


# %%
def attention(q, k, v, allowed=None):
    """softmax(q k^T / sqrt(d_k)) v and the weights.

    q (..., n_q, d_k), k (..., n_k, d_k), v (..., n_k, d_v).
    """
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))  # (..., n_q, n_k)
    if allowed is not None:
        # a masked key gets exp(-inf) = 0
        scores = scores.masked_fill(~allowed, float("-inf"))
    weights = scores.softmax(dim=-1)  # each row sums to one
    return weights @ v, weights


q, k, v = torch.randn(2, 5, 16), torch.randn(2, 7, 16), torch.randn(2, 7, 8)
out, weights = attention(q, k, v)
print("output", tuple(out.shape), "weights", tuple(weights.shape))

# %% [markdown]
# The package has the same function twice: `explicit_attention` writes the steps out and returns
# the weights (for pictures), and `fused_attention` calls PyTorch's
# `F.scaled_dot_product_attention`, which on a GPU runs a flash-attention style kernel
# {cite:p}`dao2022flashattention` that never stores the weight matrix. All three agree:

# %%
package_explicit, package_weights = explicit_attention(q, k, v)
package_fused = fused_attention(q, k, v)
# float32 kernels that sum in different orders agree to a few units in the last place.
torch.testing.assert_close(package_explicit, out, atol=1e-6, rtol=1e-5)
torch.testing.assert_close(package_weights, weights, atol=1e-6, rtol=1e-5)
torch.testing.assert_close(package_fused, out, atol=1e-5, rtol=1e-5)
torch.testing.assert_close(weights.sum(-1), torch.ones(2, 5))

# %% [markdown]
# The package's `explicit_attention` has the same steps as the function above, plus the masks
# of section 1.3: its `is_causal` flag builds the causal one, and a query with no key to see
# gets zero weights (section 1.3 comes back to that):

# %%
viz.show_source(explicit_attention)

# %% [markdown]
# To see what the weights mean, give six words random vectors and let each word query all six with
# its own vector ($Q = K = V$, which is what self-attention does before any learned projection).
# A dot product is not a similarity that puts a vector nearest to itself (a longer vector can
# score higher against it), but for random vectors of width 16 the squared length on the
# diagonal, about 16, usually beats the off-diagonal products, whose typical size is 4. In this
# draw every word's largest weight falls on itself or on its twin (the cell checks it); the two
# copies of "the" share a vector and so split their weight between each other.

# %%
words = ["the", "cat", "sat", "on", "the", "mat"]
vocabulary = {w: i for i, w in enumerate(dict.fromkeys(words))}
word_vectors = torch.randn(len(vocabulary), 16)
x = word_vectors[[vocabulary[w] for w in words]]  # (6, 16)
_, self_weights = attention(x, x, x)
# itself or its twin
assert self_weights.argmax(-1).tolist() in ([0, 1, 2, 3, 0, 5], [4, 1, 2, 3, 4, 5])
# the twins are indistinguishable
torch.testing.assert_close(self_weights[0, 0], self_weights[0, 4])

# %% [markdown]
# The six rows of weights as a heatmap, one row per query:

# %%
viz.show(
    viz.heatmap(
        self_weights,
        x_labels=words,
        y_labels=words,
        x_title="key",
        y_title="query",
        title="Self-attention weights of six words",
        value_title="weight",
        scheme="blues",
        domain=(0, 1),
    )
)

# %% [markdown]
# ## 1.2 Why scale by $1/\sqrt{d_k}$
#
# Suppose the components of a query and a key are independent, with mean 0 and variance 1. Their
# dot product $q \cdot k = \sum_{i=1}^{d_k} q_i k_i$ adds $d_k$ independent terms of variance 1, so
# its variance is $d_k$ and its typical size $\sqrt{d_k}$. The wider the heads, the more spread out
# the scores, and a softmax of widely spread scores gives nearly all the weight to the largest one.
# Such a softmax is almost flat as a function of its inputs: its gradient, $p \odot (g - p \cdot g)$
# for an incoming gradient $g$, vanishes when $p$ is one-hot. Dividing the scores by $\sqrt{d_k}$
# brings their variance back to 1 for every width.
#
# First the variance, measured on random vectors. The sample variance of `samples` draws has a
# relative standard error near $\sqrt{2 / \text{samples}}$, about 2% for the smoke profile's
# 4,000, so the cell allows 10%, several standard errors:


# %%
def dot_product_variance(d_k: int, samples: int) -> tuple[float, float]:
    """Sample variance of q . k and of q . k / sqrt(d_k) for standard normal q and k."""
    q = torch.randn(samples, d_k, dtype=torch.float64)
    k = torch.randn(samples, d_k, dtype=torch.float64)
    dots = (q * k).sum(-1)
    return dots.var().item(), (dots / math.sqrt(d_k)).var().item()


variance = pd.DataFrame(
    [
        dict(d_k=d, unscaled=u, scaled=s)
        for d in sizes.d_ks
        for u, s in [dot_product_variance(d, sizes.samples)]
    ]
)
for row in variance.itertuples():
    assert abs(row.unscaled / row.d_k - 1) < 0.1, row
    assert abs(row.scaled - 1) < 0.1, row
viz.show_table(variance, unscaled="{:.1f}", scaled="{:.3f}")

# %% [markdown]
# On log-log axes the unscaled variance follows $d_k$, and the scaled one stays at 1:

# %%
variance_long = variance.melt("d_k", var_name="scores", value_name="variance")
viz.show(
    viz.tighten(
        viz.line_chart(
            variance_long,
            "d_k",
            "variance",
            "scores",
            log_x=True,
            log_y=True,
            points=True,
            title="Variance of q·k: grows like dₖ unless scaled by 1/√dₖ",
        )
    )
)

# %% [markdown]
# Now the softmax. For each width, draw a query and a row of keys, compute the attention weights
# with and without the scale, and measure two things: how much weight the largest entry takes
# (1.0 means the softmax has collapsed onto one key) and the size of the gradient that flows back
# into the scores for a random upstream gradient. The gradient's distribution over trials is
# heavy-tailed (the occasional row with two close top scores keeps a sizeable gradient), so the
# table reports its median: the gradient of a typical row.


# %%
def softmax_saturation(
    d_k: int, n_keys: int, trials: int, scale: bool
) -> tuple[float, float]:
    """Mean largest weight and median gradient norm (w.r.t. the scores) of
    softmax(q K^T [/ sqrt(d_k)])."""
    q, keys = torch.randn(trials, 1, d_k), torch.randn(trials, n_keys, d_k)
    scores = (q @ keys.transpose(-2, -1)).squeeze(1)  # (trials, n_keys)
    if scale:
        scores = scores / math.sqrt(d_k)
    scores.requires_grad_(True)
    weights = scores.softmax(-1)
    # stands in for the gradient from the rest of the network
    upstream = torch.randn_like(weights)
    (weights * upstream).sum().backward()
    return weights.max(-1).values.mean().item(), scores.grad.norm(dim=-1).median().item()


# %% [markdown]
# Every width of the profile, with and without the scale, over `trials` rows: a twentieth of the
# profile's samples, and at least 200:

# %%
trials = max(200, sizes.samples // 20)
saturation = pd.DataFrame(
    [
        dict(
            d_k=d_k,
            scores="scaled" if scale else "unscaled",
            largest_weight=peak,
            gradient_norm=grad,
        )
        for d_k in sizes.d_ks
        for scale in (True, False)
        for peak, grad in [softmax_saturation(d_k, sizes.n_keys, trials, scale)]
    ]
)
viz.show_table(saturation, largest_weight="{:.3f}", gradient_norm="{:.2e}")

# %% [markdown]
# Unscaled scores at the widest $d_k$ of every profile have standard deviation
# $\sqrt{d_k} \geq 22$. The cell checks that the softmax is then all but one-hot (largest weight
# above 0.9) and that its gradient is at least an order of magnitude smaller than with the scale:

# %%
by_d_k = record.saturation_by_d_k(saturation)
widest = by_d_k[max(sizes.d_ks)]
assert widest.largest_weight_unscaled > 0.9
assert widest.gradient_norm_scaled / widest.gradient_norm_unscaled > 10

# %% [markdown]
# Both measurements against the width, on a log scale of $d_k$:

# %%
viz.show(figures.softmax_saturation_chart(saturation))

# %%
display(Markdown(sentences.describe_saturation(by_d_k, sizes.n_keys)))

# %% [markdown]
# ### Additive attention, the alternative
#
# The paper compares its choice with *additive* attention {cite:p}`bahdanau2015neural`, which
# scores a query against a key with a one-hidden-layer network,
# $w^\top \tanh(W_q q + W_k k)$. The two are "similar in theoretical complexity", says section
# 3.2.1, but the dot product is faster and more space-efficient in practice, because it is one
# matrix product; additive attention must form a $d_k$-wide hidden vector for every (query, key)
# pair. And for large $d_k$ additive attention beat the *unscaled* dot product in the paper's
# citation {cite:p}`britz2017massive`; the saturation measured above is the likely reason, since
# the tanh keeps additive scores bounded whatever the width. The additive score of every pair:


# %%
def additive_scores(q, k, W_q, W_k, w):
    """w^T tanh(W_q q + W_k k) for every (query, key) pair: an (n_q, n_k, d_k) tanh."""
    return torch.tanh((q @ W_q)[..., :, None, :] + (k @ W_k)[..., None, :, :]) @ w


@torch.no_grad()
def run_times(fn, repeats: int) -> list[float]:
    """Milliseconds of each of `repeats` runs of fn, after one warm-up call (the spread of the
    runs is the timing noise a difference is weighed against)."""
    fn()  # warm-up
    if device.type == "cuda":
        torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        if device.type == "cuda":
            torch.cuda.synchronize()
        times.append(1e3 * (time.perf_counter() - start))
    return times


# %% [markdown]
# For one width, the cell below times both scorings of the profile's `time_len` queries against
# four times `n_keys` keys, then measures what the softmax makes of each kind of score on
# `trials` rows of `n_keys` keys, as in the saturation table above:


# %%
def additive_row(d_k: int) -> dict:
    W_q, W_k = (torch.randn(d_k, d_k) / math.sqrt(d_k) for _ in range(2))
    w = torch.randn(d_k) / math.sqrt(d_k)
    qa, ka = torch.randn(sizes.time_len, d_k), torch.randn(sizes.n_keys * 4, d_k)
    additive_runs = run_times(lambda: additive_scores(qa, ka, W_q, W_k, w), sizes.repeats)
    dot_runs = run_times(lambda: qa @ ka.T / math.sqrt(d_k), sizes.repeats)
    q1, keys = torch.randn(trials, 1, d_k), torch.randn(trials, sizes.n_keys, d_k)
    additive_weights = additive_scores(q1, keys, W_q, W_k, w).softmax(-1)
    unscaled_weights = (q1 @ keys.transpose(-2, -1)).softmax(-1)
    return {
        "d_k": d_k,
        "additive (ms)": record.median(additive_runs),
        "dot product (ms)": record.median(dot_runs),
        "largest weight, additive": additive_weights.amax(-1).mean().item(),
        "largest weight, unscaled dot product": unscaled_weights.amax(-1).mean().item(),
        "additive runs (ms)": additive_runs,
        "dot product runs (ms)": dot_runs,
    }


# %% [markdown]
# Three widths. At the widest, one matrix product stands against an $(n_q, n_k, d_k)$ tanh. The
# table shows the median of `repeats` timed runs on this machine with the fastest and the slowest
# (timings are shown, never asserted: a busy machine moves them), and the cell checks that
# additive scoring's largest weight is below the unscaled dot product's:

# %%
additive = pd.DataFrame([additive_row(d_k) for d_k in (16, 64, 256)])
widest_additive = additive.iloc[-1]
assert (
    widest_additive["largest weight, additive"]
    < widest_additive["largest weight, unscaled dot product"]
)
viz.show_table(record.additive_table(additive))
display(Markdown(sentences.describe_additive_timing(record.additive_rows(additive))))

# %% [markdown]
# The timings are of the profile's `time_len` queries against four times `n_keys` keys on this
# machine (the profile's sizes); the exact ratio depends on the machine. The last two columns say
# what the softmax makes of each kind of score: the unscaled dot product's largest weight heads
# for 1 as $d_k$ grows, the additive one stays spread (the cell checks it at the widest $d_k$).

# %% [markdown]
# ## 1.3 Masks: padding and the future
#
# Two things must be hidden from a query. **Padding**: a batch holds sentences of different lengths,
# filled up to the longest with a padding token that is not a word, and no query should take
# information from it. **The future**: the decoder learns to predict word $t+1$ from words $1..t$,
# and during training it reads the whole target sentence at once, so position $t$ must be blocked
# from every later position; otherwise it could copy the answer.
#
# Both are boolean matrices with True where a query may look at a key, and they combine with `&`.
# Masked scores become $-\infty$ before the softmax, so their weights are exactly zero.

# %%
lengths = torch.tensor([7, 4])  # two sentences, padded to 7 positions
T = 7
padding = torch.arange(T)[None, :] < lengths[:, None]  # (B, T): True at real tokens
padding_mask = padding[:, None, :]  # (B, 1, T): the same for every query
causal_mask = torch.ones(T, T, dtype=torch.bool).tril()  # (T, T): query i sees keys 0..i
combined = padding_mask & causal_mask  # (B, T, T), by broadcasting

q, k, v = torch.randn(2, T, 16), torch.randn(2, T, 16), torch.randn(2, T, 8)
out, weights = attention(q, k, v, combined)
assert (weights[~combined] == 0).all()  # masked keys get exactly zero weight

# %% [markdown]
# Changing the future, or what sits in the padding, changes nothing before it. The cell redraws
# the values of positions 4 onwards in both rows (row 1 is padding from position 4 on):

# %%
v_changed = v.clone()
v_changed[:, 4:] = torch.randn(2, T - 4, 8)
out_changed, _ = attention(q, k, v_changed, combined)
torch.testing.assert_close(out_changed[:, :4], out[:, :4])

# %% [markdown]
# The causal mask, and the combined mask of the second sentence (4 real tokens out of 7):

# %%
viz.show(
    viz.side_by_side(
        figures.mask_chart(causal_mask, title="Causal mask (decoder self-attention)"),
        figures.mask_chart(
            combined[1], title="Causal and padding, a sentence of 4 tokens"
        ),
    )
)

# %% [markdown]
# The package takes the same boolean convention (it is the one of `F.scaled_dot_product_attention`)
# and the decoder asks for the causal part with `is_causal=True`. With no other mask, the fused
# path hands that flag to the kernel and no $T \times T$ matrix is built; when a padding mask is
# passed as well, the package builds the causal matrix and combines the two with `&`, since the
# kernel takes one or the other. Masks have shape (batch, heads, queries, keys) or anything
# that broadcasts to it: the model's source mask is (B, 1, 1, S).
#
# The decoder's self-attention needs no target padding mask. Target sentences are padded at the
# end, so under the causal mask a real position only ever sees real positions before it; the
# padded positions do see real ones and produce outputs, but the loss ignores them (chapter 04).
# Both package functions, given the padding mask and `is_causal=True`, give the output and
# weights of the hand-written function with the combined mask:

# %%
mask4 = padding[
    :, None, None, :
]  # (B, 1, 1, T): padding, broadcast over heads and queries
qkv = (q[:, None], k[:, None], v[:, None])  # a heads dimension of 1
out_package = fused_attention(*qkv, mask4, is_causal=True)[:, 0]
out_explicit, w_explicit = explicit_attention(*qkv, mask4, is_causal=True)
torch.testing.assert_close(out_package, out, atol=1e-5, rtol=1e-5)
torch.testing.assert_close(out_explicit[:, 0], out, atol=1e-6, rtol=1e-5)
torch.testing.assert_close(w_explicit[:, 0], weights, atol=1e-6, rtol=1e-5)

# %% [markdown]
# Here is the package's fused function:

# %%
viz.show_source(fused_attention)

# %% [markdown]
# ### Masks in low precision, and a query with nothing to see
#
# Two common ways of writing a mask break in ways that are easy to miss. Filling masked scores with
# a large negative constant such as $-10^9$ cannot even be written in float16, whose largest
# magnitude is 65504. Filling them with $-\infty$ works until a query has *no* allowed key: the
# softmax of a row of $-\infty$ is $0/0$, a NaN that then spreads through the whole batch. Such
# rows are not exotic: an empty source sentence in a batch leaves every cross-attention query of
# that row with nothing to read, and a left-padded sequence under a causal mask leaves its first
# positions with no visible key. And a finite constant hides the NaN without fixing anything: the
# row becomes a uniform average over padding.
#
# The package keeps masks boolean all the way into the kernel (no constant to overflow in bf16 or
# fp16) and returns zeros for a query that may see nothing. The table runs each recipe on the same
# scores, with one query whose keys are all masked. First the scores, and a function that names
# what that query receives:

# %%
scores = torch.randn(2, 4)
# query 1 sees nothing
allowed = torch.tensor([[True, True, False, False], [False, False, False, False]])
values = torch.randn(4, 3)


def outcome(fn) -> str:
    try:
        out = fn()
    except RuntimeError as exc:
        return f"error: {str(exc).splitlines()[0][:60]}"
    if torch.isnan(out).any():
        return "NaN"
    return "zeros" if (out[1] == 0).all() else "average of masked values"


# %% [markdown]
# Three recipes written by hand, and the package's two functions in three precisions:

# %%
recipes = {
    "add -1e9, float32": lambda: ((scores + (~allowed) * -1e9).softmax(-1)) @ values,
    "masked_fill(-1e9), float16": lambda: (
        scores.half().masked_fill(~allowed, -1e9).softmax(-1) @ values.half()
    ),
    "masked_fill(-inf), float32": lambda: (
        scores.masked_fill(~allowed, float("-inf")).softmax(-1) @ values
    ),
}
qkv4 = (torch.randn(1, 1, 2, 8), torch.randn(1, 1, 4, 8), torch.randn(1, 1, 4, 3))
for dtype in (torch.float32, torch.bfloat16, torch.float16):
    qd, kd, vd = (t.to(dtype) for t in qkv4)
    name = str(dtype).replace("torch.", "")
    recipes[f"package fused_attention, {name}"] = lambda qd=qd, kd=kd, vd=vd: (
        fused_attention(qd, kd, vd, allowed)[0, 0]
    )
    recipes[f"package explicit_attention, {name}"] = lambda qd=qd, kd=kd, vd=vd: (
        explicit_attention(qd, kd, vd, allowed)[0][0, 0]
    )

# %% [markdown]
# Each recipe runs once. The cell checks that the package gives zeros in every precision and
# that the $-\infty$ fill gives a NaN:

# %%
recipe_table = pd.DataFrame(
    [dict(recipe=name, outcome=outcome(fn)) for name, fn in recipes.items()]
)
assert all(recipe_table[recipe_table.recipe.str.startswith("package")].outcome == "zeros")
assert recipe_table.set_index("recipe").loc["masked_fill(-inf), float32"].item() == "NaN"
recipe_table = recipe_table.rename(columns={"outcome": "query with nothing to see gets"})
viz.show_table(recipe_table)

# %% [markdown]
# ## 1.4 Multi-head attention
#
# One attention gives each query one weighted average, so one notion of "relevant" per layer. The
# paper instead runs $h$ attentions side by side. Each *head* $i$ has its own projections
# $W_i^Q, W_i^K \in \mathbb{R}^{d_\text{model} \times d_k}$ and $W_i^V \in \mathbb{R}^{d_\text{model}
# \times d_v}$ that map the layer's inputs to narrow queries, keys and values; the $h$ outputs are
# concatenated and mixed back to $d_\text{model}$ by $W^O$. Because the heads are narrow
# ($d_k = d_v = d_\text{model}/h$, 64 for the base model's 8 heads of 512), the whole layer costs
# about what one full-width head would. Written with an explicit loop over the heads:

# %%
d_model, h = 32, 4
d_k = d_v = d_model // h
W_q = [torch.randn(d_model, d_k) / math.sqrt(d_model) for _ in range(h)]
W_k = [torch.randn(d_model, d_k) / math.sqrt(d_model) for _ in range(h)]
W_v = [torch.randn(d_model, d_v) / math.sqrt(d_model) for _ in range(h)]
W_o = torch.randn(h * d_v, d_model) / math.sqrt(h * d_v)


def multi_head(x_query, x_memory, allowed=None):
    """Concat_i(Attention(x_q W_i^Q, x_m W_i^K, x_m W_i^V)) W^O, one head at a time."""
    heads = [
        attention(x_query @ W_q[i], x_memory @ W_k[i], x_memory @ W_v[i], allowed)[0]
        for i in range(h)
    ]
    return torch.cat(heads, dim=-1) @ W_o


x = torch.randn(2, 6, d_model)
loop_out = multi_head(x, x)

# %% [markdown]
# The package's `MultiHeadAttention` computes the same thing with one matrix product for all the
# heads' queries, keys and values (section 1.6) and a reshape that puts the heads in a batch
# dimension. Its fused projection stacks the heads' $W^Q$ column blocks, then the $W^K$ blocks, then
# the $W^V$ blocks; loading our matrices into it gives the same output:

# %%
mha = MultiHeadAttention(d_model, h, d_k, d_v, self_attention=True)
with torch.no_grad():
    # nn.Linear stores weight as (out, in), so each (d_model, d_k) block enters
    # transposed.
    mha.qkv_proj.weight.copy_(torch.cat([*W_q, *W_k, *W_v], dim=1).T)
    mha.qkv_proj.bias.zero_()
    mha.out_proj.weight.copy_(W_o.T)
    mha.out_proj.bias.zero_()
torch.testing.assert_close(mha(x), loop_out, atol=1e-5, rtol=1e-5)

# %% [markdown]
# The loop and the module agree (the cell checks it). The module's forward pass, as the package
# has it:

# %%
viz.show_source(MultiHeadAttention.forward)

# %% [markdown]
# ### Eight heads for the price of one
#
# Why is this not $h$ times dearer? The projections of $h$ heads of width $d_\text{model}/h$ are
# column blocks of one $d_\text{model} \times d_\text{model}$ matrix, so they hold the same number
# of parameters and cost the same multiplications as one full-width head. The scores $QK^\top$ and
# the weighted sum cost $2 n^2 d_k$ multiply-adds per head, $2 n^2 d_\text{model}$ for all $h$
# heads together: again the same. What does grow with $h$ is the number of score entries (one
# $n \times n$ matrix per head) and so the work of the softmax, which is small next to the matrix
# products. The table counts all of this on the package's module with PyTorch's FLOP counter,
# running the module's explicit path (the counter does not know every CPU attention kernel; the
# explicit path performs the same matrix products on any device):


# %%
def attention_cost(d_model: int, heads: int, n: int) -> dict:
    module = MultiHeadAttention(
        d_model, heads, d_model // heads, d_model // heads, self_attention=True
    )
    x = torch.randn(1, n, d_model)
    # the explicit path, whose matrix products the counter sees on every device
    module.record = []
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        module(x)
    return dict(
        heads=heads,
        d_k=d_model // heads,
        parameters=sum(p.numel() for p in module.parameters()),
        flops=counter.get_total_flops(),
        score_entries=heads * n * n,
    )


# %% [markdown]
# For $d_\text{model} = 512$ and a sentence of 64 positions, from 1 to 32 heads. The cell checks
# every row against the closed forms: $4 d^2 + 4 d$ weights and biases, and $8 n d^2$ FLOPs for
# the projections plus $4 n^2 d$ for the scores and the weighted sum:

# %%
cost_d_model, cost_n = 512, 64
head_costs = pd.DataFrame(
    [attention_cost(cost_d_model, heads, cost_n) for heads in (1, 2, 4, 8, 16, 32)]
)
assert (head_costs.parameters == 4 * cost_d_model**2 + 4 * cost_d_model).all()
assert (
    head_costs.flops == 8 * cost_n * cost_d_model**2 + 4 * cost_n**2 * cost_d_model
).all()
viz.show_table(head_costs, parameters="{:,}", flops="{:,}", score_entries="{:,}")

# %% [markdown]
# Each cost divided by its value for one head:

# %%
viz.show(
    figures.relative_cost_chart(
        head_costs,
        "heads",
        {
            "parameters": "parameters (relative to 1 head)",
            "flops": "matrix-product FLOPs (relative)",
            "score_entries": "softmax entries (relative)",
        },
        title=f"Cost of h heads of width {cost_d_model}/h against one head "
        f"(n = {cost_n})",
        subtitle="parameters and matrix-product FLOPs stay at 1 (their lines overlap); "
        "only the softmax grows",
    )
)

# %% [markdown]
# ## 1.5 Queries, keys and values in the three uses
#
# The model attends in three places, and they differ only in where $Q$, $K$ and $V$ come from:
#
# * **Encoder self-attention**: queries, keys and values all come from the previous encoder layer,
#   so every source position can look at every (non-padding) source position.
# * **Decoder self-attention**: all three come from the previous decoder layer, with the causal mask,
#   so a target position sees itself and what came before it.
# * **Encoder-decoder attention**: queries come from the decoder, keys and values from the output of
#   the encoder's last layer, so every target position can read the whole source sentence.
#
# A small untrained model from the package shows the three weight matrices for one sentence pair
# (the source has two padding positions at the end). Untrained weights are nearly uniform; what
# matters here is the shape of each matrix and where it is exactly zero. (Chapter 08 shows what a
# trained model does with them.) The package's `attention_maps` collects them, layer by layer:

# %%
viz.show_source(attention_maps)

# %% [markdown]
# The sentence pair: six source tokens and two padding positions, and a target prefix of five
# tokens starting with `bos`:

# %%
tiny = preset("tiny", dropout=0.0)
model = Transformer(tiny, 40, 40).eval()
# 6 tokens + 2 padding
src = torch.tensor([[5, 9, 12, 7, 8, 3, tiny.pad_id, tiny.pad_id]])
tgt = torch.tensor([[tiny.bos_id, 14, 6, 22, 30]])
maps = attention_maps(model, src, tgt)
S, T_tgt, src_real = src.size(1), tgt.size(1), src[0] != tiny.pad_id

# %% [markdown]
# In every layer, no query reads source padding and no decoder query reads a later target
# position (the cell checks them all):

# %%
assert maps["encoder"][0].shape == (1, tiny.n_heads, S, S)
assert maps["decoder_self"][0].shape == (1, tiny.n_heads, T_tgt, T_tgt)
assert maps["decoder_cross"][0].shape == (1, tiny.n_heads, T_tgt, S)
for layer in range(tiny.n_layers):
    assert (maps["encoder"][layer][..., ~src_real] == 0).all()  # nobody reads padding
    assert (maps["decoder_cross"][layer][..., ~src_real] == 0).all()
    assert (maps["decoder_self"][layer].triu(1) == 0).all()  # nobody reads the future

# %% [markdown]
# Where each use takes its queries, keys and values, and the shape of its weights (batch,
# heads, queries, keys):

# %%
uses = pd.DataFrame(
    [
        ("encoder self-attention", "encoder (source)", "encoder (source)"),
        ("decoder self-attention", "decoder (target)", "decoder (target)"),
        ("encoder-decoder attention", "decoder (target)", "encoder output"),
    ],
    columns=["use", "queries", "keys_and_values"],
)
uses["weights"] = [
    tuple(maps[key][0].shape) for key in ("encoder", "decoder_self", "decoder_cross")
]
uses["mask"] = ["source padding", "causal", "source padding"]
viz.show_table(uses)

# %% [markdown]
# The first head of the first layer of each use, on one colour scale:

# %%
src_labels = [f"s{i}" if real else "pad" for i, real in enumerate(src_real.tolist())]
tgt_labels = ["bos"] + [f"t{i}" for i in range(1, T_tgt)]
viz.show(
    figures.attention_uses_chart(
        maps["encoder"][0][0, 0],
        maps["decoder_self"][0][0, 0],
        maps["decoder_cross"][0][0, 0],
        src_labels,
        tgt_labels,
    )
)

# %% [markdown]
# ## 1.6 One projection instead of three
#
# In self-attention, $Q$, $K$ and $V$ are three linear maps of the same input. Three maps of one
# input are one map into the concatenated output, so the package multiplies once by a
# $d_\text{model} \times 3 d_\text{model}$ matrix and splits the result: one larger matrix product
# instead of three smaller ones, which keeps a GPU busier and launches fewer kernels. (PyTorch's
# own `nn.MultiheadAttention` stores its weights the same way, in `in_proj_weight`.) Cross-attention
# fuses only $K$ and $V$, which share the encoder output as input.

# %%
d = 64
three = nn.ModuleList(nn.Linear(d, d) for _ in range(3))
fused = nn.Linear(d, 3 * d)
with torch.no_grad():
    fused.weight.copy_(torch.cat([m.weight for m in three]))  # stack the output rows
    fused.bias.copy_(torch.cat([m.bias for m in three]))
x = torch.randn(4, 10, d)
q_fused, k_fused, v_fused = fused(x).split(d, dim=-1)
for a, b in zip((q_fused, k_fused, v_fused), three):
    # same products, summed in the same order
    torch.testing.assert_close(a, b(x), atol=1e-6, rtol=1e-5)

# %% [markdown]
# Does one product save time? The timings from here on run on the chapter's device, through
# `run_times` of section 1.2: one warm-up call, then `repeats` timed runs, each waited for until a
# GPU has finished. The tables report the median run and the fastest and slowest: that spread is the
# timing noise a difference must exceed before the chapter calls one alternative faster. Three
# projections of width 512 against one of width 1536, on a batch of the profile's `time_batch`
# sequences of `time_len` positions:

# %%
d = 512
three_dev = nn.ModuleList(nn.Linear(d, d) for _ in range(3)).to(device)
fused_dev = nn.Linear(d, 3 * d).to(device)
x = torch.randn(sizes.time_batch, sizes.time_len, d, device=device)
projection_runs = {
    record.THREE_PROJECTIONS: run_times(lambda: [m(x) for m in three_dev], sizes.repeats),
    record.ONE_PROJECTION: run_times(lambda: fused_dev(x).split(d, -1), sizes.repeats),
}
print(
    f"input {tuple(x.shape)} on {device}; {sizes.repeats} runs each "
    "(not asserted: timings vary with the machine)"
)
viz.show_table(
    record.timing_table(projection_runs, "projection"),
    ms="{:.3f}",
    fastest_ms="{:.3f}",
    slowest_ms="{:.3f}",
)

# %% [markdown]
# The answer, from the medians and the spread of the runs:

# %%
display(
    Markdown(sentences.describe_projections(projection_runs, where=device_name(device)))
)

# %% [markdown]
# ## 1.7 The package's two paths: fused and explicit
#
# During training and decoding, `MultiHeadAttention` calls the fused kernel, which does not hand
# the $n \times n$ weight matrices back (and on a GPU never stores them). When someone wants the
# weights for a picture, setting the module's
# `record` to a list switches it to the explicit path, which appends each call's weights
# (`attention_maps` does that for every layer of a model). Both compute the same function. The
# comparison uses the base model's width and heads, on a batch of the profile's timing size
# whose sentences have random lengths between half and all of `time_len`:

# %%
d_model, heads = 512, 8
mha = MultiHeadAttention(
    d_model, heads, d_model // heads, d_model // heads, self_attention=True
)
mha = mha.to(device).eval()
x = torch.randn(sizes.time_batch, sizes.time_len, d_model, device=device)
lengths = torch.randint(
    sizes.time_len // 2, sizes.time_len + 1, (sizes.time_batch,), device=device
)
positions = torch.arange(sizes.time_len, device=device)
mask = (positions[None, :] < lengths[:, None])[:, None, None, :]

# %% [markdown]
# The same input through both paths; the explicit one leaves its weights in `record`:

# %%
with torch.no_grad():
    fused_out = mha(x, mask=mask)
    mha.record = []
    explicit_out = mha(x, mask=mask)
    recorded = mha.record.pop()
    mha.record = None
# float32 kernels with different summation orders
torch.testing.assert_close(fused_out, explicit_out, atol=1e-4, rtol=1e-4)
assert recorded.shape == (sizes.time_batch, heads, sizes.time_len, sizes.time_len)

# %% [markdown]
# Each path timed, with the memory of the weights the explicit path keeps:


# %%
def run_explicit():
    mha.record = []
    mha(x, mask=mask)
    mha.record = None


path_runs = {
    record.FUSED_PATH: run_times(lambda: mha(x, mask=mask), sizes.repeats),
    record.EXPLICIT_PATH: run_times(run_explicit, sizes.repeats),
}
weights_mb = recorded.numel() * recorded.element_size() / 2**20
viz.show_table(
    record.timing_table(path_runs, "path").assign(weights_kept_MB=[0.0, weights_mb]),
    ms="{:.2f}",
    fastest_ms="{:.2f}",
    slowest_ms="{:.2f}",
    weights_kept_MB="{:.1f}",
)

# %%
display(
    Markdown(
        f"Both paths agree to within {(fused_out - explicit_out).abs().max().item():.1e} "
        f"on a batch of {sizes.time_batch} sequences of {sizes.time_len} positions "
        f"({device}). {sentences.describe_paths(path_runs, weights_mb)}"
    )
)

# %% tags=["remove-cell"]
written = record.write(
    record.build(
        sizes=sizes, variance=variance, saturation=saturation, additive=additive,
        head_costs=head_costs, projection_runs=projection_runs, path_runs=path_runs,
        explicit_weights_mb=weights_mb,
    ),
    profile_name, time.perf_counter() - chapter_start, device=device,
)  # fmt: skip

# %% [markdown]
# ## What this run shows
#
# The chapter's measurements, read back from its results record, with section 1.6's question
# answered:

# %%
display(Markdown(sentences.closing(record.read(profile_name))))

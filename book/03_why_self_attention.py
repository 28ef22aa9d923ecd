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
# # 3. Why self-attention (section 4, Table 1)
#
# Section 4 of the paper {cite:p}`vaswani2017attention` argues for self-attention by comparing one
# layer of it with one recurrent layer {cite:p}`hochreiter1997lstm` and one convolutional layer
# {cite:p}`kalchbrenner2016bytenet,gehring2017convs2s`, each mapping a sequence of $n$ vectors of
# width $d$ to another such sequence. Table 1 of the paper rates them on three counts:
#
# * **cost per layer**: how the work grows with $n$ and $d$;
# * **sequential operations**: how many steps must wait for one another, which limits parallelism;
# * **maximum path length**: how many steps separate the two most distant positions, which the
#   paper links to how hard long-range dependencies are to learn.
#
# This chapter measures all three instead of quoting them: FLOPs counted by PyTorch, wall-clock
# time and memory as $n$ and $d$ grow, fitted against the table's exponents, and path lengths
# computed on the graph of which position feeds which. The machinery is
# `annotated_transformer.chapters.why_self_attention.table1`.

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
import torch.nn.functional as F
from IPython.display import Markdown, display
from torch.utils.flop_counter import FlopCounterMode

from annotated_transformer import viz
from annotated_transformer.book.parameters import chapter_profile
from annotated_transformer.chapters.why_self_attention import (
    figures,
    record,
    sentences,
    verdicts,
)
from annotated_transformer.chapters.why_self_attention import sizes as chapter_sizes
from annotated_transformer.chapters.why_self_attention import table1 as complexity
from annotated_transformer.data.reading import load_parallel
from annotated_transformer.data.tokenizer import train_tokenizer
from annotated_transformer.evaluation import paper
from annotated_transformer.runtime.devices import device_name, resolve_device

# %% tags=["parameters"]
# auto: the machine's (gpu where CUDA is visible, else cpu); or smoke | cpu | gpu | paper
profile_name = "auto"  # sets the sizes measured below
device = "auto"  # "auto" picks CUDA when a GPU is visible: the timings are of that device
threads = 1  # CPU threads for the timings (1: steady on a shared machine; None: default)
kernel_size = 3  # k of the convolutional layer
# None: $AT_DATA_DIR, then a download (section 3.8 reads Multi30k and WMT)
data_dir = None
seed = 0

# %% [markdown]
# The sizes of the sweeps come from the profile record. `by_n` grows the length at a fixed
# width, `by_d` the width at a fixed length, and `crossover` compares attention with recurrence
# at the base model's d = 512:

# %%
profile = chapter_profile(profile_name, "03")
profile_name = profile.name  # the machine's profile where it was auto
device = resolve_device(device)
if device.type == "cpu" and threads is not None:
    torch.set_num_threads(threads)
chapter_start = time.perf_counter()
torch.manual_seed(seed)
sizes = chapter_sizes.of(profile.name)
where = device_name(device)
threads_note = f", {torch.get_num_threads()} thread(s)" if device.type == "cpu" else ""
print(f"profile {profile_name!r}, timings on {where}{threads_note}")
viz.show_table(chapter_sizes.table(profile.name))

# %% [markdown]
# ## 3.1 Three ways to mix a sequence
#
# Each layer below takes a batch of sequences $x \in \mathbb{R}^{B \times n \times d}$ and returns
# the same shape; each output position may depend on other positions, and the three layers differ
# in which ones and through how many steps.
#
# * **Self-attention**: $\mathrm{softmax}(x x^\top / \sqrt{d})\, x$. Every output is a weighted
#   average over all $n$ positions, with weights from $n \times n$ dot products of width $d$:
#   $O(n^2 d)$. (The query, key, value and output projections of a real attention sub-layer are
#   position-wise matrix products, $O(n d^2)$ like the feed-forward network of chapter 02; Table 1
#   counts only the mixing, and so does this layer. Section 3.6 adds them back.)
# * **Recurrent**: $h_t = \tanh(W x_t + U h_{t-1} + b)$. Two $d \times d$ matrix products per
#   position, $O(n d^2)$, but step $t$ cannot start before step $t-1$ has finished.
# * **Convolutional**: output $t$ is a learned linear map of inputs $t - \lfloor k/2 \rfloor$ to
#   $t + \lfloor k/2 \rfloor$: $k$ matrices of $d \times d$ per position, $O(k n d^2)$, all positions
#   at once.
#
# Written out in plain PyTorch:


# %%
def self_attention_plain(x):
    weights = (x @ x.transpose(1, 2) / math.sqrt(x.size(-1))).softmax(dim=-1)  # (B, n, n)
    return weights @ x


def recurrent_plain(x, W, U, b):
    h, outputs = x.new_zeros(x.size(0), U.size(0)), []
    for t in range(x.size(1)):  # n steps, each waiting for the one before
        h = torch.tanh(x[:, t] @ W.T + h @ U.T + b)
        outputs.append(h)
    return torch.stack(outputs, dim=1)


def convolution_plain(x, weight, bias):
    k = weight.size(-1)  # weight: (d_out, d_in, k)
    # zeros before the first and after the last position
    padded = F.pad(x, (0, 0, k // 2, k // 2))
    return sum(padded[:, j : j + x.size(1)] @ weight[:, :, j].T for j in range(k)) + bias


# %% [markdown]
# Each plain function against the package's layer of the same kind (`complexity.make_layer`),
# on three sequences of 10 vectors of width 16; `nn.RNN` keeps two biases, whose sum is the $b$
# of the formula:

# %%
d = 16
x = torch.randn(3, 10, d)
attention_layer = complexity.make_layer("self-attention", d)
recurrent_layer = complexity.make_layer("recurrent", d)
conv_layer = complexity.make_layer("convolutional", d, kernel_size=kernel_size)
rnn = recurrent_layer.rnn
rnn_weights = (rnn.weight_ih_l0, rnn.weight_hh_l0, rnn.bias_ih_l0 + rnn.bias_hh_l0)
conv_weights = (conv_layer.conv.weight, conv_layer.conv.bias)
close = dict(atol=1e-5, rtol=1e-5)
with torch.no_grad():
    torch.testing.assert_close(attention_layer(x), self_attention_plain(x), **close)
    plain = recurrent_plain(x, *rnn_weights)
    torch.testing.assert_close(recurrent_layer(x), plain, **close)
    plain = convolution_plain(x, *conv_weights)
    torch.testing.assert_close(conv_layer(x), plain, **close)

# %% [markdown]
# The three plain functions and the package's layers agree (the cell checks it). The package's
# layers, as `annotated_transformer.chapters.why_self_attention.table1` defines them:

# %%
viz.show_source(complexity.make_layer)

# %% [markdown]
# ## 3.2 Counting the work
#
# PyTorch's FLOP counter records every matrix product and convolution a layer performs (one
# multiply-add counts as two FLOPs). `complexity.counted_flops` runs one forward pass under it:

# %%
viz.show_source(complexity.counted_flops)

# %% [markdown]
# The counts match the closed forms exactly (the cell checks every one), and the closed forms
# have the shapes of Table 1's complexity column: $4 n^2 d$ for self-attention, $4 n d^2$ for
# the recurrent layer, $2 k n d^2$ for the convolution.

# %%
flop_rows = []
for n, d in ((16, 64), (64, 64), (256, 64), (64, 256)):
    for kind in complexity.LAYER_KINDS:
        layer = complexity.make_layer(kind, d, kernel_size=kernel_size)
        counted = complexity.counted_flops(layer, torch.randn(1, n, d))
        formula = complexity.layer_flops(kind, n, d, kernel_size=kernel_size)
        assert counted == formula, (kind, n, d)
        flop_rows.append(
            dict(
                kind=kind,
                n=n,
                d=d,
                counted_flops=counted,
                closed_form=formula,
                paper=paper.TABLE1[kind].complexity,
            )
        )
viz.show_table(pd.DataFrame(flop_rows), counted_flops="{:,}", closed_form="{:,}")

# %% [markdown]
# ## 3.3 Time and memory as $n$ grows, and as $d$ grows
#
# FLOPs are a model of cost; time is the cost. For each layer and each size the package runs the
# forward pass repeatedly and keeps the fastest run (other processes on a machine can only add
# time), and it records the activation memory the layer keeps for its backward pass, by listing
# every tensor autograd saves (the layer's weights, which exist anyway, are not counted). The
# two measurements, as the package has them:

# %%
viz.show_source(complexity.time_layer)
viz.show_source(complexity.saved_activation_bytes)

# %% [markdown]
# The slopes of the lines on log-log axes are the measured exponents. Small sizes are dominated
# by fixed costs (launching an operation, one loop iteration of the recurrent layer), so
# exponents are fitted on the larger half of the sizes. `measure` runs the package's sweep with
# this chapter's settings, and `fitted_slope` fits one layer's exponent:


# %%
def measure(ns, ds, batch, memory=True, flops=False, kinds=complexity.LAYER_KINDS):
    return pd.DataFrame(
        complexity.sweep(
            kinds,
            ns=ns,
            ds=ds,
            batch=batch,
            kernel_size=kernel_size,
            repeats=sizes.repeats,
            device=device,
            memory=memory,
            flops=flops,
        )
    )


def fitted_slope(df, x, y, kind):
    part = df[df.kind == kind].sort_values(x)
    upper = part.iloc[len(part) // 2 :]
    return complexity.loglog_slope(upper[x], upper[y])


# %% [markdown]
# The two sweeps of the profile, one growing $n$ and one growing $d$:

# %%
started = time.perf_counter()
by_n = measure(sizes.by_n.ns, (sizes.by_n.d,), sizes.by_n.batch)
by_d = measure((sizes.by_d.n,), sizes.by_d.ds, sizes.by_d.batch)
print(f"measured {len(by_n) + len(by_d)} points in {time.perf_counter() - started:.1f} s")

# %% [markdown]
# The dashed lines in the charts below have the exponents of Table 1, drawn through each layer's
# largest measurement. Table 1 has no memory column; for memory the dashed lines follow the
# leading terms of the textbook algorithms: attention keeps an $n \times n$ weight matrix ($n^2$,
# and $n \times d$ inputs, $d^1$), the other two a few $n \times d$ tensors.

# %%
exp_n = {k: paper.TABLE1[k].n_exponent for k in complexity.LAYER_KINDS}
exp_d = {k: paper.TABLE1[k].d_exponent for k in complexity.LAYER_KINDS}
memory_exp_n = {"self-attention": 2, "recurrent": 1, "convolutional": 1}
memory_exp_d = {"self-attention": 1, "recurrent": 1, "convolutional": 1}

# %% [markdown]
# Time:

# %%
viz.show(
    figures.scaling_charts(
        by_n,
        by_d,
        "seconds",
        exp_n,
        exp_d,
        what="Time",
        y_title="seconds per forward pass",
    )
)

# %% [markdown]
# Memory kept for the backward pass:

# %%
viz.show(
    figures.scaling_charts(
        by_n.assign(MB=by_n.saved_bytes / 2**20),
        by_d.assign(MB=by_d.saved_bytes / 2**20),
        "MB",
        memory_exp_n,
        memory_exp_d,
        what="Memory kept for backward",
        y_title="MB saved for backward",
    )
)

# %% [markdown]
# The fitted exponents, beside the paper's:

# %%
slopes = pd.DataFrame(
    [
        dict(
            kind=kind,
            paper=paper.TABLE1[kind].complexity,
            time_vs_n=fitted_slope(by_n, "n", "seconds", kind),
            paper_n=exp_n[kind],
            time_vs_d=fitted_slope(by_d, "d", "seconds", kind),
            paper_d=exp_d[kind],
            memory_vs_n=fitted_slope(by_n, "n", "saved_bytes", kind),
            memory_vs_d=fitted_slope(by_d, "d", "saved_bytes", kind),
        )
        for kind in complexity.LAYER_KINDS
    ]
)
viz.show_table(
    slopes,
    time_vs_n="{:.2f}",
    time_vs_d="{:.2f}",
    memory_vs_n="{:.2f}",
    memory_vs_d="{:.2f}",
)

# %% [markdown]
# Memory is deterministic (it counts bytes), so it is checked; the times are only reported. The
# recurrent and convolutional layers keep a few $(n, d)$ tensors: linear in $n$, up to a
# constant.

# %%
memory_slopes = slopes.set_index("kind").memory_vs_n
assert abs(memory_slopes["recurrent"] - 1) < 0.05, memory_slopes
assert abs(memory_slopes["convolutional"] - 1) < 0.05, memory_slopes

# %%
longest_two = by_n[by_n.kind == "self-attention"].sort_values("n").tail(2)
attention_memory_last = complexity.loglog_slope(longest_two.n, longest_two.saved_bytes)
slope_values = record.slopes_by_kind(slopes)
display(Markdown(sentences.describe_slopes(where, slope_values, attention_memory_last)))

# %% [markdown]
# Measured exponents drift from the table's for three usual reasons: fixed costs per call or per
# step flatten the small sizes; caches make a doubling cost more than twice once a working set
# stops fitting in them; and on a busy machine other processes add noise that the
# fastest-of-several timing reduces but cannot remove.
#
# Mind what the memory line measures. The self-attention layer here calls PyTorch's fused
# `F.scaled_dot_product_attention`, not the textbook three steps; what it keeps for the backward
# pass is the kernel's choice. The textbook computation stores the $n \times n$ weights, and a
# flash-style kernel {cite:p}`dao2022flashattention` recomputes them instead, which removes the
# quadratic memory but not the quadratic time: the $n^2$ dot products are computed either way.
# So the time exponent is the one to read against Table 1; the memory exponent says which kind
# of kernel ran on this device.


# %% [markdown]
# ## 3.4 Sequential operations
#
# A recurrent layer is a chain: $h_t$ needs $h_{t-1}$, so its $n$ steps run one after another
# however many processors there are. Self-attention and convolution compute every output position
# from the layer's inputs alone, so a layer is one parallel step. Counted as the longest chain of
# dependent steps inside one layer, on the same connectivity graphs as the next section:

# %%
viz.show_source(complexity.sequential_operations)

# %% [markdown]
# For three lengths (the cell checks $n$ steps for the recurrent layer and one for the others):

# %%
sequential = pd.DataFrame(
    [
        dict(
            kind=kind,
            **{
                f"n = {n}": complexity.sequential_operations(
                    kind, n, kernel_size=kernel_size
                )
                for n in (8, 64, 512)
            },
            paper=paper.TABLE1[kind].sequential,
        )
        for kind in complexity.LAYER_KINDS
    ]
)
counts = sequential.set_index("kind")[["n = 8", "n = 64", "n = 512"]]
assert counts.loc["recurrent"].tolist() == [8, 64, 512]
assert (counts.drop("recurrent") == 1).all().all()
viz.show_table(sequential)

# %% [markdown]
# ## 3.5 Maximum path length
#
# Draw every position of every layer as a node, with an edge from each input a layer reads to the
# output it feeds. A signal from input $i$ reaches output $j$ along a path, and the paper's
# *path length* is the number of edges on the shortest one; the farthest pair sets the maximum.
# The graphs here are causal (output $j$ reads inputs up to $j$, as in the decoder), and for
# layers that read only a window (convolutions, and self-attention restricted to a neighbourhood
# of $r$ positions, the last row of Table 1) layers are stacked until every pair is connected:
#
# * self-attention connects every pair in one layer: path length 1;
# * a recurrent layer connects input $i$ to output $j$ through the step into $h_i$ and then the
#   $j - i$ steps of its chain, $n$ edges for the farthest pair;
# * contiguous convolutions of width $k$ widen the window by $k - 1$ per layer: about $n / (k-1)$
#   layers; dilated convolutions need about $\log_k n$ when the dilation multiplies by $k$ per
#   layer, as it does here. (ByteNet {cite:p}`kalchbrenner2016bytenet` doubles its dilation per
#   layer, whatever $k$, which gives $\log_2 n$ layers up to a constant.)
#
# `complexity.max_path_length` runs a breadth-first search on these graphs:

# %%
viz.show_source(complexity.max_path_length)

# %% [markdown]
# Its answers match the closed forms for every $n$ tried (the cell checks them all); the table
# shows the longest $n$ of the profile:

# %%
path_rows = []
for n in sizes.path_ns:
    for kind in complexity.PATH_KINDS:
        computed = complexity.max_path_length(kind, n, kernel_size=kernel_size)
        assert computed == complexity.path_length_formula(
            kind, n, kernel_size=kernel_size
        ), (kind, n)
        path_rows.append(dict(kind=kind, n=n, max_path_length=computed))
paths = pd.DataFrame(path_rows)
paper_path = {
    **{k: v.path for k, v in paper.TABLE1.items()},
    "convolutional": "O(n/k) contiguous",
    "dilated convolutional": "O(log_k n)",
    "restricted self-attention": "O(n/r)",
}
largest = max(sizes.path_ns)
path_table = paths[paths.n == largest].assign(paper=lambda df: df.kind.map(paper_path))
viz.show_table(path_table)

# %% [markdown]
# For one length, the path from each input position to the last output:

# %%
example_n = sizes.path_example_n
to_last = pd.DataFrame(
    [
        dict(kind=kind, input_position=i, path_length=length)
        for kind in complexity.PATH_KINDS
        for i, length in enumerate(
            complexity.path_lengths_to_last(kind, example_n, kernel_size=kernel_size)
        )
    ]
)

# %% [markdown]
# Both as charts. With $r = k$, restricted self-attention has exactly the connectivity of a
# contiguous convolution, so their lines coincide:

# %%
viz.show(figures.path_length_charts(paths, to_last, kernel_size=kernel_size))

# %% [markdown]
# ## 3.6 When is self-attention cheaper? The $n < d$ crossover
#
# Self-attention costs $4 n^2 d$ FLOPs and a recurrent layer $4 n d^2$, so in FLOPs the two are
# equal exactly at $n = d$, and self-attention is the cheaper one for shorter sequences. With the
# base model's $d = 512$ and sentences of a few dozen subword tokens, translation sits far on the
# cheap side. The measured crossover can sit elsewhere, because FLOPs are not time: a recurrent
# step is a small matrix product that cannot be batched across positions, and each step pays a
# fixed cost, while attention's large matrix products run near the hardware's peak. The two
# layers timed at the profile's crossover lengths:

# %%
cross = sizes.crossover
started = time.perf_counter()
crossover_times = measure(
    cross.ns,
    (cross.d,),
    cross.batch,
    memory=False,
    kinds=("self-attention", "recurrent"),
)
print(f"measured {len(crossover_times)} points in {time.perf_counter() - started:.1f} s")

# %% [markdown]
# `complexity.crossover` finds the first length where self-attention stops being the faster,
# interpolated on log scales between two measured lengths (none if it stays faster); the FLOP
# crossover is $n = d$ (the cell checks that the two FLOP counts are equal there):

# %%
wide = crossover_times.pivot(index="n", columns="kind", values="seconds")
measured_crossover = complexity.crossover(
    list(wide.index), list(wide["self-attention"]), list(wide["recurrent"])
)
flop_crossover = complexity.flop_crossover_n(cross.d)
n_equal = int(flop_crossover)
assert complexity.attention_flops(n_equal, cross.d) == complexity.recurrent_flops(
    n_equal, cross.d
)
viz.show_table(
    wide.reset_index().rename(
        columns={"self-attention": "self-attention (s)", "recurrent": "recurrent (s)"}
    ),
    **{"self-attention (s)": "{:.2e}", "recurrent (s)": "{:.2e}"},
)

# %% [markdown]
# The FLOPs of both layers at the same lengths and batch:

# %%
flops_curve = pd.DataFrame(
    [
        dict(
            n=n,
            kind=kind,
            flops=cross.batch * complexity.layer_flops(kind, n, cross.d),
        )
        for n in cross.ns
        for kind in ("self-attention", "recurrent")
    ]
)

# %% [markdown]
# FLOPs and measured time side by side, with both crossovers marked:

# %%
rules = {f"n = d = {cross.d}": flop_crossover}
if measured_crossover is not None:
    rules[f"measured: n = {measured_crossover:,.0f}"] = measured_crossover
viz.show(figures.crossover_chart(flops_curve, crossover_times, rules, d=cross.d))

# %% [markdown]
# Two caveats make the comparison less tidy than the table. First, the table counts only
# attention's mixing step; a real attention sub-layer also has four $d \times d$ projections,
# $8 n d^2$ FLOPs, already twice a plain recurrent layer, so with them attention never wins on
# FLOPs against a tanh RNN (the cell checks it at every length measured):

# %%
full_layer_always_dearer = all(
    complexity.attention_flops(n, cross.d, projections=True)
    > complexity.recurrent_flops(n, cross.d)
    for n in cross.ns
)
assert full_layer_always_dearer

# %% [markdown]
# Second, the recurrent layers of 2017 were LSTMs. PyTorch's CPU LSTM kernel is opaque to the
# FLOP counter, so here is an LSTM step written out, with its four gates computed at once:

# %%
lstm = nn.LSTM(cross.d, cross.d, batch_first=True)


def lstm_plain(x, W_ih, W_hh, b):
    h = c = x.new_zeros(x.size(0), W_hh.size(1))
    outputs = []
    for t in range(x.size(1)):
        i, f, g, o = (x[:, t] @ W_ih.T + h @ W_hh.T + b).chunk(4, dim=-1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        outputs.append(h)
    return torch.stack(outputs, dim=1)


# %% [markdown]
# Checked against `nn.LSTM` and counted: four gates, each with an input and a recurrent matrix,
# make $16 d^2$ FLOPs per position (the cell checks it):

# %%
lstm_args = (lstm.weight_ih_l0, lstm.weight_hh_l0, lstm.bias_ih_l0 + lstm.bias_hh_l0)
x = torch.randn(2, 8, cross.d)
with torch.no_grad(), FlopCounterMode(display=False) as counter:
    plain_out = lstm_plain(x, *lstm_args)
    torch.testing.assert_close(plain_out, lstm(x)[0], atol=1e-5, rtol=1e-5)
lstm_flops_per_position = counter.get_total_flops() / x[..., 0].numel()
assert lstm_flops_per_position == 16 * cross.d**2

# %% [markdown]
# Against one, the full attention sub-layer is cheaper while $8 n d^2 + 4 n^2 d < 16 n d^2$,
# that is while $n < 2d$. The cell finds the first length where it is not:

# %%
lstm_crossover = next(
    (
        n
        for n in range(1, 100 * cross.d)
        if complexity.attention_flops(n, cross.d, projections=True)
        >= lstm_flops_per_position * n
    ),
    None,
)
assert lstm_crossover == 2 * cross.d

# %%
crossover_words = sentences.describe_crossover(
    where, cross.batch, cross.d, measured_crossover, cross.ns
)
lstm_words = sentences.describe_lstm(lstm_crossover, cross.d, lstm_flops_per_position)
display(Markdown(f"{crossover_words} {lstm_words}"))

# %% [markdown]
# Either way the Transformer's real advantage is the one section 3.4 counts: none of its work
# waits for the previous position.

# %% [markdown]
# ## 3.7 Restricted self-attention and separable convolutions
#
# Table 1's last row is self-attention *restricted* to a neighbourhood of $r$ positions: each
# query reads only the $r$ keys before it (itself included, causal as in section 3.5). That cuts
# the cost from $O(n^2 d)$ to $O(r n d)$ and lengthens the maximum path from 1 to $O(n/r)$: the
# paper mentions it for very long sequences and leaves it to future work. Built with
# `unfold` (each position gets its window of $r$ keys):


# %%
def restricted_attention(x, r):
    """Each position attends to itself and the r - 1 positions before it: O(r n d)."""
    n, d = x.size(1), x.size(2)
    windows = F.pad(x, (0, 0, r - 1, 0)).unfold(1, r, 1).transpose(-1, -2)  # (B, n, r, d)
    scores = torch.einsum("bnd,bnrd->bnr", x, windows) / math.sqrt(d)
    # window slots before the first position hold padding
    before_start = torch.arange(n)[:, None] - r + 1 + torch.arange(r)[None, :] < 0
    scores = scores.masked_fill(before_start.to(x.device), float("-inf"))
    return torch.einsum("bnr,bnrd->bnd", scores.softmax(-1), windows)


# %% [markdown]
# Checked against full attention with a band mask, for $r = 8$ on 64 positions:

# %%
r, d = 8, sizes.by_n.d
x = torch.randn(2, 64, d)
positions = torch.arange(64)
band = (positions[None, :] <= positions[:, None]) & (
    positions[None, :] > positions[:, None] - r
)
banded = (x @ x.transpose(1, 2) / math.sqrt(d)).masked_fill(~band, float("-inf"))
torch.testing.assert_close(
    restricted_attention(x, r), banded.softmax(-1) @ x, atol=1e-5, rtol=1e-5
)

# %% [markdown]
# Counted and timed as $n$ grows beside full self-attention. For one length, the FLOP counter
# must see $4 r n d$ per sequence (two einsums), and each layer's time is the fastest of
# `repeats` calls after one warm-up:


# %%
@torch.no_grad()
def fastest(fn, repeats: int) -> float:
    fn()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def restricted_row(n: int) -> dict:
    x = torch.randn(sizes.by_n.batch, n, d, device=device)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        restricted_attention(x, r)
    assert counter.get_total_flops() == 4 * r * n * d * sizes.by_n.batch
    layer = complexity.make_layer("self-attention", d).to(device)
    return {
        "n": n,
        "restricted (s)": fastest(lambda: restricted_attention(x, r), sizes.repeats),
        "full (s)": fastest(lambda: layer(x), sizes.repeats),
        "max path, restricted": complexity.max_path_length(
            "restricted self-attention", n, kernel_size=r
        ),
        "max path, full": complexity.max_path_length("self-attention", n),
    }


# %% [markdown]
# Every length of the `by_n` sweep, with the exponent of time fitted on the larger half of the
# lengths (the cell checks that full attention's path stays 1 and the restricted one grows):

# %%
restricted = pd.DataFrame([restricted_row(n) for n in sizes.by_n.ns])
upper = restricted.iloc[len(restricted) // 2 :]
restricted_slope = complexity.loglog_slope(upper.n, upper["restricted (s)"])
full_slope = complexity.loglog_slope(upper.n, upper["full (s)"])
assert (restricted["max path, full"] == 1).all()
assert restricted["max path, restricted"].is_monotonic_increasing
viz.show_table(restricted, **{"restricted (s)": "{:.2e}", "full (s)": "{:.2e}"})
display(
    Markdown(
        f"$r = {r}$, $d = {d}$: time grows like $n^{{{restricted_slope:.2f}}}$ restricted, "
        f"$n^{{{full_slope:.2f}}}$ full (fitted on the larger half of the lengths)."
    )
)

# %% [markdown]
# The FLOP counter confirms $4 r n d$ for the restricted layer at every length; the path column
# shows the price, which section 3.5 computed on the same graphs.
#
# **Separable convolutions** {cite:p}`chollet2017xception` split a convolution into a depthwise
# one (each of the $d$ channels convolved on its own, $k n d$ multiply-adds) and a pointwise one
# (a $d \times d$ matrix at every position, $n d^2$). Section 4 notes that even with $k = n$ their
# complexity, $O(k n d + n d^2)$, equals that of a self-attention layer plus a position-wise
# feed-forward layer, the combination the Transformer uses. Counted (the cell checks
# $2 k n d + 2 n d^2$ FLOPs for every size):


# %%
def separable_convolution(d, k):
    depthwise = nn.Conv1d(d, d, k, padding=k // 2, groups=d)  # one filter per channel
    pointwise = nn.Conv1d(d, d, 1)  # a d x d matrix at every position
    return nn.Sequential(depthwise, pointwise)


separable_rows = []
for n, d, k in ((64, 64, 3), (64, 256, 3), (256, 64, 3), (64, 64, 63)):
    conv = separable_convolution(d, k)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        conv(torch.randn(1, d, n))
    counted = counter.get_total_flops()
    assert counted == 2 * k * n * d + 2 * n * d * d
    separable_rows.append(
        {
            "n": n,
            "d": d,
            "k": k,
            "separable FLOPs": counted,
            "full convolution FLOPs": complexity.convolutional_flops(n, d, k),
        }
    )
viz.show_table(
    pd.DataFrame(separable_rows),
    **{"separable FLOPs": "{:,}", "full convolution FLOPs": "{:,}"},
)

# %% [markdown]
# ## 3.8 Is $n < d$ for real sentences?
#
# The paper's argument for self-attention's cost rests on sentences being shorter than the model
# width, "which is most often the case" with subword vocabularies. Checked on the two corpora of
# this book: a small shared BPE model (sentencepiece) is trained on a few thousand training
# pairs of Multi30k and of the WMT sample (a pair with an empty side is left out), and the test
# sentences of both are measured in its subwords. A small vocabulary cuts words into more
# pieces than the paper's 37,000, so these lengths are, if anything, longer than the paper's.
# First the BPE model:

# %%
bpe = sizes.bpe
multi30k = load_parallel("multi30k", "train", data_dir=data_dir)
wmt_train = load_parallel("wmt14", "train_sample", data_dir=data_dir, drop_empty=True)
bpe_text = [
    *multi30k.src[: bpe.lines],
    *multi30k.tgt[: bpe.lines],
    *wmt_train.src[: bpe.lines],
    *wmt_train.tgt[: bpe.lines],
]
tokenizer = train_tokenizer(bpe_text, bpe.vocab, num_threads=1)

# %% [markdown]
# The first `test_lines` test sentences of each corpus and language, in its subwords:

# %%
lengths = []
for corpus, split in (("multi30k", "test"), ("wmt14", "newstest2014")):
    test = load_parallel(corpus, split, data_dir=data_dir)
    for lang, side in ((test.src_lang, test.src), (test.tgt_lang, test.tgt)):
        for ids in tokenizer.encode_batch(list(side[: bpe.test_lines])):
            lengths.append({"corpus": f"{corpus} {split} ({lang})", "subwords": len(ids)})
lengths = pd.DataFrame(lengths)

# %% [markdown]
# The share of sentences shorter than $d_\text{model} = 512$ (the cell checks that more than 99%
# are, in every corpus and language):

# %%
d_model = 512
below = (
    lengths.assign(below=lengths.subwords < d_model)
    .groupby("corpus", sort=False)
    .agg(
        sentences=("subwords", "size"),
        median=("subwords", "median"),
        longest=("subwords", "max"),
        share_below_d=("below", "mean"),
    )
    .reset_index()
)
assert (below.share_below_d > verdicts.MOST_SENTENCES).all()
viz.show_table(
    below.rename(columns={"share_below_d": f"share with n < {d_model}"}),
    **{f"share with n < {d_model}": "{:.2%}", "median": "{:.0f}"},
)

# %% [markdown]
# For each corpus and language, the share of test sentences at most $n$ subwords long, with
# $d_\text{model}$ marked (a curve that reaches 100% left of the mark has every sentence below it):

# %%
viz.show(
    figures.sentence_lengths_chart(
        lengths, d_model, title=f"Test sentences in subwords ({bpe.vocab:,}-piece BPE)"
    )
)

# %% [markdown]
# Nearly every test sentence of both corpora is far shorter than $d_\text{model} = 512$ (the cell
# checks that more than 99% are); image captions are a few dozen subwords, news sentences a
# few dozen more. In the mixing step, self-attention is the cheaper layer for real sentences;
# section 3.6 showed what the projections add to that.

# %% tags=["remove-cell"]
written = record.write(
    record.build(
        device=device, sizes=sizes, kernel_size=kernel_size, slopes=slopes, paths=paths,
        by_n=by_n, by_d=by_d, crossover_times=crossover_times,
        measured_crossover=measured_crossover, lstm_crossover=lstm_crossover,
        sentence_lengths=below, d_model=d_model,
    ),
    profile_name, time.perf_counter() - chapter_start, device=device,
)  # fmt: skip

# %% [markdown]
# ## What this run shows
#
# Table 1's claims as this run measured them, read back from the chapter's results record:

# %%
display(Markdown(sentences.closing(record.read(profile_name))))

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
# # 4. Training (section 5)
#
# Chapters 01 and 02 built the model. This chapter trains it, following section 5 of the paper
# {cite:p}`vaswani2017attention` in its order: the shared subword vocabulary and the batches
# filled by token count (5.1), the learning-rate schedule of the Adam optimizer (5.3), and label
# smoothing (5.4). Each piece is written first as a few lines of plain Python or PyTorch, then
# compared with the package's version. Then the pieces run together: on the copy task, a synthetic
# check that the whole loop learns, and on the profile's real corpus, exactly as
# `python -m annotated_transformer train --profile <profile>` trains it, stopped and resumed on the
# way. Two questions readers of the paper ask are then answered by experiment: why the paper needs
# a warm-up (and why the later pre-norm Transformer does not), and whether the sinusoidal
# positions of section 3.5 let a model handle sequences longer than it was trained on.
#
# What the chapter will show, each with its number at the end: how much of a word a subword is;
# how much padding sorting saves; that the loop learns the copy task; how fast the profile's model
# trains against the paper's; that a stopped run resumes to the very same weights; that the
# post-norm model needs its warm-up and the pre-norm one does not; and how far past its training
# lengths each kind of position copies.

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

# %% [markdown]
# The chapter imports the textbook's tools (PyTorch, pandas, altair) and the package's pieces of
# section 5. Its tables live in `chapters/training/tables.py`, its run folders in `runs.py`
# beside it, what its experiments find in `verdicts.py` (said in words by `phrases.py` and
# `sentences.py`), the post-norm experiment in `warmup.py`.

# %%
import collections
import math
import time

import altair as alt
import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from IPython.display import Markdown, display

# %% [markdown]
# And the package's: the model, the data pipeline and the results files,
# %%
from annotated_transformer import Transformer, pipeline, preset, viz
from annotated_transformer.book.parameters import chapter_profile

# %% [markdown]
# the chapter's own experiments, tables and sentences,
# %%
from annotated_transformer.chapters.training import (
    cpu_studies,
    figures,
    record,
    runs,
    sentences,
    tables,
    warmup,
)
from annotated_transformer.chapters.training import sizes as chapter_sizes
from annotated_transformer.chapters.training.copy_task import (
    accuracy_by_length,
    train_copy_task,
)
from annotated_transformer.data import (
    TokenBatcher,
    load_parallel,
    synthetic_batch,
    tokenizer_for_corpus,
    train_tokenizer,
)
from annotated_transformer.evaluation import results

# %% [markdown]
# and the layers, the profiles, the runtime, the loss, the schedule and the trainer:
# %%
from annotated_transformer.model.layers import Dropout, EncoderLayer
from annotated_transformer.profiles import get_profile
from annotated_transformer.runtime.devices import resolve_device
from annotated_transformer.runtime.records import read_json
from annotated_transformer.training import loss as losses
from annotated_transformer.training import stopping
from annotated_transformer.training.schedule import (
    NoamSchedule,
    noam_lr,
    peak_lr,
    schedule_factor,
)
from annotated_transformer.training.trainer import Trainer

# %% tags=["parameters"]
# auto: the machine's (gpu where CUDA is visible, else cpu); or smoke | cpu | gpu | paper
profile_name = "auto"
device = "auto"  # "auto" picks CUDA when a GPU is visible
max_steps = None  # None keeps the profile's default
data_dir = None  # None: $AT_DATA_DIR, then a download
# continue this chapter's unfinished run of the same profile (a restarted kernel)
resume = True
seed = 0  # the chapter's own experiments (the profile's run has the profile's seed)

# %% [markdown]
# The profile decides everything the chapter trains. Its own small experiments have sizes of
# their own (`sizes`); under `smoke` they are too short to learn much, so the chapter then
# asserts only what holds at any scale (`learns` is false). Two of them, the copy task (4.5) and
# post-norm against pre-norm (4.7), train small models on the CPU under every profile. On a GPU
# machine, whose cores mostly idle while the GPU trains, they start early, in processes of their
# own, when it has a core for each of their six runs and one for the chapter, and train beside the
# rest of the chapter (`cpu_studies`); elsewhere each waits for its section.

# %%
profile = chapter_profile(profile_name, "04", max_steps=max_steps)
profile_name = profile.name  # the machine's profile where it was auto
torch_device = resolve_device(device)
chapter_start = time.perf_counter()
sizes = chapter_sizes.of(profile.name)
learns = profile_name != "smoke"
studies = cpu_studies.CpuStudies(sizes, seed, early=torch_device.type == "cuda")
display(Markdown(sentences.describe_plan(profile, torch_device)))
viz.show_table(chapter_sizes.table(profile.name))

# %% [markdown]
# ## 4.1 A shared subword vocabulary (section 5.1)
#
# The model reads and writes *subwords*: pieces of words from a fixed vocabulary, so that any
# word, even one never seen in training, can be spelled out of known pieces, and frequent words are
# single pieces. The paper used byte-pair encoding (BPE) {cite:p}`sennrich2016bpe` with one
# vocabulary of about 37,000 pieces shared by English and German; sharing is what lets the model
# use one embedding matrix for both languages and for its output (chapter 02).
#
# BPE starts from characters and repeats one step: count every pair of adjacent symbols in the
# training words (weighted by how often each word occurs) and merge the most frequent pair into a
# new symbol. Each merge adds one piece to the vocabulary. Words start with the marker `▁` (the
# space before them), so that a piece knows whether it begins a word, as in sentencepiece
# {cite:p}`kudo2018sentencepiece`, which the package uses. The whole algorithm:


# %%
def learn_bpe(texts: list[str], merges: int) -> list[str]:
    """The first `merges` pieces that byte-pair encoding adds to the characters, in order."""
    words = collections.Counter(
        tuple("▁" + word) for sentence in texts for word in sentence.split()
    )
    learned = []
    for _ in range(merges):
        pairs = collections.Counter()
        for word, count in words.items():
            for a, b in zip(word, word[1:]):
                pairs[a, b] += count
        (a, b), _ = pairs.most_common(1)[0]
        learned.append(a + b)
        merged = collections.Counter()
        for word, count in words.items():
            symbols, i = [], 0
            while i < len(word):
                if i + 1 < len(word) and (word[i], word[i + 1]) == (a, b):
                    symbols.append(a + b)
                    i += 2
                else:
                    symbols.append(word[i])
                    i += 1
            merged[tuple(symbols)] += count
        words = merged
    return learned


# %% [markdown]
# Run on the first sentence pairs of the profile's training split, both sides together, it prints
# the pieces it adds first: the most frequent pairs of characters of the two languages.

# %%
langs = (profile.src_lang, profile.tgt_lang)
train_text = load_parallel(
    profile.corpus, profile.train_split, *langs, data_dir,
    max_words=profile.max_sentence_words,
)  # fmt: skip
n_sample = sizes.bpe_sample_pairs
bpe_sample = train_text.src[:n_sample] + train_text.tgt[:n_sample]
our_merges = learn_bpe(bpe_sample, sizes.bpe_merges)
print(f"the first merges on {n_sample:,} sentence pairs: {' '.join(our_merges[:12])} ...")

# %% [markdown]
# The package trains sentencepiece's BPE. Given the same sentences and a vocabulary just large
# enough for the characters, the four special ids and the same number of merges, it learns the
# same pieces (pairs of equal counts may come in either order):

# %%
characters = set("".join(s.replace(" ", "▁") for s in bpe_sample)) | {"▁"}
small = train_tokenizer(bpe_sample, vocab_size=4 + len(characters) + len(our_merges))
pieces = [small.id_to_piece(i) for i in range(4, small.vocab_size)]
their_merges = [piece for piece in pieces if len(piece) > 1]
assert set(their_merges) == set(our_merges), sorted(set(their_merges) ^ set(our_merges))
same_place = sum(a == b for a, b in zip(our_merges, their_merges))
print(f"the same {len(our_merges)} merges; {same_place} of them in the same position")

# %% [markdown]
# The profile's vocabulary is trained the same way on both sides of the whole training split (never
# on the validation or test sentences) and cached, so every run of the profile gets the same one.
# How it cuts sentences, per side and split, and how often it has to fall back on the unknown
# piece (only for characters absent from the training text):

# %%
tokenizer = tokenizer_for_corpus(
    profile.corpus, profile.vocab_size, split=profile.train_split, data_dir=data_dir
)
splits = {"train": train_text} | {
    name: load_parallel(profile.corpus, name, *langs, data_dir)
    for name in (profile.valid_split, profile.test_split)
}
bpe = tables.bpe_table(tokenizer, splits, *langs, limit=profile.max_train_pairs)
assert tokenizer.vocab_size == profile.vocab_size
assert (bpe["pieces per word"] >= 1).all()  # a word is one piece or several, never less
assert (bpe[bpe.split == "train"]["unknown pieces"] == 0).all()
viz.show_table(bpe, **tables.BPE_FORMATS)
display(Markdown(sentences.describe_bpe(bpe.to_dict("records"), tokenizer.vocab_size)))

# %% [markdown]
# A few test sentences as the model sees them (each piece between spaces; `▁` starts a word).
# Frequent words are whole pieces; rarer ones, and German compounds, are spelled out of several:

# %%
test = splits[profile.test_split]
examples = pd.DataFrame(
    [
        {"side": side, "sentence": text, "pieces": " ".join(tokenizer.pieces(text))}
        for i in (0, 1, 2)
        for side, text in zip(langs, (test.src[i], test.tgt[i]))
    ]
)
for text in examples.sentence:
    assert tokenizer.decode(tokenizer.encode(text)) == text  # segmentation loses nothing
viz.show_table(examples)

# %% [markdown]
# ## 4.2 Batches by token count (section 5.1)
#
# Sentences differ in length, and a batch is a rectangle: every sentence is padded to the longest
# one in its batch, and padding costs the same computation as real tokens. The paper grouped pairs
# "by approximate sequence length" and filled each batch to about 25,000 source and 25,000 target
# tokens. Sorting by length puts similar lengths together, so little padding is needed; filling to
# a token count rather than a sentence count makes every batch about the same amount of work (many
# short sentences or few long ones). Greedily, in a dozen lines:

# %%
data = pipeline.prepare_data(profile, data_dir)  # the encoded pairs the trainer reads
studies.prepare_norm_study(
    data.train, tokenizer.vocab_size, profile
)  # 4.7's, on these pairs
src_widths = data.train.src_lengths + 1  # + eos
tgt_widths = data.train.tgt_lengths + 2  # bos + ... + eos


def batches_by_tokens(src_widths, tgt_widths, max_tokens: int) -> list[list[int]]:
    """Sort by target then source width; close a batch when its padded rectangle would
    exceed max_tokens."""
    order = np.lexsort((src_widths, tgt_widths))
    batches, current, widest_src, widest_tgt = [], [], 0, 0
    for i in order.tolist():
        new_src, new_tgt = max(widest_src, src_widths[i]), max(widest_tgt, tgt_widths[i])
        if current and max(new_src, new_tgt) * (len(current) + 1) > max_tokens:
            batches.append(current)
            current, new_src, new_tgt = [], src_widths[i], tgt_widths[i]
        current.append(i)
        widest_src, widest_tgt = new_src, new_tgt
    return batches + [current]


# %% [markdown]
# The package's `TokenBatcher`, asked not to shuffle, must cut the training pairs into the very
# same batches:

# %%
ours = batches_by_tokens(src_widths, tgt_widths, profile.batch_tokens)
lengths = (data.train.src_lengths, data.train.tgt_lengths)
package_batcher = TokenBatcher(
    *lengths, profile.batch_tokens, shuffle=False, skip_too_long=True
)
assert ours == package_batcher.epoch_batches(0)
print(
    f"{len(ours)} batches of at most {profile.batch_tokens:,} tokens a side, as TokenBatcher"
)

# %% [markdown]
# The package's `TokenBatcher` does this in `pack_by_tokens`, and for training shuffles twice per
# epoch, from the seed and the epoch number alone: the order of pairs of equal length before
# packing, and the order of the batches after it (otherwise every epoch would begin with the
# shortest sentences). A resumed run can therefore rebuild exactly the batches it would have seen.

# %%
viz.show_source(TokenBatcher.epoch_batches)

# %% [markdown]
# How much padding does this save? Against batches of a fixed number of sentences, the same number
# on average as the token batches hold, either in random order or sorted by length. The last
# column is the spread of the real target tokens per batch, as a fraction of their mean: how
# uneven the work per batch is.

# %%
batching = tables.batching_table(data, profile.batch_tokens, profile.seed, seed)
padding = batching.set_index("batches")["padding"]
spread = batching.set_index("batches")["spread of target tokens"]
assert (
    padding.iloc[1] < padding.iloc[0] and padding.iloc[2] < padding.iloc[0]
)  # sorting pays
assert spread.iloc[2] < spread.iloc[1]  # ... and a token budget evens out sorted batches
viz.show_table(batching, **tables.BATCHING_FORMATS)
display(Markdown(sentences.describe_padding(padding.to_dict())))

# %% [markdown]
# Among sorted batches, a fixed number of sentences makes batches of short sentences small and
# batches of long ones large; a token budget evens out the work per batch. Random batches are even
# too, but mostly padding. Larger batches, like the paper's, hold longer runs of sorted pairs,
# whose lengths vary less, so they need even less padding.
#
# ## 4.3 The learning-rate schedule (section 5.3)
#
# The paper trains with Adam {cite:p}`kingma2015adam` ($\beta_1 = 0.9$, $\beta_2 = 0.98$,
# $\epsilon = 10^{-9}$) and a learning rate that rises linearly for the first $w$ steps, the
# *warm-up*, then decays with the inverse square root of the step number:
#
# $$\mathit{lrate} = d_\text{model}^{-0.5} \cdot \min\left(\mathit{step}^{-0.5},\;
#   \mathit{step} \cdot w^{-1.5}\right), \qquad w = 4000.$$
#
# The two terms meet at $\mathit{step} = w$, where the rate peaks at $(d_\text{model}\, w)^{-0.5}$:
# about $7 \times 10^{-4}$ for the base model. Wider models get smaller rates. In three lines, and
# checked against the package's `NoamSchedule` driving a real optimizer:


# %%
def lrate(step: int, d_model: int, warmup: int) -> float:
    return d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


optimizer = torch.optim.Adam([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
schedule = NoamSchedule(optimizer, d_model=512, warmup_steps=4000)
for step in range(1, 12_001):
    rate = optimizer.param_groups[0]["lr"]
    assert math.isclose(rate, lrate(step, 512, 4000), rel_tol=1e-12), step
    optimizer.step()
    schedule.step()
print(
    f"NoamSchedule gives lrate(step) at 12,000 steps; base peaks at {peak_lr(512, 4000):.2e}"
)
viz.show_source(NoamSchedule.get_lr)
viz.show_source(noam_lr)

# %% [markdown]
# A profile may ask for another peak (`peak_lr`): the trainer keeps the paper's curve and scales it
# so that its top is that rate (`schedule_factor`). Small models on small corpora take larger
# rates and shorter warm-ups than the paper's. The curves of the paper's base and big models and of
# this profile:

# %%
d_profile = profile.model_config().d_model
factor = schedule_factor(profile, d_profile)
curves = tables.schedule_curves(d_profile, profile.warmup_steps, factor, profile.name)
schedule_df, peaks = tables.schedule_frames(curves)
if profile.peak_lr is not None:
    top = noam_lr(profile.warmup_steps, d_profile, profile.warmup_steps, factor)
    assert math.isclose(top, profile.peak_lr, rel_tol=1e-9)
chart = viz.line_chart(
    schedule_df, "step", "learning rate", "schedule", log_x=True,
    title="Learning rate against step: linear warm-up, then 1/√step",
)  # fmt: skip
viz.show(viz.legend_below(chart))
rates = {"peak rate": "{:.2e}", "rate ten warm-ups later": "{:.2e}"}
viz.show_table(peaks, **rates)

# %% [markdown]
# Ten times past the peak the rate has fallen by $\sqrt{10}$, whatever the model: the decay is the
# same shape for everyone, only its scale and the length of the ramp differ. Why a model needs the
# ramp at all is the subject of section 4.7.
#
# ## 4.4 Label smoothing (section 5.4)
#
# The usual loss asks the model to put all of its probability on the reference token. Label
# smoothing {cite:p}`szegedy2016labelsmoothing` asks for a little less: the target distribution
# keeps $1 - \epsilon$ on the reference and spreads $\epsilon$ evenly over the whole vocabulary of
# $V$ tokens, so the reference gets $1 - \epsilon + \epsilon/V$ and every other token $\epsilon/V$.
# The paper uses $\epsilon = 0.1$. Padding positions are no target at all. The target of a short
# sentence over a toy vocabulary:

# %%
eps, V = 0.1, 10
# four words, eos (2), two padding positions (0)
toy_target = torch.tensor([5, 7, 4, 9, 2, 0, 0])
smoothed = torch.full((len(toy_target), V), eps / V)
smoothed[torch.arange(len(toy_target)), toy_target] += 1 - eps
smoothed[toy_target == 0] = 0.0  # padding is not predicted
assert torch.allclose(smoothed[toy_target != 0].sum(-1), torch.ones(5))
heat = figures.label_smoothing_chart(
    smoothed,
    token_labels=["pad", "bos", "eos", "unk"] + [f"w{i}" for i in range(4, V)],
    row_labels=["w5", "w7", "w4", "w9", "eos", "pad", "pad"],
    title=f"Smoothed targets, eps = {eps}: {1 - eps + eps / V:.2f} on the reference, "
    f"{eps / V:.2f} elsewhere",
    show_values=True,
)
viz.show(heat)

# %% [markdown]
# The loss is the cross-entropy between that target and the model's distribution, summed over real
# tokens. As a textbook would write it, against the package's loss and PyTorch's own
# `label_smoothing` option. The package never builds the smoothed matrix: it adds (1 - ε) times the
# negative log-likelihood to ε times the mean of -log p over the vocabulary. Its source below is
# that sum as plain operations, what `torch.compile` traces; run eagerly, a hand-written backward
# pass computes the same gradient without keeping the log-probabilities:


# %%
def smoothed_loss(logits, target, eps, pad_id=0):
    """sum over non-pad positions of -sum_v q_v log p_v, q = (1 - eps) one_hot + eps / V."""
    log_p = logits.log_softmax(-1)
    q = torch.full_like(log_p, eps / logits.size(-1)).scatter_add_(
        -1, target[:, None], torch.full_like(log_p[:, :1], 1 - eps)
    )
    return -(q * log_p).sum(-1)[target != pad_id].sum()


draw = torch.Generator().manual_seed(seed)
logits = torch.randn(
    len(toy_target), V, dtype=torch.float64, generator=draw, requires_grad=True
)
ours_loss = smoothed_loss(logits, toy_target, eps)
package = losses.label_smoothed_cross_entropy(logits, toy_target, eps, pad_id=0)
pytorch = F.cross_entropy(
    logits, toy_target, label_smoothing=eps, ignore_index=0, reduction="sum"
)
torch.testing.assert_close(package.loss, ours_loss)
torch.testing.assert_close(pytorch, ours_loss)
(ours_grad,) = torch.autograd.grad(ours_loss, logits)
(package_grad,) = torch.autograd.grad(package.loss, logits)
torch.testing.assert_close(package_grad, ours_grad)
print(
    f"loss {ours_loss.item():.6f} from all three, gradients too; {int(package.tokens)} tokens"
)
viz.show_source(losses.composite_smoothed_cross_entropy)

# %% [markdown]
# The paper reports that smoothing "hurts perplexity, as the model learns to be more unsure, but
# improves accuracy and BLEU". The first half is arithmetic. Whatever the data, cross-entropy is
# smallest when the model's distribution equals its target. Say the true next-token distribution
# in some context is $p$; the unsmoothed loss is minimised by $p$ itself, the smoothed loss by
# $q^\ast = (1 - \epsilon)\,p + \epsilon/V$. Perplexity is measured against the data, i.e. against
# $p$, and $q^\ast \ne p$ pays for its spread. Found by gradient descent on free logits, with the
# package's loss, for a context with three plausible next words:

# %%
p_true = torch.tensor([0.6, 0.3, 0.1, 0, 0, 0, 0, 0], dtype=torch.float64)
# p_true as ten draws: 6 x word 0, 3 x word 1, 1 x word 2
draws = torch.arange(len(p_true)).repeat_interleave((p_true * 10).round().long())


def optimum(eps: float, steps: int = 1500) -> torch.Tensor:
    """The distribution minimising E_{y ~ p_true}[loss(logits, y)], by Adam on free logits."""
    z = torch.zeros(len(p_true), dtype=torch.float64, requires_grad=True)
    opt = torch.optim.Adam([z], lr=0.1)
    for _ in range(steps):
        parts = losses.label_smoothed_cross_entropy(
            z.expand(len(draws), -1), draws, eps, pad_id=-1
        )
        opt.zero_grad()
        (parts.loss / len(draws)).backward()
        opt.step()
    return z.detach().softmax(-1)


# %% [markdown]
# For $\epsilon$ of 0, 0.1 and 0.2, the optimum found must be the closed form $q^\ast$ above; the
# table gives its probability of the likeliest word, of an impossible one, and its perplexity on
# the data:

# %%
optima = []
for e in (0.0, 0.1, 0.2):
    q = optimum(e)
    # the closed form q* above
    torch.testing.assert_close(q, (1 - e) * p_true + e / len(p_true), atol=2e-3, rtol=0)
    seen = p_true > 0
    optima.append(
        {
            "epsilon": e,
            "probability of the likeliest word": q[0].item(),
            "probability of an impossible word": q[3:].mean().item(),
            "perplexity": math.exp(-(p_true[seen] * q[seen].log()).sum().item()),
            "likeliest word": int(q.argmax()),
        }
    )
optima = pd.DataFrame(optima)
assert optima.perplexity.is_monotonic_increasing  # smoothing costs perplexity ...
assert (optima["likeliest word"] == int(p_true.argmax())).all()  # ... not the ranking
viz.show_table(optima, perplexity="{:.3f}", **{
    "probability of the likeliest word": "{:.3f}",
    "probability of an impossible word": "{:.4f}",
})  # fmt: skip

# %% [markdown]
# The best smoothed model is less sure of the likeliest word and gives the impossible ones a little
# probability, so its perplexity on the data is higher, while its first choice, the token a greedy
# decoder would pick, is the same. With a one-hot $p$ (a context with one right answer) the
# penalty has a closed form, perplexity $1/(1 - \epsilon + \epsilon/V)$, and the unsmoothed optimum
# is unreachable: it needs the reference's logit infinitely above the others, while the smoothed one
# stops at a gap of $\log\!\big(1 + (1 - \epsilon) V / \epsilon\big)$. That bound on confidence is
# the regulariser; the gain in accuracy and BLEU is an effect of training with it, which the
# paper's Table 3 measures (rows D3 and D4 change only $\epsilon$). This book quotes that
# measurement and does not repeat it: chapter 06 retrains the rows at the profile's scale and
# says, with an interval on each BLEU, which of its differences exceed the noise.

# %%
smoothing_rows, one_hot = tables.smoothing_tables(profile.vocab_size)
assert smoothing_rows["dev perplexity"].is_monotonic_increasing
assert smoothing_rows["dev BLEU"].iloc[1] > smoothing_rows["dev BLEU"].iloc[0]
display(Markdown("**The paper, Table 3 (newstest2013):**"))
viz.show_table(smoothing_rows)
display(Markdown("**A context with one right answer, at the optimum:**"))
viz.show_table(one_hot, vocabulary="{:,}", **{
    "perplexity at the optimum": "{:.3f}", "logit gap at the optimum": "{:.1f}"
})  # fmt: skip

# %% [markdown]
# ## 4.5 The copy task: the whole loop in a minute
#
# Before spending minutes or hours on a real corpus, a check that the pieces learn together. The
# copy task asks the model to output its input: random sequences of digit-like tokens (ids after
# the four special ones), of random lengths. It needs no data, trains in seconds to minutes on a
# CPU, and fails visibly if the masks, the shift of the decoder input, the loss or the schedule are
# wrong. The loop is short: a batch, the loss of the shifted target, a step of Adam and of the
# schedule.

# %%
COPY_VOCAB = 14  # 10 symbols after the 4 special ids


def train_copy(config, steps: int, length, batch_size: int, seed=0):
    """The copy task's training loop, as train_copy_task runs it, for any configuration."""
    torch.manual_seed(seed)
    model = Transformer(config, COPY_VOCAB, COPY_VOCAB)
    optimizer = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    schedule = NoamSchedule(optimizer, config.d_model, config.warmup_steps)
    batches = torch.Generator().manual_seed(seed + 1)
    for _ in range(steps):
        src, tgt = synthetic_batch(
            "copy", batch_size, length, COPY_VOCAB, generator=batches
        )
        parts = losses.label_smoothed_cross_entropy(
            model(src, tgt[:, :-1]), tgt[:, 1:], config.label_smoothing, config.pad_id
        )
        optimizer.zero_grad(set_to_none=True)
        (parts.loss / parts.tokens).backward()
        optimizer.step()
        schedule.step()
    return model


# %% [markdown]
# Ten steps of that loop and of the package's `train_copy_task`, from the same seed, must leave
# bit-identical weights:

# %%
# as train_copy_task builds it
copy_config = preset("tiny", dropout=0.1, label_smoothing=0.1, warmup_steps=200)
copy_length = (1, sizes.copy_length)
ours_copy = train_copy(copy_config, 10, copy_length, sizes.copy_batch)
package_copy = train_copy_task(
    steps=10, batch_size=sizes.copy_batch, length=copy_length, verbose=False
)["model"]
theirs = package_copy.state_dict()
for name, tensor in ours_copy.state_dict().items():
    assert torch.equal(tensor, theirs[name]), name
print("after 10 steps the loop above and train_copy_task hold bit-identical weights")

# %% [markdown]
# The package's `train_copy_task` (what `python -m annotated_transformer copy` runs), trained for
# the profile's number of steps on sequences of 1 to L tokens, then scored on held-out sequences
# by greedy decoding: a sequence counts as right only if every token and the end-of-sequence are.
# The same recipe with learned position embeddings in place of the sinusoids trains beside it, for
# a question of section 3.5 that the chapter comes back to at its end. A model this small keeps
# only one core busy (200 of its steps took about as long with one thread as with two), so the two
# runs go to two processes of one thread each (`runtime.side_by_side`) and take about the time of
# one; started early (a GPU machine with cores to spare), they have been training since the
# chapter's start.

# %%
assert [job["length"] for job in cpu_studies.copy_jobs(sizes, seed)] == [copy_length] * 2
copy_runs = studies.copy_task()
copy_run = copy_runs["sinusoidal"]
copy_history = pd.DataFrame(copy_run["history"])
assert copy_history.loss.iloc[-1] < copy_history.loss.iloc[0]
if learns:
    assert copy_run["accuracy"] >= 0.95, copy_run["accuracy"]
floor = tables.smoothed_loss_floor(COPY_VOCAB, copy_config.label_smoothing)
assert copy_history.loss.min() > floor  # no model beats the smoothed target's entropy
window = int(copy_history.steps.max())
title = f"Copy task: training loss (held-out accuracy {copy_run['accuracy']:.1%})"
curve = viz.line_chart(copy_history, "step", "loss", points=True, title=title, height=200,
                       y_title=f"loss per token, mean of {window} steps")  # fmt: skip
rule = alt.Chart(pd.DataFrame({"loss": [floor]})).mark_rule(
    strokeDash=[4, 3], color="#888"
).encode(y="loss:Q")  # fmt: skip
viz.show(alt.layer(curve, rule))
display(Markdown(sentences.describe_copy(copy_run["accuracy"], copy_run["steps"])))
viz.show_source(train_copy_task)

# %% [markdown]
# The loss cannot reach zero: with $\epsilon = 0.1$ its floor is the entropy of the smoothed target
# (the dashed line), the price of section 4.4. Under the `smoke` profile the task is trained for too few steps to be
# solved; the loss falls, which is all that profile checks.
#
# ## 4.6 The profile's real run
#
# Now the real thing, at the profile's scale: the corpus, vocabulary, model, batch size, schedule,
# length of training and evaluation that `python -m annotated_transformer train --profile <profile>`
# uses, through the same call, `pipeline.run`. It prepares the data (sections 4.1 and 4.2), trains
# with Adam, the schedule and label smoothing (4.3 and 4.4), writes snapshots as it goes, averages
# the last ones as section 6.1 of the paper does, translates the test set with beam search and scores
# it, and writes a results file. Chapter 05 looks at the translations; this chapter looks at the
# training. The `paper` profile is meant for eight GPUs, one process each:
# `torchrun --nproc_per_node=8 -m annotated_transformer train --profile paper` (each process takes its
# share of every batch, and the gradients are summed, so the steps are those of one process with
# `--accumulation 8`).

# %%
viz.show_source(pipeline.run)

# %% [markdown]
# `pipeline.run` trains through `fit`, which builds and seeds the model and hands it to the
# package's `Trainer`. Its loop, `Trainer.train`, is section 5 in the order of a training script:
# take the next global batch, make one optimizer step, log the mean loss every few steps,
# validate every few hundred, save a snapshot and a resume checkpoint when one is due, and stop at
# the first limit (steps, epochs, minutes) or at Ctrl-C; at the end, validate and save once more.
# What keeps a long run trustworthy (a loss that is no longer a number, a time budget shared by
# several processes, a stop that every process must agree on) is one call each into modules of
# its own: `stopping`, `divergence`, `training_log` and `resume_state`.

# %%
viz.show_source(Trainer.train)

# %% [markdown]
# One step, `Trainer.train_step`, is the copy task's step of section 4.5 at scale: the global
# batch is split into micro-batches (`--accumulation`, and one share per process when several
# train together), each one's label-smoothed loss is summed over its target tokens and divided by
# the target tokens of the whole global batch, so the gradients that accumulate are those of one
# big batch; then Adam steps (after clipping the gradient norm, where a profile asks for it) and
# the schedule moves to the next rate.

# %%
viz.show_source(Trainer.train_step)

# %% [markdown]
# The run goes to `runs/book-<profile>/` in the clone (a book run with `--param` has one of its
# own, under its `--output-dir`). When the kernel is restarted in the middle
# of a run of the same profile, the chapter continues it from its last checkpoint (the `resume`
# parameter, through `runs.start_run`); a finished run is set aside for a fresh one. A run files
# its scores in its own folder (`results.json`); the book, like `train --publish`, also publishes
# them into `results/<profile>/`, where its pages and the README read them.

# %%
run_dir = results.book_run_dir(profile.name)
resuming = runs.start_run(run_dir, profile, resume)
summary = pipeline.run(
    profile, run_dir, data_dir=data_dir, resume=resuming, overwrite=not resuming,
    device=device, publish=True,
)  # fmt: skip
stopped = summary["stopped_by"]
assert stopped != "interrupted", (
    "the run was interrupted: run this cell again to resume it"
)
print(
    f"stopped by {stopped} after {summary['steps']:,} steps ({summary['epochs']:.2f} epochs)"
)
if note := stopping.contention_note(summary["cpu_share"], stopped):
    display(Markdown(f"**Note:** {note}."))  # another program shared the cores

# %% [markdown]
# The trainer logs the mean loss of the last steps, the learning rate and the speed every few steps,
# and the validation loss every few hundred, to `metrics.jsonl` in the run folder. The loss it
# optimises is the label-smoothed one; the negative log-likelihood beside it is what perplexity
# measures (perplexity = $e^{\text{NLL}}$ per subword).

# %%
train_log, valid_log, start_record = runs.run_logs(run_dir)
assert train_log.step.max() == summary["steps"]
assert train_log.loss.iloc[-1] < train_log.loss.iloc[0]  # it learns
assert valid_log.ppl.iloc[-1] < tokenizer.vocab_size  # better than a uniform guess
if len(valid_log) > 1:
    assert valid_log.ppl.iloc[-1] < valid_log.ppl.iloc[0]
loss_df, ppl_df = tables.loss_frames(train_log, valid_log, profile.valid_split)
viz.show(viz.legend_below(
    alt.vconcat(
        viz.line_chart(loss_df, "step", "per target token", "quantity", height=220,
                       title=f"Training loss, profile {profile.name}"),
        viz.line_chart(ppl_df, "step", "ppl", "split", log_y=True, points=True,
                       height=220, y_title="perplexity per subword", title="Perplexity"),
    ).resolve_scale(color="independent")
))  # fmt: skip

# %% [markdown]
# Speed and scores, read from the run's summary (the validation perplexity is of the last
# weights, the test perplexity of the averaged checkpoint). The sacreBLEU signature under the
# table names every choice behind the score.

# %%
viz.show_table(tables.run_table(summary, start_record, torch_device, profile.name))
print("sacreBLEU signature:", summary["test"]["sacrebleu_signature"])
display(Markdown(sentences.describe_perplexities(summary, valid_log, profile.eval_every)))

# %% [markdown]
# The paper's base model took about 0.4 s per step on eight P100 GPUs (section 5.2), with about
# 25,000 target tokens per step. Ours is another model on other hardware, so the comparison below
# is of throughput, not a reproduction:

# %%
throughput = tables.throughput_table(summary, torch_device, profile.name)
viz.show_table(throughput, **tables.THROUGHPUT_FORMATS)

# %% [markdown]
# The run published its translation results with their provenance; read back, they hold the
# scores above (`record.published_translation` checks it):

# %%
print(record.published_translation(summary, profile.results_folder))

# %% [markdown]
# ### Where a CPU step's time goes
#
# On a CPU the matrix products are not the whole step. `benchmarks/bench_step.py --profiler` splits
# the `cpu` recipe's step by kind of operation under `torch.profiler` and times a plain matmul of the
# model's shapes in the same process, for the peak beside it. The committed measurement, from an
# Intel Xeon with AMX on 2 cores, has three columns: fp32; bf16 as the trainer runs it; and bf16
# with attention in bf16 too. PyTorch's CPU kernel for attention in bf16 is the largest single
# cost of that last step, well above the matmuls, so under bf16 autocast the package runs
# attention in float32 wherever gradients flow (`CPU_ATTENTION_IN_FLOAT32` in
# `model/attention.py`), and decoding keeps the bf16 kernel, which is faster there. What is left
# is mostly element-wise work: the casts autocast makes, the loss over the vocabulary and the
# residual additions. To measure your own machine:
# `python benchmarks/bench_step.py --profile cpu --precision fp32 bf16 --variants eager eager_half_attention --profiler`.

# %%
if committed := results.committed_root():
    step_profile = read_json(committed / tables.STEP_PROFILE, "benchmark")
    viz.show_table(tables.step_profile_table(step_profile))
    speedups = tables.step_speedups(step_profile)
    print(
        f"bf16's step: {speedups['bf16 over fp32']:.2f}x fp32's, "
        f"{speedups['float32 attention']:.2f}x its own with attention in bf16"
    )

# %% [markdown]
# The profile steps over the same few batches again and again; a run does not. Its token batches
# change shape at almost every step, and oneDNN builds a bf16 kernel for each matrix product of
# each shape it meets. The `cpu` recipe's batches come in a few hundred shapes, and with several
# products a step they need a few thousand kernels: more than the 1,024 oneDNN keeps by default,
# so it builds them again every epoch. The package keeps 16,384 (`ONEDNN_KERNEL_CACHE`, set when
# it is imported; a size of your own in the environment wins). `benchmarks/bench_kernel_cache.py`
# trains the recipe's first steps with each size, in fresh processes taking turns, and counts the
# kernels oneDNN built (committed from the same Xeon):

# %%
if committed := results.committed_root():
    kernel_cache = read_json(committed / tables.KERNEL_CACHE, "benchmark")
    for name, timed in kernel_cache["runs"].items():
        print(f"kernel cache of {kernel_cache['cache_sizes'][name]:,}:")
        for i, run in enumerate(timed, 1):
            print(
                f"  run {i}: {run['steps']:,} steps in {run['train_time_s']:.0f} s, "
                f"{run['kernels_built']:,} kernels built in {run['kernel_build_s']:.0f} s"
            )
    same = "the same in every run" if kernel_cache["same_valid_loss"] else "not the same"
    print(
        f"the larger cache trains {kernel_cache['speed_over_default']:.2f}x as fast "
        f"(medians); validation loss: {same}"
    )

# %% [markdown]
# With the larger cache each kernel is built once, and the same steps end in the same loss. The
# time saved is more than the building time oneDNN reports; where the rest goes is not measured
# here.

# %% [markdown]
# The profile above was taken with dropout 0. The recipe trains with dropout from its fifth epoch,
# and then its masks cost more than their arithmetic suggests: a mask drawn a random float an
# element (PyTorch's `bernoulli_`, or `rand_like` and a comparison) makes one generator call each,
# on one thread, and a step makes 17 masks. The package's `Dropout` makes four masks' elements
# from one 64-bit draw instead: each 16-bit lane is dropped when it falls below p's share of its
# 65,536 values, and the kept ones are scaled by the inverse of the share kept. By hand, from the
# same seed, on a shape whose size is not a multiple of four:

# %%
p_drop, activations = 0.1, torch.randn(63, 257)
torch.manual_seed(7)
n = activations.numel()
bits = torch.empty((n + 3) // 4, dtype=torch.int64).random_(-(2**63), None)
lanes = bits.view(torch.int16)[:n].view(activations.shape)
dropped = round(p_drop * 65536)
by_hand = activations * (lanes >= dropped - 32768) * (65536 / (65536 - dropped))
torch.manual_seed(7)
assert torch.equal(Dropout(p_drop).train()(activations), by_hand)
print(f"{(by_hand == 0).float().mean():.3f} of the elements dropped at p = {p_drop}")

# %% [markdown]
# Timed against the float-an-element mask (`rand_like`) in one process on 20 of the recipe's own batches, and
# trained both ways for the recipe's first 1,000 steps with dropout from the start, three seeds
# each (committed from the same Xeon):

# %%
if committed := results.committed_root():
    mask_timing = read_json(committed / tables.DROPOUT_MASK, "benchmark")
    mask_curves = read_json(committed / tables.DROPOUT_MASK_CURVES, "benchmark")
    print("\n".join(tables.dropout_mask_lines(mask_timing, mask_curves)))

# %% [markdown]
# Where dropout is on, the lanes make the step faster, and the runs trained with them end where
# the float mask's end: each mask's three seeds overlap the other's in validation perplexity.

# %% [markdown]
# ### Stopping and resuming exactly
#
# A long run will be interrupted: a laptop lid, a cluster's time limit, a crash. Ctrl-C or SIGTERM
# finish the current step, write the resume checkpoint `last.pt` and exit; `--resume` continues.
# The checkpoint holds the model, Adam's moments, the schedule's step, every random generator
# (dropout draws from them) and the position inside the epoch's batches, so the resumed run should
# end with the very weights of a run that was never stopped. A short run of the `smoke` model shows
# it: once straight through, once stopped after a few steps (by `request_stop`, what Ctrl-C does)
# and resumed. It runs on the CPU, where PyTorch's kernels are deterministic.

# %%
demo = get_profile(
    "smoke", max_steps=sizes.resume_steps, batch_tokens=512, eval_every=0, log_every=4,
    save_every_steps=sizes.resume_steps // 3, keep_snapshots=3,
)  # fmt: skip
demo_root = runs.fresh_folder(run_dir.with_name(f"{run_dir.name}-resume"))
stop_at = sizes.resume_stop_at


def stop_after(step: int):
    def on_step(trainer):
        if trainer.progress.step == step:
            trainer.request_stop("the chapter's demonstration")

    return on_step


# %% [markdown]
# The three runs, each through `pipeline.run` without its progress bar and its opening lines
# (`runs.quiet_run`); before the resumed one this process's random state is changed on
# purpose, because the checkpoint's must win:

# %%
quiet = dict(data_dir=data_dir, device="cpu")
straight = runs.quiet_run(demo, demo_root / "straight", **quiet)
stopped = runs.quiet_run(
    demo, demo_root / "stopped", on_step=stop_after(stop_at), **quiet
)
torch.manual_seed(12345)
resumed = runs.quiet_run(demo, demo_root / "stopped", resume=True, **quiet)
assert stopped["stopped_by"] == "interrupted" and stopped["steps"] == stop_at
assert straight["steps"] == resumed["steps"] == demo.max_steps
tensors, largest = runs.compare_weights(demo_root / "straight", demo_root / "stopped")
assert largest == 0.0 and straight["valid"]["loss"] == resumed["valid"]["loss"]
table = tables.resume_table(straight, stopped, resumed, stop_at)
viz.show_table(table, **{"validation loss": "{:.6f}"})
print(f"all {tensors} weight tensors are bit-identical (largest difference {largest})")

# %% [markdown]
# ## 4.7 Readers' questions
#
# ### Why does the paper need a warm-up? Post-norm against pre-norm
#
# The paper wraps each sub-layer as $\mathrm{LayerNorm}(x + \mathrm{Sublayer}(x))$: the normalisation
# comes *after* the residual addition (post-norm, chapter 02). The Annotated Transformer of 2018 and
# 2022 {cite:p}`rush2018annotated`, like most Transformers since, normalises the *input* of each
# sub-layer instead, $x + \mathrm{Sublayer}(\mathrm{LayerNorm}(x))$, and adds one last LayerNorm at
# the top of each stack (pre-norm). The residual path then runs from the embeddings to the top
# untouched. {cite:t}`xiong2020layernorm` showed
# that at initialisation the post-norm layers near the output receive the largest gradients, so a
# large learning rate at the very first steps throws them off, which the warm-up prevents; with
# pre-norm the gradients do not grow towards the top, and the warm-up can go.
#
# The package builds either (`norm_position="post"`, the default, or `"pre"`). A pre-norm encoder
# layer by hand, with the layer's own modules, against the package's:

# %%
pre_layer = EncoderLayer(64, 256, 4, 16, 16, dropout=0.0, norm_position="pre").eval()
with torch.no_grad():
    for p in pre_layer.parameters():  # move the norms' gains and biases away from 1 and 0
        p.normal_(0, 0.3)


def pre_norm_layer_by_hand(x, keep):
    """x + SelfAttention(LayerNorm(x)), then x + FFN(LayerNorm(x)) (dropout off)."""
    x = x + pre_layer.self_attn(pre_layer.norm1(x), mask=keep)
    return x + pre_layer.ffn(pre_layer.norm2(x))


x = torch.randn(3, 6, 64)
keep = (torch.tensor([6, 3, 5])[:, None] > torch.arange(6))[:, None, None, :]
with torch.no_grad():
    torch.testing.assert_close(pre_layer(x, keep), pre_norm_layer_by_hand(x, keep))
pre_model = Transformer(preset("tiny", norm_position="pre"), 40, 40)
assert isinstance(pre_model.encoder_norm, torch.nn.LayerNorm)
assert isinstance(pre_model.decoder_norm, torch.nn.LayerNorm)
# post-norm: nothing to add at the top
assert isinstance(Transformer(preset("tiny"), 40, 40).encoder_norm, torch.nn.Identity)
viz.show_source(EncoderLayer.forward)

# %% [markdown]
# The experiment: a six-layer model of width 64 on the profile's training pairs, post-norm and
# pre-norm, each trained twice with the same batches: with a warm-up to the peak rate, and starting
# at the peak at once (the same curve with its ramp cut off: the rate of step
# $\max(\mathit{step}, w)$). Like the copy task it runs on the CPU under every profile: on one
# H100, the four runs of 400 steps, one after another, had not finished after more than a minute,
# where two CPU cores train all four for 250 steps in under one. (Started early, on a GPU machine
# with cores to spare, the four runs began in 4.2 and trained while the GPU ran 4.6.) First
# the gradient each layer receives at initialisation, before any update, averaged over a few
# batches (`warmup.layer_gradient_norms`):

# %%
# built in 4.2 on the training pairs; its models train on the CPU
experiment = studies.norm_experiment
setup = experiment.setup
gradients = pd.concat(
    [warmup.layer_gradient_norms(experiment, n) for n in ("post", "pre")]
)
top = warmup.top_over_bottom(gradients)
for stack in ("encoder", "decoder"):
    assert top["post-norm", stack] > top["pre-norm", stack], stack
assert top["post-norm", "decoder"] > 1 > top["pre-norm", "decoder"]
viz.show(
    alt.Chart(gradients).mark_line(point=True).encode(
        x=alt.X("layer:O", title="layer (1 = bottom)", axis=alt.Axis(labelAngle=0)),
        y=alt.Y("gradient norm:Q", title="gradient norm at initialisation"),
        color=alt.Color("norm:N", title=None),
        column=alt.Column("stack:N", title=None, sort=["encoder", "decoder"]),
    ).properties(width=260, height=220, title="Gradient per layer before the first update")
)  # fmt: skip
ratios = {f"{n}, {s}": v for (n, s), v in top.items()}
display(Markdown(sentences.describe_gradients(ratios)))

# %% [markdown]
# In the post-norm model the gradient grows from the bottom layer to the top one; in the pre-norm
# model it does not. Now the four trainings, side by side on a CPU as for the copy task, one
# process per core (the loss is the per-token NLL of each training batch, smoothed over a few steps
# for the chart). The dashed line is the loss of a model that ignores
# the context and predicts each target token by its frequency alone.

# %%
norm_log = studies.norm_study()  # warmup.warmup_run four times, side by side
final = warmup.final_losses(norm_log, sizes.norm_steps)
nll = final.set_index("run").iloc[:, 0]
frequency_loss = warmup.unigram_entropy(data.train, tokenizer.eos_id)
assert np.isfinite(nll).all()
if learns:
    assert (
        nll["post-norm, warm-up"] < frequency_loss
    )  # the ramp lets post-norm use context
    assert (
        nll["post-norm, no warm-up"] > nll["post-norm, warm-up"] + 0.1
    )  # ... not without
    floor = min(frequency_loss, nll["post-norm, no warm-up"] - 0.1)
    assert nll["pre-norm, no warm-up"] < floor
curves = viz.line_chart(
    norm_log, "step", "nll (running mean)", "run", y_title="training NLL per token",
    title=f"Six layers, peak rate {setup.peak:g}, with and without {setup.warmup} "
    "warm-up steps",
)  # fmt: skip
rule = alt.Chart(pd.DataFrame({"nll": [frequency_loss]})).mark_rule(
    strokeDash=[4, 3], color="#888"
).encode(y="nll:Q")  # fmt: skip
viz.show(viz.legend_below(alt.layer(curves, rule)))
viz.show_table(final, **{column: "{:.3f}" for column in final.columns[1:]})

# %% [markdown]
# Started at full rate, the post-norm model's first updates, largest where its gradients are
# largest, leave it predicting frequent words whatever the context: its loss stalls on a plateau
# near the dashed line. With the ramp, the same model gets below that line; the pre-norm model gets
# there with or without it. Under the `smoke` profile the runs are too short for any of this to
# show (they stop during the ramp), and only the gradients at initialisation are checked.

# %%
warm_nll, warm_se = nll.to_dict(), final.set_index("run")["standard error"].to_dict()
display(Markdown(sentences.describe_warmup(warm_nll, warm_se)))

# %% [markdown]
# ### Do sinusoidal positions extrapolate to longer sequences? (section 3.5)
#
# The paper chose sinusoids over learned position embeddings, which did as well (Table 3, row E),
# because they "may allow the model to extrapolate to sequence lengths longer than the ones
# encountered during training". A learned table has no row for a position it was never shown, or a
# row that training never touched; a sinusoid is defined everywhere. A later critique
# {cite:p}`dehghani2019universal` found that Transformers nonetheless fail to copy strings longer
# than those seen in training. The test: the copy model of section 4.5 (sinusoids, trained on 1 to
# L tokens), and the same recipe with learned positions, both asked to copy sequences of 1 to 3L
# tokens. First the learned model, trained beside the sinusoidal one in section 4.5, and a check on
# its table of positions: sources are at most L tokens and an end, decoder inputs a start and L
# tokens, so rows 0 to L are trained and the rest never enter a forward pass and keep their random
# initial values.

# %%
learned_config = copy_config.replace(positional="learned")
learned_copy = copy_runs["learned"]["model"]  # trained beside the sinusoids in 4.5
assert learned_copy.config == learned_config
torch.manual_seed(seed)
initial_table = Transformer(learned_config, COPY_VOCAB, COPY_VOCAB).src_positions.table
initial_table = initial_table.weight.detach()
trained_table = learned_copy.src_positions.table.weight.detach()
L = sizes.copy_length
assert torch.equal(trained_table[L + 1 :], initial_table[L + 1 :])
assert not torch.equal(trained_table[: L + 1], initial_table[: L + 1])
print(f"rows 0..{L} trained, rows {L + 1}..{len(trained_table) - 1} as initialised")

# %% [markdown]
# Both models copy sequences of every length from 1 to 3L (`accuracy_by_length`): the share of
# sequences copied whole, and the share of tokens put in their place.

# %%
models = {"sinusoidal": copy_run["model"], "learned": learned_copy}
extrapolation = pd.concat(
    [
        pd.DataFrame(
            accuracy_by_length(m, range(1, 3 * L + 1), sizes.eval_per_length, seed=seed)
        ).assign(positions=name)
        for name, m in models.items()
    ]
)
exact = extrapolation.pivot(index="length", columns="positions", values="exact_sequence")
if learns:
    assert (exact.loc[:L] >= 0.9).all().all()  # both learned the lengths they saw ...
    assert exact.loc[L + 1, "sinusoidal"] >= exact.loc[L + 1, "learned"]
    assert (exact.loc[2 * L] <= 0.2).all()  # ... and neither copies twice that length
viz.show(figures.extrapolation_chart(extrapolation, L))
shown = exact.loc[[L, L + 1, L + 2, 2 * L, 3 * L]].rename_axis(columns=None).reset_index()
viz.show_table(shown, sinusoidal="{:.0%}", learned="{:.0%}")

# %% [markdown]
# The sinusoids are defined at every position, but the attention and feed-forward weights were
# only ever fitted to the positions seen in training, so nothing makes the network behave well on
# the others; learned positions lack even the definition. The right panel, the share of tokens put
# in their place, shows how the damage grows with the distance from the trained lengths. (Under
# `smoke`, the models are trained too briefly to copy even the lengths they saw; only the learned
# table's untouched rows are checked.)

# %%
rows = record.extrapolation_rows(extrapolation)
display(Markdown(sentences.describe_extrapolation(rows, L, sizes.eval_per_length)))

# %% tags=["remove-cell"]
written = record.write(
    record.build(profile, summary, bpe, batching, copy_run, (final, top), extrapolation,
                 sizes, resume_identical=largest == 0.0),
    profile, torch_device, time.perf_counter() - chapter_start,
)  # fmt: skip

# %% [markdown]
# ## What this run shows
#
# One sentence per finding, read back from the chapter's results record, so that this list, the
# README and the introduction's summary say the same thing:

# %%
display(Markdown(sentences.closing(record.read(profile.results_folder))))

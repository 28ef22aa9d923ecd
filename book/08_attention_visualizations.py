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
# # 8. Attention visualizations (appendix, Figures 3-5)
#
# The pictures readers remember from the paper {cite:p}`vaswani2017attention` are in its appendix:
# the encoder self-attention of layer 5 (of 6) of the big English-German model on two sentences
# from news text. Figure 3 follows the word "making" to the distant "more difficult" that completes
# its phrase; Figure 4 shows two heads that send "its" sharply to "Law", the noun it refers to;
# Figure 5 puts two heads of one layer side by side, each with a different pattern over the whole
# sentence.
#
# This chapter measures each figure's phenomenon before it draws it. Over every caption of the
# Multi30k test set, the domain of the model chapter 04 trained under this profile, it scores how
# much weight each head of the encoder puts on a pronoun's antecedent and on a verb's distant
# complement, against what an even spread would give. The figures then draw the heads those
# scores pick on a test caption and, second, the paper's own sentences. The model is smaller than
# the paper's and was trained on image captions, not on news.
#
# **It needs a trained model:** the averaged checkpoint chapter 04 trained under the same
# profile. Run by hand, it reads yours (chapter 04 run by hand) or else the book's, and with
# neither it stops in its first cells with one line saying how long chapter 04 takes under
# this profile and under `smoke`, or how to point `checkpoint` at a model of your own.
#
# Then the model leaves Python: exported to ONNX, it translates in this page, in your browser,
# with no server, and draws its attention while it does.
#
# What the chapter will show, each with its number at the end: how many heads follow a verb to
# its distant complement, and how many a pronoun to its antecedent, beyond an even spread and
# with an interval; whether the heads of one layer spread their weight differently (Figure 5);
# how the paper's own sentences fare in a model that never read news; and whether the page can
# serve a model a quarter of the size without losing BLEU beyond the noise.

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

import numpy as np
import pandas as pd
import torch
from IPython.display import HTML, Markdown, display

from annotated_transformer import viz
from annotated_transformer.book import by_hand
from annotated_transformer.book.parameters import chapter_profile
from annotated_transformer.chapters.attention_visualizations import (
    exports,
    record,
    sentences,
)
from annotated_transformer.chapters.attention_visualizations import figures as af
from annotated_transformer.chapters.attention_visualizations import head_scores as fa
from annotated_transformer.chapters.wording import file_size
from annotated_transformer.data import load_parallel
from annotated_transformer.evaluation import results
from annotated_transformer.evaluation.scoring import paired_bootstrap
from annotated_transformer.model.attention import explicit_attention
from annotated_transformer.model.decoding import greedy_decode
from annotated_transformer.model.transformer import attention_maps
from annotated_transformer.runtime.progress import progress_bar
from annotated_transformer.training.checkpoint import model_from_checkpoint
from annotated_transformer.web import live_page

# %% tags=["parameters"]
# auto: the machine's (gpu where CUDA is visible, else cpu); or smoke | cpu | gpu | paper
profile_name = "auto"
device = "auto"  # unused: the pictures come from the CPU, one sentence at a time
data_dir = None  # None: $AT_DATA_DIR, then a download
# None: the averaged checkpoint of chapter 04's run of this profile (yours by hand, else the
# book's)
checkpoint = None
test_sentences = None  # None: how many test captions section 8.6 translates (64)

# %%
profile = chapter_profile(profile_name, "08")
profile_name = profile.name  # the machine's profile where it was auto
chapter_start = time.perf_counter()
# One sentence at a time: the matrices are too small for threads to pay, and on a busy machine
# waiting for a second thread made each step many times slower.
torch.set_num_threads(1)
repo = results.repo_root() or pathlib.Path.cwd()
# where this chapter's exports go: beside the run folder of this book run or of runs by hand
run_dir = results.book_run_dir(profile.name)
checkpoint = (
    pathlib.Path(checkpoint)
    if checkpoint
    else by_hand.chapter04_checkpoint(profile.name, "08")
)
if not checkpoint.is_file():
    raise by_hand.NeedsTrainedModel(f"checkpoint = {str(checkpoint)!r} is not a file")
model, tokenizer = model_from_checkpoint(checkpoint, "cpu")
config = model.config
n_test = int(test_sentences or 64)
print(
    f"{checkpoint.relative_to(repo) if checkpoint.is_relative_to(repo) else checkpoint}: "
    f"{config.encoder_layers} encoder and {config.decoder_layers} decoder layers, "
    f"{config.n_heads} heads, d_model={config.d_model}, {tokenizer.vocab_size} shared pieces"
)


# %% [markdown]
# ## 8.1 Where the weights come from
#
# Every picture in this chapter draws $\mathrm{softmax}(QK^\top/\sqrt{d_k})$ for one sentence: the
# weights each query spreads over the keys, one row per query, in every head of every layer. Training
# never computes them as a matrix: the fused kernel (chapter 01) goes from $Q$, $K$, $V$ to the output
# without keeping them. `attention_maps` switches every attention module to the explicit path for one
# forward pass and collects what it computed:

# %%
viz.show_source(attention_maps)
viz.show_source(explicit_attention)

# %% [markdown]
# Three properties hold for every weight drawn below, and are checked here on two sentences of
# different lengths batched together (so the shorter one is padded): each row is a probability
# distribution, padding receives nothing, and a decoder position sees no later position. The table
# gives the shape of each kind's weights, the same in every layer.

# %%
pair = ["A man in a blue shirt is playing a guitar.", "Two dogs run."]
ids = [tokenizer.encode(s) + [tokenizer.eos_id] for s in pair]
width = max(map(len, ids))
src = torch.tensor([row + [tokenizer.pad_id] * (width - len(row)) for row in ids])
tgt = torch.tensor(
    [[tokenizer.bos_id] + tokenizer.encode("Ein Mann spielt Gitarre.")] * 2
)
maps = attention_maps(model, src, tgt)
for kind, layers in maps.items():
    for w in layers:
        assert torch.allclose(w.sum(-1), torch.ones(w.shape[:-1]), atol=1e-5), kind
        if kind != "decoder_self":
            assert w[1, ..., len(ids[1]) :].abs().max() == 0, "padding received attention"
for w in maps["decoder_self"]:
    assert torch.equal(w, w.tril()), "a decoder position saw a later one"
viz.show_table(
    pd.DataFrame(
        [
            dict(attention=kind, layers=len(layers), **dict(zip(dims, layers[0].shape)))
            for kind, layers in maps.items()
            for dims in [("batch", "heads", "queries", "keys")]
        ]
    )
)

# %% [markdown]
# `annotated_transformer.chapters.attention_visualizations.figures.sentence_attention` runs this on one sentence (the
# source ends in `</s>` as in training; the decoder reads the model's own greedy translation) and
# keeps the weights as arrays of shape (layers, heads, queries, keys).
#
# ## 8.2 From pictures to measurements
#
# Figures 3 and 4 of the paper each draw one sentence, and what a reader takes from them is a
# claim about heads: some heads link a verb to the distant words that complete its phrase, some
# send a pronoun to the noun it stands for. One sentence cannot carry such a claim; a test set
# can. Both phenomena are word pairs, so this chapter finds the pairs in every English caption of
# the Multi30k test set, the model's own domain, and asks of every head of the encoder
# self-attention how much weight its query word puts on its key word. The pairs come from two
# simple heuristics, stated here because every number below depends on them:
#
# - **Anaphora (Figure 4).** For each pronoun (*his, her, its, their, he, she, it, they* and the
#   object forms *him, them*), the antecedent is the nearest preceding noun, from a short list of
#   person and animal nouns, that agrees with it: *his/he/him* take a male or an unmarked person
#   noun (*man, boy, player, child*), *her/she* a female or an unmarked one, *its/it* an animal
#   only (a caption's "it" is as often an object), *their/they/them* a plural or a collective
#   (*people, family, group*). "A woman uses a drill while another man takes her picture" pairs
#   *her* with *woman*.
# - **Long-distance dependency (Figure 3).** A verb is an *-ing* form (less a list of nouns such
#   as *clothing* and *building*) or a listed finite caption verb (*walks, sit, holds*), and not
#   right after a determiner. Its complement is the noun phrase after it, past at most two
#   prepositions: the words up to the next preposition, conjunction, verb or punctuation mark,
#   whose last word is taken as the head noun. The pair counts when that head lies three or more
#   words after the verb: "is running on lush green grass" pairs *running* with *grass*.
#
# The tokenizer splits words into pieces. A pair's weight sums over the pieces of the key word
# (the share of a query's attention that lands on that word) and averages over the pieces of the
# query word. Its baseline is what a head that spreads its weight evenly would give, the key
# word's number of pieces over the number of keys the query sees, $n_\text{key}/n$ with $n$ the
# source pieces including `</s>`. A caption with several pairs counts once, with the mean of its
# pairs. For each head the mean weight over captions divided by the mean baseline is its ratio
# (1: no more than an even spread), with a percentile bootstrap interval over captions. A head
# that looks at nouns from every word of a caption would pass that test without following the
# verb or the pronoun, so a second ratio sets the weight beside what the same key word receives
# from the average query piece of its caption, with its own interval from the same resamples. A
# head shows the phenomenon when both intervals lie wholly above 1. With $H$ heads tested, each
# interval is at level $1 - 0.05/H$ (Bonferroni), so that a head named below is unlikely to be one
# lucky draw of $H$.

# %%
test = load_parallel(
    profile.corpus, profile.test_split, profile.src_lang, profile.tgt_lang, data_dir
)
captions = list(test.src[:n_test])
started = time.perf_counter()
encoded = fa.encoder_attention(model, tokenizer, list(test.src))
heads_tested = config.encoder_layers * config.n_heads
level = 1 - 0.05 / heads_tested
samples = {name: fa.collect_pairs(encoded, name) for name in fa.PHENOMENA}
scores = {name: fa.head_scores(found, level=level) for name, found in samples.items()}
with_pronoun = sum(
    any(fa.normalise(word) in fa.PRONOUNS for word in text.split()) for text in test.src
)
print(
    f"encoder self-attention of {len(encoded):,} test captions in "
    f"{time.perf_counter() - started:.1f} s; {heads_tested} heads, intervals at {level:.2%}"
)
anaphora, dependency = samples["anaphora"], samples["dependency"]

# %% [markdown]
# What the two heuristics found, in numbers:

# %%
display(Markdown(sentences.describe_samples(len(encoded), with_pronoun, samples)))


# %% [markdown]
# ## 8.3 Figure 3: a verb and its distant complement
#
# Per encoder head: the mean weight from the verb on the head noun of its complement, the mean
# weight the same word receives from every query piece of its caption (a head that looks at such
# nouns from anywhere scores there too), the even spread, the ratio of weight to even spread and
# its interval, then the weight over what every word gives the same key and the lower end of its
# interval. "above" marks a head whose two intervals both lie wholly above 1: the verb singles out
# its complement more than an even spread would and more than the caption's other words do. The
# sentences under the table name only those heads (`fa.passing_heads`, which marks the table), so
# a head with a high ratio that fails the second test is never named.

# %%
viz.show_table(fa.score_table(scores["dependency"]), **fa.SCORE_FORMATS)
display(Markdown(sentences.describe(scores["dependency"], "the verb", "its complement")))

# %% [markdown]
# The figure draws a line from the query on the left to each key on the right, one colour per
# head, as opaque as the weight. It shows the heads named above in the layer of the first of
# them (`fa.figure_heads`); when no head passes, it singles none out and draws every head of the
# last layer, as the paper's Figure 3 draws every head of one layer. The caption is a test
# caption's: of those of at most 14 words, the one on which the first passing head (or, with
# none, the drawn heads on average) puts the most weight on the complement beyond the even
# spread. It is the clearest case, not a typical one; the table is the typical one. The dropdown
# picks another layer.

# %%
drawn3 = fa.figure_heads(scores["dependency"])
layer3 = drawn3.layer
case3 = fa.example(dependency, encoded, layer3, drawn3.passing[:1] or drawn3.heads)
caption3 = af.sentence_attention(model, tokenizer, case3.text)
viz.show(af.figure3(caption3, case3.query, layer=layer3, heads=drawn3.heads))
display(Markdown(sentences.describe_drawn(drawn3, case3)))

# %% [markdown]
# ### The paper's sentence
#
# The paper's sentence is news text, and this model learned from image captions: words that
# captions never use are spelled out of several pieces, and the model has not seen them in
# context. The number of pieces per word says how foreign a sentence is to the model:

# %%
FIGURE3 = (
    "It is in this spirit that a majority of American governments have passed new laws "
    "since 2009 making the registration or voting process more difficult."
)
FIGURE4 = (
    "The Law will never be perfect, but its application should be just - this is what we "
    "are missing, in my opinion."
)


def pieces_per_word(sentences) -> float:
    return sum(len(tokenizer.encode(s)) for s in sentences) / sum(
        len(s.split()) for s in sentences
    )


domain = pd.DataFrame(
    [
        {"text": "Figure 3's sentence", "pieces per word": pieces_per_word([FIGURE3])},
        {"text": "Figure 4's sentence", "pieces per word": pieces_per_word([FIGURE4])},
        {
            "text": f"{len(test.src)} test captions",
            "pieces per word": pieces_per_word(test.src),
        },
    ]
)
viz.show_table(domain, **{"pieces per word": "{:.2f}"})

# %% [markdown]
# "making" on the paper's sentence, every head, from the same layer (multi-piece words are
# followed from their first piece):

# %%
paper3 = af.sentence_attention(model, tokenizer, FIGURE3)
making = af.find_word(paper3.source_tokens, "making")
viz.show(af.figure3(paper3, "making", layer=layer3))

# %% [markdown]
# How much of the weight of "making" lands on "more difficult", head by head in that layer,
# beside what a head that spread its weight evenly over the sentence would give:

# %%
more = af.find_word(
    paper3.source_tokens, "more"
)  # "more difficult" runs to the full stop
target = [
    i
    for i in range(more, len(paper3.source_tokens) - 1)
    if paper3.source_tokens[i].strip("▁") != "."
]
share = paper3.weights["encoder"][layer3 - 1][:, making][:, target].sum(-1)  # per head
uniform = len(target) / len(paper3.source_tokens)
viz.show_table(
    pd.DataFrame(
        {"head": range(1, paper3.heads + 1), "weight on 'more difficult'": share}
    ),
    **{"weight on 'more difficult'": "{:.3f}"},
)
print(
    f"layer {layer3}: an even spread would give {uniform:.3f}; the heads' mean is "
    f"{share.mean():.3f} and their largest {share.max():.3f} (paper: most heads of layer 5 "
    "put most of it there)"
)

# %% [markdown]
# ## 8.4 Figure 4: a pronoun and its antecedent
#
# The same table for the pronouns: the weight from the pronoun on its antecedent, per head.

# %%
viz.show_table(fa.score_table(scores["anaphora"]), **fa.SCORE_FORMATS)
display(Markdown(sentences.describe(scores["anaphora"], "the pronoun", "its antecedent")))

# %% [markdown]
# The paper's Figure 4 draws two heads: left, the first over the whole sentence; right, the
# pronoun alone in each. Here they are two heads of the layer of the first head named above: the
# heads named in it first, then the layer's next by ratio. With none named, they are the first
# two heads of the last layer, singled out by nothing. The caption is the test caption of at
# most 14 words where the first named head (or the two drawn, on average) puts the most weight
# on the antecedent beyond the even spread.

# %%
drawn4 = fa.figure_heads(scores["anaphora"], count=2)
layer4 = drawn4.layer
case4 = fa.example(anaphora, encoded, layer4, drawn4.passing[:1] or drawn4.heads)
caption4 = af.sentence_attention(model, tokenizer, case4.text)
viz.show(af.figure4(caption4, case4.query, layer=layer4, heads=drawn4.heads))
display(Markdown(sentences.describe_drawn(drawn4, case4)))

# %% [markdown]
# ### The paper's sentence
#
# On the paper's news sentence, the two heads of the same layer that put the most weight from
# "its" on "Law" (the first piece of the word):

# %%
paper4 = af.sentence_attention(model, tokenizer, FIGURE4)
its, law = (
    af.find_word(paper4.source_tokens, "its"),
    af.find_word(paper4.source_tokens, "Law"),
)
on_law = paper4.weights["encoder"][layer4 - 1, :, its, law]
chosen = [int(h) + 1 for h in np.argsort(-on_law)[:2]]
viz.show(af.figure4(paper4, "its", layer=layer4, heads=chosen))
print(
    f"weight from 'its' to the first piece of 'Law', layer {layer4}, heads "
    f"1..{paper4.heads}: "
    + ", ".join(f"{w:.3f}" for w in on_law)
    + f"; an even spread gives {1 / len(paper4.source_tokens):.3f}"
)

# %% [markdown]
# ## 8.5 Figure 5: the heads of one layer differ
#
# The paper's point in Figure 5 is that the heads of one layer learn different jobs. Over all the
# test captions, per encoder head: the entropy of its weights in bits (of a query's weights,
# averaged over queries and captions: 0 for a head that looks at one piece, $\log_2 n$ for an
# even spread over $n$), with the standard error of that mean over captions; the mean distance
# it looks, $\sum_k w_{qk}\,|q-k|$ in pieces; and its two ratios from above.

# %%
per_caption = pd.concat(
    [
        af.head_statistics(af.SentenceAttention(one.pieces, [], {"encoder": one.weights}))
        for one in encoded
    ]
)
heads5 = fa.encoder_head_table(per_caption, scores)
even_bits = float(np.mean([math.log2(len(one.pieces)) for one in encoded]))
viz.show_table(heads5, **fa.HEAD_FORMATS)

# %% [markdown]
# Read layer by layer: how far apart the sharpest and the broadest head lie, against the noise of
# their means over captions (`sentences.describe_layers`).

# %%
display(Markdown(sentences.describe_layers(heads5, even_bits)))

# %% [markdown]
# The picture: the sharpest and the broadest head of the last encoder layer by those test-set
# entropies, on Figure 3's test caption.

# %%
last_layer = heads5[heads5["layer"] == config.encoder_layers]
sharp = int(last_layer.loc[last_layer["entropy (bits)"].idxmin(), "head"])
broad = int(last_layer.loc[last_layer["entropy (bits)"].idxmax(), "head"])
pair5 = (sharp, broad) if sharp != broad else (1, min(2, config.n_heads))
viz.show(af.figure5(caption3, heads=pair5))
print(
    f"test-set entropy of heads {pair5[0]} and {pair5[1]} of layer {config.encoder_layers}: "
    + " and ".join(
        f"{last_layer.set_index('head').loc[h, 'entropy (bits)']:.2f}" for h in pair5
    )
    + f" bits; an even spread is {even_bits:.2f} on average"
)

# %% [markdown]
# ## 8.6 One number per head, all three kinds of attention
#
# The decoder's two kinds of attention need a translation to read. For each head of each kind of
# attention, over the first test captions, with the decoder reading the model's own greedy
# translation: the entropy of its weights, and for self-attention the mean distance it looks.

# %%
frames = []
started = time.perf_counter()
for caption in progress_bar(captions, desc="all kinds of attention", unit="caption"):
    one = af.sentence_attention(model, tokenizer, caption)
    stats = af.head_statistics(one)
    stats["even spread (bits)"] = [
        math.log2(len(one.tokens(k, "key"))) for k in stats["kind"]
    ]
    frames.append(stats)
per_head = (
    pd.concat(frames).groupby(["kind", "layer", "head"], sort=False).mean().reset_index()
)
print(
    f"{len(captions)} captions translated and measured in {time.perf_counter() - started:.0f} s"
)
viz.show(af.head_statistics_chart(per_head))
viz.show(af.head_statistics_chart(per_head, "mean distance"))

# %%
summary = (
    per_head.groupby("kind", sort=False)
    .agg(
        heads=("head", "size"),
        lowest_entropy=("entropy (bits)", "min"),
        highest_entropy=("entropy (bits)", "max"),
        even_spread=("even spread (bits)", "mean"),
        mean_distance=("mean distance", "mean"),
    )
    .reset_index()
)
viz.show_table(
    summary,
    lowest_entropy="{:.2f}",
    highest_entropy="{:.2f}",
    even_spread="{:.2f}",
    mean_distance="{:.2f}",
)
sharpest = per_head.loc[per_head["entropy (bits)"].idxmin()]
# no head can spread wider than uniform
assert (per_head["entropy (bits)"] <= per_head["even spread (bits)"] + 1e-6).all()
print(
    f"sharpest head: {sharpest['kind']} layer {sharpest['layer']} head {sharpest['head']}, "
    f"{sharpest['entropy (bits)']:.2f} bits against {sharpest['even spread (bits)']:.2f} "
    "for an even spread"
)

# %% [markdown]
# How to read these numbers. A head whose entropy sits well below the even spread attends to a few
# pieces; one close to it averages the sentence. A short mean distance marks a local head (the
# neighbouring pieces, which in a BPE vocabulary are often the rest of the same word); a long one
# looks across the sentence. Entropy and distance say how a head spreads its weight, not what it
# links: which heads carry a verb's complement or a pronoun's antecedent is what sections 8.3 and
# 8.4 measured, and this chapter claims no head's role beyond those two tables.
#
# ## 8.7 The explorer
#
# Every kind of attention, layer and head of one test caption, with the values on hover. It is
# a single Vega-Lite chart: it needs no kernel, so it works here, in Jupyter, in Colab, and in
# the static site. All heads of all layers of a long sentence are more rows than altair's 5,000
# default and, as one JSON record per weight, megabytes of page. The explorer's data has one row
# per (kind, layer, head, query) holding that query's weights as integer thousandths; the
# dropdowns filter rows first and Vega's `flatten` unfolds only those, and the tokens travel once,
# in a small lookup table.

# %%
example = af.sentence_attention(model, tokenizer, captions[0])
explorer = af.explorer(example)
viz.show(explorer)
explorer_bytes = af.spec_size(explorer)
pairs = sum(w.size for w in example.weights.values())
print(
    f"'{captions[0]}': {pairs:,} weights in {explorer_bytes / 1024:.0f} KB of spec "
    f"({explorer_bytes / pairs:.1f} bytes a weight)"
)

# %% [markdown]
# Any of these figures for any sentence and any checkpoint, as a self-contained HTML page, an SVG
# or a PNG, offline:
#
# ```bash
# CKPT=runs/book-cpu/averaged.pt
# python -m annotated_transformer attention --checkpoint $CKPT \
#     --sentence "A man in a blue shirt is playing a guitar." \
#     --figure 3 --word guitar --out fig3.html
# python -m annotated_transformer attention --checkpoint $CKPT \
#     --sentence "Two dogs run through the snow." --figure explorer --out explorer.svg
# python -m annotated_transformer export-onnx --checkpoint $CKPT --out web-model/
# ```
#
# ### The same measurements on the `gpu` model
#
# The `gpu` profile trains its own model on a GPU (4+4 layers at $d_\text{model} = 256$ with
# dropout, against the `cpu` profile's 3+3 layers without; chapter 05 says how each was chosen),
# and the `gpu` book, run on one H100, is committed chapter by chapter in `results/book_gpu/`.
# Its run of this chapter, once there is one, tests that model's heads on the same captions with
# the same heuristics (`record.committed_gpu` finds its record):

# %%
display(Markdown(sentences.describe_gpu_book(record.committed_gpu(), profile.name)))

# %% [markdown]
# ## 8.8 Translation in this page
#
# `python -m annotated_transformer export-onnx` writes the model as two ONNX graphs: the encoder,
# and one decoder step. The step recomputes the whole German prefix each time instead of carrying a
# key-value cache: a cache would add two inputs and two outputs per layer and a position offset,
# while recomputation is the same function the decoding tests already check against the cache
# (`use_cache=False`), and for a caption of twenty pieces it costs milliseconds. Both graphs also
# output their attention weights, which the page draws. The chapter writes its exports beside the
# book's run folder, in `runs/book-<profile>-onnx/` (`web/`, `web-int8/`, and the one the page
# serves, `web-live/`), never into it: that folder is chapter 04's, and `export-onnx` likewise
# refuses an `--out` inside a run folder.
#
# Before the page uses them, the exported graphs translate test captions with onnxruntime in
# Python, and must produce the PyTorch model's tokens exactly:

# %%
# needs `pip install onnx onnxruntime`
from annotated_transformer.web.onnx_export import OnnxTranslator, export_onnx

# Beside the run folder, never in it (only chapter 04 writes that): `runs/book-<profile>-onnx/`.
exports_dir = live_page.exports_dir(run_dir)
web_dir = exports_dir / live_page.FLOAT32_EXPORT
# The site serves the export chosen below (`live_page.publish_choice`); until then, or if this run
# fails before choosing, the new float32 export is the newer one and the site serves it.
written = export_onnx(checkpoint, web_dir)
translator = OnnxTranslator(web_dir)
checked = captions[: min(5, len(captions))]
for caption in checked:
    src_ids = tokenizer.encode(caption) + [tokenizer.eos_id]
    limit = len(src_ids) + 50
    expected = greedy_decode(model, torch.tensor([src_ids]), limit)[0].tolist()
    expected = [t for t in expected if t != tokenizer.pad_id]
    assert translator.greedy(src_ids, limit) == expected, caption
model_bytes = sum(p.stat().st_size for p in written.values())
print(
    f"the ONNX model gives the PyTorch tokens on {len(checked)} test captions; "
    f"its files: {model_bytes / 1e6:.1f} MB ("
    + ", ".join(f"{p.name} {file_size(p.stat().st_size)}" for p in written.values())
    + ")"
)

# %% [markdown]
# `export-onnx --quantize` stores the weight matrices as int8 instead, a quarter of the download.
# Its arithmetic is not the same, so it is not held to the PyTorch tokens. Whether a reader should
# get it is measured, and since the measurement chooses, it is made on the validation captions
# chapter 05 compares its decodings on (the profile's share of the validation split), not on the
# test set: both exports translate them with the page's own greedy search, and sacreBLEU's paired
# bootstrap sets the int8 BLEU beside the float32 BLEU's 95% interval. The page serves int8 only
# when its BLEU lies inside that interval.

# %%
small_dir = exports_dir / live_page.INT8_EXPORT
small = export_onnx(checkpoint, small_dir, quantize=True)
small_translator = OnnxTranslator(small_dir)
small_bytes = sum(p.stat().st_size for p in small.values())
valid = load_parallel(
    profile.corpus, profile.valid_split, profile.src_lang, profile.tgt_lang, data_dir
)
live_captions = list(valid.src[: profile.eval_max_sentences])  # [:None] keeps them all
live_references = valid.tgt[: len(live_captions)]
onnx_exports = {"float32": translator, "int8": small_translator}
live_translations = {name: [] for name in onnx_exports}
unfinished = []  # the float32 export stopped at its allowance, without </s>
bar = progress_bar(
    total=len(live_captions), desc="float32 and int8 exports", unit="caption"
)
for caption in live_captions:
    src_ids = tokenizer.encode(caption) + [tokenizer.eos_id]
    for name, exported in onnx_exports.items():
        out = exported.greedy(src_ids, len(src_ids) + 50)
        live_translations[name].append(tokenizer.decode(out))
        if name == "float32":
            unfinished.append(out[-1] != tokenizer.eos_id)
    bar.update(1)
bar.close()

# %% [markdown]
# The paired bootstrap of the two exports' translations decides which one the page serves
# (`live_page.choose_export`), and the chosen export is copied where the site build finds it:

# %%
live_bleu = paired_bootstrap(live_translations, live_references)
live_choice = live_page.choose_export(live_bleu)
live_page.publish_choice(small_dir if live_choice == "int8" else web_dir, exports_dir)
same = sum(a == b for a, b in zip(*live_translations.values()))
export_sizes = {"float32": model_bytes, "int8": small_bytes}
viz.show_table(
    pd.DataFrame(
        {
            "export": name,
            "MB": export_sizes[name] / 1e6,
            "greedy sacreBLEU": r["bleu"],
            "95% interval": f"{r['mean'] - r['ci95']:.2f}-{r['mean'] + r['ci95']:.2f}",
        }
        for name, r in live_bleu.items()
    ),
    MB="{:.1f}",
    **{"greedy sacreBLEU": "{:.2f}"},
)
text = sentences.describe_exports(
    live_bleu, same, len(live_captions), export_sizes, live_choice, valid.name
)
display(Markdown(text))

# %% [markdown]
# Chapter 05 decodes the same model greedily on the same captions, in fp32 as here, and its
# greedy score need not be the float32 export's to the last decimal. Decoded here exactly as
# chapter 05 decodes (`exports.batched_greedy`: `evaluation.translate` with the profile's
# settings and beam 1) and set beside the export's translations, caption by caption
# (`exports.compare_greedy`), the counts say why:

# %%
batched = exports.batched_greedy(model, tokenizer, live_captions, profile)
greedy_paths = exports.compare_greedy(
    batched, live_translations["float32"], unfinished, live_references
)
assert greedy_paths.export_sacrebleu == live_bleu["float32"]["bleu"]
display(Markdown(sentences.describe_greedy_paths(greedy_paths)))

# %% [markdown]
# The page runs those graphs with onnxruntime-web's WebAssembly build (served from the site, about
# 14 MB, fetched once by the browser), encodes the English with the tokenizer's pieces and scores
# (sentencepiece's BPE rule, written in JavaScript in `_static/live-translate.js` and tested against
# sentencepiece), and decodes greedily. Type a sentence and press Enter. The picture under the
# translation is the encoder-decoder attention of the layer and head you pick. In a notebook the
# widget has nothing to load its files from; it runs on the built site (`python -m
# annotated_transformer book` copies the model from `runs/book-<profile>-onnx/web-live/` next to
# the page).

# %%
if viz.in_book_build():
    display(HTML(live_page.widget_html("../_static", "../live", captions[0])))
else:
    print(
        "the live translation runs on the built site; here, the same model through onnxruntime:"
    )
    first = tokenizer.encode(captions[0]) + [tokenizer.eos_id]
    print(tokenizer.decode(translator.greedy(first, len(first) + 50)))

# %% tags=["remove-cell"]
written = record.write(
    record.build(
        checkpoint=checkpoint, paper_share=(share, uniform), paper_law=(on_law, chosen),
        drawn=(drawn3, drawn4), cases=(case3, case4), figure5_heads=pair5,
        with_pronoun=with_pronoun, level=level, samples=samples, scores=scores,
        encoder_heads=heads5, domain=domain, per_head=per_head, test_captions=len(captions),
        explorer_bytes=explorer_bytes, greedy_paths=greedy_paths,
        live={"bytes": export_sizes, "captions": len(live_captions), "same": same,
              "bleu": live_bleu, "served": live_choice, "split": valid.name},
    ),
    profile.name, time.perf_counter() - chapter_start, config=config,
)  # fmt: skip

# %% [markdown]
# ## What this run shows
#
# One sentence per finding, read back from the chapter's results record (`sentences.closing`), so
# that the page and the committed results say the same thing; a head is named only when the
# chapter's tables mark it as passing:

# %%
display(Markdown(sentences.closing(record.read(profile.name))))

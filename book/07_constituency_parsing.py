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
# # 7. English constituency parsing (section 6.3, Table 4)
#
# Is the Transformer a translation model, or a sequence model that happens to translate? Section
# 6.3 of the paper {cite:p}`vaswani2017attention` tests this on a task with a very different
# output: the constituency tree of an English sentence. A tree is not a sentence, and its output is
# longer than its input and must nest correctly. The paper trains a 4-layer model with
# $d_\text{model} = 1024$ on the Wall Street Journal part of the Penn Treebank
# {cite:p}`marcus1993ptb` with barely any tuning, and reaches 91.3 F1, ahead of most parsers built for
# the job (Table 4).
#
# The trick that makes this possible is older than the Transformer: write the tree as a sequence
# {cite:p}`vinyals2015grammar`, and parsing becomes translation from English into a language of
# brackets. This chapter
#
# 1. turns trees into sequences and back (`annotated_transformer.experiments.parsing`), and checks that nothing
#    is lost on every tree of the data;
# 2. scores parses as the parsing literature does, with labelled bracket F1 in evalb's conventions;
# 3. trains the paper's model on sentence -> linearized tree pairs, written as the authors' code
#    writes them (each word's part-of-speech tag in its slot), with a vocabulary of the tree's own
#    symbols, on a quarter, half and all of the training files, and draws F1 on the development
#    trees against epochs and against the number of trees: what it takes to parse;
# 4. chooses the search on the development trees (greedy or the paper's beam 21, length penalty
#    $\alpha = 0.3$, outputs up to the input length plus 300, constrained to valid trees), parses
#    all the test sentences once, and sets the F1 beside two simple floors and Table 4;
# 5. trains the linearization of Vinyals et al., with `XX` in every word slot, beside it as a
#    variant, and compares the two on the same test sentences.
#
# The paper had about forty thousand training trees; by default this chapter runs on the Penn
# Treebank sample that NLTK distributes, about a tenth of that. A `treebank_dir` parameter points it at the full WSJ
# treebank for readers who have the LDC release.

# %% tags=["hide-input"]
# Colab or a fresh environment: install the package when it is missing. A clone (this
# folder's parent) or an installed wheel is used as it is. REPOSITORY is `repository.url`
# of _config.yml, written here by `python -m annotated_transformer book --sync`.
import importlib.util
import pathlib
import subprocess
import sys

REPOSITORY = "https://github.com/annotated-transformer/annotated-transformer"
if importlib.util.find_spec("annotated_transformer") is None:
    clone = pathlib.Path.cwd().parent
    if (clone / "annotated_transformer").is_dir():
        sys.path.insert(0, str(clone))
    else:
        package = f"annotated-transformer @ git+{REPOSITORY}"
        subprocess.check_call([sys.executable, "-m", "pip", "install", "-q", package])

# %%
import collections
import dataclasses
import json
import math
import statistics
import tempfile
import time
from pathlib import Path

import altair as alt
import pandas as pd
import torch
from IPython.display import Markdown, display
from nltk import Tree

from annotated_transformer.book import viz
from annotated_transformer.data import treebank_zip_path
from annotated_transformer.evaluation import results
from annotated_transformer.evaluation.paper import TABLE4, WSJ_ONLY, table4_row
from annotated_transformer.experiments import parsing, parsing_curve
from annotated_transformer.model.config import preset
from annotated_transformer.model.transformer import count_parameters
from annotated_transformer.profiles import get_profile
from annotated_transformer.runtime.devices import resolve_device
from annotated_transformer.runtime.progress import progress_bar
from annotated_transformer.training.fit import build_model

# %% tags=["parameters"]
profile_name = "cpu"  # smoke | cpu | gpu | paper
device = "auto"  # "auto" picks CUDA when a GPU is visible
max_steps = None  # not used here (the parser trains for whole epochs); kept for the book's common parameters
data_dir = None  # None: $AT_DATA_DIR, then a download (of NLTK's Penn Treebank sample)
parsing_epochs = None  # None: the profile's epochs for the parser
treebank_dir = None  # a folder of .mrg files (e.g. the LDC release's parsed/mrg/wsj) or a treebank.zip; None: the sample

# %%
profile = get_profile(profile_name, max_steps=max_steps)
sizes = profile.chapter_sizes("07")
device = resolve_device(device)
chapter_start = time.perf_counter()

# Section 6.3 of the paper: its training data and its decoding settings.
PAPER_TRAINING_SENTENCES = 40_000  # "about 40K training sentences" of the WSJ
PAPER_VOCABULARY = 16_000  # word pieces, WSJ-only setting
PAPER_BEAM, PAPER_ALPHA, PAPER_EXTRA_LENGTH = (
    21,
    0.3,
    300,
)  # outputs up to input length + 300
assert (PAPER_BEAM, PAPER_ALPHA, PAPER_EXTRA_LENGTH) == (
    parsing.PAPER_BEAM,
    parsing.PAPER_ALPHA,
    parsing.PAPER_EXTRA_LENGTH,
)
print(
    f"under profile {profile.name!r} the parser trains {sizes.recipe['epochs']} epochs "
    f"on {device}, on {', '.join(f'{s:g}' for s in sizes.shares)} of the training files"
)


# %% [markdown]
# ## 7.1 A tree as a sequence
#
# A constituency tree groups the words of a sentence into nested phrases, each with a label: noun
# phrase (NP), verb phrase (VP), prepositional phrase (PP), clause (S), and so on. Just above the
# words sit their part-of-speech tags (NN for a noun, VBZ for a verb, ...). Parsing means finding
# this tree for a sentence never seen before.
#
# The Treebank writes trees as nested brackets. Before a model sees them, they go through the
# preprocessing every parser of Table 4 used: the Treebank's empty elements (traces such as
# `(-NONE- *T*-1)`, which mark moved material and are not words) are removed with the phrases they
# leave empty, and function tags are cut from labels (`NP-SBJ`, the subject noun phrase, becomes
# `NP`). Whole files go to training, development and test, so no article is on both sides of the
# split.

# %%
if treebank_dir is not None:
    source, source_name = (
        Path(treebank_dir).expanduser(),
        "the treebank given as treebank_dir",
    )
else:
    source, source_name = treebank_zip_path(data_dir), "NLTK's Penn Treebank sample"
files = parsing.read_treebank(source)
split_files = parsing.split_by_file(files)


def cleaned(file_ids):
    kept = [parsing.clean_tree(tree) for fid in file_ids for tree in files[fid]]
    return [tree for tree in kept if tree is not None]


splits = {name: cleaned(ids) for name, ids in split_files.items()}
n_trees = sum(len(trees) for trees in files.values())
split_sizes = pd.DataFrame(
    [
        dict(
            split=name,
            files=len(split_files[name]),
            first_file=split_files[name][0],
            last_file=split_files[name][-1],
            trees=len(trees),
            words=sum(len(t.leaves()) for t in trees),
        )
        for name, trees in splits.items()
    ]
)
viz.show_table(split_sizes, trees="{:,}", words="{:,}")
assert (
    split_sizes.trees.sum() <= n_trees and len(splits["train"]) > len(splits["test"]) > 0
)

# %% [markdown]
# Vinyals et al. write the tree depth first: an opening bracket with its label where a phrase
# starts, a closing bracket *with the same label* where it ends (so the decoder always knows which
# phrase it is closing), and one symbol in each word's slot. The words themselves are left out: the
# model reads them in the source and does not need to copy them.
#
# The paper's text does not say what goes in the slots; the authors' released code does. In
# tensor2tensor (`data_generators/wsj_parsing.py`, `words_and_tags_from_wsj_tree`) each word's slot
# holds its part-of-speech tag, the Treebank's outer `TOP` bracket is stripped, and every closing
# bracket is labelled: a target line reads `S NP DT NN /NP VP VBD /VP /S`. Source and target have
# vocabularies of their own there (`wsj_source.vocab` and `wsj_target.vocab`, both of word pieces).
# That is this chapter's parser. Ours differs in spelling and in the vocabularies only: brackets are
# written `(NP` and `)NP` instead of `NP` and `/NP`, the source vocabulary is words (seen at least
# twice in training, rarer ones read as a class of their spelling) instead of word pieces, and the
# target vocabulary is the linearization's own symbols (section 7.3). Vinyals et al. themselves
# replaced the tags by one placeholder, `XX`: the F1 score does not count tags, and they found that
# dropping them made their parser better. Section 7.6 trains that linearization as a variant beside
# the chapter's parser. Here is the shortest training sentence of at least eight words, as a tree,
# as the target the chapter's parser learns to write, and as the variant's target:

# %%
example = next(
    t
    for t in sorted(splits["train"], key=lambda t: len(t.leaves()))
    if len(t.leaves()) >= 8
)
example.pretty_print()
print("source:     ", " ".join(example.leaves()))
print("target:     ", parsing.linearize(example, tags=True))
print("XX variant: ", parsing.linearize(example))


# %% [markdown]
# The linearization is a pre-order walk, a few lines long. The package's `linearize` is the same
# walk with checks; on every tree of the data the two agree, with tags in the slots and with `XX`:


# %%
def linearize_by_hand(tree: Tree, tags: bool) -> str:
    if len(tree) == 1 and isinstance(tree[0], str):  # a part-of-speech tag over its word
        return tree.label() if tags else "XX"
    inside = " ".join(linearize_by_hand(child, tags) for child in tree)
    return f"({tree.label()} {inside} ){tree.label()}"


all_trees = [tree for trees in splits.values() for tree in trees]
assert all(
    linearize_by_hand(t, tags) == parsing.linearize(t, tags=tags)
    for t in all_trees
    for tags in (True, False)
)
print(f"linearize agrees with the hand-written walk on all {len(all_trees):,} trees")

# %% [markdown]
# Going back needs the words: `delinearize` reads the brackets and puts the sentence's words into
# the slots in order, each under the symbol its slot held (a tag, or `XX`).

# %%
viz.show_source(parsing.delinearize)

# %% [markdown]
# On the Treebank's own trees the trip there and back loses nothing: a line with tags in the slots
# gives the cleaned tree itself, and an `XX` line gives it with `XX` for every tag.

# %%
assert all(
    back.valid and back.tree == t
    for back, t in (
        (parsing.delinearize(parsing.linearize(t, tags=True), t.leaves()), t)
        for t in all_trees
    )
)
round_trip = [parsing.delinearize(parsing.linearize(t), t.leaves()) for t in all_trees]
assert all(
    back.valid and back.tree == parsing.with_slot_tags(t)
    for back, t in zip(round_trip, all_trees)
)
lengths = pd.DataFrame(
    [
        dict(words=len(t.leaves()), tokens=len(parsing.linearize(t, tags=True).split()))
        for t in all_trees
    ]
)
ratio = (lengths.tokens / lengths.words).median()
print(
    f"all {len(all_trees):,} trees come back unchanged; a linearized tree has a median of {ratio:.1f} "
    f"tokens per word, and the longest has {lengths.tokens.max():,} tokens for {lengths.words.max()} words"
)

# %% [markdown]
# A model's output is not guaranteed to be a tree: brackets may not balance, a closing label may
# not match, there may be more or fewer slots than words. `delinearize` then applies a stated
# repair rule (a closing bracket closes the innermost open phrase whatever its label; extra slots
# and empty phrases are dropped; open phrases are closed at the end; words without a slot join the
# last phrase; several top-level phrases get a `TOP` root that is not scored) and records what it
# did. Such an output counts as an *invalid tree*, and we report how many there were. Two broken
# outputs for the example:

# %%
words = example.leaves()
for broken in (
    # the last three symbols are missing
    parsing.linearize(example, tags=True).rsplit(" ", 3)[0],
    # a mismatched label, too few slots, two roots
    "(S (NP DT NN )VP )S (VP VBD )VP",
):
    repaired = parsing.delinearize(broken, words)
    print(
        f"{broken[:70]}{'...' if len(broken) > 70 else ''}\n  -> {repaired.tree.pformat(margin=10_000)[:110]}"
        f"\n  repairs: {'; '.join(repaired.repairs)}"
    )
    assert not repaired.valid and repaired.tree.leaves() == words

# %% [markdown]
# ## 7.2 Scoring a parse: labelled bracket F1
#
# A tree is scored by its brackets: each phrase is a triple (label, first word, last word). The
# precision is the share of the parser's brackets that are in the gold tree, the recall the share
# of gold brackets the parser found, and F1 their harmonic mean, summed over the whole test set.
# Table 4's numbers come from the standard scorer, evalb, with Collins's parameter file
# (COLLINS.prm), whose conventions we follow: punctuation is deleted before spans are counted (so
# attaching a comma high or low costs nothing), the root `TOP` bracket and the part-of-speech
# brackets are not counted, and the labels PRT and ADVP count as one. Which words are punctuation
# is read from the tags, and the parser's predicted tags may differ from the gold ones (the `XX`
# variant writes none at all); evalb needs both trees to delete the same words, so punctuation is
# deleted by the *gold* tree's tags from both trees, which is what `parsing.bracket_score` does.
# evalb prints a second summary beside the one over all sentences, over the sentences of at most 40
# words (`parsing.corpus_scores` gives both); the test F1 below is reported both ways.
#
# By hand, the whole computation is a few lines:


# %%
def brackets_by_hand(tree: Tree, punctuation: list[bool]) -> collections.Counter:
    """(label, start, end) over the non-punctuation words; tags and TOP are not brackets."""
    found, position = collections.Counter(), [0]

    def walk(node):
        start = position[0]
        if len(node) == 1 and isinstance(node[0], str):
            position[0] += not punctuation.pop(0)
            return
        for child in node:
            walk(child)
        if node.label() != "TOP" and position[0] > start:
            found[
                ({"PRT": "ADVP"}.get(node.label(), node.label()), start, position[0])
            ] += 1

    walk(tree)
    return found


def f1_by_hand(gold_trees, test_trees) -> float:
    matched = n_gold = n_test = 0
    for gold, test in zip(gold_trees, test_trees):
        punctuation = [tag in {",", ":", "``", "''", "."} for _, tag in gold.pos()]
        g, t = (
            brackets_by_hand(gold, list(punctuation)),
            brackets_by_hand(test, list(punctuation)),
        )
        matched, n_gold, n_test = (
            matched + sum((g & t).values()),
            n_gold + sum(g.values()),
            n_test + sum(t.values()),
        )
    p, r = matched / max(n_test, 1), matched / max(n_gold, 1)
    return 100 * 2 * p * r / (p + r) if p + r else 0.0


# %% [markdown]
# A parse of the example with one mistake: the last phrase gets the wrong label. One of the gold
# tree's brackets is missed and one of the parse's is wrong, so precision and recall both lose one
# bracket out of the tree's count:

# %%
wrong = example.copy(deep=True)
# The last phrase in pre-order, below the root (height 2 is a tag over its word).
last_phrase = [
    p
    for p in wrong.treepositions()
    if p and isinstance(wrong[p], Tree) and wrong[p].height() > 2
][-1]
wrong[last_phrase].set_label("FRAG" if wrong[last_phrase].label() != "FRAG" else "UCP")
score = parsing.bracket_score(example, wrong)
gold_count = sum(parsing.labelled_brackets(example).values())
assert score.gold == score.test == gold_count and score.matched == gold_count - 1
assert math.isclose(score.f1, f1_by_hand([example], [wrong]))
assert math.isclose(score.f1, 100 * (gold_count - 1) / gold_count)
# Its tags do not count: with XX in every slot it scores the same (the gold tags decide punctuation).
assert parsing.bracket_score(example, parsing.with_slot_tags(wrong)) == score
viz.show_table(
    pd.DataFrame([score.to_dict()])[
        ["matched", "gold", "test", "precision", "recall", "f1"]
    ],
    precision="{:.1f}",
    recall="{:.1f}",
    f1="{:.1f}",
)

# %% [markdown]
# `tests/experiments/test_parsing.py` checks the package's scorer on more hand-computed cases (a missing
# bracket, a crossing bracket, punctuation, PRT and ADVP, duplicate unary brackets), and the F1 of
# the trained parser below is computed both ways.
#
# ## 7.3 The parser: the paper's model, with vocabularies of its own
#
# The paper's parser is its translation model with 4 layers and $d_\text{model} = 1024$, trained on
# about forty thousand trees. As in the authors' code, the source and the target have vocabularies
# of their own, and ours follow from what a tree is. The target side is a language of about a
# hundred symbols (labelled opening brackets, labelled closing brackets, the part-of-speech tags
# written in the word slots, end of sequence), so it gets a vocabulary of exactly those symbols; a
# word-piece vocabulary would spend thousands of outputs on words the parser never writes and could
# cut `(NP` into pieces. The source side is words: those seen at least twice in training get an
# entry, rarer ones are read as a class that keeps what their spelling says (capitalized, a number,
# a suffix such as *-ing* or *-ly*). The two vocabularies differ, so the source and target
# embeddings are separate (`ParserVocabularies`).
#
# The model's size and training were chosen on the 273 development trees with
# `scripts/parser_sweep.py`, never on the test files; the profile holds the result, with
# `tags: True` for the tags in the slots.

# %%
recipe = parsing_curve.ParserRecipe.from_dict(sizes.recipe)
if parsing_epochs is not None:
    recipe = dataclasses.replace(recipe, epochs=int(parsing_epochs))
train_trees, dev_trees = splits["train"], splits["dev"][: sizes.dev_trees]
test_trees = splits["test"][: sizes.test_sentences]
train_by_file = [cleaned([fid]) for fid in split_files["train"]]
# The chapter's parser writes the tags (the authors' linearization); section 7.6's variant, XX.
assert recipe.tags, "the profile's chapter 07 recipe should have tags: True"
data = parsing.ParsingData.from_splits(
    {"train": train_trees, "dev": dev_trees, "test": test_trees}, tags=recipe.tags
)
config = recipe.config(data)
vocabularies = data.vocabularies
assert vocabularies.tags


def spelled(tree) -> bool:
    symbols = parsing.linearize(tree, tags=True).split()
    return vocabularies.target.decode(vocabularies.target.encode(symbols)) == symbols


assert all(spelled(t) for t in train_trees)
# A label or tag the training files never use cannot be written; such trees lose that symbol.
unspelled = {
    name: sum(not spelled(t) for t in trees)
    for name, trees in (("dev", splits["dev"]), ("test", splits["test"]))
}
paper = preset("parsing")
viz.show_table(
    pd.DataFrame(
        [
            dict(
                what="layers (encoder and decoder)",
                ours=config.n_layers,
                paper=paper.n_layers,
            ),
            dict(what="d_model", ours=config.d_model, paper=paper.d_model),
            dict(what="d_ff", ours=config.d_ff, paper=paper.d_ff),
            dict(what="heads", ours=config.n_heads, paper=paper.n_heads),
            dict(what="dropout", ours=config.dropout, paper=paper.dropout),
            dict(
                what="vocabulary",
                ours=f"{len(vocabularies.source):,} words / {len(vocabularies.target)} symbols",
                paper=f"{PAPER_VOCABULARY:,} tokens",
            ),
            dict(
                what="training trees",
                ours=f"{len(train_trees):,}",
                paper=f"{PAPER_TRAINING_SENTENCES:,}",
            ),
            dict(what="epochs", ours=recipe.epochs, paper="not stated"),
        ]
    ).astype(str)
)
parameters = count_parameters(build_model(config, vocabularies.sizes, seed=recipe.seed))
print(
    f"{parameters / 1e6:.2f}M parameters; the target vocabulary of the training trees spells all of "
    f"them and all but {unspelled['dev']} dev and {unspelled['test']} test trees (a label or tag "
    f"training never uses); targets average "
    f"{statistics.mean(len(parsing.linearize(t).split()) for t in train_trees):.0f} symbols against "
    f"{statistics.mean(len(t.leaves()) for t in train_trees):.0f} words for sources"
)

# %% [markdown]
# ## 7.4 What it takes to parse: F1 against epochs and against training trees
#
# With a tenth of the paper's trees no single number says much, so the chapter draws the curve.
# It trains the parser on the first quarter, half and all of the training files (whole files, so no
# article is split) for the same number of epochs, keeps a snapshot every few epochs, and parses the
# development sentences with every snapshot (greedy, and constrained to valid trees, as below). One
# run's snapshots give F1 against training length; the runs side by side give F1 against the
# number of training trees. A fourth run, the `XX` variant of section 7.6 (the same recipe with
# `XX` in every word slot), trains on all the files beside them. The runs train in separate
# processes of one thread each, one per core. Two floors are drawn with them: the right-branching
# tree with the commonest labels of the training trees, and the flat tree that puts every word
# straight under the root.

# %%
workers = sizes.workers if device.type == "cpu" else 1
xx_recipe = dataclasses.replace(recipe, tags=False)  # the XX variant of section 7.6
runs = {}
curve_start = time.perf_counter()
with tempfile.TemporaryDirectory() as curve_dir:
    bar = progress_bar(total=len(sizes.shares) + 1, desc="parser runs", unit="run")
    for run in parsing_curve.learning_curves(
        train_by_file,
        dev_trees,
        recipe,
        sizes.shares,
        curve_dir,
        workers=workers,
        device=str(device),
        variants=[xx_recipe],
    ):
        bar.update(1)
        if run.tags != recipe.tags:
            xx_run = run
            xx_state = torch.load(run.averaged, weights_only=False)
            continue
        runs[run.share] = run
        if run.share == 1.0:
            averaged_state = torch.load(run.averaged, weights_only=False)
    bar.close()
curve_seconds = time.perf_counter() - curve_start
full = runs[1.0]
model, model_vocabularies = parsing.load_parser(averaged_state, device)
assert model_vocabularies == vocabularies
dev_floors = {
    name: parsing.corpus_score(dev_trees, trees).f1
    for name, trees in parsing.baselines(dev_trees, train_trees).items()
}
print(
    f"{len(runs) + 1} runs of {recipe.epochs} epochs in {curve_seconds:.0f} s on {workers} "
    f"process(es) ({full.precision}); all the training trees: {full.steps:,} steps in "
    f"{full.seconds:.0f} s, best dev F1 {max(p['f1'] for p in full.dev_f1):.1f}"
)

# %%
points = pd.DataFrame(
    [
        dict(
            trees=f"{run.train_trees:,} trees ({share:g} of the files)",
            epochs=p["epochs"],
            f1=p["f1"],
        )
        for share, run in sorted(runs.items())
        for p in run.dev_f1
    ]
    + [
        dict(
            trees=f"{xx_run.train_trees:,} trees, XX in the slots (7.6)",
            epochs=p["epochs"],
            f1=p["f1"],
        )
        for p in xx_run.dev_f1
    ]
)
floors = pd.DataFrame([dict(floor=name, f1=f1) for name, f1 in dev_floors.items()])
by_epochs = alt.Chart(points).mark_line(point=True).encode(
    x=alt.X("epochs:Q", title="epochs"),
    y=alt.Y("f1:Q", title="dev F1 (greedy, constrained)"),
    color=alt.Color("trees:N", title=None, sort=None),
    tooltip=["trees", "epochs", alt.Tooltip("f1:Q", format=".1f")],
) + alt.Chart(floors).mark_rule(strokeDash=[4, 3], color="gray").encode(
    y="f1:Q", tooltip=["floor", alt.Tooltip("f1:Q", format=".1f")]
)
losses = pd.DataFrame(
    [
        dict(
            trees=f"{run.train_trees:,} trees ({share:g} of the files)",
            epochs=p["epochs"],
            nll=p["nll"],
        )
        for share, run in sorted(runs.items())
        for p in run.dev_loss
    ]
)
by_loss = viz.line_chart(
    losses,
    "epochs",
    "nll",
    "trees",
    x_title="epochs",
    y_title="dev loss per symbol (nats)",
    width=240,
)
viz.show(
    alt.hconcat(
        by_epochs.properties(width=260, height=240, title="Dev F1 by snapshot"),
        by_loss.properties(title="Dev loss"),
    )
)
curve_table = pd.DataFrame(
    [
        dict(
            share=f"{share:g}",
            trees=run.train_trees,
            epochs=run.epochs,
            steps=run.steps,
            seconds=run.seconds,
            best_dev_f1=max(p["f1"] for p in run.dev_f1),
            at_epoch=max(run.dev_f1, key=lambda p: p["f1"])["epochs"],
            last_dev_f1=run.dev_f1[-1]["f1"],
            last_dev_loss=run.dev_loss[-1]["nll"] if run.dev_loss else float("nan"),
        )
        for share, run in sorted(runs.items())
    ]
)
viz.show_table(
    curve_table,
    trees="{:,}",
    epochs="{:.1f}",
    seconds="{:.0f}",
    best_dev_f1="{:.1f}",
    at_epoch="{:.1f}",
    last_dev_f1="{:.1f}",
    last_dev_loss="{:.3f}",
)

# %% [markdown]
# The table above sets the development loss beside F1: the two need not move together. Most of a
# linearized tree can be predicted without the sentence (brackets must balance, a verb phrase tends to follow a noun
# phrase, trees of a given length look alike), and a low loss may come from that alone. The
# direct test: the development loss of the full run's averaged model with each tree's own sentence,
# and with the sentence of another tree of the same length, whose word slots fit just as well.

# %%
reads = parsing_curve.source_dependence(model, vocabularies, dev_trees)
gain = reads["nll_other_sentence"] - reads["nll_own_sentence"]
reads_little = gain < 0.25 * reads["nll_other_sentence"]
display(
    Markdown(
        f"Loss per symbol with the tree's own sentence **{reads['nll_own_sentence']:.3f}**, with "
        f"another sentence of the same length **{reads['nll_other_sentence']:.3f}** "
        f"({reads['trees_with_another_sentence']} of {reads['trees']} dev trees got another "
        f"sentence). The sentence is worth {gain:.3f} nats per symbol, "
        f"{100 * gain / reads['nll_other_sentence']:.0f}% of the loss: "
        + (
            "the parser has learned what trees of a given length look like far better than where "
            "this sentence's phrases begin and end. Matching word slots to source words, which "
            "decides every bracket's span, is the part that needs more trees."
            if reads_little
            else "the parser reads its sentence."
        )
    )
)

# %% [markdown]
# ### The extended run: the authors' linearization trained until dev F1 stops rising
#
# The curves above stop where the chapter's minutes do. The committed extended run trains this
# chapter's parser, with the part-of-speech tags in the word slots as the authors' code writes them
# (at d_model 128), on a quarter, a half and all of the training files, an epoch at a time, and
# parses the development sentences after every epoch (greedy, constrained). Each share stops once
# its dev F1 has not risen for a fifth of its epochs:
#
# ```bash
# python -m annotated_transformer parser-curve --tags --d-model 128 --shares 1 0.5 0.25 \
#     --out runs/parser-extended --export results/parser_extended_cpu/curves.json
# ```
#
# The run continues from its folder when started again; this page reads its committed curves.

# %%
committed = results.committed_root()
extended_path = committed and committed / "parser_extended_cpu" / "curves.json"
if extended_path and extended_path.is_file():
    extended = json.loads(extended_path.read_text(encoding="utf-8"))
    extended_points = pd.DataFrame(
        [
            dict(
                trees=f"{job['train_trees']:,} trees ({job['share']:g} of the files)",
                epoch=p["epoch"],
                f1=p["f1"],
            )
            for job in extended["jobs"]
            for p in job["curve"]
        ]
    )
    viz.show(
        (
            alt.Chart(extended_points)
            .mark_line()
            .encode(
                x=alt.X("epoch:Q", title="epochs"),
                y=alt.Y("f1:Q", title="dev F1 (greedy, constrained)"),
                color=alt.Color("trees:N", title=None, sort=None),
                tooltip=["trees", "epoch", alt.Tooltip("f1:Q", format=".1f")],
            )
            + alt.Chart(floors)
            .mark_rule(strokeDash=[4, 3], color="gray")
            .encode(y="f1:Q", tooltip=["floor", alt.Tooltip("f1:Q", format=".1f")])
        ).properties(width=520, height=260, title="The extended run: dev F1 by epoch")
    )
    viz.show_table(
        pd.DataFrame(
            [
                {
                    "share of the files": f"{job['share']:g}",
                    "trees": job["train_trees"],
                    "epochs": len(job["curve"]),
                    "best dev F1": max(p["f1"] for p in job["curve"]),
                    "at epoch": max(job["curve"], key=lambda p: p["f1"])["epoch"],
                    "last dev F1": job["curve"][-1]["f1"],
                    "stopped": "yes"
                    if extended["stopped"][str(job["share"])]
                    else "not yet",
                }
                for job in extended["jobs"]
            ]
        ),
        trees="{:,}",
        **{"best dev F1": "{:.1f}", "last dev F1": "{:.1f}"},
    )
else:
    display(
        Markdown(
            "No extended run is committed (`results/parser_extended_cpu/curves.json`); run "
            "the command above to make one."
        )
    )


# %% [markdown]
# ## 7.5 Decoding, chosen on the development trees; the test files once
#
# The paper decodes with 21 beams, length penalty $\alpha = 0.3$, and room for outputs up to the
# input length plus 300 symbols. A search over an unconstrained model may write something that is
# no tree; the parser's own constraint (`TreeConstraint`, a hook of the beam search) allows a word
# slot only while words remain, a closing bracket only for the innermost open phrase, and the end
# only when the tree is complete, so every output is a valid tree with one slot per word:

# %%
viz.show_source(parsing.TreeConstraint.__call__)

# %% [markdown]
# Which search to report is decided on the development trees: greedy decoding against the paper's
# beam, both constrained, with the full run's average of its last snapshots.

# %%
dev_runs, chosen = parsing.choose_search(model, vocabularies, dev_trees)
viz.show_table(
    pd.DataFrame(
        [
            dict(
                decoding=name,
                f1=r.score.f1,
                invalid=r.score.invalid,
                exact=r.score.exact,
                seconds=r.seconds,
            )
            for name, r in dev_runs.items()
        ]
    ),
    f1="{:.1f}",
    seconds="{:.0f}",
)
print(
    f"chosen on the {len(dev_trees)} dev trees: {chosen.name} ({chosen.score.f1:.1f} dev F1)"
)
gold_symbols = statistics.mean(len(parsing.linearize(t).split()) for t in dev_trees)
gold_roots = collections.Counter(t.label() for t in dev_trees).most_common(1)[0]


def written(run) -> str:
    """What a search writes on the dev sentences: its length, brackets and commonest root."""
    root, count = collections.Counter(p.tree.label() for p in run.parses).most_common(1)[
        0
    ]
    return (
        f"{run.name} writes {statistics.mean(len(x.split()) for x in run.lines):.0f} symbols "
        f"and {run.score.test / len(run.parses):.1f} counted brackets a sentence, "
        f"{100 * count / len(run.parses):.0f}% of its trees rooted in {root}"
    )


lengths = {
    name: statistics.mean(len(x.split()) for x in r.lines) for name, r in dev_runs.items()
}
shortest = min(lengths, key=lengths.get)
display(
    Markdown(
        "; ".join(written(r) for r in dev_runs.values())
        + f". The gold trees have {gold_symbols:.0f} symbols and "
        f"{chosen.score.gold / len(dev_trees):.1f} counted brackets a sentence, "
        f"{100 * gold_roots[1] / len(dev_trees):.0f}% rooted in {gold_roots[0]}."
        + (
            f" {shortest} writes the shortest trees: a search that ranks whole outputs by "
            "their log-probability (alpha 0.3 barely offsets length) favours trees with few "
            "brackets, each of which costs probability, over trees with likely ones."
            if dev_runs[shortest].beam_size > 1 and lengths[shortest] < gold_symbols
            else ""
        )
    )
)

# %% [markdown]
# The test files are parsed once, with the chosen search first and the others beside it: the
# paper's beam with and without the constraint (how many outputs are no tree without it), and the
# two floors on the same sentences.

# %%
other_beam = PAPER_BEAM if chosen.beam_size == 1 else 1
decodings = (
    dict(beam_size=chosen.beam_size, constrained=True),
    dict(beam_size=other_beam, constrained=True),
    dict(beam_size=PAPER_BEAM, constrained=False),
)
results_folder = results.results_path("constituency_parsing", profile.name).parent
report = parsing.report_parser(
    model, data, split="test", decodings=decodings, results_dir=results_folder
)
test_runs = report["decodings"]
headline = test_runs[chosen.name]
predicted = (results_folder / report["files"]["predicted"]).read_text().splitlines()
parsed = [Tree.fromstring(line) for line in predicted]
assert len(parsed) == len(test_trees)
assert math.isclose(headline["f1"], f1_by_hand(test_trees, parsed), abs_tol=1e-9)
assert headline["invalid"] == 0 and all(
    r["invalid"] == 0 for r in test_runs.values() if r["constrained"]
)
# evalb's two summaries of the chosen search: all sentences, and those of at most 40 words.
evalb = parsing.corpus_scores(test_trees, parsed)
assert math.isclose(evalb["all"].f1, headline["f1"])
assert math.isclose(evalb["<=40"].f1, headline["f1_le40"])
# The parser against each floor on the same sentences: its F1's interval and the margin's.
floor_trees = parsing.baselines(test_trees, train_trees)
over_floors = {
    name: parsing.paired_f1_bootstrap(test_trees, trees, parsed)
    for name, trees in floor_trees.items()
}
assert all(
    math.isclose(over_floors[name]["first"]["f1"], r["f1"])
    for name, r in report["baselines"].items()
)
right_floor = next(name for name in floor_trees if name.startswith("right-branching"))
flat_floor = next(name for name in floor_trees if name.startswith("flat"))
LE40 = f"f1, <={parsing.EVALB_CUTOFF} words"
rows = [
    {
        "parser": name,
        "f1": r["f1"],
        LE40: r["f1_le40"],
        "precision": r["precision"],
        "recall": r["recall"],
        "exact": r["exact"],
        "invalid": r["invalid"],
        "symbols": r["symbols_per_output"],
        "seconds": r["seconds"],
    }
    for name, r in test_runs.items()
] + [
    {
        "parser": name,
        "f1": r["f1"],
        LE40: r["f1_le40"],
        "precision": r["precision"],
        "recall": r["recall"],
        "exact": r["exact"],
        "invalid": 0,
    }
    for name, r in report["baselines"].items()
]
gold_symbols = statistics.mean(len(parsing.linearize(t).split()) for t in test_trees)
viz.show_table(
    pd.DataFrame(rows),
    f1="{:.1f}",
    precision="{:.1f}",
    recall="{:.1f}",
    symbols="{:.0f}",
    seconds="{:.0f}",
    **{LE40: "{:.1f}"},
)
best_floor = max(r["f1"] for r in report["baselines"].values())
unconstrained = test_runs[f"beam {PAPER_BEAM}, unconstrained"]
display(
    Markdown(
        f"On all {report['sentences']} test sentences the parser scores **{headline['f1']:.1f} F1** "
        f"({chosen.name}), and {headline['f1_le40']:.1f} on the {headline['sentences_le40']} "
        f"sentences of at most {parsing.EVALB_CUTOFF} words. "
        + (
            f"That is {headline['f1'] - best_floor:.1f} above the better floor ({best_floor:.1f}). "
            if headline["f1"] > best_floor
            else f"That is no better than the better floor ({best_floor:.1f}). "
        )
        + f"Without the constraint the paper's beam leaves {unconstrained['invalid']} of "
        f"{report['sentences']} outputs that are no tree ({unconstrained['f1']:.1f} F1 after "
        f"repair); its outputs average {unconstrained['symbols_per_output']:.0f} symbols against "
        f"{gold_symbols:.0f} for the gold trees."
    )
)

# %% [markdown]
# One test sentence of about twelve words, the gold tree against the parse (whose tags are the
# parser's own; they are not scored):

# %%
shown = min(
    range(len(test_trees)), key=lambda i: (abs(len(test_trees[i].leaves()) - 12), i)
)
one = parsing.bracket_score(test_trees[shown], parsed[shown])
print("sentence:", " ".join(test_trees[shown].leaves()))
print("gold:    ", parsing.linearize(test_trees[shown], tags=True))
print("parse:   ", parsing.linearize(parsed[shown], tags=True))
print(f"F1 {one.f1:.1f} ({one.matched} of {one.gold} gold brackets found)")

# %% [markdown]
# F1 by sentence length, the parse against the floors (longer sentences have more brackets to
# place):

# %%
length_rows = [
    dict(words=words, parser=name, sentences=v["sentences"], f1=v["f1"])
    for name, r in [(chosen.name, headline), *report["baselines"].items()]
    for words, v in r["f1_by_length"].items()
]
length_table = pd.DataFrame(length_rows)
assert length_table.groupby("parser").sentences.sum().eq(len(test_trees)).all()
viz.show(
    alt.Chart(length_table)
    .mark_bar()
    .encode(
        x=alt.X("words:N", sort=None, title="sentence length (words)"),
        xOffset=alt.XOffset("parser:N", sort=None),
        y=alt.Y("f1:Q", title="test F1"),
        color=alt.Color("parser:N", title=None, sort=None),
        tooltip=["words", "parser", "sentences", alt.Tooltip("f1:Q", format=".1f")],
    )
    .properties(width=520, height=240, title="Test F1 by sentence length")
)

# %% [markdown]
# ## 7.6 The variant of Vinyals et al.: XX in the word slots
#
# Vinyals et al. wrote one placeholder, `XX`, in every word slot instead of the part-of-speech tag.
# The test of section 7.4 asks whether a parser reads its sentence, and with `XX` slots it has less
# reason to: every slot is the same symbol, so no output symbol depends on which word fills the
# slot, and the loss can fall a long way on tree shapes alone. With the tags (`NN`, `VBZ`, ...: what
# the Treebank holds above every word) every slot is a prediction about one source word, and the
# decoder is asked, at every slot, to find that word. The variant is trained with the same recipe,
# trees and epochs as the chapter's parser, beside the runs of section 7.4. The F1 does not count
# part-of-speech tags (evalb's conventions), so both parsers are scored on the same brackets. Its
# search is chosen on the development trees in the same way, and the test files are parsed once
# with it.

# %%
xx_data = parsing.ParsingData.from_splits(
    {"train": train_trees, "dev": dev_trees, "test": test_trees}, tags=xx_recipe.tags
)
xx_model, xx_vocabularies = parsing.load_parser(xx_state, device)
assert xx_vocabularies == xx_data.vocabularies and not xx_vocabularies.tags
xx_dev, xx_chosen = parsing.choose_search(xx_model, xx_vocabularies, dev_trees)
xx_report = parsing.report_parser(
    xx_model,
    xx_data,
    split="test",
    decodings=(dict(beam_size=xx_chosen.beam_size, constrained=True),),
    results_dir=results_folder,
    file_suffix="_xx",
)
xx_headline = xx_report["decodings"][xx_chosen.name]
xx_parsed = [
    Tree.fromstring(line)
    for line in (results_folder / xx_report["files"]["predicted"])
    .read_text()
    .splitlines()
]
assert math.isclose(xx_headline["f1"], f1_by_hand(test_trees, xx_parsed), abs_tol=1e-9)
assert math.isclose(
    parsing.corpus_scores(test_trees, xx_parsed)["<=40"].f1, xx_headline["f1_le40"]
)
# first: the chapter's parser (tags), second: the variant (XX); the difference is XX minus tags.
versus = parsing.paired_f1_bootstrap(test_trees, parsed, xx_parsed)
xx_over_floor = parsing.paired_f1_bootstrap(
    test_trees, floor_trees[right_floor], xx_parsed
)
xx_reads = parsing_curve.source_dependence(xx_model, xx_vocabularies, dev_trees)
xx_gain = xx_reads["nll_other_sentence"] - xx_reads["nll_own_sentence"]


def share_of_loss(r: dict) -> float:
    return (
        100 * (r["nll_other_sentence"] - r["nll_own_sentence"]) / r["nll_other_sentence"]
    )


viz.show_table(
    pd.DataFrame(
        [
            {
                "word slots": name,
                "dev F1, greedy": dev["greedy, constrained"].score.f1,
                f"dev F1, beam {PAPER_BEAM}": dev[
                    f"beam {PAPER_BEAM}, constrained"
                ].score.f1,
                "test F1 (chosen search)": f"{v['f1']:.1f} [{v['ci95'][0]:.1f}, {v['ci95'][1]:.1f}]",
                f"test F1, <={parsing.EVALB_CUTOFF} words": h["f1_le40"],
                "loss the sentence is worth": f"{share_of_loss(r):.0f}%",
            }
            for name, dev, v, h, r in (
                (
                    "part-of-speech tags (the authors' code)",
                    dev_runs,
                    versus["first"],
                    headline,
                    reads,
                ),
                (
                    "XX (Vinyals et al., variant)",
                    xx_dev,
                    versus["second"],
                    xx_headline,
                    xx_reads,
                ),
            )
        ]
    ),
    **{
        "dev F1, greedy": "{:.1f}",
        f"dev F1, beam {PAPER_BEAM}": "{:.1f}",
        f"test F1, <={parsing.EVALB_CUTOFF} words": "{:.1f}",
    },
)
low, high = versus["difference_ci95"]
display(
    Markdown(
        f"On the {len(test_trees)} test sentences the variant scores **{versus['second']['f1']:.1f} "
        f"F1** ({xx_chosen.name}, chosen on dev) against {versus['first']['f1']:.1f} for the "
        f"chapter's parser with tags in the slots: a difference of {versus['difference']:+.1f} F1, "
        f"95% paired bootstrap interval [{low:+.1f}, {high:+.1f}] over sentences ("
        + (
            f"p = {versus['p_value']:.3f}"
            if versus["p_value"] > 0
            else f"no resample of {versus['samples']:,} reversed it"
        )
        + "), "
        + ("beyond" if low > 0 or high < 0 else "within")
        + " the resampling noise. Another sentence of the same length costs the variant "
        f"{share_of_loss(xx_reads):.0f}% of its loss, against {share_of_loss(reads):.0f}% for "
        "the parser with tags in the slots: "
        + (
            "the tags make the parser read its sentence, and the brackets follow."
            if share_of_loss(reads) > 2 * share_of_loss(xx_reads)
            and versus["difference"] < 0
            else "the tags alone do not make the parser read its sentence much more."
        )
    )
)

# %% [markdown]
# Does longer training make the `XX` parser read its sentence? The development sweep
# (`scripts/parser_sweep.py`, committed in `results/tuning_parser_cpu/`, development trees only)
# trained the variant at d_model 128 for 40 epochs, on one core:

# %%
long_path = (
    committed and committed / "tuning_parser_cpu" / "xx_d128_40epochs_dev_curve.json"
)
if long_path and long_path.is_file():
    long_run = json.loads(long_path.read_text(encoding="utf-8"))
    assert not long_run["recipe"].get("tags", False)  # the XX linearization
    long_reads = long_run["source_dependence"]
    long_gain = long_reads["nll_other_sentence"] - long_reads["nll_own_sentence"]
    viz.show_table(
        pd.DataFrame(long_run["dev_f1"])[["epochs", "f1"]].rename(
            columns={"f1": "dev F1 (greedy, constrained)"}
        ),
        epochs="{:.0f}",
        **{"dev F1 (greedy, constrained)": "{:.1f}"},
    )
    long_dev = long_run["dev"]
    long_best = max(p["f1"] for p in long_run["dev_f1"])
    here_best = max(p["f1"] for p in xx_run.dev_f1)
    display(
        Markdown(
            f"{long_run['epochs']:.0f} epochs ({long_run['steps']:,} steps, "
            f"{long_run['recipe']['n_layers']} + {long_run['recipe']['n_layers']} layers at "
            f"d_model {long_run['recipe']['d_model']}): best snapshot {long_best:.1f} dev F1 "
            f"(greedy, constrained, as in the curves of section 7.4) against {here_best:.1f} for "
            f"this chapter's {xx_recipe.epochs} epochs of the variant, "
            f"{long_best - here_best:+.1f} points for "
            f"{long_run['epochs'] / xx_recipe.epochs:.0f} times the epochs; the average of its "
            f"last {long_run['recipe']['average_last']} snapshots scores "
            f"{long_dev['greedy, constrained']['f1']:.1f} greedy and "
            f"{long_dev['beam 21, constrained']['f1']:.1f} with beam 21. "
            f"Its sentence is worth {long_gain:.3f} nats per symbol "
            f"({100 * long_gain / long_reads['nll_other_sentence']:.0f}% of the loss), against "
            f"{xx_gain:.3f} for the variant here"
            + (
                ": with more training the `XX` parser begins to read its sentence, and F1 "
                "follows slowly."
                if long_gain > 2 * xx_gain
                else ": longer training does not make it read its sentence much more."
            )
        )
    )

# %% [markdown]
# ## 7.7 Beside Table 4

# %%
paper_f1 = table4_row("Transformer (4 layers)", WSJ_ONLY).f1
ours_label = f"this chapter ({profile.name} profile, {len(train_trees):,} trees)"
table4 = pd.DataFrame(
    [dict(parser=r.parser, training=r.training, f1=r.f1) for r in TABLE4]
    + [
        {
            "parser": ours_label + where,
            "training": "Treebank sample" if treebank_dir is None else "WSJ",
            "f1": round(h["f1"], 1),
            LE40: round(h["f1_le40"], 1),
        }
        for where, h in (
            ("", headline),
            (", XX in the slots (section 7.6)", xx_headline),
        )
    ]
)
viz.show_table(table4, f1="{:.1f}", **{LE40: "{:.1f}"})
chart_data = table4[table4.training.isin([WSJ_ONLY, table4.training.iloc[-1]])].copy()
chart_data["who"] = [
    "ours"
    if p.startswith(ours_label)
    else ("the paper" if p.startswith("Transformer") else "other parsers")
    for p in chart_data.parser
]
viz.show(
    alt.Chart(chart_data)
    .mark_bar()
    .encode(
        x=alt.X(
            "f1:Q",
            title="F1 (WSJ section 23 for the paper's rows)",
            scale=alt.Scale(domain=[0, 100]),
        ),
        y=alt.Y("parser:N", sort=None, title=None),
        color=alt.Color(
            "who:N",
            title=None,
            scale=alt.Scale(
                domain=["the paper", "other parsers", "ours"],
                range=["#4c78a8", "#bab0ac", "#f58518"],
            ),
        ),
        tooltip=["parser", "training", alt.Tooltip("f1:Q", format=".1f")],
    )
    .properties(width=520, height=180, title="Table 4, WSJ-only parsers, and this run")
)

# %%
quarter = runs.get(min(runs))
f1_low, f1_high = over_floors[right_floor]["second"]["ci95"]


def against(comparison: dict, what: str) -> str:
    """'X points above <what> (its F1; the margin's 95% paired bootstrap interval, and whether
    it excludes zero)'."""
    margin, (lo, hi) = comparison["difference"], comparison["difference_ci95"]
    return (
        f"{abs(margin):.1f} points {'above' if margin >= 0 else 'below'} {what} "
        f"({comparison['first']['f1']:.1f}; interval of the margin [{lo:+.1f}, {hi:+.1f}], "
        + ("beyond" if lo > 0 or hi < 0 else "within")
        + " the resampling noise)"
    )


display(
    Markdown(
        f"Our parser, with the part-of-speech tags in the word slots as the authors' code writes "
        f"them, reaches **{headline['f1']:.1f} F1** (95% bootstrap interval [{f1_low:.1f}, "
        f"{f1_high:.1f}]) on {report['sentences']} test sentences and {headline['f1_le40']:.1f} on the "
        f"{headline['sentences_le40']} of at most {parsing.EVALB_CUTOFF} words: "
        f"{against(over_floors[right_floor], 'the right-branching floor')} and "
        f"{against(over_floors[flat_floor], 'the flat floor')}. The paper reports {paper_f1} on "
        f"WSJ section 23, with {PAPER_TRAINING_SENTENCES / len(train_trees):.0f} times our "
        f"training trees; ours is a model of {parameters / 1e6:.1f}M parameters trained "
        f"{full.epochs:.0f} epochs. "
        + (
            f"The curve says where that stands: on the development trees {quarter.share:g} of the files "
            f"({quarter.train_trees:,} trees) reached {max(p['f1'] for p in quarter.dev_f1):.1f} F1 "
            f"and all of them {max(p['f1'] for p in full.dev_f1):.1f}; "
            if quarter is not full
            else ""
        )
        + f"the paper's {paper_f1} comes from about forty thousand trees"
        + (
            " and a model that reads its sentence, which ours, by the test above, barely does yet. "
            if reads_little
            else ". "
        )
        + f"The variant of Vinyals et al., with `XX` in the word slots, scores "
        f"{xx_headline['f1']:.1f} F1 on the same sentences, "
        f"{against(xx_over_floor, 'the right-branching floor')}, and "
        f"{abs(versus['difference']):.1f} points "
        f"{'below' if versus['difference'] < 0 else 'above'} the parser with tags (section 7.6). "
        + (
            "With the full treebank (`treebank_dir`) and the `gpu` profile the same cells train on "
            "the WSJ's standard split (sections 02-21, test 23)."
            if treebank_dir is None
            else ""
        )
    )
)
assert (
    headline["f1"] < paper_f1 or treebank_dir is not None
)  # a tenth of the data does not beat the paper

# %% [markdown]
# ## What this chapter wrote
#
# `results/<profile>/constituency_parsing.json` holds the parser's test F1 (tags in the slots: read
# by the introduction's reproduction summary), over all sentences and over those of at most 40
# words, for every decoding, the floors, the learning curve's points, the development scores the
# search was chosen by, the recipe, the data sizes and the `XX` variant's numbers (`variant_xx`);
# `parsing_test_gold.txt`, `parsing_test_predicted.txt` (the parser's) and
# `parsing_test_predicted_xx.txt` (the variant's) beside it hold the gold and parsed test trees one
# per line, for evalb.

# %%
metrics = {
    "linearization": "part-of-speech tags in the word slots (the authors' code)",
    "f1": round(headline["f1"], 2),
    "f1_ci95": [round(x, 2) for x in over_floors[right_floor]["second"]["ci95"]],
    "f1_le40": round(headline["f1_le40"], 2),
    "sentences_le40": headline["sentences_le40"],
    "precision": round(headline["precision"], 2),
    "recall": round(headline["recall"], 2),
    "invalid_trees": headline["invalid"],
    "exact_trees": headline["exact"],
    "test_sentences": report["sentences"],
    "decoding_chosen_on_dev": chosen.name,
    "dev": {
        name: {
            "f1": round(r.score.f1, 2),
            "invalid": r.score.invalid,
            "seconds": round(r.seconds, 1),
        }
        for name, r in dev_runs.items()
    },
    "test": test_runs,
    "baselines": report["baselines"],
    "against_floors": over_floors,
    "learning_curve": {
        f"{share:g}": run.to_dict() for share, run in sorted(runs.items())
    },
    "source_dependence": reads,
    "variant_xx": {
        "what": "XX in the word slots (the linearization of Vinyals et al.)",
        "f1": round(xx_headline["f1"], 2),
        "f1_le40": round(xx_headline["f1_le40"], 2),
        "sentences_le40": xx_headline["sentences_le40"],
        "precision": round(xx_headline["precision"], 2),
        "recall": round(xx_headline["recall"], 2),
        "invalid_trees": xx_headline["invalid"],
        "exact_trees": xx_headline["exact"],
        "decoding_chosen_on_dev": xx_chosen.name,
        "dev": {
            name: {"f1": round(r.score.f1, 2), "seconds": round(r.seconds, 1)}
            for name, r in xx_dev.items()
        },
        "test": xx_report["decodings"],
        "learning_curve": xx_run.to_dict(),
        "source_dependence": xx_reads,
        # paired bootstrap: first the parser with tags, second the variant (XX minus tags)
        "against_tags": versus,
        "against_right_branching_floor": xx_over_floor,
        "recipe": xx_recipe.to_dict(),
        "files": xx_report["files"],
    },
    "recipe": recipe.to_dict(),
    "dataset": "PTB sample (NLTK)" if treebank_dir is None else "treebank_dir",
    "train_trees": len(train_trees),
    "dev_trees": len(dev_trees),
    "test_files": split_files["test"],
    "vocabulary": {
        "source_words": len(vocabularies.source),
        "target_symbols": len(vocabularies.target),
    },
    "params_m": round(parameters / 1e6, 3),
    "scoring": report["scoring"],
    "decoding": report["decoding"],
    "curve_seconds": round(curve_seconds, 1),
    "workers": workers,
    "paper_f1": paper_f1,
}
path = results.write_result(
    "constituency_parsing",
    metrics,
    profile=profile.name,
    config=model.config,
    device=device,
    wall_time_s=round(time.perf_counter() - chapter_start, 1),
)
print(
    f"wrote {path.parent.name}/{path.name} and the test trees under the results folder "
    f"(chapter: {time.perf_counter() - chapter_start:.0f} s, of which the learning curve "
    f"{curve_seconds:.0f} s)"
)

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
# 3. trains the paper's model on sentence -> linearized tree pairs, with a vocabulary of the tree's
#    own symbols, on a quarter, half and all of the training files, and draws F1 on the development
#    trees against epochs and against the number of trees: what it takes to parse;
# 4. chooses the search on the development trees (greedy or the paper's beam 21, length penalty
#    $\alpha = 0.3$, outputs up to the input length plus 300, constrained to valid trees), parses
#    all the test sentences once, and sets the F1 beside two simple floors and Table 4.
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
profile = "cpu"  # smoke | cpu | gpu | paper
device = "auto"  # "auto" picks CUDA when a GPU is visible
max_steps = None  # not used here (the parser trains for whole epochs); kept for the book's common parameters
data_dir = None  # None: $AT_DATA_DIR, then a download (of NLTK's Penn Treebank sample)
parsing_epochs = None  # None: the profile's epochs for the parser
treebank_dir = None  # a folder of .mrg files (e.g. the LDC release's parsed/mrg/wsj) or a treebank.zip; None: the sample

# %%
settings = get_profile(profile, max_steps=max_steps)
size = settings.chapter_sizes("07")
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
    f"under profile {settings.name!r} the parser trains {size['recipe']['epochs']} epochs "
    f"on {device}, on {', '.join(f'{s:g}' for s in size['shares'])} of the training files"
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
sizes = pd.DataFrame(
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
viz.show_table(sizes, trees="{:,}", words="{:,}")
assert sizes.trees.sum() <= n_trees and len(splits["train"]) > len(splits["test"]) > 0

# %% [markdown]
# Vinyals et al. write the tree depth first: an opening bracket with its label where a phrase
# starts, a closing bracket *with the same label* where it ends (so the decoder always knows which
# phrase it is closing), and one placeholder, `XX`, for each word. The words themselves are left
# out: the model reads them in the source and does not need to copy them. The part-of-speech tags
# are left out too: the F1 score does not count them, and Vinyals et al. found that replacing them
# by `XX` made their parser better. Here is the shortest training sentence of at least eight words,
# as a tree and as the target the model learns to write:

# %%
example = next(
    t
    for t in sorted(splits["train"], key=lambda t: len(t.leaves()))
    if len(t.leaves()) >= 8
)
example.pretty_print()
print("source:", " ".join(example.leaves()))
print("target:", parsing.linearize(example))


# %% [markdown]
# The linearization is a pre-order walk, a few lines long. The package's `linearize` is the same
# walk with checks; on every tree of the data the two agree:


# %%
def linearize_by_hand(tree: Tree) -> str:
    if len(tree) == 1 and isinstance(tree[0], str):  # a part-of-speech tag over its word
        return "XX"
    inside = " ".join(linearize_by_hand(child) for child in tree)
    return f"({tree.label()} {inside} ){tree.label()}"


all_trees = [tree for trees in splits.values() for tree in trees]
assert all(linearize_by_hand(t) == parsing.linearize(t) for t in all_trees)
print(f"linearize agrees with the hand-written walk on all {len(all_trees):,} trees")

# %% [markdown]
# Going back needs the words: `delinearize` reads the brackets and fills the `XX` slots with the
# sentence's words in order.

# %%
viz.show_source(parsing.delinearize)

# %% [markdown]
# On the Treebank's own trees, the trip there and back loses nothing but the part-of-speech
# tags (which become `XX`):

# %%
round_trip = [parsing.delinearize(parsing.linearize(t), t.leaves()) for t in all_trees]
assert all(
    back.valid and back.tree == parsing.with_slot_tags(t)
    for back, t in zip(round_trip, all_trees)
)
lengths = pd.DataFrame(
    [
        dict(words=len(t.leaves()), tokens=len(parsing.linearize(t).split()))
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
    parsing.linearize(example).rsplit(" ", 3)[0],  # the last closing brackets are missing
    "(S (NP XX XX )VP )S (VP XX )VP",
):  # a mismatched label, too few slots, two roots
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
# brackets are not counted, and the labels PRT and ADVP count as one. Since our parser writes `XX`
# for every tag, which words are punctuation is read from the gold tree.
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
wrong = parsing.with_slot_tags(example)
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
viz.show_table(
    pd.DataFrame([score.to_dict()])[
        ["matched", "gold", "test", "precision", "recall", "f1"]
    ],
    precision="{:.1f}",
    recall="{:.1f}",
    f1="{:.1f}",
)

# %% [markdown]
# `tests/test_parsing.py` checks the package's scorer on more hand-computed cases (a missing
# bracket, a crossing bracket, punctuation, PRT and ADVP, duplicate unary brackets), and the F1 of
# the trained parser below is computed both ways.
#
# ## 7.3 The parser: the paper's model, with vocabularies of its own
#
# The paper's parser is its translation model with 4 layers and $d_\text{model} = 1024$, trained on
# about forty thousand trees. Two things change here, both following from what a tree is. The
# target side is a language of about sixty symbols (labelled opening brackets, labelled closing
# brackets, the word slot `XX`, end of sequence), so it gets a vocabulary of exactly those symbols;
# a shared word-piece vocabulary would spend thousands of outputs on words the parser never writes
# and cut `(NP` into two pieces. The source side is words: those seen at least twice in training get
# an entry, rarer ones are read as a class that keeps what their spelling says (capitalized,
# a number, a suffix such as *-ing* or *-ly*). The two vocabularies differ, so the source and
# target embeddings are separate (`ParserVocabularies`).
#
# The model's size and training were chosen on the 273 development trees with
# `scripts/parser_sweep.py`, never on the test files; the profile holds the result.

# %%
recipe = parsing_curve.ParserRecipe.from_dict(size["recipe"])
if parsing_epochs is not None:
    recipe = dataclasses.replace(recipe, epochs=int(parsing_epochs))
train_trees, dev_trees = splits["train"], splits["dev"][: size["dev_trees"]]
test_trees = splits["test"][: size["test_sentences"]]
train_by_file = [cleaned([fid]) for fid in split_files["train"]]
data = parsing.ParsingData.from_splits(
    {"train": train_trees, "dev": dev_trees, "test": test_trees}
)
config = recipe.config(data)
vocabularies = data.vocabularies


def spelled(tree) -> bool:
    symbols = parsing.linearize(tree).split()
    return vocabularies.target.decode(vocabularies.target.encode(symbols)) == symbols


assert all(spelled(t) for t in train_trees)
# A label the training files never use cannot be written; such trees lose that bracket.
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
                paper=f"{PAPER_VOCABULARY:,} shared pieces",
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
    f"them and all but {unspelled['dev']} dev and {unspelled['test']} test trees (a label training "
    f"never uses); targets average "
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
# number of training trees. A fourth run, the labelled variant of section 7.6, trains on all the
# files beside them. The runs train in separate processes of one thread each, one per core. Two
# floors are drawn with them: the right-branching tree with the commonest labels of the training
# trees, and the flat tree that puts every word straight under the root.

# %%
workers = size["workers"] if device.type == "cpu" else 1
tagged_recipe = dataclasses.replace(
    recipe, tags=True
)  # the labelled variant of section 7.7
runs = {}
curve_start = time.perf_counter()
with tempfile.TemporaryDirectory() as curve_dir:
    bar = progress_bar(total=len(size["shares"]) + 1, desc="parser runs", unit="run")
    for run in parsing_curve.learning_curves(
        train_by_file,
        dev_trees,
        recipe,
        size["shares"],
        curve_dir,
        workers=workers,
        device=str(device),
        variants=[tagged_recipe],
    ):
        bar.update(1)
        if run.tags:
            tagged_run = run
            tagged_state = torch.load(run.averaged, weights_only=False)
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
            trees=f"{tagged_run.train_trees:,} trees, tags in the slots (7.6)",
            epochs=p["epochs"],
            f1=p["f1"],
        )
        for p in tagged_run.dev_f1
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
# Does longer training change that? The development sweep (`scripts/parser_sweep.py`, committed in
# `results/tuning_parser_cpu/`, development trees only) trained the same model at d_model 128 for
# four times the epochs, on one core:

# %%
committed = results.committed_root()
long_path = (
    committed and committed / "tuning_parser_cpu" / "xx_d128_40epochs_dev_curve.json"
)
if long_path and long_path.is_file():
    long_run = json.loads(long_path.read_text(encoding="utf-8"))
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
    here_best = max(p["f1"] for p in full.dev_f1)
    display(
        Markdown(
            f"{long_run['epochs']:.0f} epochs ({long_run['steps']:,} steps, "
            f"{long_run['recipe']['n_layers']} + {long_run['recipe']['n_layers']} layers at "
            f"d_model {long_run['recipe']['d_model']}): best snapshot {long_best:.1f} dev F1 "
            f"(greedy, constrained, as in the curves above) against {here_best:.1f} for this "
            f"chapter's {recipe.epochs} epochs, {long_best - here_best:+.1f} points for "
            f"{long_run['epochs'] / recipe.epochs:.0f} times the epochs; the average of its last "
            f"{long_run['recipe']['average_last']} snapshots scores "
            f"{long_dev['greedy, constrained']['f1']:.1f} greedy and "
            f"{long_dev['beam 21, constrained']['f1']:.1f} with beam 21. "
            f"Its sentence is worth {long_gain:.3f} nats per symbol "
            f"({100 * long_gain / long_reads['nll_other_sentence']:.0f}% of the loss), against "
            f"{gain:.3f} here"
            + (
                ": with more training the parser begins to read its sentence, and F1 follows "
                "slowly."
                if long_gain > 2 * gain
                else ": longer training does not make it read its sentence much more."
            )
        )
    )


# %% [markdown]
# ### The extended run: the authors' linearization trained until dev F1 stops rising
#
# The curves above stop where the chapter's minutes do. The committed extended run trains the
# parser with part-of-speech tags in the word slots, as the authors' released code writes its
# targets (tensor2tensor's `wsj_parsing.py`: each word's tag as its slot, TOP stripped, every closing
# bracket labelled), on a quarter, a half and all of the training files, an epoch at a time, and
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
results_folder = results.results_path("constituency_parsing", settings.name).parent
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
rows = [
    dict(
        parser=name,
        f1=r["f1"],
        precision=r["precision"],
        recall=r["recall"],
        exact=r["exact"],
        invalid=r["invalid"],
        symbols=r["symbols_per_output"],
        seconds=r["seconds"],
    )
    for name, r in test_runs.items()
] + [
    dict(
        parser=name,
        f1=r["f1"],
        precision=r["precision"],
        recall=r["recall"],
        exact=r["exact"],
        invalid=0,
    )
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
)
best_floor = max(r["f1"] for r in report["baselines"].values())
unconstrained = test_runs[f"beam {PAPER_BEAM}, unconstrained"]
display(
    Markdown(
        f"On all {report['sentences']} test sentences the parser scores **{headline['f1']:.1f} F1** "
        f"({chosen.name}), "
        + (
            f"{headline['f1'] - best_floor:.1f} above the better floor ({best_floor:.1f}). "
            if headline["f1"] > best_floor
            else f"no better than the better floor ({best_floor:.1f}). "
        )
        + f"Without the constraint the paper's beam leaves {unconstrained['invalid']} of "
        f"{report['sentences']} outputs that are no tree ({unconstrained['f1']:.1f} F1 after "
        f"repair); its outputs average {unconstrained['symbols_per_output']:.0f} symbols against "
        f"{gold_symbols:.0f} for the gold trees."
    )
)

# %% [markdown]
# One test sentence of about twelve words, the gold tree against the parse:

# %%
shown = min(
    range(len(test_trees)), key=lambda i: (abs(len(test_trees[i].leaves()) - 12), i)
)
one = parsing.bracket_score(test_trees[shown], parsed[shown])
print("sentence:", " ".join(test_trees[shown].leaves()))
print("gold:    ", parsing.linearize(test_trees[shown]))
print("parse:   ", parsing.linearize(parsed[shown]))
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
# ## 7.6 A labelled variant: part-of-speech tags in the word slots
#
# The test of section 7.4 asks whether the parser reads its sentence. With the paper's
# linearization it has little reason to: every word slot is the same symbol `XX`, so no output
# symbol depends on which word fills the slot, and the loss can fall a long way on tree shapes
# alone. Writing each word's part-of-speech tag in its slot instead (`NN`, `VBZ`, ...: what the
# Treebank holds above every word) makes every slot a prediction about one source word, and so
# asks the decoder, at every slot, to find that word. This departs from the paper, whose slots are
# `XX` (as in Vinyals et al.'s setup it follows), so it is a variant beside the parser above, not a
# replacement: the same recipe, trees and epochs, trained beside the runs of section 7.4. The F1
# does not count part-of-speech tags (evalb's conventions), so both parsers are scored on the same
# brackets. Its search is chosen on the development trees in the same way, and the test files are
# parsed once with it.

# %%
tagged_data = parsing.ParsingData.from_splits(
    {"train": train_trees, "dev": dev_trees, "test": test_trees}, tags=True
)
tagged_model, tagged_vocabularies = parsing.load_parser(tagged_state, device)
assert tagged_vocabularies == tagged_data.vocabularies and tagged_vocabularies.tags
tagged_dev, tagged_chosen = parsing.choose_search(
    tagged_model, tagged_vocabularies, dev_trees
)
tagged_report = parsing.report_parser(
    tagged_model,
    tagged_data,
    split="test",
    decodings=(dict(beam_size=tagged_chosen.beam_size, constrained=True),),
    results_dir=results_folder,
    file_suffix="_tags",
)
tagged_headline = tagged_report["decodings"][tagged_chosen.name]
tagged_parsed = [
    Tree.fromstring(line)
    for line in (results_folder / tagged_report["files"]["predicted"])
    .read_text()
    .splitlines()
]
assert math.isclose(
    tagged_headline["f1"], f1_by_hand(test_trees, tagged_parsed), abs_tol=1e-9
)
versus = parsing.paired_f1_bootstrap(test_trees, parsed, tagged_parsed)
tagged_reads = parsing_curve.source_dependence(
    tagged_model, tagged_vocabularies, dev_trees
)
tagged_gain = tagged_reads["nll_other_sentence"] - tagged_reads["nll_own_sentence"]


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
                "loss the sentence is worth": f"{share_of_loss(r):.0f}%",
            }
            for name, dev, v, r in (
                ("XX (the paper's)", dev_runs, versus["first"], reads),
                (
                    "part-of-speech tags (variant)",
                    tagged_dev,
                    versus["second"],
                    tagged_reads,
                ),
            )
        ]
    ),
    **{"dev F1, greedy": "{:.1f}", f"dev F1, beam {PAPER_BEAM}": "{:.1f}"},
)
low, high = versus["difference_ci95"]
display(
    Markdown(
        f"On the {len(test_trees)} test sentences the variant scores **{versus['second']['f1']:.1f} "
        f"F1** ({tagged_chosen.name}, chosen on dev) against {versus['first']['f1']:.1f} for "
        f"`XX` slots: a difference of {versus['difference']:+.1f} F1, 95% paired bootstrap "
        f"interval [{low:+.1f}, {high:+.1f}] over sentences ("
        + (
            f"p = {versus['p_value']:.3f}"
            if versus["p_value"] > 0
            else f"no resample of {versus['samples']:,} reversed it"
        )
        + "), "
        + ("beyond" if low > 0 or high < 0 else "within")
        + " the resampling noise. Another sentence of the same length costs the variant "
        f"{share_of_loss(tagged_reads):.0f}% of its loss, against {share_of_loss(reads):.0f}% for "
        "the parser with `XX` slots: "
        + (
            "the tags make it read its sentence, and the brackets follow."
            if share_of_loss(tagged_reads) > 2 * share_of_loss(reads)
            and versus["difference"] > 0
            else "the tags alone do not make it read its sentence much more."
        )
    )
)

# %% [markdown]
# ## 7.7 Beside Table 4

# %%
paper_f1 = table4_row("Transformer (4 layers)", WSJ_ONLY).f1
ours_label = f"this chapter ({settings.name} profile, {len(train_trees):,} trees)"
table4 = pd.DataFrame(
    [dict(parser=r.parser, training=r.training, f1=r.f1) for r in TABLE4]
    + [
        dict(
            parser=ours_label,
            training="Treebank sample" if treebank_dir is None else "WSJ",
            f1=round(headline["f1"], 1),
        ),
        dict(
            parser=ours_label + ", tags in the slots",
            training="Treebank sample" if treebank_dir is None else "WSJ",
            f1=round(tagged_headline["f1"], 1),
        ),
    ]
)
viz.show_table(table4, f1="{:.1f}")
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
display(
    Markdown(
        f"Our parser reaches **{headline['f1']:.1f} F1** on {report['sentences']} test sentences "
        f"against the paper's {paper_f1} on WSJ section 23, with "
        f"{PAPER_TRAINING_SENTENCES / len(train_trees):.0f} times fewer training trees and a model of "
        f"{parameters / 1e6:.1f}M parameters trained {full.epochs:.0f} epochs. "
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
        + f"The labelled variant with tags in the slots reaches {tagged_headline['f1']:.1f} F1 on the "
        "same sentences (section 7.6). "
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
# `results/<profile>/constituency_parsing.json` holds the test F1 of every decoding (read by the
# introduction's reproduction summary), the floors, the learning curve's points, the development
# scores the search was chosen by, the recipe, the data sizes and the labelled variant's numbers;
# `parsing_test_gold.txt`, `parsing_test_predicted.txt` and `parsing_test_predicted_tags.txt` (the
# variant's) beside it hold the gold and parsed test trees one per line, for evalb.

# %%
metrics = {
    "f1": round(headline["f1"], 2),
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
    "learning_curve": {
        f"{share:g}": run.to_dict() for share, run in sorted(runs.items())
    },
    "source_dependence": reads,
    "variant_tags": {
        "what": "part-of-speech tags in the word slots instead of XX (a departure from the paper)",
        "f1": round(tagged_headline["f1"], 2),
        "precision": round(tagged_headline["precision"], 2),
        "recall": round(tagged_headline["recall"], 2),
        "invalid_trees": tagged_headline["invalid"],
        "exact_trees": tagged_headline["exact"],
        "decoding_chosen_on_dev": tagged_chosen.name,
        "dev": {
            name: {"f1": round(r.score.f1, 2), "seconds": round(r.seconds, 1)}
            for name, r in tagged_dev.items()
        },
        "test": tagged_report["decodings"],
        "learning_curve": tagged_run.to_dict(),
        "source_dependence": tagged_reads,
        "against_xx": versus,
        "files": tagged_report["files"],
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
    profile=settings.name,
    config=model.config,
    device=device,
    wall_time_s=round(time.perf_counter() - chapter_start, 1),
)
print(
    f"wrote {path.parent.name}/{path.name} and the test trees under the results folder "
    f"(chapter: {time.perf_counter() - chapter_start:.0f} s, of which the learning curve "
    f"{curve_seconds:.0f} s)"
)

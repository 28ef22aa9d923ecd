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
# brackets. Two ways of writing it appear in this chapter, and each keeps one name throughout:
#
# - **the tags parser** writes each word's part-of-speech tag in the word's slot, as the authors'
#   released code does. It is the chapter's parser, the one set beside Table 4;
# - **the XX variant** writes one placeholder, `XX`, in every slot, as Vinyals et al. did. It is
#   trained beside the tags parser as a comparison.
#
# This chapter
#
# 1. turns trees into sequences and back (`annotated_transformer.chapters.constituency_parsing`), and checks
#    that nothing is lost on every tree of the data;
# 2. scores parses as the parsing literature does, with labelled bracket F1 in evalb's conventions;
# 3. trains the paper's model, at the size the profile affords, as the tags parser on all the
#    training files, with the XX variant beside it (two processes, one per core on a CPU), and
#    draws their F1 on the development trees epoch by epoch;
# 4. sets beside this live run the committed *extended run*: the tags parser trained on a quarter,
#    a half and all of the training files until its development F1 stops rising, which gives F1
#    against the number of training trees, and, once it has stopped, its test F1 at the model and
#    search chosen on the development trees;
# 5. chooses the search on the development trees (greedy or the paper's beam 21, length penalty
#    $\alpha = 0.3$, outputs up to the input length plus 300, constrained to valid trees), parses
#    all the test sentences once, and compares the tags parser with two simple floors, with the
#    XX variant, and with Table 4;
# 6. ends on what this run shows, in numbers with their resampling intervals.
#
# The paper had about forty thousand training trees; by default this chapter runs on the Penn
# Treebank sample that NLTK distributes, about a tenth of that. A `treebank_dir` parameter points it
# at the full WSJ treebank for readers who have the LDC release.

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
import collections
import math
import statistics
import time
from pathlib import Path

from IPython.display import Markdown, display
from nltk import Tree

from annotated_transformer import viz
from annotated_transformer.book.parameters import chapter_profile
from annotated_transformer.chapters import constituency_parsing as parsing
from annotated_transformer.chapters.constituency_parsing import curve as parsing_curve
from annotated_transformer.chapters.constituency_parsing import record, report, verdicts
from annotated_transformer.chapters.constituency_parsing import sentences as describe
from annotated_transformer.chapters.constituency_parsing import sizes as chapter_sizes
from annotated_transformer.data import treebank_zip_path
from annotated_transformer.evaluation import results
from annotated_transformer.evaluation.paper import TABLE4, WSJ_ONLY, table4_row
from annotated_transformer.model.config import preset
from annotated_transformer.model.transformer import count_parameters
from annotated_transformer.runtime.devices import resolve_device
from annotated_transformer.training.fit import build_model

# %% tags=["parameters"]
# auto: the machine's (gpu where CUDA is visible, else cpu); or smoke | cpu | gpu | paper
profile_name = "auto"
device = "auto"  # "auto" picks CUDA when a GPU is visible
max_steps = None  # unused: the parser trains whole epochs
data_dir = None  # None: $AT_DATA_DIR, then a download (of NLTK's Penn Treebank sample)
parsing_epochs = None  # None: the profile's epochs for the parser
# a folder of .mrg files (e.g. the LDC release's parsed/mrg/wsj) or a treebank.zip
treebank_dir = None  # None: the sample

# %% [markdown]
# The profile says how large the parser is, how long it trains and on which shares of the training
# files. Section 6.3's own settings are kept beside it: about forty thousand training trees, a
# vocabulary of 16,000 word pieces, and the search (beam 21, $\alpha = 0.3$, outputs up to the
# input length plus 300), which the package holds as `parsing.PAPER_BEAM` and its neighbours.

# %%
profile = chapter_profile(profile_name, "07", max_steps=max_steps)
profile_name = profile.name  # the machine's profile where it was auto
sizes = chapter_sizes.of(profile.name)
device = resolve_device(device)
chapter_start = time.perf_counter()
# what the chapter computes, kept as it goes for its results record (`record.write`, at the end)
this_run = record.ThisRun(record.treebank_name(treebank_dir))
PAPER_TRAINING_SENTENCES = verdicts.PAPER_TRAINING_TREES  # "about 40K" of the WSJ
PAPER_VOCABULARY = 16_000  # word pieces, WSJ-only setting
PAPER_BEAM = parsing.PAPER_BEAM
assert (PAPER_BEAM, parsing.PAPER_ALPHA, parsing.PAPER_EXTRA_LENGTH) == (21, 0.3, 300)
epochs = int(parsing_epochs or sizes.recipe["epochs"])
display(Markdown(describe.describe_plan(profile.name, epochs, device.type, sizes.shares)))
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
    source = Path(treebank_dir).expanduser()
else:
    source = treebank_zip_path(data_dir)  # NLTK's Penn Treebank sample
files = parsing.read_treebank(source)
split_files = parsing.split_by_file(files)


def cleaned(file_ids):
    kept = [parsing.clean_tree(tree) for fid in file_ids for tree in files[fid]]
    return [tree for tree in kept if tree is not None]


splits = {name: cleaned(ids) for name, ids in split_files.items()}
viz.show_table(report.split_table(splits, split_files))
assert len(splits["train"]) > len(splits["test"]) > 0
this_run.keep(split_files=split_files)

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
print(report.wrapped("source:      ", " ".join(example.leaves())))
print(report.wrapped("tags parser: ", parsing.linearize(example, tags=True)))
print(report.wrapped("XX variant:  ", parsing.linearize(example)))


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

# %% [markdown]
# Going back needs the words: `delinearize` reads the brackets and puts the sentence's words into
# the slots in order, each under the symbol its slot held (a tag, or `XX`).

# %%
viz.show_source(parsing.delinearize)

# %% [markdown]
# On the Treebank's own trees the trip there and back loses nothing: a line with tags in the slots
# gives the cleaned tree itself, and an `XX` line gives it with `XX` for every tag. The cell checks
# both on every tree, and measures how much longer a target is than its sentence.

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
tokens = [len(parsing.linearize(t, tags=True).split()) for t in all_trees]
words = [len(t.leaves()) for t in all_trees]
longest = max(range(len(all_trees)), key=tokens.__getitem__)
median_ratio = statistics.median(n / w for n, w in zip(tokens, words))
display(
    Markdown(
        describe.say(
            "round_trip",
            trees=len(all_trees),
            tokens_per_word=median_ratio,
            longest_tokens=tokens[longest],
            longest_words=words[longest],
        )
    )
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
    print(report.wrapped("line:    ", broken))
    print(report.wrapped("tree:    ", repaired.tree.pformat(margin=10_000)))
    print(report.wrapped("repairs: ", "; ".join(repaired.repairs)) + "\n")
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


# %% [markdown]
# The corpus F1 sums the matched, gold and parsed brackets over all sentences before it divides
# (evalb's "All" line), so a long sentence weighs more than a short one. Punctuation is read from
# the gold tree's tags and deleted from both trees:


# %%
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
viz.show_table(report.score_table(score))

# %% [markdown]
# `tests/chapters/constituency_parsing/test_parser.py` checks the package's scorer on more hand-computed cases (a missing
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
# `tags: True` for the tags in the slots. The profile may score fewer development and test
# sentences than there are (the `smoke` profile does, to run in seconds).

# %%
recipe = parsing_curve.ParserRecipe.from_dict({**sizes.recipe, "epochs": epochs})
train_trees, dev_trees = splits["train"], splits["dev"][: sizes.dev_trees]
test_trees = splits["test"][: sizes.test_sentences]
train_by_file = [cleaned([fid]) for fid in split_files["train"]]
assert recipe.tags, "the profile's chapter 07 recipe should have tags: True"
data = parsing.ParsingData.from_splits(
    {"train": train_trees, "dev": dev_trees, "test": test_trees}, tags=recipe.tags
)
config = recipe.config(data)
vocabularies = data.vocabularies
assert vocabularies.tags
this_run.keep(
    recipe=recipe,
    train_trees=len(train_trees),
    dev_trees=len(dev_trees),
    vocabularies=vocabularies,
)

# %% [markdown]
# The target vocabulary is read from the training trees, so a label or tag that training never uses
# cannot be written: a development or test tree that holds one loses that symbol. The cell counts
# such trees, and sets the model beside the paper's:


# %%
def writable(tree) -> bool:
    symbols = parsing.linearize(tree, tags=True).split()
    return vocabularies.target.decode(vocabularies.target.encode(symbols)) == symbols


assert all(writable(t) for t in train_trees)
unwritable = {
    name: sum(not writable(t) for t in splits[name]) for name in ("dev", "test")
}
viz.show_table(
    report.model_table(
        config,
        preset("parsing"),
        vocabulary=f"{len(vocabularies.source):,} words / {len(vocabularies.target)} symbols",
        paper_vocabulary=f"{PAPER_VOCABULARY:,} word pieces",
        trees=f"{len(train_trees):,}",
        paper_trees=f"{PAPER_TRAINING_SENTENCES:,}",
        epochs=recipe.epochs,
    )
)
parameters = count_parameters(build_model(config, vocabularies.sizes, seed=recipe.seed))
lengths = report.mean_lengths(train_trees)
display(Markdown(describe.describe_model(parameters, unwritable, *lengths)))
this_run.keep(parameters=parameters)

# %% [markdown]
# ## 7.4 What it takes to parse: F1 against epochs and against training trees
#
# With a tenth of the paper's trees no single number says much, so the chapter draws curves. The
# live run trains the tags parser on the shares of the training files that the profile names (all
# of them under `cpu`; a quarter, a half and all under `gpu`; whole files, so no article is split),
# and the XX variant on all the files beside it, with the same recipe. Each run keeps a snapshot
# every few epochs and parses the development sentences with every snapshot (greedy, constrained
# to valid trees, as below); the model each run is judged by is the average of its last snapshots.
# On a CPU the runs train in separate processes of one thread each, one per core; on a GPU four
# such processes share the device, as chapter 06's rows do.

# %%
# the profile's: 2 on the cpu profile's two cores, 4 sharing a GPU
workers = sizes.workers
live = parsing_curve.chapter_runs(
    train_by_file, dev_trees, recipe, sizes.shares, workers=workers, device=str(device)
)
runs, xx_run = live.runs, live.variant
model, model_vocabularies = parsing.load_parser(live.states["tags"], device)
assert model_vocabularies == vocabularies
display(
    Markdown(
        describe.describe_training(list(runs.values()), xx_run, live.seconds, workers)
    )
)
this_run.keep(live=live, workers=workers, config=model.config)

# %% [markdown]
# ### The extended run: the tags parser trained until dev F1 stops rising
#
# The live curves stop where the chapter's minutes do. The committed extended run trains the tags
# parser with the chapter's recipe (d_model 128, 1,024-token batches, warm-up 800; the command's
# defaults) on a quarter, a half and all of the training files, an epoch at a time,
# and parses the development sentences after every epoch (greedy, constrained). Each share stops
# once its dev F1 has not risen for a fifth of its epochs. Its shares side by side give F1 against
# the number of training trees:
#
# ```bash
# python -m annotated_transformer parser-curve --tags --shares 1 0.5 0.25 --min-epochs 60 \
#     --out runs/parser-extended --export results/parser_extended_cpu/curves.json
# ```
#
# The run continues from its folder when started again; this page reads its committed curves.
# Training never reads the test files. Once a share's job has stopped, one more command trains
# nothing and scores it on the test sentences once, as section 7.5 scores the live run: on the
# development trees it chooses between the model of the best epoch and the average of the
# snapshots up to it, and between greedy decoding and beam 21, then parses the test sentences
# with the choice and records the score with its interval in
# `results/parser_extended_cpu/test.json`; a share already there is never scored again:
#
# ```bash
# python -m annotated_transformer parser-curve --out runs/parser-extended --score-test
# ```
#
# The cell below reads both files when they are there, and draws the two runs side by side: the
# live run and the extended run by epoch on top, best dev F1 against training trees (with the
# extended run's test F1 once it is scored) and the live run's dev loss below. The dashed lines
# are the two floors, on the development trees: the right-branching tree with the commonest labels
# of the training trees, and the flat tree that puts every word straight under the root.

# %%
extended, extended_test = record.committed_extended()  # test: None until it is scored
this_run.keep(extended=extended, extended_test=extended_test)
dev_floors = {
    name: parsing.corpus_score(dev_trees, trees).f1
    for name, trees in parsing.baselines(dev_trees, train_trees).items()
}
live_f1, live_loss = report.live_points(runs, xx_run)
viz.show(
    report.curve_charts(
        live_f1,
        live_loss,
        report.extended_points(extended) if extended else None,
        report.by_trees(runs, extended, recipe.d_model, extended_test),
        dev_floors,
    )
)

# %% [markdown]
# The live runs in numbers (the development loss is teacher-forced, per target symbol), then the
# extended run's, with its test score beside the dev curve once it is scored:

# %%
viz.show_table(report.live_table(runs, xx_run))
if extended:
    viz.show_table(report.extended_table(extended, extended_test))
    paper_f1 = table4_row("Transformer (4 layers)", WSJ_ONLY).f1
    display(
        Markdown(describe.describe_extended(extended, paper_f1, PAPER_TRAINING_SENTENCES))
    )
    display(
        Markdown(
            describe.describe_extended_test(
                extended_test,
                paper_f1,
                PAPER_TRAINING_SENTENCES,
                [job["share"] for job in extended["jobs"]],
            )
        )
    )
else:
    display(Markdown("No extended run is committed: run the command above to make one."))

# %% [markdown]
# The live table sets the development loss beside F1: the two need not move together. Most of a
# linearized tree can be predicted without the sentence (brackets must balance, a verb phrase
# tends to follow a noun phrase, trees of a given length look alike), and a low loss may come from
# that alone. The direct test: the development loss of the tags parser's averaged model with each
# tree's own sentence, and with the sentence of another tree of the same length, whose word slots
# fit just as well.

# %%
reads = parsing_curve.source_dependence(model, vocabularies, dev_trees)
display(Markdown(describe.describe_source_dependence(reads)))
this_run.keep(reads=reads)

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
# beam, both constrained, with the tags parser's average of its last snapshots. The sentence under
# the table says what each search writes, beside the gold trees.

# %%
dev_runs, chosen = parsing.choose_search(model, vocabularies, dev_trees)
viz.show_table(report.search_table(dev_runs))
dev_gold = verdicts.gold_profile(
    dev_trees,
    [len(parsing.linearize(t).split()) for t in dev_trees],
    chosen.score.gold,
)
profiles = [verdicts.search_profile(r) for r in dev_runs.values()]
display(Markdown(describe.describe_searches(profiles, dev_gold)))

# %% [markdown]
# The test files are parsed once, with the chosen search first and the others beside it: the
# other beam, and the paper's beam without the constraint (how many outputs are no tree without
# it). The cell checks the package's F1 against the hand-written one of section 7.2, and evalb's
# two summaries (all sentences, and those of at most 40 words).

# %%
results_folder = results.results_path(record.RESULTS_NAME, profile.name).parent
test_report = parsing.report_parser(
    model,
    data,
    split="test",
    decodings=report.decodings_on_test(chosen),
    results_dir=results_folder,
)
tags = report.Evaluated(
    dev_runs, chosen, test_report, report.read_parsed(results_folder, test_report)
)
headline, parsed = tags.headline, tags.parsed
assert len(parsed) == len(test_trees)
assert math.isclose(headline["f1"], f1_by_hand(test_trees, parsed), abs_tol=1e-9)
assert all(
    r["invalid"] == 0 for r in test_report["decodings"].values() if r["constrained"]
)
evalb = parsing.corpus_scores(test_trees, parsed)
assert math.isclose(evalb["all"].f1, headline["f1"])
assert math.isclose(evalb["<=40"].f1, headline["f1_le40"])
this_run.keep(tags=tags)

# %% [markdown]
# The floors are parsed on the same sentences, and the tags parser is set against each with a
# paired bootstrap (`parsing.paired_f1_bootstrap`): the test sentences are resampled with
# replacement two thousand times, both parsers are scored on each resample, and the 95% interval
# of the margin says whether it could be an accident of which sentences the test files hold. A
# margin whose interval includes zero is not called a gain.

# %%
floor_trees = parsing.baselines(test_trees, train_trees)
over_floors = {
    name: parsing.paired_f1_bootstrap(test_trees, trees, parsed)
    for name, trees in floor_trees.items()
}
right_floor = record.floor_named(floor_trees, "right-branching")
flat_floor = record.floor_named(floor_trees, "flat")
better_floor = max(floor_trees, key=lambda name: over_floors[name]["first"]["f1"])
floor_words = {right_floor: "the right-branching floor", flat_floor: "the flat floor"}
viz.show_table(report.scores_table(test_report["decodings"], test_report["baselines"]))
test_symbols, _ = report.mean_lengths(test_trees)
display(
    Markdown(
        describe.describe_test(
            headline,
            chosen.name,
            len(test_trees),
            over_floors[better_floor],
            f"the better of the two floors, {floor_words[better_floor]}",
            test_report["decodings"][f"beam {PAPER_BEAM}, unconstrained"],
            test_symbols,
        )
    )
)
this_run.keep(floors=over_floors)

# %% [markdown]
# One test sentence of about twelve words, the gold tree against the parse (whose tags are the
# parser's own; they are not scored):

# %%
shown = min(
    range(len(test_trees)), key=lambda i: (abs(len(test_trees[i].leaves()) - 12), i)
)
one = parsing.bracket_score(test_trees[shown], parsed[shown])
print(report.wrapped("sentence: ", " ".join(test_trees[shown].leaves())))
print(report.wrapped("gold:     ", parsing.linearize(test_trees[shown], tags=True)))
print(report.wrapped("parse:    ", parsing.linearize(parsed[shown], tags=True)))
print(f"F1 {one.f1:.1f}: {one.matched} of {one.gold} gold brackets found")

# %% [markdown]
# F1 by sentence length, the parse against the floors (longer sentences have more brackets to
# place):

# %%
viz.show(report.length_chart({chosen.name: headline, **test_report["baselines"]}))

# %% [markdown]
# ## 7.6 The XX variant: the linearization of Vinyals et al.
#
# Vinyals et al. wrote one placeholder, `XX`, in every word slot instead of the part-of-speech tag.
# The test of section 7.4 asks whether a parser reads its sentence, and with `XX` slots it has less
# reason to: every slot is the same symbol, so no output symbol depends on which word fills the
# slot, and the loss can fall a long way on tree shapes alone. With the tags (`NN`, `VBZ`, ...: what
# the Treebank holds above every word) every slot is a prediction about one source word, and the
# decoder is asked, at every slot, to find that word. The variant was trained with the same recipe,
# trees and epochs as the tags parser, beside it in section 7.4. The F1 does not count
# part-of-speech tags (evalb's conventions, with punctuation deleted by the gold tree's tags, since
# the variant writes none), so both are scored on the same brackets. Its search is chosen on the
# development trees in the same way, and the test files are parsed once with it.

# %%
xx_data = parsing.ParsingData.from_splits(
    {"train": train_trees, "dev": dev_trees, "test": test_trees}, tags=False
)
xx_model, xx_vocabularies = parsing.load_parser(live.states["xx"], device)
assert xx_vocabularies == xx_data.vocabularies and not xx_vocabularies.tags
xx = report.evaluate_chosen(
    xx_model, xx_vocabularies, xx_data, dev_trees, results_folder, file_suffix="_xx"
)
assert math.isclose(xx.headline["f1"], f1_by_hand(test_trees, xx.parsed), abs_tol=1e-9)
assert math.isclose(
    parsing.corpus_scores(test_trees, xx.parsed)["<=40"].f1, xx.headline["f1_le40"]
)
xx_reads = parsing_curve.source_dependence(xx_model, xx_vocabularies, dev_trees)
this_run.keep(xx=xx, xx_reads=xx_reads)

# %% [markdown]
# The two parsers on the same test sentences, with the same paired bootstrap as against the
# floors (first the tags parser, second the variant: the difference is XX minus tags), and how
# much of each one's loss its sentence is worth:

# %%
versus = parsing.paired_f1_bootstrap(test_trees, parsed, xx.parsed)
xx_over_floor = parsing.paired_f1_bootstrap(
    test_trees, floor_trees[right_floor], xx.parsed
)
viz.show_table(
    report.variant_table(
        [
            ("tags (the authors' code)", dev_runs, versus["first"], headline, reads),
            ("XX (Vinyals et al.)", xx.dev_runs, versus["second"], xx.headline, xx_reads),
        ]
    )
)
display(Markdown(describe.describe_variant(versus, xx.chosen.name, reads, xx_reads)))
this_run.keep(versus=versus, xx_over_floor=xx_over_floor)

# %% [markdown]
# ## 7.7 Beside Table 4
#
# Table 4's WSJ-only parsers, the paper's among them, with this run's two parsers. The paper's rows
# are scored on WSJ section 23; ours on the test files of the treebank this run reads.

# %%
paper_f1 = table4_row("Transformer (4 layers)", WSJ_ONLY).f1
training = "Treebank sample" if treebank_dir is None else "WSJ"
ours = [
    (f"tags parser ({profile.name} profile, {len(train_trees):,} trees)", headline),
    (f"XX variant ({profile.name} profile)", xx.headline),
]
table4 = report.table4_frame(TABLE4, [(label, training, h) for label, h in ours])
viz.show(report.table4_chart(table4, [WSJ_ONLY, training], [label for label, _ in ours]))
assert headline["f1"] < paper_f1 or treebank_dir is not None  # a tenth of the data

# %% [markdown]
# Table 4 in full, with the semi-supervised rows, and this run's two parsers under it (F1 on the
# test sentences of at most 40 words beside F1 on all of them, evalb's two summaries):

# %%
viz.show_table(table4)

# %% tags=["remove-cell"]
path = record.write(
    record.build(this_run),
    profile.name,
    time.perf_counter() - chapter_start,
    device=device,
    config=this_run.config,
)

# %% [markdown]
# ## What this run shows
#
# The tags parser's test F1 with its interval, against the two floors, the paper and the XX
# variant, and what the extended run says about more trees and more training. "Beyond the
# resampling noise" means that the 95% paired bootstrap interval of the margin excludes zero;
# "within" means that the test sentences cannot tell the two apart.

# %%
display(Markdown(describe.closing(record.read(profile.name))))

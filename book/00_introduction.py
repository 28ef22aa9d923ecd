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
# # The Annotated Transformer, reproduced
#
# This book rebuilds "Attention Is All You Need" {cite:p}`vaswani2017attention` one section at a
# time and checks every claim it can afford to check by running code. It follows the idea of the
# Annotated Transformer {cite:p}`rush2018annotated`, with two changes: the code that does the work
# lives in a tested Python package, `annotated_transformer`, which the chapters import; and every
# chapter is executed before it is published, so what you read is what ran.
#
# This page says how to read and run the book, retells the paper in one page, and ends with the
# reproduction summary: the paper's numbers beside ours, read from the results files the chapters
# write.

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
import pandas as pd
from IPython.display import Markdown, display

from annotated_transformer import viz
from annotated_transformer.book import summary
from annotated_transformer.book.parameters import chapter_profile
from annotated_transformer.chapters.introduction import figures
from annotated_transformer.evaluation import paper, results
from annotated_transformer.profiles import PROFILES
from annotated_transformer.runtime.devices import resolve_device

# %% tags=["parameters"]
# smoke | cpu | gpu | paper: the scale of this run (see the table below)
# auto: the machine's (gpu where CUDA is visible, else cpu); or smoke | cpu | gpu | paper
profile_name = "auto"
device = "auto"  # "auto" picks CUDA when a GPU is visible
max_steps = None  # None keeps the profile's default
data_dir = None  # None: $AT_DATA_DIR, then a download

# %% tags=["hide-input"]
profile = chapter_profile(profile_name, "00", max_steps=max_steps)
profile_name = profile.name  # the machine's profile where it was auto
print(f"profile {profile.name!r} on {resolve_device(device)}: {profile.description}")

# %% [markdown]
# ## How to read this book
#
# There is one chapter per section of the paper. Each one follows the same rhythm: the idea in a
# few sentences of our own; the idea as a handful of lines of plain PyTorch; the same thing taken
# from the package (`from annotated_transformer import ...`); an assertion that the two agree; and
# a picture or a table. Chapters 01 to 03 take the model apart (attention, the layers, why
# self-attention); chapters 04 to 08 train it and measure what the paper measured (training,
# translation quality, the model variations of Table 3, constituency parsing, and the attention
# pictures of the appendix).
#
# Every chapter starts with the same cells: one that installs the package if it is missing (for
# Colab), the imports, and a cell tagged `parameters` that holds the run's knobs: `profile_name`,
# `device`, and the few settings a chapter lets you override. The profile decides the scale:
#
# | profile | where | what it runs |
# |---|---|---|
# | `smoke` | CI and tests | every chapter end to end on tiny settings, minutes in all |
# | `cpu` (default) | a laptop | the 15-minute Multi30k English-to-German recipe, Table 3 rows at small scale |
# | `gpu` | one GPU or Colab | the Multi30k recipe of `results/gpu/`, Table 3 rows at the scale one GPU affords |
# | `paper` | eight GPUs | WMT14 English-German, base (and `paper-big`), with the paper's schedule |
#
# One profile is one record of the package (`annotated_transformer.profiles`): chapter 04 trains
# exactly what `python -m annotated_transformer train --profile <name>` trains, so the numbers in
# the README and in this book come from the same recipe. Variants such as `gpu-iwslt14` and
# `paper-big` are profiles of their own, with their own results folder.
# The knobs each profile sets, as the package defines them:

# %%
viz.show_table(figures.profiles_table(PROFILES.values()))

# %% [markdown]
# ## How to run it
#
# From a clone, the README's three commands set everything up in `./.venv` (install the `torch`
# build for your hardware first to keep it), then run the book, the tests, or JupyterLab:
#
# ```bash
# # execute every chapter with the cpu profile and build the site
# bash scripts/setup.sh && \
#     .venv/bin/python -m annotated_transformer book --profile cpu
#
# # unit tests, chapter smoke runs, the site build and the browser check
# bash scripts/setup.sh && .venv/bin/python -m pytest
#
# # open the book in JupyterLab: either file of a chapter's pair opens as the notebook
# bash scripts/setup.sh && .venv/bin/jupyter lab book/
# ```
#
# The book command executes each chapter with [papermill](https://papermill.readthedocs.io),
# injecting the profile into its `parameters` cell, saves the executed notebooks under
# `_build/executed/<profile>/`, records per-chapter wall times in `results/<profile>/book_run.json`,
# and builds this site into `_build/html` (open `_build/html/index.html`). `--chapters 01 02` runs a
# few chapters, `--no-build` skips the site, `--device cuda` picks the device, and
# `--param max_steps=200` overrides a knob in every chapter.
#
# One chapter at a time works too, opened in JupyterLab (`.venv/bin/jupyter lab book/`, which
# the set-up installs; the `.py` and `.ipynb` files are a [jupytext](https://jupytext.readthedocs.io)
# pair and either opens as the notebook) and run cell by cell, or with papermill directly:
#
# ```bash
# papermill book/04_training.ipynb 04_training.out.ipynb -k python3 -p profile_name smoke
# ```
#
# A chapter run by hand is a run of its own. Its `profile_name = "auto"` is the machine's
# profile (`gpu` where CUDA is visible, else `cpu`), and its first output says which, how long the
# chapter took in the book's last recorded run, and how to choose `smoke` instead. It writes its
# results to `runs/by-hand/results/<profile>/` and chapter 04's model to
# `runs/by-hand/book-<profile>/`, so what the book's runner published stays as it is. Chapters 05
# and 08 read chapter 04's model: yours by hand if it is there, else the book's, else they stop
# in one line that says how to get one.
#
# **Colab.** The launch button at the top of each page (the rocket) opens the chapter in Colab;
# its first cell installs the package with what the chapters import (the `notebook` extra). On a
# GPU runtime `auto` picks the `gpu` profile.
#
# **A GPU machine.** `python -m annotated_transformer book --profile gpu` runs the whole book on
# one GPU; its long trainings resume from their last checkpoint when restarted. The `paper`
# profile trains on eight GPUs with `torchrun`, as chapter 04 explains. CI cannot rerun these
# two profiles, so their results are committed (`results/gpu/` holds the GPU runs so far); the
# summary below shows them beside the profile being executed, never mixed with it.

# %% [markdown]
# ## The paper in one page
#
# **The problem.** In 2017 the best translation systems read a sentence one word at a time with
# recurrent networks {cite:p}`hochreiter1997lstm,wu2016gnmt`, using attention
# {cite:p}`bahdanau2015neural` to look back at the source. Recurrence is inherently serial: the
# state at position $t$ needs the state at $t-1$, so a long sentence cannot be processed in
# parallel on a GPU. Convolutional models {cite:p}`kalchbrenner2016bytenet,gehring2017convs2s`
# run in parallel, but two distant words interact only after many stacked layers.
#
# **The idea.** Drop recurrence and convolution entirely and let every position look at every
# other position directly, through attention. A query vector is compared with a key vector per
# position; the softmax of the scaled scores weights the value vectors:
# $\mathrm{Attention}(Q, K, V) = \mathrm{softmax}(QK^\top / \sqrt{d_k})\,V$. Dividing by
# $\sqrt{d_k}$ keeps the scores from growing with the vector size and saturating the softmax
# (chapter 01 measures this). Eight smaller attention "heads" run side by side, each free to
# look for a different relation, for about the cost of one full-width head.
#
# **The model.** An encoder of six identical layers, each a self-attention sub-layer and a small
# two-layer feed-forward network applied at every position, each sub-layer wrapped in a residual
# connection {cite:p}`he2016residual` and layer normalisation {cite:p}`ba2016layernorm`. A decoder
# of six layers adds attention over the encoder's output and masks its own self-attention so that
# a position cannot see the words after it. Since attention ignores order, sinusoids of
# geometrically spaced wavelengths are added to the embeddings to tell positions apart
# (chapter 02).
#
# **Why it works.** A self-attention layer connects any two positions in one step, and none of
# its work waits for the previous position: a recurrent layer needs $n$ steps in a row. In
# arithmetic it is not always cheaper. Its mixing step alone ($4n^2d$ FLOPs) undercuts a plain
# recurrent layer ($4nd^2$) only for sentences shorter than the model width; with its four
# projections counted, a full attention sub-layer costs more than a plain recurrent layer at
# every length, and less than an LSTM layer only while $n < 2d$ (chapter 03 counts both, and
# measures where real sentences fall). The gain is parallel time, not fewer operations.
#
# **Training.** Sentence pairs batched by length to about 25,000 source and 25,000 target
# tokens, a shared byte-pair vocabulary {cite:p}`sennrich2016bpe`, Adam
# {cite:p}`kingma2015adam` with a learning rate that warms up linearly for 4,000 steps and then
# decays with the inverse square root of the step, dropout {cite:p}`srivastava2014dropout` and
# label smoothing {cite:p}`szegedy2016labelsmoothing` (chapter 04). The base model trained for
# 12 hours on eight P100 GPUs.
#
# **Results.** New best BLEU scores on WMT 2014 English-German (28.4) and English-French (41.8)
# (chapter 05), a study of which design choices matter (Table 3, chapter 06), a constituency
# parser competitive with specialised ones (chapter 07), and attention heads whose patterns
# follow the syntax of the sentence (chapter 08).
#
# The chart below is Table 2 of the paper as a picture: translation quality against the compute
# spent on training, for English-German. The base Transformer sits to the left of every other
# system and above every earlier single model: the cheapest to train and better than each of
# them. The big Transformer sits above every system, ensembles included; its training cost is
# that of the earlier single models (more than ConvS2S or MoE, the same as GNMT + RL) and less
# than a third of any ensemble's.

# %%
table2 = pd.DataFrame(paper.TABLE2).dropna(subset=["bleu_en_de", "flops_en_de"])
table2["system"] = table2["model"] + table2["ensemble"].map(
    {True: " ensemble", False: ""}
)
is_transformer = table2["model"].str.startswith("Transformer")
table2["family"] = is_transformer.map({True: "Transformer", False: "earlier systems"})
# The two ensembles sit close together: their labels go left and below.
viz.show(
    figures.cost_quality_chart(
        table2, label_sides={"ConvS2S ensemble": "left", "GNMT + RL ensemble": "below"}
    )
)

# %% tags=["remove-cell"]
# The sentences above, checked on the paper's own numbers.
systems = table2.set_index("system")
base, big = systems.loc["Transformer (base)"], systems.loc["Transformer (big)"]
earlier = table2[~is_transformer]
singles, ensembles = earlier[~earlier["ensemble"]], earlier[earlier["ensemble"]]
assert base["flops_en_de"] < earlier["flops_en_de"].min()
assert base["bleu_en_de"] > singles["bleu_en_de"].max()
assert big["bleu_en_de"] > earlier["bleu_en_de"].max()
for name in ("ConvS2S", "MoE"):
    assert big["flops_en_de"] > systems.loc[name, "flops_en_de"]
assert big["flops_en_de"] == systems.loc["GNMT + RL", "flops_en_de"]
assert big["flops_en_de"] < ensembles["flops_en_de"].min() / 3

# %% [markdown]
# ## Reproduction summary
#
# The numbers of the paper that the book measures, one table per task. Each table has a row for
# the paper, quoted; a row for the profile being executed (e.g. "cpu run"), with what this
# profile's runs wrote to `results/<profile>/`; and rows for the committed results of the large
# runs ("gpu run", "paper run"), read from the profile's committed book run
# (`results/book_gpu/`) where its chapters have run, else from its other committed runs
# (`results/gpu/`). A dash means that no run of that profile has written the file yet. The column "measured on" names, row by row, the data, the size of the model and, for
# speed, the hardware behind the row's numbers, read from the same results files. The paper
# measured its base model on WMT14; the `smoke`, `cpu` and `gpu` profiles train much smaller
# models on Multi30k (the column gives their sizes), so their rows test the pipeline and do not
# compete with the paper's. The last table says which dataset, device and commit produced each
# results file.

# %%
panels = summary.summary_panels(profile_name)
for title, table in panels:
    display(Markdown(f"**{title}**"))
    viz.show_table(table)

# %% tags=["remove-cell"]
# Every cell comes from a results file or says that the file is missing: no number is
# typed in. Every row with a number names what it was measured on.
claims_table = summary.summary_table(profile_name)
shown = [profile_name] + [p for p in summary.COMMITTED_PROFILES if p != profile_name]
for claim in summary.CLAIMS:
    row = claims_table[claims_table["claim"] == claim.label].iloc[0]
    for prof in shown:
        missing = not summary.files_of(claim, prof, executing=profile_name)
        assert (row[summary.profile_column(prof)] == summary.NOT_RUN) == missing, (
            claim.label,
            prof,
        )
for title, table in panels:
    numbers = table.drop(columns=["", "measured on"]) != summary.SHOWN_NOT_RUN
    assert (table["measured on"][numbers.any(axis=1)] != summary.SHOWN_NOT_RUN).all(), (
        title
    )

# %%
sources = summary.provenance_table(shown)
if sources.empty:
    print(
        f"No results files yet for the profiles {', '.join(shown)}: run "
        f"`python -m annotated_transformer book --profile {profile_name}` to write them."
    )
else:
    viz.show_table(sources, **{"wall time (s)": "{:,.0f}"})

# %% [markdown]
# ## This run of the book
#
# The book runner records each chapter's status and wall time in
# `results/<profile>/book_run.json`. It executes this introduction last, so the table covers the
# other chapters of the current run (this page's own time appears from the next run on). Beside
# it stand the committed runs of the profiles CI cannot rerun: the `gpu` book, executed chapter
# by chapter on one GPU and committed in `results/book_gpu/` (its pages close this site). Each
# column names its profile and hardware and gives each chapter's wall time in seconds; a dash
# marks a chapter that run has not reached yet.

# %%
record = results.read_result("book_run", profile_name)
committed_runs = summary.committed_book_runs(profile_name)
if record is None:
    print(f"No book run recorded for profile {profile_name!r} yet.")
else:
    print(f"{profile_name}, this run: {results.describe_provenance(record)}")
for name, run in committed_runs.items():
    print(f"{name}, committed in results/book_{name}/: {summary.describe_book_run(run)}")
if record is not None or committed_runs:
    runs_table = summary.book_run_table(record, committed_runs, profile=profile_name)
    viz.show_table(
        runs_table,
        na_rep=summary.SHOWN_NOT_RUN,
        **{column: "{:,.1f}" for column in runs_table.columns[1:]},
    )

# %% [markdown]
# ## What this run shows
#
# One sentence for each row of the summary tables above that holds a measurement, written from
# those same tables (`summary.closing`), so that this list cannot say what a table does not; then
# one for each book run in the table just above, with its time and hardware.

# %%
book_runs = ({profile_name: record} if record is not None else {}) | committed_runs
display(Markdown("\n".join(f"- {line}" for line in summary.closing(panels, book_runs))))

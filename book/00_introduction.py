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
# [Open in Colab](https://colab.research.google.com/github/annotated-transformer/annotated-transformer/blob/main/book/00_introduction.ipynb)
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
# Colab or a fresh environment: install the package when it is missing. In a clone, use the
# clone's package (the book runner and `pip install -e .` make this a no-op).
import importlib.util
import pathlib
import subprocess
import sys

if importlib.util.find_spec("annotated_transformer") is None:
    clone = pathlib.Path.cwd().parent
    if (clone / "annotated_transformer").is_dir():
        sys.path.insert(0, str(clone))
    else:
        subprocess.check_call([sys.executable, "-m", "pip", "install", "-q",
                               "annotated-transformer @ git+https://github.com/annotated-transformer/annotated-transformer@main"])

# %%
import altair as alt
import pandas as pd
from IPython.display import HTML, display

from annotated_transformer import paper, results, summary, viz
from annotated_transformer.devices import resolve_device
from annotated_transformer.profiles import PROFILES, get_profile

# %% tags=["parameters"]
profile = "cpu"  # smoke | cpu | gpu | paper: the scale of this run (see the table below)
device = "auto"  # "auto" picks CUDA when a GPU is visible
max_steps = None  # None keeps the profile's default
data_dir = None  # None: $AT_DATA_DIR, then a download

# %%
settings = get_profile(profile, max_steps=max_steps)
print(f"profile {settings.name!r} on {resolve_device(device)}: {settings.description}")

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
# Colab), the imports, and a cell tagged `parameters` that holds the run's knobs: `profile`,
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
def training_length(p) -> str:
    limits = [f"{p.max_steps:,} steps" if p.max_steps else "", f"{p.max_epochs} epochs" if p.max_epochs else "",
              f"{p.time_budget_minutes:g} min" if p.time_budget_minutes else ""]
    return " or ".join(limit for limit in limits if limit)


def model_shape(p) -> str:
    c = p.model_config()
    return f"{c.n_layers}+{c.n_layers} layers, d {c.d_model}, {c.n_heads} heads, d_ff {c.d_ff}"


profiles_table = pd.DataFrame([
    {"profile": p.name, "corpus": f"{p.corpus} {p.src_lang}->{p.tgt_lang}", "model": model_shape(p),
     "BPE": p.vocab_size, "tokens per step": p.batch_tokens * p.accumulation, "training": training_length(p),
     "beam": p.beam_size, "Table 3 rows": len(p.book.table3_rows), "book budget (h)": round(p.book.minutes / 60, 2)}
    for p in PROFILES.values()
])
display(HTML(profiles_table.to_html(index=False, classes="at-summary", border=0)))

# %% [markdown]
# ## How to run it
#
# From a clone, the README's two commands set everything up in `./.venv` (install the `torch`
# build for your hardware first to keep it), then run the book or the tests:
#
# ```bash
# # execute every chapter with the cpu profile and build the site
# bash scripts/setup.sh && .venv/bin/python -m annotated_transformer book --profile cpu
#
# # unit tests, chapter smoke runs, the site build and the browser check
# bash scripts/setup.sh && .venv/bin/python -m pytest
# ```
#
# The book command executes each chapter with [papermill](https://papermill.readthedocs.io),
# injecting the profile into its `parameters` cell, saves the executed notebooks under
# `_build/executed/<profile>/`, records per-chapter wall times in `results/<profile>/book_run.json`,
# and builds this site into `_build/html` (open `_build/html/index.html`). `--chapters 01 02` runs a
# few chapters, `--no-build` skips the site, `--device cuda` picks the device, and
# `--param max_steps=200` overrides a knob in every chapter.
#
# One chapter at a time works too, in Jupyter (`jupyter lab book/`; the `.py` and `.ipynb` files
# are a [jupytext](https://jupytext.readthedocs.io) pair, the `.py` being the source) or with
# papermill directly:
#
# ```bash
# papermill book/04_training.ipynb 04_training.out.ipynb -k python3 -p profile gpu -p device cuda
# ```
#
# **Colab.** The launch button at the top of each page (the rocket) opens the chapter in Colab;
# its first cell installs the package. Pick a GPU runtime and set `profile = "gpu"` in the
# parameters cell.
#
# **A GPU machine.** `python -m annotated_transformer book --profile gpu` runs the whole book on
# one GPU; its long trainings resume from their last checkpoint when restarted. The `paper`
# profile trains on eight GPUs with `torchrun`, as chapter 04 explains. Results of these two
# profiles are committed to `results/gpu/` and `results/paper/`, because CI cannot rerun them;
# the summary below shows them beside the profile being executed, never mixed with it.

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
# **Why it works.** A self-attention layer connects any two positions in one step and does its
# work as a few large matrix products, which is cheaper than a recurrent layer whenever the
# sentence is shorter than the model width (chapter 03, Table 1 of the paper).
#
# **Training.** Sentence pairs batched by length to about 25,000 source and 25,000 target
# tokens, a shared byte-pair vocabulary {cite:p}`sennrich2016bpe`, Adam
# {cite:p}`kingma2015adam` with a learning rate that warms up linearly for 4,000 steps and then
# decays with the inverse square root of the step, dropout {cite:p}`srivastava2014dropout` and
# label smoothing {cite:p}`szegedy2016labelsmoothing` (chapter 04). The base model trained for
# 12 hours on eight P100 GPUs.
#
# **Results.** New best BLEU scores on WMT 2014 English-German (28.4) and English-French (41.8)
# at a small fraction of the training cost of earlier systems (chapter 05), a study of which
# design choices matter (Table 3, chapter 06), a constituency parser competitive with
# specialised ones (chapter 07), and attention heads whose patterns follow the syntax of the
# sentence (chapter 08).
#
# The chart below is Table 2 of the paper as a picture: translation quality against the compute
# spent on training, for English-German. The two Transformers sit up and to the left of every
# other system, ensembles included.

# %%
table2 = pd.DataFrame(paper.TABLE2).dropna(subset=["bleu_en_de", "flops_en_de"])
table2["system"] = table2["model"] + table2["ensemble"].map({True: " ensemble", False: ""})
table2["family"] = table2["model"].map(lambda m: "Transformer" if m.startswith("Transformer") else "earlier systems")

# The two ensembles sit close together: their labels go left and below instead of right.
table2["label side"] = table2["system"].map({"ConvS2S ensemble": "left", "GNMT + RL ensemble": "below"}).fillna("right")
base = alt.Chart(table2).encode(
    x=alt.X("flops_en_de:Q", title="training cost (FLOPs, log scale)",
            scale=alt.Scale(type="log", domain=[1e18, 1e21]),
            axis=alt.Axis(values=[1e18, 1e19, 1e20, 1e21], format=".0e")),
    y=alt.Y("bleu_en_de:Q", scale=alt.Scale(zero=False), title="BLEU, newstest2014 EN-DE"),
)
points = base.mark_point(filled=True, size=90).encode(
    color=alt.Color("family:N", title=None,
                    scale=alt.Scale(domain=["earlier systems", "Transformer"], range=["#8a96a3", "#c0392b"])),
    shape=alt.Shape("ensemble:N", title="ensemble"),
    tooltip=["system", alt.Tooltip("bleu_en_de:Q", title="BLEU"), alt.Tooltip("flops_en_de:Q", format=".2g", title="FLOPs")],
)
labels = [
    base.mark_text(fontSize=11, **placement).encode(text="system").transform_filter(f"datum['label side'] == '{side}'")
    for side, placement in {"right": dict(align="left", dx=8), "left": dict(align="right", dx=-8),
                            "below": dict(align="center", dy=14)}.items()
]
table2_chart = alt.layer(points, *labels).properties(
    width=520, height=320, title="Paper, Table 2: BLEU against training cost (EN-DE)",
).configure_legend(orient="bottom")
viz.show(table2_chart)

# %%
# The claim of the picture, checked on the paper's own numbers: the base Transformer is both the
# cheapest system to train and better than every earlier single model.
transformer_base = table2.set_index("system").loc["Transformer (base)"]
earlier = table2[table2["family"] == "earlier systems"]
assert transformer_base["flops_en_de"] < earlier["flops_en_de"].min()
assert transformer_base["bleu_en_de"] > earlier.loc[~earlier["ensemble"], "bleu_en_de"].max()
print(f"base Transformer: {transformer_base['flops_en_de']:.1e} FLOPs, "
      f"{earlier['flops_en_de'].min() / transformer_base['flops_en_de']:.1f}x less than the cheapest earlier system")

# %% [markdown]
# ## Reproduction summary
#
# One row per number of the paper that the book measures, and one for the Multi30k check that each
# profile's `train` recipe runs (not a number of the paper). The column "in the paper" quotes the
# paper; the column of the profile being executed (e.g. "cpu run") holds what this profile's runs
# wrote to `results/<profile>/`; the "gpu run" and "paper run" columns hold the committed results
# of the large runs. A cell says "not run yet" when no run has written that file. Mind the scale: the `smoke`
# and `cpu` profiles train tiny models on small corpora, so their numbers test the pipeline, not
# the paper's claims; the table lists which corpus and device produced each file.

# %%
claims_table = summary.summary_table(profile)
shown_summary = claims_table.assign(chapter=claims_table["chapter"].str[:2])  # the number is enough on the page
display(HTML(shown_summary.to_html(index=False, classes="at-summary", border=0)))

# %%
# Every cell comes from a results file or says that the file is missing: no number is typed in.
shown = [profile] + [p for p in summary.COMMITTED_PROFILES if p != profile]
for claim in summary.CLAIMS:
    row = claims_table[claims_table["claim"] == claim.label].iloc[0]
    for prof in shown:
        missing = results.read_result(claim.result, prof) is None
        assert (row[summary.profile_column(prof)] == summary.NOT_RUN) == missing, (claim.label, prof)

# %%
sources = summary.provenance_table(shown)
if sources.empty:
    print(f"No results files yet for the profiles {', '.join(shown)}: "
          f"run `python -m annotated_transformer book --profile {profile}` to write them.")
else:
    display(HTML(sources.to_html(index=False, classes="at-summary", border=0, na_rep="")))

# %% [markdown]
# ## This run of the book
#
# The book runner records each chapter's status and wall time in
# `results/<profile>/book_run.json`. It executes this introduction last, so the table covers the
# other chapters of the current run (this page's own time appears from the next run on).

# %%
record = results.read_result("book_run", profile)
if record is None:
    print(f"No book run recorded for profile {profile!r} yet.")
else:
    chapters = pd.DataFrame([
        {"chapter": name, "status": entry["status"], "wall time (s)": entry["wall_time_s"],
         "date": entry["date"][:16].replace("T", " "), "commit": (entry.get("git_commit") or "")[:7]}
        for name, entry in record["metrics"]["chapters"].items()
    ])
    print(f"profile {profile}: {results.describe_provenance(record)}")
    display(HTML(chapters.to_html(index=False, classes="at-summary", border=0)))

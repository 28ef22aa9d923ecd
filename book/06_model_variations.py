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
# # 6. Model variations (section 6.2, Table 3)
#
# Which of the Transformer's design choices matter? Section 6.2 of the paper
# {cite:p}`vaswani2017attention` answers with an ablation: starting from the base model, it changes
# one thing at a time and reports, for each variant, the perplexity per subword and the BLEU score
# on the English-German development set (newstest2013), and the parameter count. Table 3 has twenty
# rows in six groups:
#
# - **(A)** the number of heads $h$, keeping $h \cdot d_k = d_\text{model}$ so the attention costs the
#   same;
# - **(B)** a smaller key size $d_k$ with $h$ fixed;
# - **(C)** depth $N$, width $d_\text{model}$ and the feed-forward size $d_{ff}$;
# - **(D)** dropout $P_{drop}$ and label smoothing $\epsilon_{ls}$;
# - **(E)** learned positional embeddings instead of sinusoids;
# - **big**, the large model of Table 2.
#
# From the table the paper reads six findings: one head is worse than eight; too many heads hurt
# too; small keys hurt; bigger models are better; dropout helps; learned and sinusoidal positions
# tie. Each row cost the paper 100,000 steps of 25,000 tokens, about 20 passes over WMT14. This
# chapter asks which of the six findings a single machine can confirm, and after how much training.
# It
#
# 1. turns each row into a configuration change applied to a scaled-down base, keeping every ratio
#    the row changes and no attention head narrower than 8;
# 2. trains the rows for whole epochs of Multi30k with one warm-up and peak rate, several seeds per
#    row, recording each run's validation perplexity as it trains (a curve);
# 3. reads every finding at three budgets from those curves, with one statistical model of all rows
#    and seeds and a correction for testing several findings at once; dropout's finding on a small
#    share of the corpus trained for many epochs, where a model can overfit;
# 4. reads the same findings from a committed run of every row for several epochs (`python -m
#    annotated_transformer table3`), too long for a chapter, and says for each finding what the
#    longer budget changed;
# 5. sets perplexity, BLEU and parameters beside the paper's, with the rank correlation between the two
#    orderings of the rows and its bootstrap interval.
#
# It ends on what this run shows: how many of the six findings hold, do not hold or cannot be told
# after each budget, which ones the longer training changed, and how closely each run's rows
# follow the paper's order.


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
from IPython.display import Markdown, display

from annotated_transformer import pipeline, viz
from annotated_transformer.book.parameters import chapter_profile
from annotated_transformer.chapters.model_variations import figures, record, tables
from annotated_transformer.chapters.model_variations import rows as variations
from annotated_transformer.chapters.model_variations import sentences as say
from annotated_transformer.chapters.model_variations import statistics as findings
from annotated_transformer.chapters.model_variations import verdicts as report
from annotated_transformer.data import load_parallel
from annotated_transformer.model import flops
from annotated_transformer.model.config import TABLE3_ALL_ROWS
from annotated_transformer.runtime.devices import resolve_device
from annotated_transformer.runtime.side_by_side import side_by_side_workers

# %% tags=["parameters"]
# auto: the machine's (gpu where CUDA is visible, else cpu); or smoke | cpu | gpu | paper
profile_name = "auto"
device = "auto"  # "auto" picks CUDA when a GPU is visible
data_dir = None  # None: $AT_DATA_DIR, then a download
epochs = None  # None: the profile's epochs per Table 3 row
seeds = None  # None: the profile's number of seeds per row
first_seed = 1  # the seeds are first_seed, first_seed + 1, ...
# processes training rows side by side; None: one per core on a CPU, the profile's on a GPU
workers = None
# the results file's name (another, for a rerun with other seeds)
results_name = "model_variations"
# the committed extended run of which profile to read (None: this one's)
extended_profile = None


# %% [markdown]
# The profile sets the rows, seeds and epochs; the sentence under the cell says what this run trains.


# %%
profile = chapter_profile(profile_name, "06")
profile_name = profile.name  # the machine's profile where it was auto
scales = profile.book
# The data of every row: the profile's corpus, with the Table 3 vocabulary and batches where set.
table3_profile = profile.replace(
    vocab_size=scales.table3.vocab_size or profile.vocab_size,
    batch_tokens=scales.table3.batch_tokens or profile.batch_tokens,
)
rows = list(scales.table3.rows)
n_epochs = int(epochs or scales.table3.epochs)
n_seeds = int(seeds or scales.table3.seeds)
seed_list = list(range(int(first_seed), int(first_seed) + n_seeds))
scale = variations.scale_of(table3_profile)
overfit_rows = [r for r in ("base", "D1", "D2") if r in TABLE3_ALL_ROWS]
overfit_share, overfit_epochs = scales.table3.overfit_share, scales.table3.overfit_epochs
torch_device = resolve_device(device)
if profile.threads:
    torch.set_num_threads(profile.threads)
chapter_start = time.perf_counter()
# what the chapter computes, kept as it goes for its results record (`record.write`, at the end)
this_run = record.ThisRun(table3_profile, scale, rows, n_epochs, seed_list, overfit_rows)

# %% [markdown]
# In words:

# %%
display(
    Markdown(
        say.describe_plan(
            profile.name,
            rows,
            n_seeds,
            n_epochs,
            overfit_rows,
            overfit_epochs,
            overfit_share,
            (scale.width, scale.depth, scale.heads),
            str(torch_device),
        )
    )
)


# %% [markdown]
# ## 6.1 Each row as a change to base
#
# The paper's base model has $N = 6$ layers in each stack, $d_\text{model} = 512$,
# $d_{ff} = 2048$, $h = 8$ heads of $d_k = d_v = 64$, dropout 0.1 and label smoothing 0.1. Every
# other row lists only what it changes. `variations.changes` reads those changes from the package's
# presets (`model/config.py`, the same presets chapter 02 counts parameters for):


# %%
viz.show_table(tables.paper_changes(TABLE3_ALL_ROWS))


# %% [markdown]
# At the paper's size one row takes a GPU-day at least, so we shrink the base model and keep what
# each row does *relative to base*. A `VariationScale` divides every width ($d_\text{model}$,
# $d_{ff}$) by one number, every depth by another and every head count by a third (one head stays
# one head), and gives each row the key and value sizes that keep its share of the width,
# $h \cdot d_k / d_\text{model}$, as in the paper: 1 for the A rows, a quarter for B1. So A1 still
# has one head whose key is the whole model width, A4 still has four times base's heads at a quarter
# of base's key size, B1 still has a quarter of base's key size with base's heads, C3 still has four
# thirds of base's layers, big still has twice base's width. Dividing widths alone would leave A4
# and B1 with keys of 2 numbers at a small width, no longer a scaled version of the paper's 16; the
# scale refuses any row with a head narrower than `MIN_HEAD_DIM`. Dropout, label smoothing and the
# kind of positions are not sizes and stay as the paper has them. This is the whole rule:


# %%
viz.show_source(variations.VariationScale.config)


# %% [markdown]
# Under this profile the rows become the following, with each model's parameter count beside the
# paper's. `tables.check_scaled` checks what the scale promises: no head narrower than 8, A1 one head
# as wide as the model, the A rows $h \cdot d_k = d_\text{model}$, the B rows the paper's share of
# base's key size, and every row's parameters moving the way the paper's do:


# %%
vocab_size = table3_profile.vocab_size  # parameter counts need only the vocabulary's size
max_len = table3_profile.model_config().max_len
params = tables.parameters(scale, rows, vocab_size, max_len)
tables.check_scaled(scale, rows, params)
viz.show_table(
    tables.config_table(scale, rows, params),
    **{"params (M)": "{:.2f}", "paper (M)": "{:.0f}"},
)
b = scale.config("base")
display(
    Markdown(
        say.describe_base(
            b.n_layers, b.d_model, b.d_ff, b.n_heads, b.d_k, params["base"], vocab_size
        )
    )
)


# %% [markdown]
# A profile may train a subset of the rows. Every finding needs at least one pair of trained rows
# (smoke, a plumbing check, excepted), which the cell asserts:


# %%
trained_here = say.describe_rows_trained(rows, TABLE3_ALL_ROWS, findings.finding_rows())
if trained_here:
    display(Markdown(trained_here))
assert profile.name == "smoke" or all(
    any({a, b} <= set(rows) for a, b in x.pairs) for x in findings.FINDINGS
)


# %% [markdown]
# Our counts are not the paper's divided by a constant: the embedding matrix (vocabulary x
# $d_\text{model}$) is a larger share of a small model, so rows that change only the layers move
# the total less than in the paper. What matters is that every row moves it in the paper's
# direction, which the cell asserts.
#
# ## 6.2 Training every row
#
# All rows share one data preparation: the profile's corpus (Multi30k English to German), one
# shared BPE vocabulary trained on the training split, the same encoded pairs and the same token
# batches (`pipeline.prepare_data`, prepared once). A seed sets the initial weights, the order of
# the batches and the dropout masks, and every row is trained with every seed: row A's seed-1 run
# and row B's seed-1 run see the same batches in the same order, so their difference is not
# blurred by which batches came first. Training goes through `training.fit`, the door every
# training in this package takes, for whole epochs: one pass over the training split at least, so
# every row sees every sentence.
#
# One warm-up and one peak learning rate serve every row, chosen on base:
# `scripts/table3_calibration.py` trains base, C1 (the shallowest row) and C3 (the deepest) with a
# few candidates for part of an epoch (two epochs at the `gpu` scale) and keeps base's best among those under which C3 ends no worse
# than C1: with a short warm-up at a high peak, a deeper post-norm stack can start badly (chapter 04
# measures what warm-up does for one), and the depth rows would measure that rather than what depth
# buys. The
# peak then follows the paper's rule $lr \propto d_\text{model}^{-0.5}$ (section 5.3) from base's
# width, so only the rows that change $d_\text{model}$ get another peak. The schedule has no
# horizon (it decays as $\text{step}^{-0.5}$, whatever the length of the run), so the first half of a
# run is exactly a run of half the length: each run's curve gives the results of shorter budgets
# for free.


# %%
# The calibration is committed with the clone (results/tuning_table3_<profile>/), wherever this run
# writes its own results.
calibration = record.committed_calibration(profile.name, scales.table3)
warmup, peak = scales.table3.warmup_steps, scales.table3.peak_lr
if calibration.chosen:
    viz.show_table(calibration.tried(), base="{:.1f}", C1="{:.1f}", C3="{:.1f}")
    batch_tokens = table3_profile.batch_tokens
    words = say.describe_calibration(calibration.chosen, warmup, peak, batch_tokens)
    display(Markdown(words))
    assert calibration.agrees(warmup, peak), (
        "the profile's Table 3 warm-up and peak are not the calibration's choice"
    )
else:
    display(Markdown(say.phrase("calibration.none", warmup=warmup, peak=peak)))


# %% [markdown]
# Half an epoch is short of what the rows train, so the rule was run again over a whole epoch, with
# lower peaks and longer warm-ups among the candidates. Beside it is a diagnostic that is not a row
# of the table: base, C1 and C3 with the norm before each sub-layer (pre-norm) at the chosen warm-up
# and peak (`table3_calibration.py --norm-position pre`). If depth helps there and not in the
# paper's post-norm stack, what the depth rows measure at this budget is how fast a post-norm stack
# gets going, not what depth buys.


# %%
if calibration.other_batches:
    display(Markdown(say.phrase("calibration.other_batches")))


# %% [markdown]
# Where both grids are committed for this profile's batches, the table puts them together, one line
# per norm position and candidate:


# %%
if calibration.shows_grid:
    viz.show_table(calibration.grid(), base="{:.1f}", C1="{:.1f}", C3="{:.1f}")
    by, chosen = calibration.post_norm(), calibration.choice
    assert by.base.idxmin() == chosen, "the whole epoch picks another candidate for base"
    words = say.describe_whole_epoch(
        by, calibration.pre_norm_at_choice(), chosen, calibration.whole_epoch
    )
    display(Markdown(words))


# %% [markdown]
# Every row trains with the same settings but its configuration, its peak rate (from its width) and
# its seed; `variations.row_settings` is the whole list:


# %%
viz.show_source(variations.row_settings)


# %% [markdown]
# The data is prepared once for every row: the corpus, the shared vocabulary, the encoded pairs and
# the token batches. BLEU is scored on the validation split's raw sentences:


# %%
data = pipeline.prepare_data(table3_profile, data_dir)
valid_text = load_parallel(
    profile.corpus, profile.valid_split, profile.src_lang, profile.tgt_lang, data_dir
)
limit = profile.max_valid_pairs or len(valid_text.src)  # the whole split but under smoke
bleu_sources, bleu_references = valid_text.src[:limit], valid_text.tgt[:limit]
assert data.tokenizer.vocab_size == vocab_size
overfit_pairs = len(data.train) // overfit_share
target_tokens = int((data.train.tgt_lengths + 1).sum())  # eos included
mean_src = float(np.mean(data.train.src_lengths)) + 1
mean_tgt = float(np.mean(data.train.tgt_lengths)) + 1
display(
    Markdown(
        say.phrase(
            "data",
            train_pairs=len(data.train),
            target_tokens=target_tokens,
            valid_pairs=len(data.valid),
            bleu_sentences=len(bleu_sources),
            batch_tokens=table3_profile.batch_tokens,
            overfit_pairs=overfit_pairs,
        )
    )
)
this_run.keep(
    valid_pairs=len(data.valid),
    bleu_sentences=len(bleu_sources),
    overfit_pairs=overfit_pairs,
)


# %% [markdown]
# The long cell: every row and seed on the whole corpus, and base, D1 and D2 on the small share.
# Under the `cpu` profile this is most of the chapter's time; a line counts finished runs. On a
# CPU each run trains on one thread, in one process per core: the matrices of these models are
# small, so the chapter runs two rows side by side rather than giving one row two threads. The runs
# start dearest first (by their training FLOPs), so the last to finish are short. After training,
# each run on the whole corpus translates the whole validation split greedily for BLEU.
# `variations.train_rows` hands the runs out:


# %%
viz.show_source(variations.train_rows)


# %% [markdown]
# The plan lists every run, dearest first by its training FLOPs (`model/flops.py`'s count per target
# token times the tokens it trains on): every row and seed on the whole corpus, with four validation
# points along each curve, and dropout's rows on the small corpus, with one point per epoch.


# %%
def training_flops(row: str, tokens: float) -> float:
    """Training FLOPs of `tokens` target tokens of row `row` (model/flops.py's count)."""
    config = scale.config(row)
    per_token = flops.training_flops_per_target_token(
        config, vocab_size, mean_src, mean_tgt
    )
    return per_token * tokens


CURVE_POINTS = 4  # validation perplexities per run on the whole corpus
share = {"full": 1.0, "small": overfit_pairs / len(data.train)}


def job_flops(job: dict) -> float:
    return training_flops(
        job["row"], job["epochs"] * target_tokens * share[job.get("corpus", "full")]
    )


plan = tables.plan_runs(
    rows,
    seed_list,
    n_epochs,
    CURVE_POINTS,
    overfit_rows,
    overfit_epochs,
    overfit_pairs,
    job_flops,
)
if workers is None:
    workers = side_by_side_workers(
        torch_device, len(plan), accelerator=scales.table3.accelerator_workers
    )
workers = max(1, min(int(workers), len(plan)))


# %% [markdown]
# The long cell. A line under it counts the finished runs while they train, and says at the end how
# long they took:


# %%
threads = torch.get_num_threads()
if torch_device.type == "cpu":
    torch.set_num_threads(1)
train_start = time.perf_counter()
runs = []
# A live line while the runs train, replaced in place (the saved page keeps only its last state).
progress = display(Markdown(f"Table 3 runs: 0 of {len(plan)}"), display_id=True)
try:
    for run in variations.train_rows(
        plan,
        data,
        table3_profile,
        workers=workers,
        data_dir=data_dir,
        device=torch_device,
        bleu_sources=bleu_sources,
        bleu_references=bleu_references,
    ):
        runs.append(run)
        if progress is not None:
            elapsed = time.perf_counter() - train_start
            progress.update(
                Markdown(
                    f"Table 3 runs: {len(runs)} of {len(plan)} in {elapsed:.0f} s (last: {run.row}, "
                    f"seed {run.seed}, {run.corpus} corpus, validation perplexity {run.ppl:.1f})"
                )
            )
finally:
    torch.set_num_threads(threads)
train_seconds = time.perf_counter() - train_start


# %% [markdown]
# How long the runs took replaces the counting line above. Every planned run finished, for the
# epochs it was given, with a finite perplexity and one parameter count per row (the cell checks):


# %%
measured = pd.DataFrame([r.to_dict() for r in runs])
summary = say.describe_training(measured, train_seconds, workers)
progress.update(Markdown(summary)) if progress is not None else display(Markdown(summary))
full = measured[measured.corpus == "full"]
small = measured[measured.corpus == "small"]
assert len(full) == len(rows) * len(seed_list)
assert len(small) == len(overfit_rows) * len(seed_list)
assert (full.epochs >= n_epochs - 1e-6).all()
assert (small.epochs >= overfit_epochs - 1e-6).all()
assert np.isfinite(measured.ppl).all() and (measured.ppl > 1).all()
assert all(full[full.row == row].params.nunique() == 1 for row in rows)
this_run.keep(runs=runs, train_seconds=train_seconds, workers=workers)


# %% [markdown]
# ## 6.3 Validation curves
#
# Each run's validation perplexity (per subword, on the whole validation split) as it trains, the
# mean over seeds of the log perplexity; one panel per group of rows. Base is in every panel as the
# wide grey band under the other rows, so a row that lies on base shows as a line along the band;
# every other row keeps one colour and dash of its own in every chart of the chapter, so rows that
# end together still show as two lines. A finding can only be read once its rows have stopped
# moving relative to one another; the curves show whether they have.


# %%
full_curves, small_curves = tables.curve_points(full), tables.curve_points(small)
full_mean = tables.mean_curve(full_curves)
viz.show(figures.validation_curves_chart(full_mean))


# %% [markdown]
# ### Where dropout can help: a small corpus, many epochs
#
# Within one epoch every batch is new to the model, so there is nothing to overfit and dropout can
# only slow learning down. Dropout's finding is a claim about a model that fits its training data
# too well {cite:p}`srivastava2014dropout`, so the chapter reads it where that happens: base
# (dropout 0.1), D1 (none) and D2 (0.2) trained on a small share of the training pairs for many
# epochs, with the validation perplexity measured after every epoch.


# %%
small_mean = tables.mean_curve(small_curves)
viz.show(
    figures.overfitting_chart(
        small_mean, title=f"the first {overfit_pairs:,} training pairs"
    )
)
dropout_of = {r: scale.config(r).dropout for r in overfit_rows}
display(Markdown(say.describe_overfitting(small_mean, dropout_of)))
this_run.keep(small_mean=small_mean)


# %% [markdown]
# ## 6.4 The paper's findings at three budgets
#
# Each finding is one or more comparisons of perplexity between rows: one head, A1 against base;
# too many heads, A4 against base; small keys, B1 against base; bigger is better, the smallest
# against the largest of each size the C rows vary (C1 against C3, C4 against C5, C6 against C7);
# dropout, D1 against base on the small corpus; positions, E against base. Perplexity decides: it
# is measured on the whole validation split and moves long before greedy translations score much
# BLEU.
#
# The statistics are in `chapters/table3/statistics.py`:
#
# - every run of a corpus goes into one model: log perplexity = row effect + seed effect + noise.
#   All rows' runs of one seed saw the same batches, so a seed is a **block** whose luck is shared by
#   every row; the model removes it and estimates one noise level from all the runs (ordinary least
#   squares in statsmodels). A comparison is the difference of two row effects, shown as a change
#   in percent of perplexity, with a Student-t interval whose degrees of freedom come from the whole
#   table: (rows - 1) x (seeds - 1), for example 20 for 11 rows of 3 seeds, where one pair's own
#   three seeds give 2. The price is an assumption that every row is about as noisy as every other;
# - beside each interval, the **detectable** change: the true difference the test would find four
#   times in five at its level. A comparison that "cannot tell" with a detectable change of 5% says
#   that any effect is probably smaller than 5%, which is a result too;
# - the comparisons of the six findings form one family corrected with **Holm's** method, so
#   the chance that any verdict of a budget is wrong by chance stays under 5%: with all eight
#   comparisons (all 20 rows), the one with the smallest p-value is tested at 5%/8, the next at 5%/7, and so on until one
#   fails. A pair the profile does not train (the `cpu` profile leaves C6/C7 out) is listed but
#   joins neither the family nor its finding, which reads the pairs it has. Each
#   interval below is at the confidence its step used, so a comparison holds exactly when its
#   interval lies on the paper's side of zero;
# - "learned and sinusoidal positions tie" is an **equivalence** claim. Its margin was fixed in the
#   package before any run (`findings.TIE_MARGIN`, printed below): the tie holds when the interval
#   lies inside the margin, does not hold when it lies outside, and otherwise cannot be told;
# - a finding holds when all its compared pairs hold, does not hold when one goes against it, and
#   otherwise cannot be told at this budget.


# %%
viz.show_source(findings.decide_pair)
viz.show_source(findings.holm)


# %% [markdown]
# The findings are read at a quarter, half and all of each run's training, from the curves: the
# dropout rows at the same shares of their own epochs. The committed extended run (below) is read the
# same way, after each epoch all its rows and seeds have finished:


# %%
BUDGETS = (0.25, 0.5, 1.0)  # shares of each run's training, read from its curve
budgets = tables.live_budgets(
    full_curves, small_curves, BUDGETS, CURVE_POINTS, overfit_epochs, overfit_share
)
extended_run, extended_budgets = record.committed_extended(
    extended_profile or profile.name
)
this_run.keep(budgets=budgets, extended_budgets=extended_budgets)


# %% [markdown]
# ### What the runs show
#
# First the verdicts in words, one finding at a time: at this run's longest budget and, where a
# longer run of the same rows is committed, at that run's longest, followed by what the longer
# budget changed and why; the tables after them give every comparison at every budget. Each
# sentence names the two rows, which way and by how much the first row's perplexity differs from
# the second's, and the interval (at the confidence its Holm step used, about 98 to 99.5%). A
# difference whose interval includes no change is "within the noise", and the sentence then says
# how large a change the runs could have found. Beside each verdict, a reason the numbers alone do
# not give: for depth, whether the deeper stack was still catching up; for dropout, whether its
# rows had begun to overfit. The rows are named by what they change at this scale:


# %%
names = tables.row_names(scale, TABLE3_ALL_ROWS)
said, notes = tables.findings_said(
    budgets, small_mean, full_mean, extended_run, extended_budgets
)
display(Markdown(say.conclusion(said, [names], notes)))


# %% [markdown]
# Every verdict at every budget of this run, the budgets named by the epochs of the whole corpus
# (and, in parentheses, of dropout's small corpus):


# %%
viz.show_table(tables.verdict_table(budgets))
display(Markdown(say.describe_budgets(budgets, findings.percent(findings.TIE_MARGIN))))


# %% [markdown]
# And every comparison: its verdict, the change in perplexity from the second row to the first, and
# the interval at the confidence its Holm step used (in parentheses). A comparison holds exactly when
# its interval lies on the paper's side of zero:


# %%
viz.show_table(tables.comparison_table(budgets))
for b in budgets:
    for x in b["findings"]:
        assert x["verdict"] in findings.VERDICTS
        for c in x["comparisons"]:
            if c["verdict"] == findings.HOLDS and x["kind"] == "worse":
                assert c["interval_pct"][0] > 0
final = budgets[-1]["findings"]
n_compared = sum(c["trained"] for x in final for c in x["comparisons"])


# %% [markdown]
# Why a verdict moves with the budget shows in the curves: a comparison can change sign as the rows
# train. For every comparison, the epochs at which the order of the two rows' mean curves changes:


# %%
display(
    Markdown(
        say.describe_swaps(
            tables.swaps({"full": full_curves, "small": small_curves}), n_compared
        )
    )
)


# %% [markdown]
# ### The extended run: the same rows, trained until they settle
#
# A short budget measures how fast a row starts as much as where it ends: a deeper post-norm stack
# starts slower (section 6.2's calibration), and dropout can only help a model that has begun to
# overfit. So a second run, outside the book, trains the rows for longer, and dropout's rows for
# many more epochs of their small corpus:


# %%
display(
    Markdown(
        say.describe_extended_plan(
            rows, n_epochs, extended_run, extended_profile or profile.name
        )
    )
)


# %% [markdown]
# Its curves, mean over seeds:


# %%
if extended_run is None:
    display(
        Markdown(
            f"No extended run is committed for the `{extended_profile or profile.name}` profile; "
            "run the command above to make one."
        )
    )
else:
    extended_curves = report.mean_curves(extended_run)
    viz.show(figures.validation_curves_chart(tables.per_epoch(extended_curves)))
    display(
        Markdown(
            say.describe_extended_progress(
                len(extended_budgets),
                extended_run["targets"]["full"],
                extended_run["written"],
                extended_run["machine"],
                say.flattening_note(extended_curves),
            )
        )
    )


# %% [markdown]
# The extended run also trains dropout's rows on their small corpus for many times the live run's
# epochs. Where the live chart of section 6.3 stops, it goes on, so its chart shows how far each
# rate of dropout delays overfitting and how high each row climbs after its lowest point.


# %%
small_extended = pd.DataFrame()
if extended_run is not None:
    small_extended = tables.per_epoch(report.mean_curves(extended_run, "small"))
if not small_extended.empty:
    small_extended = small_extended.assign(point=small_extended.epoch)
    small_share = extended_run["identity"]["overfit_share"]
    viz.show(
        figures.overfitting_chart(
            small_extended,
            title=f"the extended run: dropout's rows on a 1/{small_share} share of the pairs",
            points=False,
        )
    )
    display(Markdown(say.describe_overfitting(small_extended, dropout_of)))


# %% [markdown]
# The verdicts of the extended run after 1, 2, 4 and 8 epochs and after the last epoch that every row
# and seed has finished, read with the same statistics as the live run (the results file holds the
# verdicts after every epoch):


# %%
if extended_budgets:
    viz.show_table(tables.verdict_table(tables.doubling_budgets(extended_budgets)))
    viz.show_table(tables.comparison_table(extended_budgets[-1:]))


# %% [markdown]
# How to read the verdicts: **holds** and **does not hold** are statements about this scale and
# these budgets (a model a few hundred times smaller than the paper's, trained for a few epochs of a
# corpus a hundred times smaller); they say nothing against the paper at its own scale.
# **Cannot tell at this budget** says the seeds disagree more than the difference between the rows
# (the interval straddles zero, or for the tie straddles the margin): more seeds or longer training
# could decide it. A finding whose verdict changes between the budgets depends on how long one
# trains; one that holds at every budget does not.
#
# ## 6.5 Beside Table 3
#
# For each row at the longest budget: the validation perplexity (the geometric mean over seeds,
# with its 95% t-interval over seeds), BLEU (greedy sacreBLEU on the whole validation split, the
# mean over seeds; for every seed, the score's 95% interval from sacreBLEU's paired bootstrap
# resampling against base of the same seed, as chapter 05 explains), the parameter count, and the
# paper's columns. Lower perplexity is better, higher BLEU is better.


# %%
translations = {(r.row, r.seed): r.hypotheses for r in runs if r.corpus == "full"}
bleu_tests = tables.bleu_tests(translations, bleu_references, seed_list, rows)
scored = full.set_index(["row", "seed"]).bleu
assert all(
    math.isclose(scored[t.row, t.seed], t.bleu, abs_tol=0.01)
    for t in bleu_tests.itertuples()
)
final_ppl = {
    row: {int(s): float(p) for s, p in zip(g.seed, g.ppl)}
    for row, g in full.groupby("row")
}
table = tables.beside_table3(rows, final_ppl, bleu_tests, params)
assert table.row.tolist() == rows
assert ((table.ppl_low <= table.ppl) & (table.ppl <= table.ppl_high)).all()
this_run.keep(table=table, final_ppl=final_ppl)


# %% [markdown]
# Perplexity first: ours, the 95% interval of the geometric mean over seeds, the paper's, and the
# parameters:


# %%
viz.show_table(tables.perplexity_table(table))


# %% [markdown]
# Then BLEU: the mean over seeds, each seed's score with its 95% interval, in how many seeds the row
# differs from base beyond the resampling noise, and the paper's score:


# %%
viz.show_table(tables.bleu_table(table))
display(Markdown(say.describe_bleu(bleu_tests, len(bleu_references))))


# %% [markdown]
# The perplexities live on different scales (the paper's are near 5 after 100,000 steps on 4.5
# million sentence pairs), so the chart compares *differences from base*, ours beside the paper's:
# for perplexity the change in percent, for BLEU the change in points. The whiskers on our
# perplexity bars are 95% intervals from the pooled model of section 6.4, before Holm's correction
# (so a whisker clear of zero is not yet a verdict: the table of section 6.4 gives those); on our
# BLEU bars the range of the per-seed differences. Our BLEU bars are pale where the row is within the resampling noise of
# base in at least one seed.


# %%
viz.show(
    figures.table3_differences_chart(
        tables.differences(table, final_ppl),
        rows,
        {tables.PPL: "% change from base", tables.BLEU: "points minus base"},
    )
)


# %% [markdown]
# ## 6.6 Do the rows come in the same order?
#
# Differences of size aside, a small run can ask whether the rows *rank* as in the paper:
# Spearman's rank correlation between our perplexities and the paper's, over the rows trained here
# (+1 when the two orderings agree, 0 when they are unrelated, -1 when one is the other reversed).
# With a dozen rows one correlation is a noisy number, so it comes with a 95% bootstrap interval:
# the rows are resampled with replacement and the correlation recomputed, many times. The rows whose
# findings depend on the budget (section 6.4) move it most, so it is an outcome to report, not a
# number to tune toward.


# %%
correlation = findings.spearman_interval(table.ppl, table.paper_ppl)
ranked = table[["ppl", "paper_ppl"]].rank()
assert math.isclose(correlation["rho"], ranked.ppl.corr(ranked.paper_ppl), abs_tol=1e-12)
ext_correlation = (
    tables.extended_correlation(extended_budgets[-1]) if extended_budgets else None
)
ext_who = (
    extended_budgets
    and f"the extended run after {extended_budgets[-1]['full_epoch']} epochs"
)
display(
    Markdown(
        say.describe_correlation(correlation, "this run")
        + (
            " " + say.describe_correlation(ext_correlation, ext_who)
            if ext_correlation
            else ""
        )
    )
)
this_run.keep(correlation=correlation, extended_correlation=ext_correlation)


# %% [markdown]
# ## 6.7 What the budget buys: FLOPs
#
# The cost of a profile's Table 3 is arithmetic: for every run, the training FLOPs per target token
# of its row (`model/flops.py`, the count chapter 05 uses) times the target tokens it trains on.
# This run measures how many FLOPs per second one process achieved here; the `gpu` profile's
# epochs are set from the same sum, at the rate its own recipe's run achieved on an H100
# (`results/gpu/`, a model of the size of the `gpu` profile's base row). Small models keep a GPU
# far from its peak, so the measured rate, not the data sheet, sets the time.


# %% [markdown]
# `tables.table3_flops` adds it up for a profile: the FLOPs per target token of each row, times the
# epochs and seeds, and the overfitting runs on their share of the corpus:


# %%
viz.show_source(tables.table3_flops)


# %% [markdown]
# This run's row uses the rate it achieved; the `gpu` profile's row the rate its own recipe's run
# achieved on a GPU, where that result is committed:


# %%
done_flops = sum(
    training_flops(r.row, r.epochs * target_tokens * share[r.corpus]) for r in runs
)
achieved = done_flops / measured.train_s.sum()  # per process, validation included
budget = tables.flops_budget(
    profile.name,
    target_tokens,
    (mean_src, mean_tgt),
    overfit_rows,
    achieved,
    workers,
    len(data.train),
    record.gpu_recipe_run(),
)
viz.show_table(tables.flops_table(budget))
gpu_row = budget.iloc[1].to_dict() if len(budget) > 1 else None
display(Markdown(say.describe_flops(done_flops, train_seconds / 60, achieved, gpu_row)))
this_run.keep(flops=budget)


# %% tags=["remove-cell"]
path = record.write(
    record.build(this_run),
    this_run.profile.name,
    time.perf_counter() - chapter_start,
    device=torch_device,
    config=record.config(this_run),
    name=results_name,
)


# %% [markdown]
# ## What this run shows
#
# The chapter set out to ask which of the paper's six findings a single machine can confirm, and
# after how much training. Counted, with what the longer budget changed and how closely each run's
# rows follow the paper's order (section 6.6):


# %%
display(Markdown(say.closing(record.read(profile.name, name=results_name))))

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
# tie. Each row cost the paper 100,000 steps on eight GPUs. This chapter trains every row on
# Multi30k under the profile's budget, and checks each finding with a written rule against the
# spread between seeds. It
#
# 1. turns each row into a configuration change applied to a scaled-down base, keeping every ratio
#    the row changes;
# 2. trains all rows with the same data, steps and batches, each with several seeds (two under the
#    `smoke`, `cpu` and `gpu` profiles);
# 3. sets perplexity, BLEU and parameters beside the paper's, with the rank correlation between the
#    two orderings of the rows;
# 4. gives each finding a verdict: holds, does not hold, or cannot tell at this scale.

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
import math
import os
import time

import numpy as np
import pandas as pd
import torch
from IPython.display import Markdown, display
from tqdm.auto import tqdm

from annotated_transformer import pipeline
from annotated_transformer.book import viz
from annotated_transformer.data import load_parallel
from annotated_transformer.evaluation import paper, results
from annotated_transformer.evaluation.scoring import paired_bootstrap
from annotated_transformer.experiments import variations
from annotated_transformer.model.config import TABLE3_ALL_ROWS
from annotated_transformer.model.transformer import Transformer, count_parameters
from annotated_transformer.profiles import get_profile
from annotated_transformer.runtime.devices import resolve_device

# %% tags=["parameters"]
profile = "cpu"  # smoke | cpu | gpu | paper
device = "auto"  # "auto" picks CUDA when a GPU is visible
data_dir = None  # None: $AT_DATA_DIR, then a download
variation_steps = None  # None: the profile's steps per Table 3 row
seeds = None  # None: the profile's number of seeds per row
bleu_sentences = (
    None  # None: the first sentences of the validation split that the profile affords
)
workers = (
    None  # processes training rows side by side on a CPU; None: one per core (1 on a GPU)
)

# %%
settings = get_profile(profile)
scales = settings.book
rows = list(scales.table3_rows)
steps = int(variation_steps or scales.table3_steps)
n_seeds = int(seeds or scales.table3_seeds)
scale = variations.VariationScale(
    width=scales.table3_width_divisor, depth=scales.table3_depth_divisor
)
# The data of every row: the profile's corpus, with the Table 3 vocabulary and batches where set.
table3_profile = settings.replace(
    vocab_size=scales.table3_vocab_size or settings.vocab_size,
    batch_tokens=scales.table3_batch_tokens or settings.batch_tokens,
)
# Greedy BLEU on the first validation sentences: 16 under smoke, 100 on a CPU, all on a GPU.
BLEU_SENTENCES = {"smoke": 16, "cpu": 100}
bleu_sentences = bleu_sentences or BLEU_SENTENCES.get(settings.name)
torch_device = resolve_device(device)
if settings.threads:
    torch.set_num_threads(settings.threads)
chapter_start = time.perf_counter()
print(
    f"under profile {settings.name!r} this chapter trains {len(rows)} rows ({', '.join(rows)}) "
    f"x {n_seeds} seeds for {steps} steps each, at widths / {scale.width} and depths / "
    f"{scale.depth}, on {torch_device}"
)


# %% [markdown]
# ## 6.1 Each row as a change to base
#
# The paper's base model has $N = 6$ layers in each stack, $d_\text{model} = 512$,
# $d_{ff} = 2048$, $h = 8$ heads of $d_k = d_v = 64$, dropout 0.1 and label smoothing 0.1. Every
# other row lists only what it changes. `variations.changes` reads those changes from the package's
# presets (`model/config.py`, the same presets chapter 02 counts parameters for):


# %%
def listed(change: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in change.items()) or "(base)"


paper_changes = pd.DataFrame(
    [dict(row=row, changes=listed(variations.changes(row))) for row in TABLE3_ALL_ROWS]
)
viz.show_table(paper_changes)

# %% [markdown]
# At the paper's size one row takes a GPU-day at least, so we shrink the base model and keep what
# each row does *relative to base*. A `VariationScale` divides every width of every row
# ($d_\text{model}$, $d_{ff}$, $d_k$, $d_v$) by one number and every depth by another. Because the
# division is the same for all rows, every ratio survives: A1 still has one head whose key is the
# whole model width, A4 still has $h \cdot d_k = d_\text{model}$, B1 still has a quarter of base's
# key size, C3 still has four thirds of base's layers, big still has twice base's width and
# feed-forward size. Head counts, dropout, label smoothing and the kind of positions are not sizes
# and stay as the paper has them. This is the whole rule:

# %%
viz.show_source(variations.VariationScale.config)

# %% [markdown]
# Under this profile the rows become the following (the paper's values in parentheses where they
# differ), with each model's parameter count beside the paper's:


# %%
def scaled_row(row: str) -> dict:
    ours, theirs = scale.config(row), variations.paper_config(row)
    cells = {}
    for field in (
        "n_layers",
        "d_model",
        "d_ff",
        "n_heads",
        "d_k",
        "d_v",
        "dropout",
        "label_smoothing",
        "positional",
    ):
        a, b = getattr(ours, field), getattr(theirs, field)
        cells[field] = f"{a}" if a == b else f"{a} ({b})"
    return cells


vocab_size = table3_profile.vocab_size  # parameter counts need only the vocabulary's size
params = {}
for row in rows:
    config = scale.config(row, max_len=table3_profile.model_config().max_len)
    model = Transformer(config, vocab_size, vocab_size, share_embeddings=True)
    params[row] = count_parameters(model)
config_table = pd.DataFrame(
    [
        dict(
            row=row,
            **scaled_row(row),
            params_m=params[row] / 1e6,
            paper_params_m=paper.TABLE3[row].params_m,
        )
        for row in rows
    ]
)
viz.show_table(config_table, params_m="{:.2f}", paper_params_m="{:.0f}")

# The rows apply the paper's change at the scaled size.
base_config = scale.config("base")
if "A1" in rows:
    a1 = scale.config("A1")
    assert a1.n_heads == 1 and a1.head_dim_k == base_config.d_model
for row in ("A2", "A3", "A4"):
    if row in rows:
        c = scale.config(row)
        assert c.n_heads * c.head_dim_k == base_config.d_model == c.d_model
for row in ("B1", "B2"):
    if row in rows:
        ratio = (
            variations.paper_config(row).head_dim_k
            / variations.paper_config("base").head_dim_k
        )
        assert scale.config(row).head_dim_k == ratio * base_config.head_dim_k
# Parameters move the way the paper's do, wherever the paper reports them.
for row in rows:
    theirs = paper.TABLE3[row].params_m
    if row != "base" and theirs is not None and theirs != paper.TABLE3["base"].params_m:
        assert (params[row] > params["base"]) == (
            theirs > paper.TABLE3["base"].params_m
        ), row
b = base_config
print(
    f"base at this scale: {b.n_layers} layers, d_model {b.d_model}, d_ff {b.d_ff}, "
    f"{b.n_heads} heads of d_k {b.head_dim_k}; {params['base'] / 1e6:.2f}M parameters "
    f"with a {vocab_size:,}-piece vocabulary"
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
# batches (`pipeline.prepare_data`, prepared once). Each row is then trained by chapter 04's
# `Trainer` for the same number of steps with the same batches; a seed sets the initial weights,
# the order of the batches and the dropout masks. Two things follow the row rather than the
# profile:
#
# - the learning rate follows the paper's rule $lr \propto d_\text{model}^{-0.5}$ (section 5.3),
#   anchored so that a model as wide as the profile's own gets the profile's peak rate; the
#   warm-up is a quarter of the steps;
# - dropout and label smoothing are the row's (base: 0.1 and 0.1, as in the paper), not the
#   profile's.
#
# After training, `train_row` measures what Table 3 reports: perplexity per subword on the
# whole validation split (eos included, no smoothing), BLEU, and the parameter count. The paper's
# BLEU comes from beam search on the full development set; ours is sacreBLEU of **greedy**
# translations of the first sentences of the validation split, which is cheaper. Whether so few
# sentences can tell rows apart is measured, not assumed: section 6.3 gives each score a 95%
# interval from sacreBLEU's paired bootstrap resampling (chapter 05 explains it) and counts the
# differences from base that exceed it.

# %%
viz.show_source(variations.row_settings)

# %%
data = pipeline.prepare_data(table3_profile, data_dir)
valid_text = load_parallel(
    settings.corpus, settings.valid_split, settings.src_lang, settings.tgt_lang, data_dir
)
limit = bleu_sentences or len(valid_text.src)
bleu_sources, bleu_references = valid_text.src[:limit], valid_text.tgt[:limit]
assert data.tokenizer.vocab_size == vocab_size
print(
    f"{len(data.train):,} training pairs, {len(data.valid):,} validation pairs for perplexity, "
    f"the first {len(bleu_sources):,} validation sentences for BLEU; batches of about "
    f"{table3_profile.batch_tokens:,} tokens"
)

# %% [markdown]
# The long cell: every row, every seed. Under the `cpu` profile this is most of the chapter's
# time; the bar counts finished runs. On a CPU each row trains on one thread, in one process per
# core: the matrices of these models are small, so the chapter runs several rows side by side
# rather than giving one row several threads. The cell reports how many runs' worth of work the
# processes did at once (the runs' training and scoring times summed, over the wall time).
# `variations.train_rows` hands the runs out:

# %%
viz.show_source(variations.train_rows)

# %%
plan = [(row, seed) for seed in range(1, n_seeds + 1) for row in rows]
if workers is None:
    workers = (os.cpu_count() or 1) if torch_device.type == "cpu" else 1
workers = max(1, min(int(workers), len(plan)))
threads = torch.get_num_threads()
if torch_device.type == "cpu":
    torch.set_num_threads(1)
train_start = time.perf_counter()
try:
    runs = list(
        tqdm(
            variations.train_rows(
                plan,
                data,
                table3_profile,
                scale,
                steps=steps,
                workers=workers,
                data_dir=data_dir,
                device=torch_device,
                bleu_sources=bleu_sources,
                bleu_references=bleu_references,
            ),
            total=len(plan),
            desc="Table 3 rows",
            unit="run",
        )
    )
finally:
    torch.set_num_threads(threads)
train_seconds = time.perf_counter() - train_start
measured = pd.DataFrame([r.to_dict() for r in runs])
assert len(measured) == len(rows) * n_seeds and (measured.steps == steps).all()
assert np.isfinite(measured.ppl).all() and (measured.ppl > 1).all()
assert all(measured[measured.row == row].params.nunique() == 1 for row in rows)
seconds = measured.groupby("row", sort=False)[["train_s", "train_cpu_s", "eval_s"]].mean()
at_once = (measured.train_s + measured.eval_s).sum() / train_seconds
print(
    f"{len(runs)} runs in {train_seconds:.0f} s on {workers} process(es); per run, training took "
    f"{seconds.train_s.min():.1f}-{seconds.train_s.max():.1f} s (the cheapest row: "
    f"{seconds.train_s.idxmin()}, the dearest: {seconds.train_s.idxmax()}); the runs' training "
    f"and scoring times add up to {at_once:.1f} times the wall time"
)

# %% [markdown]
# ## 6.3 Beside Table 3
#
# For each row: the mean over seeds of perplexity and BLEU, their range over seeds, the difference
# from base, and the paper's numbers. The perplexity difference carries its seed interval: from
# the row's lowest seed against base's highest to its highest against base's lowest. Lower
# perplexity is better, higher BLEU is better.


# %%
def summarize(frame: pd.DataFrame) -> pd.DataFrame:
    stats = frame.groupby("row", sort=False).agg(
        ppl=("ppl", "mean"),
        ppl_min=("ppl", "min"),
        ppl_max=("ppl", "max"),
        bleu=("bleu", "mean"),
        bleu_min=("bleu", "min"),
        bleu_max=("bleu", "max"),
        params=("params", "first"),
    )
    stats = stats.loc[rows].reset_index()
    base = stats.set_index("row").loc["base"]
    stats["ppl_minus_base"] = stats.ppl - base.ppl
    stats["ppl_minus_base_low"] = stats.ppl_min - base.ppl_max
    stats["ppl_minus_base_high"] = stats.ppl_max - base.ppl_min
    stats["bleu_minus_base"] = stats.bleu - stats.set_index("row").loc["base", "bleu"]
    stats["paper_ppl"] = [paper.TABLE3[r].ppl for r in stats.row]
    stats["paper_bleu"] = [paper.TABLE3[r].bleu for r in stats.row]
    stats["paper_params_m"] = [paper.TABLE3[r].params_m for r in stats.row]
    stats["paper_ppl_minus_base"] = stats.paper_ppl - paper.TABLE3["base"].ppl
    stats["paper_bleu_minus_base"] = stats.paper_bleu - paper.TABLE3["base"].bleu
    return stats


table = summarize(measured)
shown = table.assign(
    params_m=table.params / 1e6,
    ppl_range=[f"{a:.1f}-{b:.1f}" for a, b in zip(table.ppl_min, table.ppl_max)],
    ppl_minus_base=[
        f"{d:+.2f} ({lo:+.1f} to {hi:+.1f})"
        for d, lo, hi in zip(
            table.ppl_minus_base, table.ppl_minus_base_low, table.ppl_minus_base_high
        )
    ],
    bleu_range=[f"{a:.2f}-{b:.2f}" for a, b in zip(table.bleu_min, table.bleu_max)],
)
viz.show_table(
    shown[
        [
            "row",
            "ppl",
            "ppl_range",
            "ppl_minus_base",
            "paper_ppl",
            "bleu",
            "bleu_range",
            "bleu_minus_base",
            "paper_bleu",
            "params_m",
            "paper_params_m",
        ]
    ],
    ppl="{:.2f}",
    paper_ppl="{:.2f}",
    bleu="{:.2f}",
    bleu_minus_base="{:+.2f}",
    paper_bleu="{:.1f}",
    params_m="{:.2f}",
    paper_params_m="{:.0f}",
)
assert table.row.tolist() == rows
assert (table.ppl_min <= table.ppl).all() and (table.ppl <= table.ppl_max).all()

# %% [markdown]
# BLEU on a few sentences is noisy in a second way besides the seeds: another sample of sentences
# would give other scores. For each seed, every row's greedy translations against base's of the
# same seed, through sacreBLEU's paired bootstrap (`paired_bootstrap`, chapter 05): each score with
# its 95% interval, and in how many seeds the row's difference from base exceeds that noise.

# %%
order = ["base"] + [row for row in rows if row != "base"]
translations = {(r.row, r.seed): r.hypotheses for r in runs}
bleu_tests = pd.DataFrame(
    [
        dict(seed=seed, row=row, **result)
        for seed in range(1, n_seeds + 1)
        for row, result in paired_bootstrap(
            {row: translations[row, seed] for row in order}, bleu_references
        ).items()
    ]
)
scored = measured.set_index(["row", "seed"]).bleu
assert all(
    math.isclose(scored[t.row, t.seed], t.bleu, abs_tol=0.01)
    for t in bleu_tests.itertuples()
)
bleu_intervals = pd.DataFrame(
    [
        {
            "row": row,
            "bleu by seed ± 95%": ", ".join(
                viz.plus_minus(t.bleu, t.ci95) for t in g.itertuples()
            ),
            "seeds beyond noise of base": "-"
            if row == "base"
            else f"{int(g.exceeds_noise.sum())} of {len(g)}",
        }
        for row in rows
        for g in [bleu_tests[bleu_tests.row == row].sort_values("seed")]
    ]
)
viz.show_table(bleu_intervals)

# %%
compared = bleu_tests[bleu_tests.row != "base"]
beyond = int(compared.exceeds_noise.sum())
steady = {row: bool(g.exceeds_noise.all()) for row, g in compared.groupby("row")}
always = [row for row in rows if steady.get(row)]
display(
    Markdown(
        f"Over all rows and seeds, greedy sacreBLEU on these {len(bleu_references):,} "
        f"sentences lies between {bleu_tests.bleu.min():.2f} and {bleu_tests.bleu.max():.2f}, "
        f"each with an interval of ±{bleu_tests.ci95.min():.2f} to ±{bleu_tests.ci95.max():.2f}. "
        f"Of the {len(compared)} differences from base (rows × seeds), "
        f"{beyond} {'exceeds' if beyond == 1 else 'exceed'} the resampling noise, where "
        f"chance alone (p < 0.05) would give about {0.05 * len(compared):.1f}. "
        + (
            f"Beyond the noise in every seed: {', '.join(always)}."
            if always
            else "No row differs from base beyond the noise in every seed: at this scale "
            "BLEU does not tell the rows from base."
        )
        + " The verdicts of section 6.5 rest on perplexity."
    )
)

# %% [markdown]
# The numbers live on different scales (the paper's perplexities are near 5 after 100,000 steps
# on 4.5 million sentence pairs; ours come from a few hundred small steps), so the chart compares
# *differences from base*, ours beside the paper's: for perplexity the change in percent of base's
# (a perplexity of 200 moves by more points than one of 5 for the same relative change), for BLEU
# the change in points. The whiskers on our bars span the differences between seeds: from the
# row's lowest seed against base's highest to its highest against base's lowest. Rows whose
# whisker crosses zero are within seed noise of base. Our BLEU bars are pale where the row is
# within the resampling noise of base in at least one seed (the table above).

# %%
base_row = table.set_index("row").loc["base"]
PPL, BLEU = "perplexity (lower is better)", "BLEU (higher is better)"


def percent(ppl, base_ppl):
    return 100 * (ppl / base_ppl - 1)


paper_base = paper.TABLE3["base"].ppl
differences = pd.DataFrame(
    [
        difference
        for r in table.itertuples()
        if r.row != "base"
        for difference in (
            dict(
                row=r.row,
                metric=PPL,
                who="ours",
                diff=percent(r.ppl, base_row.ppl),
                low=percent(r.ppl_min, base_row.ppl_max),
                high=percent(r.ppl_max, base_row.ppl_min),
            ),
            dict(
                row=r.row, metric=PPL, who="paper", diff=percent(r.paper_ppl, paper_base)
            ),
            dict(
                row=r.row,
                metric=BLEU,
                who="ours",
                diff=r.bleu_minus_base,
                faded=not steady[r.row],
                low=r.bleu_min - base_row.bleu_max,
                high=r.bleu_max - base_row.bleu_min,
            ),
            dict(row=r.row, metric=BLEU, who="paper", diff=r.paper_bleu_minus_base),
        )
    ]
)
viz.show(
    viz.table3_differences_chart(
        differences, rows, {PPL: "% change from base", BLEU: "points minus base"}
    )
)

# %% [markdown]
# ## 6.4 Do the rows come in the same order?
#
# Differences of size aside, the question a small run can answer is whether the rows *rank* as in
# the paper: Spearman's rank correlation between our mean perplexities and the paper's, over the
# rows trained here. It is Pearson's correlation of the ranks: +1 when the two orderings agree
# exactly, 0 when they are unrelated, -1 when one is the other reversed. The package computes it
# with no statistics library; here it is checked against pandas' ranking:

# %%
viz.show_source(variations.spearman)

# %% [markdown]
# Chance has a size here too: two unrelated orderings of a few rows often correlate by accident.
# `variations.spearman_p_value` says how often: the share of unrelated orderings (every
# permutation of the rows when they are few, many random permutations otherwise) whose
# correlation is at least as large in size as ours; `variations.spearman_critical`, the smallest
# size that chance reaches less than 5% of the time.

# %%
rho_ppl = variations.spearman(table.ppl, table.paper_ppl)
rho_bleu = variations.spearman(table.bleu, table.paper_bleu)
ranked = table[["ppl", "paper_ppl"]].rank()
assert math.isclose(rho_ppl, ranked.ppl.corr(ranked.paper_ppl), abs_tol=1e-12)
critical = variations.spearman_critical(len(rows))
p_ppl = variations.spearman_p_value(rho_ppl, len(rows))
p_bleu = variations.spearman_p_value(rho_bleu, len(rows))
display(
    Markdown(
        f"Spearman rank correlation over {len(rows)} rows: perplexity **{rho_ppl:+.2f}** "
        f"(p = {p_ppl:.2f}), BLEU **{rho_bleu:+.2f}** (p = {p_bleu:.2f}). "
        + (
            f"With {len(rows)} rows, a correlation must be at least {critical:.2f} in size "
            "before chance alone (unrelated orderings) becomes unlikely (p < 0.05)."
            if critical is not None
            else f"With {len(rows)} rows even a perfect ordering arises by chance more than "
            "5% of the time, so no correlation here can say anything."
        )
    )
)

# %% [markdown]
# A correlation near +1 would say that at our scale the rows already rank as in the paper; near 0,
# that the ordering seen at this profile's scale tells little about the ordering at the paper's.
#
# ## 6.5 The paper's findings, one verdict each
#
# Each finding is a set of comparisons of perplexity between rows (one head: A1 against base; too
# many heads: A4 against base; small keys: B1 against base; bigger is better: the smallest against
# the largest model of each size that the C rows vary, C1 against C3, C4 against C5, C6 against C7;
# dropout: D1, without dropout, against base; positions: E against base). Perplexity decides: it is
# measured on the whole validation split, and it is what training lowers first, long before
# greedy translations score much BLEU; BLEU is in the table and the chart beside it. The rule, in
# the package:

# %%
viz.show_source(variations.compare)

# %%
ppl_by_row = {
    row: measured[measured.row == row].sort_values("seed").ppl.tolist() for row in rows
}
verdicts = [variations.verdict(finding, ppl_by_row) for finding in variations.FINDINGS]
verdict_table = pd.DataFrame(
    [
        dict(finding=v["finding"], verdict=v["verdict"], evidence=v["reason"])
        for v in verdicts
    ]
)
viz.show_table(verdict_table)
kinds = (variations.HOLDS, variations.DOES_NOT_HOLD, variations.CANNOT_TELL)
assert all(v["verdict"] in kinds for v in verdicts)
counts = verdict_table.verdict.value_counts()
print(", ".join(f"{counts.get(k, 0)} {k}" for k in kinds))

# %% [markdown]
# How to read the verdicts:
#
# - **holds**: every comparison goes the paper's way by more than the seeds disagree with one
#   another;
# - **does not hold**: at least one comparison goes against the paper by more than the seed spread;
#   at this scale the finding is contradicted, which says something about small models trained
#   briefly, not that the paper is wrong at its own scale;
# - **cannot tell at this scale**: the difference is smaller than the seed noise (or a row was not
#   trained under this profile), so the run cannot decide.
#
# Why scale changes the answers: a few hundred steps of a few hundred tokens is a small part of one
# pass over Multi30k, where the paper took 100,000 steps of 25,000 tokens. Early in training a model
# is limited by how fast it learns, not by how well it can fit: a wider model with the paper's
# learning-rate rule learns at a different pace, and depth or width may help or hurt for reasons
# that have nothing to do with capacity. Regularisers such as dropout {cite:p}`srivastava2014dropout`
# pay off only once a model starts to fit its training data too well; before that they only add
# noise to the gradients, so "dropout helps" is a claim about long training that a short run is not
# placed to confirm. Label smoothing {cite:p}`szegedy2016labelsmoothing` raises perplexity by design
# (the model is taught to be less sure). And the big model was trained 300,000 steps in the paper,
# three times longer than the other rows; here it has the same steps as every other row. A verdict is
# a statement about this scale.

# %%
if settings.name != "gpu":
    gpu_book = get_profile("gpu").book
    gpu_record = results.read_result("model_variations", "gpu")
    display(
        Markdown(
            f"The `gpu` profile runs these cells with widths divided by "
            f"{gpu_book.table3_width_divisor} (here {scale.width}), depths by "
            f"{gpu_book.table3_depth_divisor} (here {scale.depth}) and "
            f"{gpu_book.table3_steps:,} steps per row (here {steps:,}); "
            + (
                "its results are in `results/gpu/model_variations.json`, "
                + results.describe_provenance(gpu_record)
                + "."
                if gpu_record
                else "no results of it are committed yet, so this book gives no verdicts "
                "at that scale."
            )
        )
    )

# %% [markdown]
# ## What this chapter wrote
#
# `results/<profile>/model_variations.json` holds, for every row, the mean perplexity and BLEU,
# their values per seed, the differences from base with their seed intervals, each BLEU's 95%
# bootstrap interval and whether its difference from base exceeds that noise, and the parameter
# count (the introduction's reproduction summary reads `rows.base.ppl` and
# `rows.A1.bleu_minus_base`); the rank correlations with their p-values, and the verdicts. Its
# `config` holds what every row trained with: the scaled model configuration (positions and
# warm-up included) and the training settings.


# %%
def by_seed(row: str, column: str, frame: pd.DataFrame = measured) -> list:
    return frame[frame.row == row].sort_values("seed")[column].tolist()


def trained_with(row: str) -> dict:
    """The configuration and training settings the row's runs trained with (seed aside)."""
    config = variations.row_config(row, table3_profile, scale, steps)
    train = variations.row_settings(table3_profile, config, steps, seed=1).to_dict()
    return {
        "model": config.to_dict(),
        "train": {k: v for k, v in train.items() if k != "seed"},
    }


metrics = {
    "rows": {
        r.row: {
            "ppl": round(r.ppl, 3),
            "ppl_min": round(r.ppl_min, 3),
            "ppl_max": round(r.ppl_max, 3),
            "ppl_seeds": [round(x, 3) for x in by_seed(r.row, "ppl")],
            "bleu": round(r.bleu, 2),
            "bleu_min": round(r.bleu_min, 2),
            "bleu_max": round(r.bleu_max, 2),
            "bleu_seeds": [round(x, 2) for x in by_seed(r.row, "bleu")],
            "ppl_minus_base": round(r.ppl_minus_base, 3),
            "ppl_minus_base_seed_interval": [
                round(r.ppl_minus_base_low, 3),
                round(r.ppl_minus_base_high, 3),
            ],
            "bleu_minus_base": round(r.bleu_minus_base, 2),
            "bleu_ci95_seeds": by_seed(r.row, "ci95", bleu_tests),
            "bleu_beyond_noise_of_base_seeds": by_seed(r.row, "exceeds_noise", bleu_tests)
            if r.row != "base"
            else None,
            "params_m": round(r.params / 1e6, 4),
            "config": variations.row_config(
                r.row, table3_profile, scale, steps
            ).to_dict(),
            "train_s": round(float(seconds.loc[r.row, "train_s"]), 2),
        }
        for r in table.itertuples()
    },
    "spearman_ppl": rho_ppl,
    "spearman_ppl_p_value": p_ppl,
    "spearman_bleu": rho_bleu,
    "spearman_bleu_p_value": p_bleu,
    "spearman_critical_p05": critical,
    "verdicts": {
        v["finding"]: {"verdict": v["verdict"], "reason": v["reason"]} for v in verdicts
    },
    "dataset": f"{settings.corpus} {settings.src_lang}->{settings.tgt_lang}, "
    f"{settings.valid_split} split",
    "steps": steps,
    "seeds": n_seeds,
    "scale": {"width_divisor": scale.width, "depth_divisor": scale.depth},
    "batch_tokens": table3_profile.batch_tokens,
    "vocab_size": vocab_size,
    "bleu": f"sacreBLEU, greedy translations of the first {len(bleu_sources)} validation sentences",
    "ppl": f"per subword on all {len(data.valid)} pairs of the validation split",
    "train_seconds": round(train_seconds, 1),
}
path = results.write_result(
    "model_variations",
    metrics,
    profile=settings.name,
    config={
        "profile": table3_profile.to_dict(),
        "rows": {row: trained_with(row) for row in rows},
    },
    device=torch_device,
    wall_time_s=round(time.perf_counter() - chapter_start, 1),
)
record = results.read_result("model_variations", settings.name)
assert record is not None
assert (
    results.lookup(record["metrics"], "rows.base.ppl") == metrics["rows"]["base"]["ppl"]
)
assert set(record["metrics"]["rows"]) == set(rows)
base_trained = record["config"]["rows"]["base"]
assert base_trained["model"]["warmup_steps"] == base_trained["train"]["warmup_steps"]
assert base_trained["model"]["max_len"] == table3_profile.model_config().max_len
assert len(record["metrics"]["verdicts"]) == len(variations.FINDINGS)
if "A1" in rows:
    assert math.isclose(
        results.lookup(record["metrics"], "rows.A1.bleu_minus_base"),
        round(table.set_index("row").loc["A1", "bleu_minus_base"], 2),
    )
print(
    f"wrote {path.parent.name}/{path.name} under the results folder (chapter: "
    f"{time.perf_counter() - chapter_start:.0f} s, of which {train_seconds:.0f} s training and "
    f"scoring rows)"
)

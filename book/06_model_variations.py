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

from annotated_transformer import pipeline
from annotated_transformer.book import viz
from annotated_transformer.data import load_parallel
from annotated_transformer.evaluation import paper, results
from annotated_transformer.evaluation.scoring import paired_bootstrap
from annotated_transformer.experiments import findings, table3_report, variations
from annotated_transformer.model import flops
from annotated_transformer.model.config import TABLE3_ALL_ROWS
from annotated_transformer.model.transformer import Transformer, count_parameters
from annotated_transformer.profiles import Table3Scale, get_profile
from annotated_transformer.runtime.devices import resolve_device

# %% tags=["parameters"]
profile_name = "cpu"  # smoke | cpu | gpu | paper
device = "auto"  # "auto" picks CUDA when a GPU is visible
data_dir = None  # None: $AT_DATA_DIR, then a download
epochs = None  # None: the profile's epochs per Table 3 row
seeds = None  # None: the profile's number of seeds per row
first_seed = 1  # the seeds are first_seed, first_seed + 1, ...
# processes training rows side by side on a CPU; None: one per core (1 on a GPU)
workers = None
# the results file's name (another, for a rerun with other seeds)
results_name = "model_variations"

# %%
profile = get_profile(profile_name)
scales = profile.book
# The data of every row: the profile's corpus, with the Table 3 vocabulary and batches where set.
table3_profile = profile.replace(
    vocab_size=scales.table3.vocab_size or profile.vocab_size,
    batch_tokens=scales.table3.batch_tokens or profile.batch_tokens,
)
rows = list(scales.table3.rows)
n_epochs = int(epochs or scales.table3.epochs)
seed_list = list(
    range(int(first_seed), int(first_seed) + int(seeds or scales.table3.seeds))
)
scale = variations.scale_of(table3_profile)
overfit_rows = [r for r in ("base", "D1", "D2") if r in TABLE3_ALL_ROWS]
overfit_share, overfit_epochs = scales.table3.overfit_share, scales.table3.overfit_epochs
torch_device = resolve_device(device)
if profile.threads:
    torch.set_num_threads(profile.threads)
chapter_start = time.perf_counter()
print(
    f"under profile {profile.name!r} this chapter trains {len(rows)} rows ({', '.join(rows)}) "
    f"x {len(seed_list)} seeds for {n_epochs} epoch(s) each, and {', '.join(overfit_rows)} for "
    f"{overfit_epochs} epochs of 1/{overfit_share} of the pairs; widths / {scale.width}, depths / "
    f"{scale.depth}, heads / {scale.heads}, on {torch_device}"
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

# The rows apply the paper's change at the scaled size, with no head narrower than 8.
base_config = scale.config("base")
assert all(
    min(scale.config(r).d_k, scale.config(r).d_v) >= variations.MIN_HEAD_DIM for r in rows
)
if "A1" in rows:
    a1 = scale.config("A1")
    assert a1.n_heads == 1 and a1.d_k == base_config.d_model
for row in ("A2", "A3", "A4"):
    if row in rows:
        c = scale.config(row)
        assert c.n_heads * c.d_k == base_config.d_model == c.d_model
for row in ("B1", "B2"):
    if row in rows:
        ratio = variations.paper_config(row).d_k / variations.paper_config("base").d_k
        assert scale.config(row).d_k == ratio * base_config.d_k
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
    f"{b.n_heads} heads of d_k {b.d_k}; {params['base'] / 1e6:.2f}M parameters "
    f"with a {vocab_size:,}-piece vocabulary"
)
missing = [r for r in TABLE3_ALL_ROWS if r not in rows]
extra = [r for r in rows if r not in findings.finding_rows()]
unread = [r for r in missing if r in findings.finding_rows()]
if missing:
    display(
        Markdown(
            f"This profile trains {len(rows)} of the {len(TABLE3_ALL_ROWS)} rows: "
            + (
                "those the six findings compare on the whole corpus (`findings.finding_rows`)"
                if not unread
                else "enough for every one of the six findings to compare at least one pair "
                f"on the whole corpus; of the rows the findings read it leaves out "
                f"{', '.join(unread)}, and the comparisons of those rows are skipped"
            )
            + (
                f", and {', '.join(extra)} for the table beside the paper's"
                if extra
                else ""
            )
            + " (dropout's finding is read on a small corpus, section 6.3). It leaves out "
            f"{', '.join(missing)}; the `gpu` profile trains all rows."
        )
    )
# Every finding keeps at least one pair of trained rows (smoke, a plumbing check, excepted).
assert profile.name == "smoke" or all(
    any({a, b} <= set(rows) for a, b in f.pairs) for f in findings.FINDINGS
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
# few candidates for part of an epoch and keeps base's best among those under which C3 ends no worse
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
committed = results.committed_root()
calibration = committed and results.read_result(
    "calibration", f"tuning_table3_{profile.name}", committed
)
if calibration:
    tried = pd.DataFrame(calibration["metrics"]["runs"])
    tried = (
        tried.pivot(index="candidate", columns="row", values="ppl")
        .reset_index()
        .rename_axis(columns=None)[["candidate", "base", "C1", "C3"]]
    )
    viz.show_table(tried, base="{:.1f}", C1="{:.1f}", C3="{:.1f}")
    display(
        Markdown(
            f"Validation perplexity after {calibration['metrics']['share_of_epoch']:g} epoch "
            f"of each candidate (warm-up steps:peak rate); chosen: "
            f"**{calibration['metrics']['chosen']}** by the rule: "
            f"{calibration['metrics']['rule']} ("
            + results.describe_provenance(calibration)
            + f"). This profile trains every row with warm-up {scales.table3.warmup_steps} and "
            f"peak {scales.table3.peak_lr:g}, at batches of {table3_profile.batch_tokens:,} tokens."
        )
    )
    calibrated = Table3Scale.recorded(calibration["config"]["profile"]["book"])
    if calibrated.batch_tokens == scales.table3.batch_tokens:
        warmup, peak = calibration["metrics"]["chosen"].split(":")
        assert (int(warmup), float(peak)) == (
            scales.table3.warmup_steps,
            scales.table3.peak_lr,
        ), "the profile's Table 3 warm-up and peak are not the calibration's choice"
else:
    display(
        Markdown(
            f"No calibration of this profile's warm-up ({scales.table3.warmup_steps}) and peak "
            f"({scales.table3.peak_lr}) is committed; the curves of C1 and C3 in section 6.3 "
            "show whether the deepest row trains."
        )
    )

# %% [markdown]
# Half an epoch is short of what the rows train, so the rule was run again over a whole epoch, with
# lower peaks and longer warm-ups among the candidates. Beside it is a diagnostic that is not a row
# of the table: base, C1 and C3 with the norm before each sub-layer (pre-norm) at the chosen warm-up
# and peak (`table3_calibration.py --norm-position pre`). If depth helps there and not in the
# paper's post-norm stack, what the depth rows measure at this budget is how fast a post-norm stack
# gets going, not what depth buys.

# %%
whole_epoch = committed and results.read_result(
    "calibration_epoch1", f"tuning_table3_{profile.name}", committed
)
pre_norm = committed and results.read_result(
    "calibration_epoch1_prenorm", f"tuning_table3_{profile.name}", committed
)
same_batches = (
    whole_epoch
    and pre_norm
    and all(
        Table3Scale.recorded(r["config"]["profile"]["book"]).batch_tokens
        == scales.table3.batch_tokens
        for r in (whole_epoch, pre_norm)
    )
)
if whole_epoch and not same_batches:
    display(
        Markdown(
            "The committed whole-epoch grid was run at other batches than this profile's; it is "
            "not shown. Rerun `scripts/table3_calibration.py --epochs 1` for this profile."
        )
    )
if calibration and same_batches:
    chosen = calibration["metrics"]["chosen"]
    post_runs = pd.DataFrame(whole_epoch["metrics"]["runs"])
    pre_runs = pd.DataFrame(pre_norm["metrics"]["runs"])
    grid = (
        pd.concat(
            [
                post_runs.assign(norm="post (the paper's)"),
                pre_runs.assign(norm="pre (diagnostic)"),
            ]
        )
        .pivot(index=["norm", "candidate"], columns="row", values="ppl")
        .reset_index()
        .rename_axis(columns=None)[["norm", "candidate", "base", "C1", "C3"]]
    )
    viz.show_table(grid, base="{:.1f}", C1="{:.1f}", C3="{:.1f}")
    by = post_runs.pivot(index="candidate", columns="row", values="ppl")
    pre_at = pre_runs[pre_runs.candidate == chosen].set_index("row").ppl
    assert by.base.idxmin() == chosen, "the whole epoch picks another candidate for base"
    deeper_wins = by.index[by.C3 <= by.C1].tolist()
    display(
        Markdown(
            f"After a whole epoch, post-norm at {chosen}: base {by.base[chosen]:.1f}, C1 "
            f"{by.C1[chosen]:.1f}, C3 {by.C3[chosen]:.1f}; base is best at {chosen} again. "
            + (
                f"Only {', '.join(deeper_wins)} {'ends' if len(deeper_wins) == 1 else 'end'} "
                f"C3 no worse than C1, with base at {by.base[deeper_wins].min():.1f} at best, so "
                "that rule would buy depth's order with models that learned less; the choice "
                "stays with base's best. "
                if deeper_wins
                else "No candidate ends C3 no worse than C1. "
            )
            + f"Pre-norm at {chosen}: base {pre_at.base:.1f}, C1 {pre_at.C1:.1f}, C3 "
            f"{pre_at.C3:.1f}: "
            + (
                "there the deepest stack ends below the one-layer one, so the post-norm depth "
                "comparison at this budget measures how fast a post-norm stack gets going "
                "rather than what depth buys."
                if pre_at.C3 < pre_at.C1
                else "depth does not help there either at this budget."
            )
            + " ("
            + results.describe_provenance(whole_epoch)
            + ")"
        )
    )

# %%
viz.show_source(variations.row_settings)
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
print(
    f"{len(data.train):,} training pairs ({target_tokens:,} target tokens an epoch), "
    f"{len(data.valid):,} validation pairs for perplexity, {len(bleu_sources):,} validation "
    f"sentences for BLEU; batches of about {table3_profile.batch_tokens:,} tokens; dropout's "
    f"small corpus: the first {overfit_pairs:,} pairs"
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


# %%
def training_flops(row: str, tokens: float) -> float:
    """Training FLOPs of `tokens` target tokens of row `row` (model/flops.py's count)."""
    config = scale.config(row)
    per_token = flops.training_flops_per_target_token(
        config, vocab_size, mean_src, mean_tgt
    )
    return per_token * tokens


CURVE_POINTS = 4  # validation perplexities per run on the whole corpus
plan = [
    dict(row=row, seed=seed, epochs=n_epochs, curve_points=CURVE_POINTS, bleu=True)
    for seed in seed_list
    for row in rows
] + [
    dict(
        row=row,
        seed=seed,
        epochs=overfit_epochs,
        corpus="small",
        train_pairs=overfit_pairs,
        curve_points=overfit_epochs,
    )
    for seed in seed_list
    for row in overfit_rows
]
share = {"full": 1.0, "small": overfit_pairs / len(data.train)}
plan.sort(
    key=lambda job: (
        -training_flops(
            job["row"], job["epochs"] * target_tokens * share[job.get("corpus", "full")]
        )
    )
)
if workers is None:
    workers = (os.cpu_count() or 1) if torch_device.type == "cpu" else 1
workers = max(1, min(int(workers), len(plan)))
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
            progress.update(
                Markdown(
                    f"Table 3 runs: {len(runs)} of {len(plan)} in "
                    f"{time.perf_counter() - train_start:.0f} s (last: {run.row}, seed "
                    f"{run.seed}, {run.corpus} corpus, validation perplexity {run.ppl:.1f})"
                )
            )
finally:
    torch.set_num_threads(threads)
train_seconds = time.perf_counter() - train_start
measured = pd.DataFrame([r.to_dict() for r in runs])
full = measured[measured.corpus == "full"]
small = measured[measured.corpus == "small"]
assert len(full) == len(rows) * len(seed_list) and len(small) == len(overfit_rows) * len(
    seed_list
)
assert (full.epochs >= n_epochs - 1e-6).all() and (
    small.epochs >= overfit_epochs - 1e-6
).all()
assert np.isfinite(measured.ppl).all() and (measured.ppl > 1).all()
assert all(full[full.row == row].params.nunique() == 1 for row in rows)
at_once = (measured.train_s + measured.eval_s).sum() / train_seconds
summary = (
    f"{len(runs)} runs in {train_seconds:.0f} s on {workers} process(es): per run on the whole "
    f"corpus, {full.train_s.min():.0f}-{full.train_s.max():.0f} s of training and "
    f"{full.eval_s.mean():.0f} s of greedy translation; the runs' times add up to "
    f"{at_once:.1f} times the wall time"
)
if progress is not None:
    progress.update(Markdown(summary))
else:
    print(summary)

# %% [markdown]
# ## 6.3 Validation curves
#
# Each run's validation perplexity (per subword, on the whole validation split) as it trains, the
# mean over seeds of the log perplexity; one panel per group of rows, base in each. A finding can
# only be read once its rows have stopped moving relative to one another; the curves show whether
# they have.


# %%
def curves(frame: pd.DataFrame) -> pd.DataFrame:
    """Per run and curve point: row, seed, point index, nominal epoch and validation perplexity."""
    points = [
        dict(
            row=run.row,
            seed=run.seed,
            point=i,
            epoch=round(run.epochs * (i + 1) / len(run.curve), 3),
            ppl=point["ppl"],
        )
        for run in frame.itertuples()
        for i, point in enumerate(run.curve)
    ]
    return pd.DataFrame(points)


def mean_curve(points: pd.DataFrame) -> pd.DataFrame:
    """The geometric mean over seeds at each curve point."""
    return (
        points.assign(log_ppl=np.log(points.ppl))
        .groupby(["row", "point", "epoch"], as_index=False)
        .log_ppl.mean()
        .assign(ppl=lambda d: np.exp(d.log_ppl))
    )


full_curves, small_curves = curves(full), curves(small)
GROUPS = {
    "heads and key size (A, B)": ["base", "A1", "A2", "A3", "A4", "B1", "B2"],
    "depth, width, feed-forward (C)": [
        "base",
        "C1",
        "C2",
        "C3",
        "C4",
        "C5",
        "C6",
        "C7",
        "big",
    ],
    "regularisation and positions (D, E)": ["base", "D1", "D2", "D3", "D4", "E"],
}


def group_panels(mean_curves: pd.DataFrame):
    """Mean validation curves (columns row, epoch, ppl), one panel per group of rows."""
    return viz.side_by_side(
        *[
            viz.line_chart(
                mean_curves[mean_curves.row.isin(members)],
                "epoch",
                "ppl",
                "row",
                title=title,
                x_title="epochs of the training split",
                y_title="validation perplexity",
                log_y=True,
                points=True,
                width=180,
                height=240,
            )
            for title, members in GROUPS.items()
        ]
    )


viz.show(group_panels(mean_curve(full_curves)))

# %% [markdown]
# ### Where dropout can help: a small corpus, many epochs
#
# Within one epoch every batch is new to the model, so there is nothing to overfit and dropout can
# only slow learning down. Dropout's finding is a claim about a model that fits its training data
# too well {cite:p}`srivastava2014dropout`, so the chapter reads it where that happens: base
# (dropout 0.1), D1 (none) and D2 (0.2) trained on a small share of the training pairs for many
# epochs, with the validation perplexity measured after every epoch.

# %%
small_mean = mean_curve(small_curves)
viz.show(
    viz.line_chart(
        small_mean,
        "epoch",
        "ppl",
        "row",
        title=f"the first {overfit_pairs:,} training pairs",
        x_title="epochs of the small corpus",
        y_title="validation perplexity",
        log_y=True,
        points=True,
    )
)
lowest = small_mean.loc[small_mean.groupby("row").ppl.idxmin()].set_index("row")
last = small_mean[small_mean.point == small_mean.point.max()].set_index("row")
dropout_of = {r: scale.config(r).dropout for r in overfit_rows}
display(
    Markdown(
        "; ".join(
            f"{r} (dropout {dropout_of[r]:g}) is lowest at epoch {lowest.loc[r, 'epoch']:g} "
            f"({lowest.loc[r, 'ppl']:.1f}) and ends at {last.loc[r, 'ppl']:.1f}, "
            f"{100 * (last.loc[r, 'ppl'] / lowest.loc[r, 'ppl'] - 1):.1f}% above its lowest"
            for r in overfit_rows
        )
        + ". A row that ends above its lowest point has begun to overfit."
    )
)

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
# The statistics are in `experiments/findings.py`:
#
# - every run of a corpus goes into one model: log perplexity = row effect + seed effect + noise.
#   All rows' runs of one seed saw the same batches, so a seed is a **block** whose luck is shared by
#   every row; the model removes it and estimates one noise level from all the runs (ordinary least
#   squares in statsmodels). A comparison is the difference of two row effects, shown as a change
#   in percent of perplexity, with a Student-t interval whose degrees of freedom come from the whole
#   table: (rows - 1) x (seeds - 1), 20 for 11 rows of 3 seeds, where one pair's own three seeds
#   give 2. The price is an assumption that every row is about as noisy as every other;
# - beside each interval, the **detectable** change: the true difference the test would find four
#   times in five at its level. A comparison that "cannot tell" with a detectable change of 5% says
#   that any effect is probably smaller than 5%, which is a result too;
# - the comparisons of the six findings form one family corrected with **Holm's** method, so
#   the chance that any verdict of a budget is wrong by chance stays under 5%: with all eight, the
#   comparison with the smallest p-value is tested at 5%/8, the next at 5%/7, and so on until one
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

# %%
BUDGETS = (0.25, 0.5, 1.0)  # shares of each run's training, read from its curve


def ppl_at(points: pd.DataFrame, fraction: float, n_points: int) -> tuple[dict, float]:
    """`{row: {seed: ppl}}` at the curve point `fraction` of the way through, and its epoch."""
    part = points[points.point == max(0, round(n_points * fraction) - 1)]
    by_row = {
        row: {int(s): float(p) for s, p in zip(g.seed, g.ppl)}
        for row, g in part.groupby("row")
    }
    return by_row, float(part.epoch.iloc[0])


budgets = []
for fraction in BUDGETS:
    full_ppl, full_epoch = ppl_at(full_curves, fraction, CURVE_POINTS)
    small_ppl, small_epoch = ppl_at(small_curves, fraction, overfit_epochs)
    budgets.append(
        dict(
            label=table3_report.budget_label(full_epoch, small_epoch, overfit_share),
            full_epoch=full_epoch,
            small_epoch=small_epoch,
            findings=findings.assess(
                findings.FINDINGS, {"full": full_ppl, "small": small_ppl}
            ),
        )
    )
extended_path = (
    committed / f"table3_extended_{profile.name}" / table3_report.EXTENDED_NAME
    if committed
    else None
)
extended_run = (
    table3_report.read_extended(extended_path)
    if extended_path and extended_path.is_file()
    else None
)
extended_budgets = table3_report.extended_budgets(extended_run) if extended_run else []


def small_curves_until(curves: dict, epoch: float) -> dict:
    """Mean small-corpus curves cut at `epoch` (a budget sees only its own epochs)."""
    return {row: list(c)[: int(epoch)] for row, c in curves.items()}


live_small = {
    row: list(g.sort_values("point").ppl) for row, g in small_mean.groupby("row")
}
said = [("This run", budgets[-1]["label"], budgets[-1]["findings"])]
notes = [
    {
        "dropout helps": table3_report.overfit_note(
            small_curves_until(live_small, budgets[-1]["small_epoch"])
        )
    }
]
if extended_budgets:
    longest = extended_budgets[-1]
    said.append(("The extended run", longest["label"], longest["findings"]))
    notes.append(
        {
            "dropout helps": table3_report.overfit_note(
                small_curves_until(
                    table3_report.mean_curves(extended_run, "small"),
                    longest["small_epoch"],
                )
            ),
            "bigger is better": table3_report.overtake_note(
                table3_report.mean_curves(extended_run), "C1", "C3"
            ),
        }
    )

# %% [markdown]
# ### What the runs show
#
# First the verdicts in words, at this run's longest budget and, where a longer run of the same
# rows is committed for this profile, at that run's longest; the tables after them give every
# comparison at every budget. Each sentence names the two rows, the change in perplexity from the
# second to the first, and its interval; a finding "cannot be told" when the interval allows both
# directions, and then the sentence says how large a change the runs could have found.

# %%
display(Markdown(table3_report.conclusion(said, notes)))

# %%
verdict_table = pd.DataFrame(
    [
        {"finding": f.name} | {b["label"]: b["findings"][i]["verdict"] for b in budgets}
        for i, f in enumerate(findings.FINDINGS)
    ]
)
viz.show_table(verdict_table)


def cell(comparison: dict) -> str:
    """A comparison's verdict, mean change and interval at its Holm level."""
    if not comparison["trained"]:
        return f"not compared: {comparison['reason']} under this profile"
    return f"{comparison['verdict']}: {findings.describe(comparison).split(': ', 1)[1]}"


comparison_table = pd.DataFrame(
    [
        {"finding": f.name, "comparison": f"{first} vs {second}"}
        | {b["label"]: cell(b["findings"][i]["comparisons"][j]) for b in budgets}
        for i, f in enumerate(findings.FINDINGS)
        for j, (first, second) in enumerate(f.pairs)
    ]
)
viz.show_table(comparison_table)
for b in budgets:
    assert all(r["verdict"] in findings.VERDICTS for r in b["findings"])
    for r in b["findings"]:
        for c in r["comparisons"]:
            if c["verdict"] == findings.HOLDS and r["kind"] == "worse":
                assert c["interval_pct"][0] > 0
final = budgets[-1]["findings"]
n_compared = sum(c["trained"] for r in final for c in r["comparisons"])
counts = pd.Series([r["verdict"] for r in final]).value_counts()
changed = [
    f.name
    for i, f in enumerate(findings.FINDINGS)
    if len({b["findings"][i]["verdict"] for b in budgets}) > 1
]
display(
    Markdown(
        f"The tie's margin: ±{findings.percent(findings.TIE_MARGIN):.1f}% of perplexity. "
        f"At the longest budget ({budgets[-1]['label']}): "
        + ", ".join(f"{counts.get(k, 0)} {k}" for k in findings.VERDICTS)
        + ". "
        + (
            f"Verdicts that change between the budgets: {', '.join(changed)}."
            if changed
            else "No verdict changes between the budgets."
        )
    )
)


# %% [markdown]
# Why a verdict moves with the budget shows in the curves: a comparison can change sign as the rows
# train. For every comparison, the epochs at which the order of the two rows' mean curves changes:


# %%
def order_changes(points: pd.DataFrame, first: str, second: str) -> list[float]:
    """The epochs at which the mean curves of `first` and `second` swap order."""
    curve = mean_curve(points[points.row.isin([first, second])])
    wide = curve.pivot(index="epoch", columns="row", values="ppl").sort_index()
    sign = np.sign(wide[first] - wide[second])
    return [float(e) for e, a, b in zip(wide.index[1:], sign[:-1], sign[1:]) if a != b]


points_of = {"full": full_curves, "small": small_curves}
swaps = [
    (first, second, order_changes(points_of[f.corpus], first, second))
    for f in findings.FINDINGS
    for first, second in f.pairs
    if {first, second} <= set(points_of[f.corpus].row)
]
swapped = [
    f"{a} vs {b} at epoch {', '.join(f'{e:g}' for e in es)}" for a, b, es in swaps if es
]
display(
    Markdown(
        (
            "Comparisons whose rows swap order during training: "
            + "; ".join(swapped)
            + "."
            if swapped
            else "No comparison's rows swap order along the curves."
        )
        + f" Each budget is corrected for its own {n_compared} comparisons; reading three budgets is "
        "three looks at the same runs, so a verdict seen at one budget only deserves less weight "
        "than one seen at all three."
    )
)

# %% [markdown]
# ### The extended run: the same rows, trained until they settle
#
# One epoch measures how fast a row starts as much as where it ends: a deeper post-norm stack
# starts slower (section 6.2's calibration), and no row overfits in one epoch, so dropout cannot yet
# help. The extended run trains the same rows with the same settings, seeds and batches for several
# epochs, including C6 and C7, which this profile's live run leaves out, and dropout's rows for
# several times as many epochs of their small corpus:
#
# ```bash
# python -m annotated_transformer table3 --profile cpu --epochs 8 --small-epochs 40 --seeds 1 2 3 \
#     --out runs/table3-cpu --export results/table3_extended_cpu/runs.json
# ```
#
# It keeps every finished epoch of every (row, seed) in its run folder and continues from there when
# run again, so it spreads over as many sessions as it needs. Its results are committed; this page
# reads them as they are and does not retrain them. Its curves, mean over seeds:

# %%
if extended_run is None:
    display(
        Markdown(
            f"No extended run is committed for the `{profile.name}` profile "
            f"(`results/table3_extended_{profile.name}/`); run the command above to make one."
        )
    )
else:
    extended_curves = pd.DataFrame(
        [
            dict(row=row, epoch=i + 1, ppl=ppl)
            for row, curve in table3_report.mean_curves(extended_run).items()
            for i, ppl in enumerate(curve)
        ]
    )
    viz.show(group_panels(extended_curves))
    targets = extended_run["targets"]
    display(
        Markdown(
            f"Every row and seed has finished {len(extended_budgets)} of the run's "
            f"{targets['full']} epochs"
            + (
                " (it is still running: later epochs will be added)"
                if len(extended_budgets) < targets["full"]
                else ""
            )
            + f"; written {extended_run['written'][:10]} on an {extended_run['machine']}. "
            + table3_report.flattening_note(table3_report.mean_curves(extended_run))
        )
    )

# %% [markdown]
# The verdicts of the extended run after each epoch that every row and seed has finished, read with
# the same statistics as the live run:

# %%
if extended_budgets:
    viz.show_table(
        pd.DataFrame(
            [
                {"finding": f.name}
                | {
                    f"{b['full_epoch']} epoch{'s' if b['full_epoch'] > 1 else ''}": b[
                        "findings"
                    ][i]["verdict"]
                    for b in extended_budgets
                }
                for i, f in enumerate(findings.FINDINGS)
            ]
        )
    )
    viz.show_table(
        pd.DataFrame(
            [
                {"finding": f.name, "comparison": f"{first} vs {second}"}
                | {
                    extended_budgets[-1]["label"]: cell(
                        extended_budgets[-1]["findings"][i]["comparisons"][j]
                    )
                }
                for i, f in enumerate(findings.FINDINGS)
                for j, (first, second) in enumerate(f.pairs)
            ]
        )
    )

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
order = ["base"] + [row for row in rows if row != "base"]
translations = {(r.row, r.seed): r.hypotheses for r in runs if r.corpus == "full"}
bleu_tests = pd.DataFrame(
    [
        dict(seed=seed, row=row, **result)
        for seed in seed_list
        for row, result in paired_bootstrap(
            {row: translations[row, seed] for row in order}, bleu_references
        ).items()
    ]
)
scored = full.set_index(["row", "seed"]).bleu
assert all(
    math.isclose(scored[t.row, t.seed], t.bleu, abs_tol=0.01)
    for t in bleu_tests.itertuples()
)


def seed_interval(values, confidence: float = 0.95) -> tuple[float, float, float]:
    """The geometric mean of `values` and its Student-t interval over seeds (log scale)."""
    logs = np.log(np.asarray(values, dtype=float))
    half = (
        findings.t_quantile(1 - (1 - confidence) / 2, len(logs) - 1)
        * logs.std(ddof=1)
        / math.sqrt(len(logs))
    )
    mean = logs.mean()
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half)


final_ppl = {
    row: {int(s): float(p) for s, p in zip(g.seed, g.ppl)}
    for row, g in full.groupby("row")
}
table = []
for row in rows:
    ppl, low, high = seed_interval(list(final_ppl[row].values()))
    tests = bleu_tests[bleu_tests.row == row].sort_values("seed")
    base_bleu = bleu_tests[bleu_tests.row == "base"].sort_values("seed").bleu.to_numpy()
    table.append(
        dict(
            row=row,
            ppl=ppl,
            ppl_low=low,
            ppl_high=high,
            bleu=tests.bleu.mean(),
            bleu_seeds=tests.bleu.tolist(),
            bleu_ci95_seeds=tests.ci95.tolist(),
            bleu_minus_base=float((tests.bleu.to_numpy() - base_bleu).mean()),
            bleu_minus_base_seeds=(tests.bleu.to_numpy() - base_bleu).tolist(),
            beyond=None if row == "base" else tests.exceeds_noise.astype(bool).tolist(),
            params=params[row],
            paper_ppl=paper.TABLE3[row].ppl,
            paper_bleu=paper.TABLE3[row].bleu,
            paper_params_m=paper.TABLE3[row].params_m,
        )
    )
table = pd.DataFrame(table)
shown = pd.DataFrame(
    dict(
        row=table.row,
        ppl=[
            f"{p:.2f} [{lo:.2f}, {hi:.2f}]"
            for p, lo, hi in zip(table.ppl, table.ppl_low, table.ppl_high)
        ],
        paper_ppl=table.paper_ppl,
        bleu=table.bleu,
        bleu_by_seed=[
            ", ".join(viz.plus_minus(b, c) for b, c in zip(bs, cs))
            for bs, cs in zip(table.bleu_seeds, table.bleu_ci95_seeds)
        ],
        bleu_beyond_noise_of_base=[
            "-" if b is None else f"{sum(b)} of {len(b)} seeds" for b in table.beyond
        ],
        paper_bleu=table.paper_bleu,
        params_m=table.params / 1e6,
        paper_params_m=table.paper_params_m,
    )
)
viz.show_table(
    shown,
    paper_ppl="{:.2f}",
    bleu="{:.2f}",
    paper_bleu="{:.1f}",
    params_m="{:.2f}",
    paper_params_m="{:.0f}",
)
assert table.row.tolist() == rows
assert ((table.ppl_low <= table.ppl) & (table.ppl <= table.ppl_high)).all()
compared = bleu_tests[bleu_tests.row != "base"]
beyond = int(compared.exceeds_noise.sum())
display(
    Markdown(
        f"Greedy sacreBLEU on all {len(bleu_references):,} validation sentences lies between "
        f"{bleu_tests.bleu.min():.2f} and {bleu_tests.bleu.max():.2f} over rows and seeds, each "
        f"with a 95% interval of ±{bleu_tests.ci95.min():.2f} to ±{bleu_tests.ci95.max():.2f}. "
        f"Of the {len(compared)} differences from base (rows × seeds), {beyond} exceed the "
        f"resampling noise, where chance alone (p < 0.05) would give about "
        f"{0.05 * len(compared):.1f}."
    )
)

# %% [markdown]
# The perplexities live on different scales (the paper's are near 5 after 100,000 steps on 4.5
# million sentence pairs), so the chart compares *differences from base*, ours beside the paper's:
# for perplexity the change in percent, for BLEU the change in points. The whiskers on our
# perplexity bars are the 95% interval of the seed-paired difference; on our BLEU bars the range of
# the per-seed differences. Our BLEU bars are pale where the row is within the resampling noise of
# base in at least one seed.

# %%
PPL, BLEU = "perplexity (lower is better)", "BLEU (higher is better)"
paper_base = paper.TABLE3["base"]
differences = []
for r in table.itertuples():
    if r.row == "base":
        continue
    pair = findings.paired(final_ppl[r.row], final_ppl["base"])
    low, high = pair.interval(0.95)
    differences += [
        dict(
            row=r.row,
            metric=PPL,
            who="ours",
            diff=findings.percent(pair.mean),
            low=findings.percent(low),
            high=findings.percent(high),
        ),
        dict(
            row=r.row,
            metric=PPL,
            who="paper",
            diff=100 * (r.paper_ppl / paper_base.ppl - 1),
        ),
        dict(
            row=r.row,
            metric=BLEU,
            who="ours",
            diff=r.bleu_minus_base,
            faded=not all(r.beyond),
            low=min(r.bleu_minus_base_seeds),
            high=max(r.bleu_minus_base_seeds),
        ),
        dict(row=r.row, metric=BLEU, who="paper", diff=r.paper_bleu - paper_base.bleu),
    ]
viz.show(
    viz.table3_differences_chart(
        pd.DataFrame(differences),
        rows,
        {PPL: "% change from base", BLEU: "points minus base"},
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
display(
    Markdown(
        f"Spearman rank correlation of perplexities over {correlation['rows']} rows: "
        f"**{correlation['rho']:+.2f}**, 95% bootstrap interval "
        f"[{correlation['low']:+.2f}, {correlation['high']:+.2f}] "
        f"({correlation['samples']:,} resamples"
        + (
            f", {correlation['dropped']} with one side constant dropped"
            if correlation["dropped"]
            else ""
        )
        + "). "
        + (
            "The interval excludes zero: the rows rank in the paper's order more than chance would."
            if correlation["low"] > 0
            else "The interval includes zero: at this budget the ordering of the rows says little "
            "about the paper's."
            if correlation["high"] > 0
            else "The interval lies below zero: the rows rank against the paper's order."
        )
    )
)

# %%
if extended_budgets:
    ext_ppl = extended_budgets[-1]["ppl"]["full"]
    ext_rows = list(ext_ppl)
    ext_mean = [math.exp(np.mean(np.log(list(ext_ppl[r].values())))) for r in ext_rows]
    ext_correlation = findings.spearman_interval(
        ext_mean, [paper.TABLE3[r].ppl for r in ext_rows]
    )
    display(
        Markdown(
            f"The extended run, after {extended_budgets[-1]['full_epoch']} epochs, over its "
            f"{ext_correlation['rows']} rows: **{ext_correlation['rho']:+.2f}**, 95% bootstrap "
            f"interval [{ext_correlation['low']:+.2f}, {ext_correlation['high']:+.2f}]."
        )
    )
else:
    ext_correlation = None

# %% [markdown]
# ## 6.7 What the budget buys: FLOPs
#
# The cost of a profile's Table 3 is arithmetic: for every run, the training FLOPs per target token
# of its row (`model/flops.py`, the count chapter 05 uses) times the target tokens it trains on.
# This run measures how many FLOPs per second one process achieved here; the `gpu` profile's
# epochs are set from the same sum, at the rate its own recipe's run achieved on an H100
# (`results/gpu/`, a model of the size of the `gpu` profile's base row). Small models keep a GPU
# far from its peak, so the measured rate, not the data sheet, sets the time.


# %%
def table3_flops(profile_name: str, tokens_per_epoch: float, src_tgt: tuple) -> dict:
    """The training FLOPs of profile `profile_name`'s chapter 06: every row and seed on the whole
    corpus, and the overfitting runs on its small share."""
    p = get_profile(profile_name)
    book = p.book
    s = variations.scale_of(p)
    vocab = book.table3.vocab_size or p.vocab_size

    def per_token(row: str) -> float:
        return flops.training_flops_per_target_token(s.config(row), vocab, *src_tgt)

    rows_total = sum(per_token(r) for r in book.table3.rows) * book.table3.epochs
    overfit = sum(per_token(r) for r in overfit_rows) * book.table3.overfit_epochs
    total = (
        book.table3.seeds
        * tokens_per_epoch
        * (rows_total + overfit / book.table3.overfit_share)
    )
    return dict(
        profile=profile_name,
        rows=len(book.table3.rows),
        seeds=book.table3.seeds,
        epochs=book.table3.epochs,
        overfit_epochs=book.table3.overfit_epochs,
        flops=total,
    )


done_flops = sum(
    training_flops(r.row, r.epochs * target_tokens * share[r.corpus]) for r in runs
)
achieved = done_flops / measured.train_s.sum()  # per process, validation included
budget_rows = [
    table3_flops(profile.name, target_tokens, (mean_src, mean_tgt))
    | dict(flops_per_s=achieved * workers, where=f"this run, {workers} process(es)")
]
gpu_record = results.read_result("sweep_d256x4", "gpu")
if gpu_record and profile.name != "gpu":
    g = gpu_record["metrics"]
    gpu_tokens = g["target_tokens"] / g["epochs"]
    gpu_lengths = (
        mean_src / mean_tgt * gpu_tokens / len(data.train),
        gpu_tokens / len(data.train),
    )
    budget_rows.append(
        table3_flops("gpu", gpu_tokens, gpu_lengths)
        | dict(
            flops_per_s=g["training_flops"] / g["train_time_s"],
            where="the gpu recipe's run: " + results.describe_provenance(gpu_record),
        )
    )
budget = pd.DataFrame(budget_rows)
budget["minutes"] = budget.flops / budget.flops_per_s / 60
viz.show_table(budget, flops="{:.2e}", flops_per_s="{:.2e}", minutes="{:.1f}")
display(
    Markdown(
        f"This run trained {done_flops:.2e} FLOPs in {train_seconds / 60:.1f} minutes of wall "
        f"time, {achieved:.2e} FLOP/s per process."
        + (
            f" At the rate measured on an H100, the `gpu` profile's Table 3 "
            f"({budget.iloc[1].rows} rows × {budget.iloc[1].seeds} seeds × "
            f"{budget.iloc[1].epochs} epochs, and the overfitting runs) comes to "
            f"{budget.iloc[1].flops:.2e} FLOPs, about {budget.iloc[1].minutes:.0f} minutes."
            if len(budget) > 1
            else ""
        )
    )
)

# %% [markdown]
# ## What this chapter wrote
#
# `results/<profile>/model_variations.json` holds, for every row: the geometric-mean perplexity and
# its interval, the perplexity and BLEU of every seed with BLEU's bootstrap intervals, the
# difference from base and whether it exceeds the resampling noise, the parameter count, the epochs
# trained, the seeds, every seed's validation curve, and what the row trained with (its model
# configuration, warm-up, peak rate and maximum length as used). Beside them: the overfitting runs
# and their curves, the verdicts at every budget with every comparison's interval, the rank
# correlation with its bootstrap interval, and the FLOPs arithmetic. The introduction's reproduction
# summary reads `rows.base.ppl` and `rows.A1.bleu_minus_base`.


# %%
def trained_with(row: str) -> dict:
    """The configuration and training settings the row's runs trained with (seed aside)."""
    config = variations.row_config(row, table3_profile)
    train = variations.row_settings(
        table3_profile, config, epochs=n_epochs, seed=1
    ).to_dict()
    return {
        "model": config.to_dict(),
        "train": {k: v for k, v in train.items() if k != "seed"},
    }


def run_of(row: str, seed: int, corpus: str = "full"):
    return next(r for r in runs if (r.row, r.seed, r.corpus) == (row, seed, corpus))


metrics = {
    "rows": {
        r.row: {
            "ppl": round(r.ppl, 3),
            "ppl_ci95": [round(r.ppl_low, 3), round(r.ppl_high, 3)],
            "ppl_seeds": [round(final_ppl[r.row][s], 3) for s in seed_list],
            "bleu": round(r.bleu, 2),
            "bleu_seeds": [round(x, 2) for x in r.bleu_seeds],
            "bleu_ci95_seeds": r.bleu_ci95_seeds,
            "bleu_minus_base": round(r.bleu_minus_base, 2),
            "bleu_beyond_noise_of_base_seeds": r.beyond,
            "params_m": round(r.params / 1e6, 4),
            "seeds": seed_list,
            "epochs": [run_of(r.row, s).epochs for s in seed_list],
            "steps": [run_of(r.row, s).steps for s in seed_list],
            "curves": {str(s): run_of(r.row, s).curve for s in seed_list},
            "train_s": [round(run_of(r.row, s).train_s, 1) for s in seed_list],
            "trained_with": {
                "warmup_steps": run_of(r.row, seed_list[0]).warmup_steps,
                "peak_lr": run_of(r.row, seed_list[0]).peak_lr,
                "max_len": table3_profile.model_config().max_len,
                "batch_tokens": table3_profile.batch_tokens,
            },
        }
        for r in table.itertuples()
    },
    "overfit": {
        row: {
            "train_pairs": overfit_pairs,
            "seeds": seed_list,
            "epochs": [run_of(row, s, "small").epochs for s in seed_list],
            "ppl_seeds": [round(run_of(row, s, "small").ppl, 3) for s in seed_list],
            "curves": {str(s): run_of(row, s, "small").curve for s in seed_list},
            "lowest_epoch": float(lowest.loc[row, "epoch"]),
        }
        for row in overfit_rows
    },
    "verdicts": budgets,
    "spearman_ppl": correlation,
    "extended": {
        "epochs": len(extended_budgets),
        "verdicts": [
            {k: b[k] for k in ("full_epoch", "small_epoch", "label", "findings")}
            for b in extended_budgets
        ],
        "spearman_ppl": ext_correlation,
    },
    "tie_margin_pct": round(findings.percent(findings.TIE_MARGIN), 3),
    "alpha": findings.ALPHA,
    "flops": budget.to_dict(orient="records"),
    "dataset": f"{profile.corpus} {profile.src_lang}->{profile.tgt_lang}, "
    f"{profile.valid_split} split",
    "bleu": f"sacreBLEU, greedy translations of all {len(bleu_sources)} validation sentences",
    "ppl": f"per subword on all {len(data.valid)} pairs of the validation split",
    "train_seconds": round(train_seconds, 1),
    "workers": workers,
}
path = results.write_result(
    results_name,
    metrics,
    profile=profile.name,
    config={
        "profile": table3_profile.to_dict(),
        "scale": {"width": scale.width, "depth": scale.depth, "heads": scale.heads},
        "rows": {row: trained_with(row) for row in rows},
    },
    device=torch_device,
    wall_time_s=round(time.perf_counter() - chapter_start, 1),
)
record = results.read_result(results_name, profile.name)
assert record is not None and set(record["metrics"]["rows"]) == set(rows)
assert (
    results.lookup(record["metrics"], "rows.base.ppl") == metrics["rows"]["base"]["ppl"]
)
base_trained = record["config"]["rows"]["base"]
assert base_trained["model"]["warmup_steps"] == base_trained["train"]["warmup_steps"]
assert base_trained["model"]["max_len"] == table3_profile.model_config().max_len
assert len(record["metrics"]["verdicts"]) == len(BUDGETS)
print(
    f"wrote {path.parent.name}/{path.name}; chapter {time.perf_counter() - chapter_start:.0f} s "
    f"({train_seconds:.0f} s training); at {budgets[-1]['label']}: "
    + "; ".join(f"{r['finding']}: {r['verdict']}" for r in final)
)

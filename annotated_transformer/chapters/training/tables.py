"""Chapter 04's tables: the measurements of section 5 the chapter makes, as a reader sees them.

The chapter keeps the textbook versions of each idea on the page (BPE, batches by token count, the
schedule, label smoothing, the copy task's loop) and calls this module for the tables that compare
them with the package's, and for the tables of its run (speed, scores, the resume demonstration).
The run folders themselves are handled by `runs`, the sentences by `sentences`, the results record
by `record`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ...data.batching import TokenBatcher, padding_fraction
from ...evaluation import paper
from ...evaluation.paper import PAPER_TARGET_TOKENS_PER_STEP
from ...training.schedule import noam_lr


# ------------------------------------------------------------------------------------ 4.1 BPE
def piece_stats(tokenizer, sentences: Sequence[str]) -> dict:
    """How the tokenizer cuts `sentences`: words and pieces per sentence, pieces per word and the
    share of pieces that are the unknown piece."""
    ids = tokenizer.encode_batch(list(sentences))
    pieces = sum(len(s) for s in ids)
    words = sum(len(s.split()) for s in sentences)
    unknown = sum(s.count(tokenizer.unk_id) for s in ids)
    return {
        "sentences": len(sentences),
        "words per sentence": words / len(sentences),
        "pieces per sentence": pieces / len(sentences),
        "pieces per word": pieces / words,
        "unknown pieces": unknown / pieces,
    }


def bpe_table(tokenizer, splits: Mapping, src_lang: str, tgt_lang: str, limit=None):
    """`piece_stats` per split and side; the training split cut to its first `limit` pairs (the
    profile's `max_train_pairs`), as the run reads it."""
    rows = []
    for name, corpus in splits.items():
        cut = limit if name == "train" and limit else None
        for side, text in ((src_lang, corpus.src), (tgt_lang, corpus.tgt)):
            rows.append(
                {"split": name, "side": side} | piece_stats(tokenizer, text[:cut])
            )
    return pd.DataFrame(rows)


BPE_FORMATS = {
    "sentences": "{:,}",
    "words per sentence": "{:.1f}",
    "pieces per sentence": "{:.1f}",
    "pieces per word": "{:.2f}",
    "unknown pieces": "{:.2e}",
}


# ------------------------------------------------------------------------------ 4.2 batching
def batching_table(data, batch_tokens: int, seed: int, shuffle_seed: int) -> pd.DataFrame:
    """Three ways of batching the training pairs, by the share of padding and by how even the work
    per batch is: a fixed number of pairs in random order, the same number sorted by length, and
    the package's `TokenBatcher` (about `batch_tokens` a side, sorted)."""
    src_widths = data.train.src_lengths + 1
    tgt_widths = data.train.tgt_lengths + 2
    by_tokens = TokenBatcher(
        data.train.src_lengths,
        data.train.tgt_lengths,
        batch_tokens,
        seed=seed,
        skip_too_long=True,
    ).epoch_batches(0)
    size = max(1, round(np.mean([len(b) for b in by_tokens])))
    random_order = np.random.default_rng(shuffle_seed).permutation(len(data.train))
    sorted_order = np.lexsort((src_widths, tgt_widths))
    chunks = lambda order: [
        order[i : i + size].tolist() for i in range(0, len(order), size)
    ]
    strategies = {
        f"{size} sentences, random order": chunks(random_order),
        f"{size} sentences, sorted by length": chunks(sorted_order),
        f"about {batch_tokens} tokens, sorted (TokenBatcher)": by_tokens,
    }
    rows = []
    for name, batches in strategies.items():
        tokens = np.array([tgt_widths[b].sum() for b in batches])
        rows.append(
            {
                "batches": name,
                "count": len(batches),
                "padding": padding_fraction(batches, src_widths, tgt_widths),
                "target tokens per batch": tokens.mean(),
                "spread of target tokens": tokens.std() / tokens.mean(),
            }
        )
    return pd.DataFrame(rows)


BATCHING_FORMATS = {
    "padding": "{:.1%}",
    "target tokens per batch": "{:,.0f}",
    "spread of target tokens": "{:.2f}",
}


# ------------------------------------------------------------------------------ 4.3 schedule
def schedule_curves(d_model: int, warmup: int, factor: float, name: str) -> dict:
    """The paper's base and big schedules and the profile's: {label: (d_model, warm-up, factor)}."""
    return {
        "paper base (d_model 512, warm-up 4000)": (512, 4000, 1.0),
        "paper big (d_model 1024, warm-up 4000)": (1024, 4000, 1.0),
        f"profile {name} (d_model {d_model}, warm-up {warmup})": (
            d_model,
            warmup,
            factor,
        ),
    }


def schedule_frames(curves: Mapping[str, tuple]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(every curve at 400 steps spaced evenly in log, one row per curve: warm-up, peak, and the
    rate ten warm-ups later)."""
    steps = np.unique(np.geomspace(1, 100_000, 400).astype(int))
    long = pd.DataFrame(
        [
            {"step": int(s), "learning rate": noam_lr(int(s), d, w, f), "schedule": name}
            for name, (d, w, f) in curves.items()
            for s in steps
        ]
    )
    peaks = pd.DataFrame(
        [
            {
                "schedule": name,
                "warm-up steps": w,
                "peak rate": noam_lr(w, d, w, f),
                "rate ten warm-ups later": noam_lr(10 * w, d, w, f),
            }
            for name, (d, w, f) in curves.items()
        ]
    )
    return long, peaks


# ------------------------------------------------------------------------------ 4.4 smoothing
def smoothing_tables(vocab_size: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the paper's Table 3 rows that change only epsilon, the optimum of a context with one right
    answer for the profile's vocabulary and the paper's)."""
    rows = pd.DataFrame(
        [
            {
                "row": row,
                "epsilon": eps,
                "dev perplexity": paper.TABLE3[row].ppl,
                "dev BLEU": paper.TABLE3[row].bleu,
            }
            for row, eps in (("D3", 0.0), ("base", 0.1), ("D4", 0.2))
        ]
    )
    one_hot = pd.DataFrame(
        [
            {
                "vocabulary": v,
                "epsilon": e,
                "perplexity at the optimum": 1 / (1 - e + e / v),
                "logit gap at the optimum": math.log1p((1 - e) * v / e)
                if e
                else math.inf,
            }
            for v in (vocab_size, 37_000)
            for e in (0.0, 0.1, 0.2)
        ]
    )
    return rows, one_hot


def smoothed_loss_floor(vocab_size: int, epsilon: float) -> float:
    """The lowest label-smoothed loss per token where every target is certain (the copy task):
    the entropy of the smoothed target, 1 - epsilon + epsilon / V on the reference and epsilon / V
    on each of the other V - 1 ids, as `training.loss` spreads it. Zero without smoothing."""
    if not epsilon:
        return 0.0
    rest = epsilon / vocab_size
    top = 1.0 - epsilon + rest
    return -(top * math.log(top) + (vocab_size - 1) * rest * math.log(rest))


# ------------------------------------------------------------------------------ 4.6 the run
def loss_frames(train_log, valid_log, valid_split: str):
    """(the two training losses in long form, the training and validation perplexities)."""
    losses = train_log.melt(
        "step", ["loss", "nll"], var_name="quantity", value_name="per target token"
    )
    names = {"loss": "label-smoothed loss (optimised)", "nll": "NLL"}
    losses["quantity"] = losses.quantity.map(names)
    ppl = pd.concat(
        [
            train_log.assign(split="training batches")[["step", "ppl", "split"]],
            valid_log.assign(split=f"validation ({valid_split})")[
                ["step", "ppl", "split"]
            ],
        ]
    )
    return losses, ppl


def run_table(summary: Mapping, start: Mapping, device, name: str) -> pd.DataFrame:
    """The run's speed and scores, one quantity a row, as `pipeline.run` summarised them."""
    test = summary["test"]
    steps = summary["steps"]
    mfu = summary.get("mfu")
    rows = [
        ("steps", f"{steps:,}"),
        ("epochs", f"{summary['epochs']:.2f}"),
        ("training time", f"{summary['train_time_s']:,.0f} s"),
        ("seconds per step", f"{summary['train_time_s'] / steps:.3f}"),
        ("target tokens per step", f"{summary['target_tokens'] / steps:,.0f}"),
        ("target tokens per second", f"{summary['target_tokens_per_s']:,.0f}"),
        ("padding in the batches", f"{start['padding_fraction']:.1%}"),
        ("parameters", f"{summary['parameters']:,}"),
        ("precision, device", f"{summary['precision']}, {device}"),
        ("model FLOPs utilisation", "no peak known" if mfu is None else f"{mfu:.1%}"),
        ("validation perplexity (last weights)", f"{summary['valid']['ppl']:.2f}"),
        ("test perplexity (averaged weights)", f"{test['ppl']:.2f}"),
        (
            f"test sacreBLEU ({test['sentences']:,} sentences, beam {test['beam_size']})",
            f"{test['sacrebleu']:.2f}",
        ),
        ("test tokenized BLEU (the paper's)", f"{test['bleu_tokenized']:.2f}"),
        ("checkpoints averaged", ", ".join(test["averaged_checkpoints"])),
    ]
    return pd.DataFrame(rows, columns=["", f"profile {name}"])


def throughput_table(summary: Mapping, device, name: str) -> pd.DataFrame:
    """The paper's base model's speed beside this run's: seconds and target tokens per step."""
    base = paper.TRAINING["base"]
    steps = summary["steps"]
    return pd.DataFrame(
        [
            {
                "run": f"paper, base, {paper.TRAINING_HARDWARE}",
                "seconds per step": base.step_time_s,
                "target tokens per step": PAPER_TARGET_TOKENS_PER_STEP,
                "target tokens per second": PAPER_TARGET_TOKENS_PER_STEP
                / base.step_time_s,
            },
            {
                "run": f"this run, profile {name}, {device}",
                "seconds per step": summary["train_time_s"] / steps,
                "target tokens per step": summary["target_tokens"] / steps,
                "target tokens per second": summary["target_tokens_per_s"],
            },
        ]
    )


THROUGHPUT_FORMATS = {
    "seconds per step": "{:.3f}",
    "target tokens per step": "{:,.0f}",
    "target tokens per second": "{:,.0f}",
}


STEP_PROFILE = "benchmarks/cpu_step_profile_xeon_amx.json"
KERNEL_CACHE = "benchmarks/cpu_primitive_cache.json"
DROPOUT_MASK = "benchmarks/cpu_dropout_mask_xeon_amx.json"
DROPOUT_MASK_CURVES = "benchmarks/cpu_dropout_mask_loss_curves.json"
# bench_step's variants as the table names them: the step the trainer runs, and the same step with
# attention left in bf16 under bf16 autocast on a CPU.
STEP_VARIANTS = {"eager": "", "eager_half_attention": ", attention in bf16 too"}


def step_profile_table(record: Mapping) -> pd.DataFrame:
    """A committed `bench_step.py --profiler` record: where one training step's time goes, by kind
    of operation (the profiler's self time, ms), then the unprofiled step beside the same
    process's plain matmul peak. One column per precision and variant; fp32 has no half-precision
    attention to compare, so its second variant is left out."""
    peaks = record["profiler"]["matmul_peak"]
    columns = {}
    for name, run in record["profiler"]["runs"].items():
        precision, variant = name.split(" ", 1)
        if precision == "fp32" and variant != "eager":
            continue
        timed = record["training"][precision]["variants"][variant]
        peak = peaks[precision]["peak_gflops_per_s"]
        column = {
            f"{kind} (ms)": f"{ms:.1f}"
            for kind, ms in run["by_kind_ms_per_step"].items()
            if ms > 0
        }
        column["step, unprofiled (ms)"] = f"{1000 * timed['per_step_s']:.1f}"
        column["step GFLOP/s"] = f"{timed['gflops_per_s']:,.0f}"
        column["plain matmul peak GFLOP/s"] = f"{peak:,.0f}"
        column["step's share of the peak"] = f"{timed['gflops_per_s'] / peak:.0%}"
        columns[precision + STEP_VARIANTS[variant]] = column
    return pd.DataFrame(columns).rename_axis("per step").reset_index()


def step_speedups(record: Mapping) -> dict[str, float]:
    """From a `step_profile_table` record: how much faster bf16's step is than fp32's, and than
    bf16's step before attention ran in float32 (ratios of the unprofiled step times)."""

    def step(precision: str, variant: str) -> float:
        return record["training"][precision]["variants"][variant]["per_step_s"]

    return {
        "bf16 over fp32": step("fp32", "eager") / step("bf16", "eager"),
        "float32 attention": step("bf16", "eager_half_attention") / step("bf16", "eager"),
    }


def dropout_mask_lines(timed: Mapping, curves: Mapping) -> list[str]:
    """What the committed dropout-mask records show: the step with the package's mask against one
    float an element (a `bench_step.py` record, same process), then each mask's validation
    perplexity after the recipe's first steps with dropout throughout, seed by seed."""
    lines = []
    for precision, variants in timed["training"].items():
        if not isinstance(variants, Mapping) or "variants" not in variants:
            continue
        ours = variants["variants"]["eager"]["per_step_s"]
        floats = variants["variants"]["eager_float_dropout_mask"]["per_step_s"]
        lines.append(
            f"{precision} step: {1000 * ours:.0f} ms with lanes, {1000 * floats:.0f} ms "
            f"with a float an element ({floats / ours:.2f}x)"
        )
    last = max(int(step) for step in curves["runs"]["lanes_seed0"]["valid_ppl"])
    by_mask: dict[str, dict[int, float]] = {}
    for name, run in curves["runs"].items():
        mask, seed = name.rsplit("_seed", 1)
        by_mask.setdefault(mask, {})[int(seed)] = run["valid_ppl"][str(last)]
    seeds = sorted(by_mask["lanes"])
    ppl = lambda mask: ", ".join(f"{by_mask[mask][seed]:.2f}" for seed in seeds)
    lines.append(
        f"validation perplexity after {last:,} steps, seeds {', '.join(map(str, seeds))}: "
        f"lanes {ppl('lanes')}; a float an element {ppl('float')}"
    )
    return lines


def resume_table(straight: Mapping, stopped: Mapping, resumed: Mapping, stop_at: int):
    """The resume demonstration's three runs: steps, why each stopped, final validation loss."""
    row = lambda run, s, loss: {
        "run": run,
        "steps": s["steps"],
        "stopped by": s["stopped_by"].replace("_", " "),
        "validation loss": loss,
    }
    return pd.DataFrame(
        [
            row("straight through", straight, straight["valid"]["loss"]),
            row(f"stopped at step {stop_at}", stopped, math.nan),
            row("... then resumed", resumed, resumed["valid"]["loss"]),
        ]
    )

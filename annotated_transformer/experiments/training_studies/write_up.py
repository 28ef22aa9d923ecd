"""Chapter 04's tables and sentences: the measurements of section 5 the chapter makes, as a reader
sees them, and what one run of the chapter shows, in words.

The chapter keeps the textbook versions of each idea on the page (BPE, batches by token count, the
schedule, label smoothing, the copy task's loop) and calls this module for the rest: the tables
that compare them with the package's, the bookkeeping of its run folder, and every sentence whose
words depend on a number (`describe_*`). The sentences read the chapter's results record
(`results/<profile>/training.json`), so the page, the README and the introduction's summary say the
same thing.
"""

from __future__ import annotations

import math
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ...data.batching import TokenBatcher, padding_fraction
from ...evaluation import paper
from ...evaluation.paper import PAPER_TARGET_TOKENS_PER_STEP
from ...training.checkpoint import RESUME_NAME
from ...training.schedule import noam_lr
from ...training.training_log import read_metrics

Z95 = 1.959963984540054
LANGUAGES = {"en": "English", "de": "German", "fr": "French"}


# ------------------------------------------------------------------------------------ statistics
def wilson_interval(successes: float, n: int, z: float = Z95) -> tuple[float, float]:
    """The 95% Wilson score interval of a proportion `successes / n` (successes may be a share
    times n). Unlike the normal approximation it stays inside [0, 1] and is honest at 0% and 100%."""
    if n <= 0:
        return (0.0, 1.0)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def _pct(x: float, digits: int = 0) -> str:
    return f"{100 * x:.{digits}f}%"


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


def describe_bpe(rows: Sequence[Mapping], vocab_size: int) -> str:
    """What the shared vocabulary does to the training text, per side."""
    train = [r for r in rows if r["split"] == "train"]
    per_word = lambda r: r.get("pieces per word", r.get("pieces_per_word"))
    name = lambda r: LANGUAGES.get(r["side"], r["side"])
    parts = [f"{per_word(r):.2f} pieces per {name(r)} word" for r in train]
    longest = max(train, key=per_word)
    most = "most words are one piece" if per_word(longest) < 1.5 else "many words take "
    most += "" if per_word(longest) < 1.5 else "several pieces in so small a vocabulary"
    return (
        f"The shared vocabulary of {vocab_size:,} pieces cuts the training text into "
        f"{' and '.join(parts)}: {most}, and {name(longest)} needs the most, because its "
        "rarer words (compounds, inflected forms) are spelled out of several."
    )


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


def describe_padding(padding: Mapping[str, float]) -> str:
    """Padding of the three batchings (in `batching_table`'s order: random, sorted, by tokens)."""
    (_, random), (_, by_length), (_, by_tokens) = list(padding.items())[:3]
    verb = "cuts" if by_length < random else "does not cut"
    return (
        f"Sorting by length {verb} the padding from {_pct(random, 1)} of the batch tensors "
        f"(random order) to {_pct(by_length, 1)}, and filling batches to a token budget "
        f"leaves {_pct(by_tokens, 1)}: neighbours in length order have similar lengths, so "
        "there is little to pad. These are counts over the whole epoch, not samples, so they "
        "carry no interval."
    )


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


# ------------------------------------------------------------------------------ 4.6 the run
def start_run(folder: str | Path, profile, resume: bool) -> bool:
    """Whether the chapter continues the run in its folder: True when it holds an unfinished run
    of exactly `profile` (and `resume` asks for it). Otherwise the chapter starts afresh with
    `pipeline.run(..., overwrite=True)`, which moves an older run's files aside to
    `replaced/<time>/` (never deleted) only once it holds the folder's lock, so a run that is
    refused moves nothing of the run that holds it. Reads only."""
    return bool(resume and unfinished_run_of(Path(folder), profile))


def unfinished_run_of(folder: str | Path, profile) -> bool:
    """Whether `folder` holds a run of exactly this profile that stopped (or was killed) early."""
    import json

    folder = Path(folder)
    records = read_metrics(folder)
    starts = [r for r in records if r["kind"] == "start"]
    stops = [r for r in records if r["kind"] == "stop"]
    same = bool(starts) and starts[0]["profile"] == json.loads(
        json.dumps(profile.to_dict())
    )
    early = (
        not stops or stops[-1]["stopped_by"] == "interrupted" or len(stops) < len(starts)
    )
    return (folder / RESUME_NAME).is_file() and same and early


def run_logs(folder: str | Path) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """(training log, validation log, start record) of a run folder's `metrics.jsonl`; a resumed
    run may log a step twice, and the later line wins."""
    records = read_metrics(folder)
    frame = lambda kind: pd.DataFrame(
        [r for r in records if r["kind"] == kind]
    ).drop_duplicates("step", keep="last")
    start = next(r for r in records if r["kind"] == "start")
    return frame("train"), frame("valid"), start


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


def describe_perplexities(summary: Mapping, valid_log, eval_every: int) -> str:
    """Why the log's last validation perplexity, the table's and the test's differ: three
    measurements at different times, of different weights, on different sentences."""
    steps, test = summary["steps"], summary["test"]
    text = (
        f"The table's validation perplexity, {summary['valid']['ppl']:.2f}, is of the last "
        f"weights, measured once training stopped at step {steps:,}. "
    )
    during = valid_log[valid_log.step < steps]
    if len(during):
        text += (
            f"The last measurement during training, at step {int(during.step.iloc[-1]):,}, "
            f"read {during.ppl.iloc[-1]:.2f} (the trainer measures every {eval_every:,} "
            "steps, and the model kept learning after it). "
        )
    return text + (
        f"The test perplexity, {test['ppl']:.2f}, is of the average of "
        f"{len(test['averaged_checkpoints'])} snapshots, on the test sentences."
    )


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


# ------------------------------------------------------------------------------ the findings
def describe_copy(copy: Mapping, held_out: int = 1000) -> str:
    """The copy task's held-out accuracy with its interval."""
    acc = float(copy["accuracy"])
    low, high = wilson_interval(acc * held_out, held_out)
    verdict = (
        "the masks, the shifted decoder input, the loss and the schedule work together"
        if low >= 0.95
        else "too few steps to solve the task; the falling loss is what this run checks"
    )
    return (
        f"The copy task's model copies {_pct(acc, 1)} of {held_out:,} held-out sequences "
        f"exactly (95% interval {_pct(low, 1)} to {_pct(high, 1)}) after {copy['steps']:,} "
        f"steps: {verdict}."
    )


def describe_warmup(final_nll: Mapping[str, float], spread: Mapping | None = None) -> str:
    """The four warm-up runs' final training NLL. `spread`: the standard error of each final mean
    over its last batches, when the record holds it; a difference within two standard errors of
    the difference is called no difference."""

    def compare(norm: str) -> tuple[str, int]:
        """The sentence, and the sign of the change (0: none beyond the noise)."""
        on, off = f"{norm}-norm, warm-up", f"{norm}-norm, no warm-up"
        d = final_nll[off] - final_nll[on]
        pair = f"{final_nll[off]:.2f} against {final_nll[on]:.2f}"
        if spread is None:
            noise, same = "one run each, so no interval", abs(d) < 0.05
        else:
            half = 2 * math.hypot(spread[off], spread[on])
            noise, same = f"± {half:.2f} from the batch-to-batch noise", abs(d) <= half
        if same:
            return f"the {norm}-norm model ends where its twin does ({pair}; {noise})", 0
        side = "above" if d > 0 else "below"
        return (
            f"the {norm}-norm model ends {abs(d):.2f} nats per token {side} its warmed-up "
            f"twin ({pair}; {noise})"
        ), (1 if d > 0 else -1)

    (post, post_sign), (pre, pre_sign) = compare("post"), compare("pre")
    if post_sign > 0 and pre_sign <= 0:
        reason = (
            "The reason: at the first steps the post-norm model's top layers get the largest "
            "gradients, and a full learning rate throws them off; pre-norm keeps the gradients "
            "even across layers."
        )
    else:
        reason = (
            "This run does not show the harm the warm-up guards against (its trainings are "
            "too short to leave the ramp behind), so it says nothing for or against it."
        )
    return f"Without the warm-up, {post}; {pre}. {reason}"


def describe_gradients(top_over_bottom: Mapping[str, float]) -> str:
    """The gradient of the top layer over that of the bottom one, at initialisation."""
    get = lambda k: top_over_bottom[k]
    return (
        "Before any update, the top decoder layer's gradient is "
        f"{get('post-norm, decoder'):.2f} times the bottom layer's in the post-norm model and "
        f"{get('pre-norm, decoder'):.2f} times in the pre-norm one (encoder: "
        f"{get('post-norm, encoder'):.2f} against {get('pre-norm, encoder'):.2f})."
    )


def extrapolation_points(rows: Sequence[Mapping], max_length: int) -> dict:
    """{positions: {length: exact-sequence accuracy}} at L, L + 1 and 2L."""
    out: dict = {}
    for r in rows:
        if r["length"] in (max_length, max_length + 1, 2 * max_length):
            out.setdefault(r["positions"], {})[r["length"]] = r["exact_sequence"]
    return out


def describe_extrapolation(
    rows: Sequence[Mapping], max_length: int, per_length: int
) -> str:
    """Copying past the trained lengths, sinusoidal against learned positions, with intervals."""
    points = extrapolation_points(rows, max_length)
    L = max_length

    def at(kind: str, n: int) -> str:
        p = points[kind][n]
        low, high = wilson_interval(p * per_length, per_length)
        return f"{_pct(p)} ({_pct(low)}-{_pct(high)})"

    sin, lea = points["sinusoidal"][L + 1], points["learned"][L + 1]
    lo_s, hi_s = wilson_interval(sin * per_length, per_length)
    lo_l, hi_l = wilson_interval(lea * per_length, per_length)
    if lo_s > hi_l:
        one_more = (
            "sinusoidal positions copy more sequences one token past the training lengths"
        )
    elif lo_l > hi_s:
        one_more = (
            "learned positions copy more sequences one token past the training lengths"
        )
    else:
        one_more = (
            "one token past the training lengths the two kinds cannot be told apart"
        )
    return (
        f"Trained on 1 to {L} tokens and tested on {per_length} sequences per length, "
        f"{one_more}: {at('sinusoidal', L + 1)} whole sequences copied with sinusoids, "
        f"{at('learned', L + 1)} with learned positions (95% intervals). At {2 * L} tokens "
        f"they copy {at('sinusoidal', 2 * L)} and {at('learned', 2 * L)}: a sinusoid is "
        "defined at every position, but the attention and feed-forward weights were fitted "
        "only to the positions seen in training."
    )


def describe_speed(metrics: Mapping) -> str:
    """Seconds per step and throughput against the paper's base model."""
    base = paper.TRAINING["base"]
    paper_rate = PAPER_TARGET_TOKENS_PER_STEP / base.step_time_s
    rate = metrics["target_tokens_per_s"]
    return (
        f"One step took {metrics['step_time_s']:.3f} s for about "
        f"{metrics['target_tokens_per_step']:,.0f} target tokens, {rate:,.0f} tokens a "
        f"second, against {paper_rate:,.0f} for the paper's base model on "
        f"{paper.TRAINING_HARDWARE} ({paper_rate / rate:,.0f} times as many), with a model of "
        f"{metrics['parameters'] / 1e6:.1f}M parameters against 65M."
    )


def describe_run(metrics: Mapping) -> str:
    """The profile's run: how long, and where it ended."""
    return (
        f"The profile's run trained {metrics['steps']:,} steps in "
        f"{metrics['train_time_s']:,.0f} s and ended at a validation perplexity of "
        f"{metrics['valid_ppl']:.2f} per subword; its averaged model scores "
        f"{metrics['test_sacrebleu']:.1f} sacreBLEU on the test set (chapter 05 gives the "
        "interval and the translations)."
    )


def what_this_run_shows(record: Mapping) -> str:
    """The chapter's closing list: one sentence per finding, from its results record
    (`results/<profile>/training.json`, as `results.read_result` returns it)."""
    metrics = record["metrics"]
    vocab_size = record["config"]["profile"]["vocab_size"]
    warm = metrics["warmup_experiment"]
    sizes = metrics["sizes"]
    copy = metrics["copy_task"]
    lines = [
        describe_bpe(metrics["bpe"], vocab_size),
        describe_padding(metrics["padding_fraction"]),
        describe_copy(copy),
        describe_run(metrics),
        describe_speed(metrics),
        (
            "Stopped and resumed, a run ends with bit-identical weights to one never stopped."
            if metrics.get("resume_bit_identical")
            else "The resumed run did not end with the weights of the straight one."
        ),
        describe_gradients(warm["top_over_bottom_gradient"]),
        describe_warmup(warm["final_nll"], warm.get("final_nll_se")),
        describe_extrapolation(
            metrics["extrapolation"], copy["max_length"], sizes["eval_per_length"]
        ),
    ]
    return "\n".join(f"- {line}" for line in lines)


# ------------------------------------------------------------------------------ bookkeeping
def describe_plan(profile, device) -> str:
    """What the chapter will train under `profile`, in one sentence."""
    budget = [f"{profile.max_steps:,} steps"] if profile.max_steps else []
    budget += [f"{profile.max_epochs} epochs"] if profile.max_epochs else []
    if profile.time_budget_minutes:
        budget += [f"{profile.time_budget_minutes:g} minutes"]
    c = profile.model_config()
    first = ", whichever comes first," if len(budget) > 1 else ""
    return (
        f"Under profile `{profile.name}` the chapter trains a {c.encoder_layers}+"
        f"{c.decoder_layers}-layer model of width {c.d_model} on {profile.corpus} "
        f"{profile.src_lang}-{profile.tgt_lang} for {' or '.join(budget)}{first} with "
        f"batches of about {profile.batch_tokens:,} tokens, on {device}."
    )


def fresh_folder(path: str | Path) -> Path:
    """`path`, emptied: a demonstration's runs must not find an older run there."""
    path = Path(path)
    shutil.rmtree(path, ignore_errors=True)
    return path


def compare_weights(first: str | Path, second: str | Path) -> tuple[int, float]:
    """(tensors, largest absolute difference) between the models of two resume checkpoints."""
    from ...training.checkpoint import load_checkpoint

    a = load_checkpoint(Path(first) / RESUME_NAME)["model"]
    b = load_checkpoint(Path(second) / RESUME_NAME)["model"]
    if a.keys() != b.keys():
        raise ValueError("the two checkpoints hold different tensors")
    largest = max((a[n].float() - b[n].float()).abs().max().item() for n in a)
    return len(a), largest


def chapter_metrics(
    profile, summary, bpe, batching, copy_run, warm, extrapolation, sizes
):
    """The record `results/<profile>/training.json` holds: the run's speed and scores, and every
    experiment of the chapter. `warm`: (final losses table, top-over-bottom gradients)."""
    final, top = warm
    nll = final.set_index("run").iloc[:, 0]
    return {
        "dataset": f"{profile.corpus} {profile.src_lang}->{profile.tgt_lang}",
        "step_time_s": summary["train_time_s"] / summary["steps"],
        "steps": summary["steps"],
        "train_time_s": summary["train_time_s"],
        "target_tokens_per_step": summary["target_tokens"] / summary["steps"],
        "target_tokens_per_s": summary["target_tokens_per_s"],
        "mfu": summary["mfu"],
        "valid_ppl": summary["valid"]["ppl"],
        "parameters": summary["parameters"],
        "test_sacrebleu": summary["test"]["sacrebleu"],
        "test_bleu_tokenized": summary["test"]["bleu_tokenized"],
        "translation_results": Path(summary["results_path"]).name,
        "bpe": bpe.to_dict(orient="records"),
        "padding_fraction": batching.set_index("batches")["padding"].to_dict(),
        "copy_task": {
            "steps": copy_run["steps"],
            "accuracy": copy_run["accuracy"],
            "max_length": sizes.copy_length,
        },
        "resume_bit_identical": True,
        "warmup_experiment": {
            "final_nll": nll.to_dict(),
            "final_nll_se": final.set_index("run")["standard error"].to_dict(),
            "top_over_bottom_gradient": {f"{n}, {s}": v for (n, s), v in top.items()},
        },
        "extrapolation": extrapolation.to_dict(orient="records"),
        "sizes": sizes,
    }


def quiet_run(profile, folder: str | Path, **kwargs) -> dict:
    """`pipeline.run` without a progress bar, a test evaluation or the trainer's opening lines
    (what it trains, in which precision): a demonstration's run, whose table says what it did."""
    import contextlib
    import io

    from ... import pipeline

    with contextlib.redirect_stdout(io.StringIO()):
        return pipeline.run(
            profile, folder, evaluate_test=False, show_progress=False, **kwargs
        )

"""Chapter 04's sentences: every sentence of the chapter whose words depend on a number, and
`closing`, the chapter's closing section built from its results record read back, so that the
page, the README and the introduction's summary say the same thing.

A verdict is said only when the numbers hold it: the copy task is called solved only when the
lower end of its interval clears 95%, a warm-up difference within its noise is called none, and
one kind of position is said to copy more only when the two intervals do not overlap.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from ...evaluation import paper
from ...evaluation.paper import PAPER_TARGET_TOKENS_PER_STEP

Z95 = 1.959963984540054


LANGUAGES = {"en": "English", "de": "German", "fr": "French"}


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
        last, final = float(during.ppl.iloc[-1]), float(summary["valid"]["ppl"])
        # what the two numbers show, whichever way they moved
        after = (
            "and the model kept learning after it"
            if final < last
            else "and the last steps did not lower it"
        )
        text += (
            f"The last measurement during training, at step {int(during.step.iloc[-1]):,}, "
            f"read {last:.2f} (the trainer measures every {eval_every:,} steps, {after}). "
        )
    return text + (
        f"The test perplexity, {test['ppl']:.2f}, is of the average of "
        f"{len(test['averaged_checkpoints'])} snapshots, on the test sentences."
    )


def describe_run(metrics: Mapping) -> str:
    """The profile's run: how long, and where it ended."""
    return (
        f"The profile's run trained {metrics['steps']:,} steps in "
        f"{metrics['train_time_s']:,.0f} s and ended at a validation perplexity of "
        f"{metrics['valid_ppl']:.2f} per subword; its averaged model scores "
        f"{metrics['test_sacrebleu']:.1f} sacreBLEU on the test set (chapter 05 gives its "
        "interval)."
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


def describe_gradients(top_over_bottom: Mapping[str, float]) -> str:
    """The gradient of the top layer over that of the bottom one, at initialisation."""
    get = lambda k: top_over_bottom[k]
    return (
        "Before any update, the top decoder layer's gradient is "
        f"{get('post-norm, decoder'):.2f} times the bottom layer's in the post-norm model and "
        f"{get('pre-norm, decoder'):.2f} times in the pre-norm one (encoder: "
        f"{get('post-norm, encoder'):.2f} against {get('pre-norm, encoder'):.2f})."
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
            "gradients, and a full learning rate throws them off; the pre-norm model's top "
            "layers get smaller ones (the ratios above), so the full rate does them less harm."
        )
    else:
        reason = (
            "This run does not show the harm the warm-up guards against (its trainings are "
            "too short to leave the ramp behind), so it says nothing for or against it."
        )
    return f"Without the warm-up, {post}; {pre}. {reason}"


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


def closing(record: Mapping) -> str:
    """The chapter's closing section, "What this run shows": one sentence per finding, from its
    results record as `record.read` returns it (`results/<profile>/training.json`)."""
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

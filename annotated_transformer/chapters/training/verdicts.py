"""What chapter 04's experiments and run found, as values: each verdict with the numbers it rests
on, tested by value; `phrases` says them in words.

A verdict is drawn only when the numbers hold it: the copy task is solved only when the lower end
of its interval clears 95%, a warm-up difference within its noise is none, and one kind of
position copies more only when the two intervals do not overlap.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

from ...evaluation import paper
from ...evaluation.paper import PAPER_TARGET_TOKENS_PER_STEP
from .record import ExtrapolationRow, TrainingRecord

Z95 = 1.959963984540054
# The copy task counts as solved when its interval's lower end clears this share.
SOLVED = 0.95
# A word cut into fewer pieces than this on average is mostly one piece.
ONE_PIECE = 1.5
# Without standard errors, two final losses closer than this (nats per token) are the same.
SAME_WITHOUT_SPREAD = 0.05
# The copy task's held-out sequences (`copy_task.train_copy_task`).
HELD_OUT = 1000


def wilson_interval(successes: float, n: int, z: float = Z95) -> tuple[float, float]:
    """The 95% Wilson score interval of a proportion `successes / n` (successes may be a share
    times n). Unlike the normal approximation it stays inside [0, 1] and is honest at 0% and 100%."""
    if n <= 0:
        return (0.0, 1.0)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


@dataclasses.dataclass(frozen=True)
class Plan:
    """What the chapter trains under a profile: the model's layers and width, the corpus and its
    languages, the batch size, the device, and the budget (steps, epochs, minutes; None where the
    profile sets none)."""

    profile: str
    encoder_layers: int
    decoder_layers: int
    d_model: int
    corpus: str
    src_lang: str
    tgt_lang: str
    batch_tokens: int
    device: str
    max_steps: int | None
    max_epochs: int | None
    minutes: float | None

    @property
    def limits(self) -> int:
        """How many of the budget's limits the profile sets."""
        return sum(x is not None for x in (self.max_steps, self.max_epochs, self.minutes))


def plan(profile, device) -> Plan:
    c = profile.model_config()
    return Plan(
        profile=profile.name,
        encoder_layers=c.encoder_layers,
        decoder_layers=c.decoder_layers,
        d_model=c.d_model,
        corpus=profile.corpus,
        src_lang=profile.src_lang,
        tgt_lang=profile.tgt_lang,
        batch_tokens=profile.batch_tokens,
        device=str(device),
        max_steps=profile.max_steps or None,
        max_epochs=profile.max_epochs or None,
        minutes=profile.time_budget_minutes or None,
    )


@dataclasses.dataclass(frozen=True)
class Vocabulary:
    """How the shared vocabulary cuts the training text: pieces per word on each side (in the
    table's order), the side that needs the most, and whether most words are one piece there."""

    vocab_size: int
    pieces_per_word: tuple[tuple[str, float], ...]  # (side, pieces per word)
    most: str
    one_piece: bool


def vocabulary(rows: Sequence[Mapping], vocab_size: int) -> Vocabulary:
    """From the rows of `tables.bpe_table` (its "pieces per word" also read as
    "pieces_per_word")."""
    train = [
        (r["side"], r.get("pieces per word", r.get("pieces_per_word")))
        for r in rows
        if r["split"] == "train"
    ]
    side, most = max(train, key=lambda t: t[1])
    return Vocabulary(vocab_size, tuple(train), side, most < ONE_PIECE)


@dataclasses.dataclass(frozen=True)
class Padding:
    """The share of padding of the three batchings (random order, sorted by length, filled to a
    token budget), and whether sorting cuts it."""

    random: float
    by_length: float
    by_tokens: float
    cuts: bool


def padding(shares: Mapping[str, float]) -> Padding:
    """From {batching: share} in `tables.batching_table`'s order (its first three)."""
    random, by_length, by_tokens = list(shares.values())[:3]
    return Padding(random, by_length, by_tokens, by_length < random)


@dataclasses.dataclass(frozen=True)
class Copy:
    """The copy task's share of held-out sequences copied exactly, its 95% interval, and whether
    the interval's lower end clears `SOLVED`."""

    accuracy: float
    held_out: int
    low: float
    high: float
    steps: int
    solved: bool


def copy(accuracy: float, steps: int, held_out: int = HELD_OUT) -> Copy:
    accuracy = float(accuracy)
    low, high = wilson_interval(accuracy * held_out, held_out)
    return Copy(accuracy, held_out, low, high, steps, low >= SOLVED)


@dataclasses.dataclass(frozen=True)
class Perplexities:
    """The three perplexities of a run: the last weights' on the validation set, the last one
    the trainer measured during training (None when it measured none before the end), and the
    averaged snapshots' on the test set."""

    valid_ppl: float
    steps: int
    last_step: int | None
    last_ppl: float | None
    eval_every: int
    test_ppl: float
    snapshots: int
    kept_learning: (
        bool  # the last weights read lower than the last measurement during training
    )


def perplexities(summary: Mapping, valid_log, eval_every: int) -> Perplexities:
    """From the run's summary (`pipeline.run`) and its validation log (columns step, ppl)."""
    steps, test = summary["steps"], summary["test"]
    during = valid_log[valid_log.step < steps]
    last_step = int(during.step.iloc[-1]) if len(during) else None
    last_ppl = float(during.ppl.iloc[-1]) if len(during) else None
    valid_ppl = float(summary["valid"]["ppl"])
    return Perplexities(
        valid_ppl=valid_ppl,
        steps=steps,
        last_step=last_step,
        last_ppl=last_ppl,
        eval_every=eval_every,
        test_ppl=test["ppl"],
        snapshots=len(test["averaged_checkpoints"]),
        kept_learning=last_ppl is not None and valid_ppl < last_ppl,
    )


@dataclasses.dataclass(frozen=True)
class Run:
    """The profile's run: its steps and seconds, its last validation perplexity and its averaged
    model's test sacreBLEU."""

    steps: int
    train_time_s: float
    valid_ppl: float
    test_sacrebleu: float


def run(record: TrainingRecord) -> Run:
    r = record
    return Run(r.steps, r.train_time_s, r.valid_ppl, r.test_sacrebleu)


@dataclasses.dataclass(frozen=True)
class Speed:
    """Seconds per step and target tokens a second, against the paper's base model (its tokens a
    step over its seconds a step), and how many times as many it trained."""

    step_time_s: float
    tokens_per_step: float
    rate: float
    paper_rate: float
    hardware: str
    parameters_m: float
    times: float


def speed(record: TrainingRecord) -> Speed:
    paper_rate = PAPER_TARGET_TOKENS_PER_STEP / paper.TRAINING["base"].step_time_s
    return Speed(
        step_time_s=record.step_time_s,
        tokens_per_step=record.target_tokens_per_step,
        rate=record.target_tokens_per_s,
        paper_rate=paper_rate,
        hardware=paper.TRAINING_HARDWARE,
        parameters_m=record.parameters / 1e6,
        times=paper_rate / record.target_tokens_per_s,
    )


@dataclasses.dataclass(frozen=True)
class Gradients:
    """The top layer's gradient over the bottom layer's at initialisation, per norm and stack."""

    post_decoder: float
    pre_decoder: float
    post_encoder: float
    pre_encoder: float


def gradients(top_over_bottom: Mapping[str, float]) -> Gradients:
    """From {"<norm>-norm, <stack>": ratio}."""
    return Gradients(
        *(
            top_over_bottom[f"{norm}-norm, {stack}"]
            for stack in ("decoder", "encoder")
            for norm in ("post", "pre")
        )
    )


@dataclasses.dataclass(frozen=True)
class WarmupPair:
    """One model's final training NLL without and with the warm-up, their difference (positive:
    worse without), the noise it is set against (twice the standard error of the difference;
    None without standard errors), and its sign: 0 when the difference is within the noise."""

    norm: str
    without: float
    with_warmup: float
    difference: float
    noise: float | None
    sign: int


def warmup_pair(
    norm: str, final_nll: Mapping[str, float], spread: Mapping[str, float] | None
) -> WarmupPair:
    on, off = f"{norm}-norm, warm-up", f"{norm}-norm, no warm-up"
    d = final_nll[off] - final_nll[on]
    if spread is None:
        noise, same = None, abs(d) < SAME_WITHOUT_SPREAD
    else:
        noise = 2 * math.hypot(spread[off], spread[on])
        same = abs(d) <= noise
    sign = 0 if same else (1 if d > 0 else -1)
    return WarmupPair(norm, final_nll[off], final_nll[on], d, noise, sign)


@dataclasses.dataclass(frozen=True)
class Warmup:
    """The four warm-up runs: each model's pair, and whether they show the harm the warm-up
    guards against (the post-norm model worse without it, the pre-norm model not)."""

    post: WarmupPair
    pre: WarmupPair
    shows_harm: bool


def warmup(
    final_nll: Mapping[str, float], spread: Mapping[str, float] | None = None
) -> Warmup:
    """From each run's final NLL and, where there is one, the standard error of each final mean
    over its last batches."""
    post, pre = (
        warmup_pair("post", final_nll, spread),
        warmup_pair("pre", final_nll, spread),
    )
    return Warmup(post, pre, post.sign > 0 and pre.sign <= 0)


def extrapolation_points(
    rows: Sequence[ExtrapolationRow], max_length: int
) -> dict[str, dict[int, float]]:
    """{positions: {length: exact-sequence accuracy}} at L, L + 1 and 2L."""
    out: dict = {}
    for r in rows:
        if r.length in (max_length, max_length + 1, 2 * max_length):
            out.setdefault(r.positions, {})[r.length] = r.exact_sequence
    return out


@dataclasses.dataclass(frozen=True)
class Share:
    """A share of sequences copied whole and its 95% interval."""

    share: float
    low: float
    high: float


def share(p: float, n: int) -> Share:
    return Share(p, *wilson_interval(p * n, n))


@dataclasses.dataclass(frozen=True)
class Extrapolation:
    """Copying past the trained lengths (1 to `max_length`): each kind of position's share one
    token past them and at twice the longest, and the kind that copies more one token past
    them, None when the two intervals overlap."""

    max_length: int
    twice: int
    per_length: int
    sinusoidal_next: Share
    learned_next: Share
    sinusoidal_twice: Share
    learned_twice: Share
    leader: str | None


def extrapolation(
    rows: Sequence[ExtrapolationRow], max_length: int, per_length: int
) -> Extrapolation:
    points = extrapolation_points(rows, max_length)
    at = lambda kind, n: share(points[kind][n], per_length)
    L = max_length
    sin, lea = at("sinusoidal", L + 1), at("learned", L + 1)
    leader = (
        "sinusoidal" if sin.low > lea.high else "learned" if lea.low > sin.high else None
    )
    return Extrapolation(
        L,
        2 * L,
        per_length,
        sin,
        lea,
        at("sinusoidal", 2 * L),
        at("learned", 2 * L),
        leader,
    )

"""What chapter 05's translations, sweeps and costs found, as values: each verdict with the numbers
it rests on, tested by value; `phrases` says them in words.

A difference between two BLEU scores counts as one only when sacreBLEU's paired bootstrap puts it
beyond the resampling noise (p < 0.05); otherwise the verdict says the sentences cannot tell the
two apart. Differences between BLEUs of the same outputs (the two tokenizations) and between
costs are exact, not samples, and carry no interval.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

from ...evaluation import paper
from ...evaluation.paper import PAPER_TARGET_TOKENS_PER_STEP
from .recipe_choice import beyond_noise_above
from .record import AveragingRow, BeamDecoding, Decoding, GpuRun

# Section 5.1: "about 4.5 million sentence pairs" of WMT 2014 English-German.
WMT14_EN_DE_PAIRS = "4.5 million"
# Two BLEUs of the same outputs closer than this agree closely.
CLOSE_BLEUS = 0.5
# A run whose last validation perplexity is this much above its lowest was overfitting.
OVERFIT_RATIO = 1.05
# The share of comparisons at the 5% level that pass by chance alone.
CHANCE = 0.05

_verdict = dataclasses.dataclass(frozen=True)


def paper_base_bleu() -> float:
    """The paper's BLEU for the base model on WMT14 EN-DE (Table 2)."""
    return paper.table2_row("Transformer (base)").bleu_en_de


# ------------------------------------------------------------------------------------------ opening
@_verdict
class Plan:
    """What the chapter translates under a profile: `first` sentences of each split (None:
    every sentence), with one beam and length penalty."""

    name: str
    corpus: str
    src_lang: str
    tgt_lang: str
    first: int | None
    beam: int
    alpha: float
    device: str


def plan(profile, device, beam: int) -> Plan:
    return Plan(
        profile.name,
        profile.corpus,
        profile.src_lang,
        profile.tgt_lang,
        profile.eval_max_sentences or None,
        beam,
        profile.length_penalty_alpha,
        str(device),
    )


# ------------------------------------------------------------------------------------------ recipes
@_verdict
class Rival:
    """A candidate against the chosen one on validation: its score minus the chosen one's, and
    whether the paired bootstrap puts that beyond the noise."""

    name: str
    difference: float
    p_value: float
    exceeds_noise: bool
    gap: float  # the difference without its sign
    higher: bool
    tied: bool  # equal to two decimals (a difference that would print as +0.00 or -0.00)


def rival(name: str, difference: float, p_value: float, exceeds_noise: bool) -> Rival:
    return Rival(
        name,
        difference,
        p_value,
        bool(exceeds_noise),
        abs(difference),
        difference > 0,
        not round(difference, 2),
    )


@_verdict
class CandidateChoice:
    """The chosen candidate of a sweep on validation, its rivals, and the rivals that score above
    it beyond the noise (`winners`)."""

    name: str
    change: str
    score: float
    ci95: float | None
    rivals: tuple[Rival, ...]
    winners: tuple[str, ...]


def candidate_choice(rows: Sequence[Mapping]) -> CandidateChoice:
    """From `Evidence.cpu_rows` or `BudgetSweep.rows` (the chosen row marked `chosen`)."""
    chosen = next(r for r in rows if r["chosen"])
    rivals = tuple(
        rival(
            r["name"],
            r["valid_sacrebleu"] - chosen["valid_sacrebleu"],
            r["p_value"],
            r["exceeds_noise"],
        )
        for r in rows
        if not r["chosen"]
    )
    return CandidateChoice(
        chosen["name"],
        chosen["change"],
        chosen["valid_sacrebleu"],
        chosen["ci95"],
        rivals,
        tuple(beyond_noise_above(list(rows))),
    )


@_verdict
class DecodeChoice:
    """The decoding grid against the paper's setting on validation: how many settings beat it
    beyond the noise, fall below it, or are within it; the profile's choice and its margin; how
    many of the comparisons would pass at the 5% level by chance alone."""

    baseline: str
    base: float
    compared: int
    up: int
    down: int
    within: int
    chosen: str
    gain: float | None  # the chosen setting's, None where it is the paper's
    p_value: float | None
    by_chance: float


def decode_choice(
    settings: Mapping[str, Mapping], baseline: str, chosen: str
) -> DecodeChoice:
    base = settings[baseline]["bleu"]
    compared = {n: r for n, r in settings.items() if n != baseline}
    up = sum(bool(r.get("exceeds_noise")) and r["bleu"] > base for r in compared.values())
    down = sum(
        bool(r.get("exceeds_noise")) and r["bleu"] < base for r in compared.values()
    )
    row = settings[chosen]
    kept = chosen == baseline
    return DecodeChoice(
        baseline,
        base,
        len(compared),
        up,
        down,
        len(compared) - up - down,
        chosen,
        None if kept else row["bleu"] - base,
        None if kept else row["p_value"],
        CHANCE * len(compared),
    )


@_verdict
class GpuChoice:
    """The `gpu` sweep: the run of lowest validation perplexity, the runner-up (None with one
    run) and its distance in a share of the best, and how many runs ended more than 5% above
    their lowest point (overfitting)."""

    best: str
    shape: str
    best_ppl: float
    best_epoch: int
    second: str | None
    second_ppl: float | None
    second_above: float | None
    rising: int
    runs: int


def gpu_choice(rows: Sequence[Mapping]) -> GpuChoice:
    ranked = sorted(rows, key=lambda r: r["best_ppl"])
    best = ranked[0]
    second = ranked[1] if len(ranked) > 1 else None
    return GpuChoice(
        best["name"],
        best["shape"],
        best["best_ppl"],
        best["best_epoch"],
        second and second["name"],
        second and second["best_ppl"],
        second and second["best_ppl"] / best["best_ppl"] - 1,
        sum(r["last_ppl"] > OVERFIT_RATIO * r["best_ppl"] for r in rows),
        len(rows),
    )


# ------------------------------------------------------------------------------------------ decoding
@_verdict
class Beam:
    """Beam search against greedy decoding on the same sentences: the sacreBLEU and tokenized
    BLEU gains, the p-value and whether the gain is beyond the noise, and how many times greedy's
    decoding time it took (greedy's time floored at 0.05 s)."""

    beam_size: int
    alpha: float
    gain: float
    tokenized_gain: float
    p_value: float
    exceeds_noise: bool
    slower: float
    gap: float  # the gain without its sign


def beam(greedy: Decoding, beam: BeamDecoding) -> Beam:
    return Beam(
        beam.beam_size,
        beam.length_penalty_alpha,
        beam.sacrebleu - greedy.sacrebleu,
        beam.bleu_tokenized - greedy.bleu_tokenized,
        beam.p_value_against_greedy,
        bool(beam.exceeds_noise),
        beam.decode_seconds / max(greedy.decode_seconds, 0.05),
        abs(beam.sacrebleu - greedy.sacrebleu),
    )


@_verdict
class Averaging:
    """The averaging sweep on validation: the profile's average (`own`) against the last snapshot
    (`last`), how the averages of more than one snapshot stand against it (beyond the noise above,
    below, within), and whether averaging raised the validation perplexity: `raises` where the
    profile's average is worse than the last snapshot, `raises_again` where only averaging every
    kept snapshot (`widest`) is worse than the profile's; None otherwise."""

    own: AveragingRow
    last: AveragingRow
    widest: AveragingRow
    averages: int
    up: int
    down: int
    perplexity: str | None
    difference: float  # the profile's average minus the last snapshot


def averaging(rows: Sequence[AveragingRow], own_k: int) -> Averaging:
    last, widest = rows[0], rows[-1]
    own = next(r for r in rows if r.k == own_k)
    averages = [r for r in rows if r.k > 1]
    if own.ppl > last.ppl:
        perplexity = "raises"
    elif widest.k > own_k and widest.ppl > own.ppl:
        perplexity = "raises_again"
    else:
        perplexity = None
    return Averaging(
        own,
        last,
        widest,
        len(averages),
        sum(bool(r.beyond_noise) and r.minus_k1 > 0 for r in averages),
        sum(bool(r.beyond_noise) and r.minus_k1 < 0 for r in averages),
        perplexity,
        own.bleu - last.bleu,
    )


@_verdict
class Bleus:
    """One set of outputs scored three ways: the paper's tokenized BLEU with compound splitting
    (`split`) and without (`unsplit`), and sacreBLEU (`sacre`); how many references hold a hyphen
    (None where not counted)."""

    sacre: float
    unsplit: float
    split: float
    hyphenated: int | None
    references: int
    paper_bleu: float
    gap: float  # split minus sacreBLEU
    close: bool  # within CLOSE_BLEUS
    splitting: float  # what compound splitting changes: split minus unsplit


def bleus(
    sacre: float, unsplit: float, split: float, hyphenated: int | None, references: int
) -> Bleus:
    gap = split - sacre
    return Bleus(
        sacre,
        unsplit,
        split,
        hyphenated,
        references,
        paper_base_bleu(),
        gap,
        abs(gap) < CLOSE_BLEUS,
        split - unsplit,
    )


# ------------------------------------------------------------------------------------------ cost
@_verdict
class Cost:
    """The run's cost the paper's way (`seconds` at a sustained `rate`) and counted from the model,
    their ratio (`utilisation`), and whether the rate was measured on this CPU."""

    seconds: float
    rate: float
    paper_way: float
    counted: float
    utilisation: float
    measured: bool


def cost(
    seconds: float, paper_way: float, counted: float, utilisation: float, how: str
) -> Cost:
    return Cost(
        seconds,
        paper_way / seconds,
        paper_way,
        counted,
        utilisation,
        "measured here" in how,
    )


@_verdict
class Table2:
    """The run against the paper's base model on Table 2's cost axis: how many times less it
    cost and in orders of magnitude, and the two models' sizes in millions."""

    paper_way: float
    base_flops: float
    params_m: float
    paper_params_m: float
    ratio: float  # the base model's cost over the run's
    orders: float  # its decimal logarithm
    pairs: str = WMT14_EN_DE_PAIRS


def table2(paper_way: float, parameters: int) -> Table2:
    base_flops = paper.table2_row("Transformer (base)").flops_en_de
    ratio = base_flops / paper_way
    return Table2(
        paper_way,
        base_flops,
        parameters / 1e6,
        paper.TABLE3["base"].params_m,
        ratio,
        math.log10(ratio),
    )


@_verdict
class GpuComparison:
    """The committed `gpu` run beside this one: paired on the same sentences or not, its
    difference and whether it is beyond the noise, the spread of its two costs, and whether its
    recipe was chosen on the test score (`selected`: said only of a lead beyond the noise)."""

    label: str
    sacrebleu: float
    ci95: float | None
    paired: bool
    difference: float | None
    p_value: float | None
    exceeds_noise: bool
    spread: float
    selected: bool
    gap: float | None  # the difference without its sign


def gpu_comparison(gpu: GpuRun) -> GpuComparison:
    """From the record's `gpu_comparison` (`table2.gpu_comparison`'s)."""
    exceeds = bool(gpu.exceeds_noise)
    return GpuComparison(
        gpu.label,
        gpu.sacrebleu,
        gpu.ci95,
        gpu.paired,
        gpu.difference,
        gpu.p_value,
        exceeds,
        gpu.paper_way / gpu.counted,
        "chosen on test" in gpu.label and gpu.paired and exceeds,
        None if gpu.difference is None else abs(gpu.difference),
    )


@_verdict
class RecipeCost:
    """The `paper` recipe counted, as a share of Table 2's figure, and its hours on one H100 at
    each assumed share of its peak, fewest first ((the share's first word, hours))."""

    steps: int
    tokens_per_step: int
    counted: float
    table2: float
    hours: tuple[tuple[str, float], ...]
    wall_time_h: float
    share: float  # counted over Table 2's


def recipe_cost(
    counted: float, table2: float, h100_gpu_hours: Mapping[str, float]
) -> RecipeCost:
    base = paper.TRAINING["base"]
    hours = sorted(h100_gpu_hours.items(), key=lambda item: item[1])
    return RecipeCost(
        base.steps,
        PAPER_TARGET_TOKENS_PER_STEP,
        counted,
        table2,
        tuple((how.split()[0], h) for how, h in hours),
        base.wall_time_h,
        counted / table2,
    )


@_verdict
class RecipeCheck:
    """A few steps of the paper's recipe: whether every loss was finite, and the validation loss
    against a uniform guess over the vocabulary."""

    steps: int
    seconds: float
    first: float
    last: float
    valid_loss: float
    vocab_size: int
    finite: bool
    uniform: float  # the loss of a uniform guess over the vocabulary
    above_uniform: bool


def recipe_check(
    steps: int,
    losses: Sequence[float],
    valid_loss: float,
    vocab_size: int,
    seconds: float,
) -> RecipeCheck:
    return RecipeCheck(
        steps,
        seconds,
        losses[0],
        losses[-1],
        valid_loss,
        vocab_size,
        all(math.isfinite(x) for x in list(losses) + [valid_loss]),
        math.log(vocab_size),
        valid_loss > math.log(vocab_size),
    )

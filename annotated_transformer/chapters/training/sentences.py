"""Chapter 04's sentences: its verdicts (`verdicts`) said with its phrase table (`phrases`), and
`closing`, the chapter's closing section built from its results record read back.

The page passes what it just computed; `closing` passes the record's fields, so the page's
sentences, its closing section, the README and the introduction's summary say the same thing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from . import verdicts
from .phrases import LANGUAGES, say
from .record import ExtrapolationRow, TrainingRecord


def describe_plan(profile, device) -> str:
    """What the chapter will train under `profile`, in one sentence."""
    found = verdicts.plan(profile, device)
    budget = [
        say(f"plan.{limit}", found)
        for limit, value in (
            ("steps", found.max_steps),
            ("epochs", found.max_epochs),
            ("minutes", found.minutes),
        )
        if value is not None
    ]
    first = say("plan.first") if found.limits > 1 else ""
    return say("plan", found, budget=" or ".join(budget), first=first)


def _language(side: str) -> str:
    return LANGUAGES.get(side, side)


def describe_bpe(rows: Sequence[Mapping], vocab_size: int) -> str:
    """What the shared vocabulary does to the training text, per side (`tables.bpe_table`'s
    rows)."""
    found = verdicts.vocabulary(rows, vocab_size)
    sides = [
        say("bpe.side", pieces=pieces, language=_language(side))
        for side, pieces in found.pieces_per_word
    ]
    return say(
        "bpe",
        found,
        sides=" and ".join(sides),
        words=say("bpe.one_piece" if found.one_piece else "bpe.several"),
        most=_language(found.most),
    )


def describe_padding(padding: Mapping[str, float]) -> str:
    """Padding of the three batchings (in `batching_table`'s order: random, sorted, by tokens)."""
    found = verdicts.padding(padding)
    verb = say("padding.cuts" if found.cuts else "padding.does_not_cut")
    return say("padding", found, verb=verb)


def describe_copy(accuracy: float, steps: int) -> str:
    """The copy task's held-out accuracy with its interval."""
    found = verdicts.copy(accuracy, steps)
    return say(
        "copy", found, reading=say("copy.solved" if found.solved else "copy.unsolved")
    )


def describe_perplexities(summary: Mapping, valid_log, eval_every: int) -> str:
    """Why the log's last validation perplexity, the table's and the test's differ: three
    measurements at different times, of different weights, on different sentences."""
    found = verdicts.perplexities(summary, valid_log, eval_every)
    during = ""
    if found.last_step is not None:
        after = say(
            "perplexities.kept_learning"
            if found.kept_learning
            else "perplexities.not_lowered"
        )
        during = say("perplexities.during", found, after=after) + " "
    return say("perplexities", found, during=during)


def describe_gradients(top_over_bottom: Mapping[str, float]) -> str:
    """The gradient of the top layer over that of the bottom one, at initialisation."""
    return say("gradients", verdicts.gradients(top_over_bottom))


def _warmup_pair(pair: verdicts.WarmupPair) -> str:
    noise = (
        say("warmup.one_run")
        if pair.noise is None
        else say("warmup.noise", noise=pair.noise)
    )
    key = {0: "warmup.same", 1: "warmup.above", -1: "warmup.below"}[pair.sign]
    return say(key, pair, gap=abs(pair.difference), noise=noise)


def describe_warmup(final_nll: Mapping[str, float], spread: Mapping | None = None) -> str:
    """The four warm-up runs' final training NLL. `spread`: the standard error of each final mean
    over its last batches, when there is one; a difference within two standard errors of the
    difference is called no difference."""
    found = verdicts.warmup(final_nll, spread)
    return say(
        "warmup",
        post=_warmup_pair(found.post),
        pre=_warmup_pair(found.pre),
        reason=say("warmup.harm" if found.shows_harm else "warmup.no_harm"),
    )


def describe_extrapolation(
    rows: Sequence[ExtrapolationRow], max_length: int, per_length: int
) -> str:
    """Copying past the trained lengths, sinusoidal against learned positions, with intervals."""
    found = verdicts.extrapolation(rows, max_length, per_length)
    shares = {
        name: say("extrapolation.share", getattr(found, name))
        for name in (
            "sinusoidal_next",
            "learned_next",
            "sinusoidal_twice",
            "learned_twice",
        )
    }
    one_more = (
        say("extrapolation.apart")
        if found.leader is None
        else say("extrapolation.leads", leader=found.leader)
    )
    return say("extrapolation", found, **shares, one_more=one_more)


def closing(record: TrainingRecord) -> str:
    """The chapter's closing section, "What this run shows": one sentence per finding, from its
    results record as `record.read` returns it (`results/<profile>/training.json`)."""
    r = record
    warm = r.warmup_experiment
    lines = [
        describe_bpe(r.bpe, r.vocab_size),
        describe_padding(r.padding_fraction),
        describe_copy(r.copy_task.accuracy, r.copy_task.steps),
        say("run", verdicts.run(r)),
        say("speed", verdicts.speed(r)),
        say("resume.identical" if r.resume_bit_identical else "resume.differs"),
        describe_gradients(warm.top_over_bottom_gradient),
        describe_warmup(warm.final_nll, warm.final_nll_se),
        describe_extrapolation(
            r.extrapolation, r.copy_task.max_length, r.sizes.eval_per_length
        ),
    ]
    return "\n".join(f"- {line}" for line in lines)

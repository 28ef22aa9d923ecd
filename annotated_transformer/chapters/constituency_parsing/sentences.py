"""Chapter 07's sentences: its verdicts (`verdicts`) said with its phrase table (`phrases`).

Each `describe_*` function reads plain values or the package's records (`paired_f1_bootstrap`
comparisons, `source_dependence`, `ShareRun`, the extended run's ``curves.json`` and
``test.json``): the chapter passes what it just computed, and `closing` passes the results
record read back, so the page's sentences and its closing section say the same thing. A margin
is called a gain or a loss only beyond the resampling noise (`verdicts.margin`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ...model.config import preset
from ..wording import capitalized, listed, plural
from . import verdicts
from .phrases import SCORE_TEST_COMMAND, say, search_words, share_words
from .record import Comparison, ConstituencyParsingRecord
from .scoring import EVALB_CUTOFF


def say_margin(found: verdicts.Margin, what: str) -> str:
    """The second parser of a `paired_f1_bootstrap` comparison against the first, `what`:
    '6.6 points above the flat floor (10.6), beyond the resampling noise (...)', or, when the
    interval includes zero, 'not distinguishable from ...'."""
    side = say("side.above" if found.above else "side.below")
    if found.beyond_noise:
        return say("margin.beyond", found, side=side, what=what)
    here = say("margin.level") if found.level else say("margin.apart", found, side=side)
    return say("margin.within", found, here=here, what=what)


def say_p_value(found: verdicts.PValue) -> str:
    """'p = 0.004', or 'p < 0.0005: no resample of 2,000 reversed it' when none did."""
    if found.none_reversed:
        return say("p.none_reversed", found, bound=found.bound)
    return say("p.value", found)


# ------------------------------------------------------------------------------- the chapter's plan
def describe_plan(
    profile: str, epochs: int, device: str, shares: Sequence[float], variant: bool = True
) -> str:
    """What the live run trains under a profile."""
    runs = say("plan.one_run") if len(shares) == 1 else say("plan.runs", runs=len(shares))
    return say(
        "plan",
        profile=profile,
        epochs=epochs,
        device=device,
        files=listed([share_words(s) for s in sorted(shares)]),
        runs=runs,
        ending=say("plan.with_variant" if variant else "plan.alone"),
    )


def describe_model(
    parameters: int,
    unwritable: Mapping[str, int],
    target_symbols: float,
    source_words: float,
) -> str:
    """The parser's size, and what its target vocabulary cannot write."""
    found = verdicts.model_size(parameters, unwritable, target_symbols, source_words)
    if found.writes_all:
        writes = say("model.writes_all")
    else:
        missed = [
            say("model.missed", n=n, split=split) for split, n in unwritable.items()
        ]
        writes = say("model.misses", missed=listed(missed))
    return say("model", found, writes=writes)


# ----------------------------------------------------------------------------------- the live run
def describe_training(runs: Sequence, variant, seconds: float, workers: int) -> str:
    """The live runs (`ShareRun`s of the tags parser, and the XX variant's): time, steps, best F1."""
    found = verdicts.training(runs, variant, seconds, workers)
    after = say("epochs.one" if found.at == 1 else "epochs.many", at=found.at)
    return say("training", found, processes=plural(found.workers, "process"), after=after)


def describe_source_dependence(reads: Mapping) -> str:
    found = verdicts.reading(reads)
    conclusion = say("reading.little" if found.little else "reading.reads")
    return say("reading", found, conclusion=conclusion)


# ------------------------------------------------------------------------------ the extended run
def describe_extended(document: Mapping, paper_f1: float, paper_trees: int) -> str:
    """Best dev F1 per share, whether it has stopped rising, and where the paper's F1 lies."""
    found = verdicts.extended(document, paper_f1, paper_trees)
    each = "; ".join(
        say("extended.share", r, files=share_words(r["share"])) for r in found.rows
    )
    rule = say("extended.rule", patience=found.patience)
    if not found.running:
        state = say("extended.all_stopped", rule=rule)
    elif found.all_running:
        state = say("extended.none_stopped", rule=rule)
    else:
        names = listed([share_words(s) for s in found.running])
        state = say("extended.some_stopped", names=names, rule=rule)
    where = say("extended.paper", found)
    if found.running:
        # A rate per doubling from bests that are still rising would be read as a forecast.
        where += say("extended.still_rising")
    elif found.projects:
        where += say(
            "extended.projection",
            found,
            top_trees=found.top["trees"],
            added=found.rate * found.doublings,
        )
    elif found.rate is not None:
        where += say("extended.no_rise")
    return say(
        "extended",
        lead=say("extended.lead"),
        each=each,
        state=state,
        where=where,
    )


def say_chosen(found: verdicts.ChosenModel) -> str:
    """Which model and search dev chose for a share: 'the average of its snapshots of epochs 58
    to 60 with beam 21' or 'its model of epoch 60 with greedy decoding'."""
    return say(
        "chosen.averaged" if found.averaged else "chosen.one",
        first=found.epochs[0],
        last=found.epochs[-1],
        search=search_words(found.beam_size),
    )


def describe_extended_test(
    test: Mapping | None,
    paper_f1: float,
    paper_trees: int,
    shares: Sequence[float] = (),
) -> str:
    """The extended run on the test sentences (`parsing_extended.score_test`'s file), largest
    share first: what dev chose among its two models and two searches, the test F1 with its
    interval (all sentences, and those of at most 40 words), the margin over the right-branching
    floor, and the paper's F1 against the largest share's; `shares` (the run's) not in the file
    are named as not scored yet. Says so plainly when there is no file."""
    found = verdicts.extended_test(test, paper_f1, paper_trees, shares)
    if not found.shares:
        return say("extended_test.none", command=SCORE_TEST_COMMAND)
    parts = [
        say(
            "extended_test.share",
            share,
            files=share_words(share.share),
            chosen=say_chosen(share.chosen),
            over=say_margin(share.over_floor, "the right-branching floor"),
        )
        for share in found.shares
    ]
    top = found.shares[0]
    parts.append(
        say(
            "extended_test.paper",
            found,
            top_trees=top.trees,
            files=share_words(top.share),
        )
    )
    if found.missing:
        names = listed([share_words(s) for s in found.missing])
        one = len(found.missing) == 1
        parts.append(
            say(
                "extended_test.missing_one" if one else "extended_test.missing_many",
                names=names,
            )
        )
    return say("extended_test", parts=" ".join(parts))


# ------------------------------------------------------------------------------------- the search
def describe_searches(profiles: Sequence[Mapping], gold: Mapping) -> str:
    """What each search writes on the dev sentences, beside the gold trees; why a beam that writes
    short trees does."""
    found = verdicts.searches(profiles, gold)
    each = "; ".join(say("searches.each", p) for p in found.profiles)
    text = say("searches", found.gold, each=each)
    if found.short_beam is not None:
        text += " " + say("searches.short_beam", name=capitalized(found.short_beam))
    return text


def describe_test(
    headline: Mapping,
    chosen: str,
    sentences: int,
    over_floor: Comparison | Mapping,
    floor: str,
    unconstrained: Mapping,
    gold_symbols: float,
) -> str:
    """The test F1 of the chosen search, against the better floor, and the unconstrained beam."""
    return say(
        "test",
        sentences=sentences,
        f1=headline["f1"],
        chosen=chosen,
        f1_le40=headline["f1_le40"],
        sentences_le40=headline["sentences_le40"],
        cutoff=EVALB_CUTOFF,
        over=say_margin(verdicts.margin(over_floor), floor),
        invalid=unconstrained["invalid"],
        unconstrained_f1=unconstrained["f1"],
        symbols=unconstrained["symbols_per_output"],
        gold_symbols=gold_symbols,
    )


# ------------------------------------------------------------------------------------ the variant
def describe_variant(
    versus: Comparison | Mapping, chosen: str, reads: Mapping, xx_reads: Mapping
) -> str:
    """The XX variant against the tags parser (`versus`: first the tags parser, second XX), and
    which of them reads its sentence."""
    found = verdicts.variant(versus, reads, xx_reads)
    if found.tags_read_more and found.measurably_worse:
        conclusion = say("variant.tags_read")
    elif found.tags_read_more:
        conclusion = say("variant.tags_read_more")
    else:
        conclusion = say("variant.tags_alone")
    return say(
        "variant",
        found,
        chosen=chosen,
        over=say_margin(found.margin, "the tags parser"),
        p=say_p_value(found.p),
        conclusion=conclusion,
    )


# ------------------------------------------------------------------------------ what the run shows
def say_extended_closing(found: verdicts.ExtendedClosing) -> str:
    """The extended run in one bullet: the largest share's best dev F1, whether its rule stopped
    it, and its test F1 once scored, against the paper's."""
    top = found.row
    if top.scored:
        low, high = top.test_f1_ci95
        scored = say(
            "closing.extended.scored", found, test_f1=top.test_f1, low=low, high=high
        )
    else:
        scored = say("closing.extended.unscored", command=SCORE_TEST_COMMAND)
    state = say("closing.extended.stopped" if top.stopped else "closing.extended.rising")
    return say(
        "closing.extended",
        top,
        files=share_words(top.share),
        state=state,
        scored=scored,
    )


def closing(record: ConstituencyParsingRecord) -> str:
    """'What this run shows', as a list of short paragraphs in Markdown, from the chapter's record
    as `record.read` returns it: the tags parser's test F1 at the search chosen on the
    development trees, with its interval and its margins over the two floors; the paper; the XX
    variant against the tags parser; and the committed extended run, in one bullet, where the
    record holds one."""
    found = verdicts.closing(record)
    h, paper = found.headline, found.paper
    model = preset("parsing")  # the paper's parser: 'a 4-layer model with d_model 1024'
    words = say("paper_model", n_layers=model.n_layers, d_model=model.d_model)
    against_paper = say("closing.paper", paper, paper_model=words) + say(
        "closing.paper.far" if paper.top_below else "closing.paper.near", paper
    )
    if paper.reads_little:
        against_paper += " " + say("closing.paper.reads_little")
    parts = [
        say(
            "closing.headline",
            h,
            over_right=say_margin(h.over_right, "the right-branching floor"),
            over_flat=say_margin(h.over_flat, "the flat floor"),
        ),
        against_paper,
        say(
            "closing.variant",
            f1=found.variant_f1,
            over=say_margin(found.variant_margin, "the tags parser"),
            p=say_p_value(found.variant_p),
        ),
    ]
    if found.extended:
        parts.append(say_extended_closing(found.extended))
    return "\n".join(parts)

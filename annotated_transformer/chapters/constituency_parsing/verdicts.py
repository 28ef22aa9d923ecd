"""What chapter 07's runs found, as values: each verdict with the numbers it rests on, tested by
value; `phrases` says them in words and `sentences` puts the two together.

A margin is a gain or a loss only when its 95% paired bootstrap interval excludes zero; when the
interval includes zero the two parsers cannot be told apart on these sentences. A margin's points
are the difference of the two scores as the page prints them (`wording.gap`).
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Mapping, Sequence

from ..wording import gap
from .curve import best_point, extended_summary, scored_jobs
from .curve import sentence_share as _sentence_share
from .record import (
    Comparison,
    ConstituencyParsingRecord,
    ExtendedRow,
    SourceDependence,
)

# A parser "barely reads its sentence" when another sentence of the same length costs it less than
# this share of its loss.
READS_LITTLE = 0.25
PAPER_TRAINING_TREES = 40_000  # "about 40K training sentences" of the WSJ (section 6.3)


# -------------------------------------------------------------------------- paired comparisons
def beyond_noise(comparison: Comparison | Mapping) -> bool:
    """Whether the margin's 95% paired bootstrap interval excludes zero."""
    low, high = Comparison.of(comparison).difference_ci95
    return low > 0 or high < 0


@dataclasses.dataclass(frozen=True)
class Margin:
    """The second parser of a paired bootstrap against the first: the points between their
    scores as printed, whether the second is above, the first's score, the margin's 95% interval
    and whether it excludes zero."""

    points: float
    above: bool
    base: float
    low: float
    high: float
    beyond_noise: bool

    @property
    def level(self) -> bool:
        """Whether the two scores print the same."""
        return self.points == 0


def margin(comparison: Comparison | Mapping) -> Margin:
    c = Comparison.of(comparison)
    low, high = c.difference_ci95
    return Margin(
        points=float(gap(c.second.f1, c.first.f1)),
        above=c.difference > 0,
        base=c.first.f1,
        low=low,
        high=high,
        beyond_noise=beyond_noise(c),
    )


@dataclasses.dataclass(frozen=True)
class PValue:
    """A paired bootstrap's p-value; where no resample reversed the margin, the bound 1 /
    samples it is below."""

    p_value: float
    samples: int

    @property
    def none_reversed(self) -> bool:
        return self.p_value == 0

    @property
    def bound(self) -> float:
        return 1 / self.samples


def p_value(comparison: Comparison | Mapping) -> PValue:
    c = Comparison.of(comparison)
    return PValue(c.p_value, c.samples)


# --------------------------------------------------------------------------------- the model
@dataclasses.dataclass(frozen=True)
class ModelSize:
    """The parser's parameters in millions, and the dev and test trees its target vocabulary
    cannot write (a label or tag that training never uses), by split."""

    parameters_m: float
    unwritable: dict[str, int]
    target_symbols: float
    source_words: float

    @property
    def writes_all(self) -> bool:
        return not any(self.unwritable.values())


def model_size(
    parameters: int,
    unwritable: Mapping[str, int],
    target_symbols: float,
    source_words: float,
) -> ModelSize:
    return ModelSize(parameters / 1e6, dict(unwritable), target_symbols, source_words)


# ------------------------------------------------------------------------------ the live runs
@dataclasses.dataclass(frozen=True)
class Training:
    """The live runs: how many, their epochs, wall time and processes; the tags parser on all
    the training trees (steps, seconds, best dev F1 and its epoch) against the XX variant's best."""

    runs: int
    epochs: float
    seconds: float
    workers: int
    precision: str
    steps: int
    full_seconds: float
    best: float
    at: float
    xx_best: float
    xx_at: float


def training(runs: Sequence, variant, seconds: float, workers: int) -> Training:
    """From the tags parser's `ShareRun`s and the XX variant's."""
    full = max(runs, key=lambda r: r.share)
    f1, at = best_point(full.dev_f1)
    xx_f1, xx_at = best_point(variant.dev_f1)
    return Training(
        runs=len(runs) + 1,
        epochs=full.epochs,
        seconds=seconds,
        workers=workers,
        precision=full.precision,
        steps=full.steps,
        full_seconds=full.seconds,
        best=f1,
        at=at,
        xx_best=xx_f1,
        xx_at=xx_at,
    )


def sentence_share(reads: SourceDependence | Mapping) -> float:
    """The share of the loss (%) that the parser's own sentence is worth."""
    return _sentence_share(dataclasses.asdict(SourceDependence.of(reads)))


def reads_little(reads: SourceDependence | Mapping) -> bool:
    """Whether another sentence of the same length costs the parser less than READS_LITTLE of
    its loss."""
    r = SourceDependence.of(reads)
    gain = r.nll_other_sentence - r.nll_own_sentence
    return gain < READS_LITTLE * r.nll_other_sentence


@dataclasses.dataclass(frozen=True)
class Reading:
    """How much the parser reads its sentence: the dev loss a symbol with each tree's own
    sentence and with another of its length, what the sentence is worth (nats a symbol, % of the
    loss) and whether that is little."""

    own: float
    other: float
    trees: int
    trees_with_another: int
    worth: float
    share: float
    little: bool


def reading(reads: SourceDependence | Mapping) -> Reading:
    r = SourceDependence.of(reads)
    return Reading(
        own=r.nll_own_sentence,
        other=r.nll_other_sentence,
        trees=r.trees,
        trees_with_another=r.trees_with_another_sentence,
        worth=r.nll_other_sentence - r.nll_own_sentence,
        share=sentence_share(r),
        little=reads_little(r),
    )


# --------------------------------------------------------------------------- the extended run
def points_per_doubling(rows: Sequence[Mapping]) -> float | None:
    """Best dev F1 gained per doubling of the training trees, from the smallest share to the
    largest (None with fewer than two sizes)."""
    if len(rows) < 2 or rows[-1]["trees"] <= rows[0]["trees"]:
        return None
    return (rows[-1]["best"] - rows[0]["best"]) / math.log2(
        rows[-1]["trees"] / rows[0]["trees"]
    )


@dataclasses.dataclass(frozen=True)
class Extended:
    """The extended run's best dev F1 by share (`record.extended_summary`'s rows, smallest
    first), the run's rule, the shares still rising, and where the paper's F1 lies: its distance
    above the largest share's best and, where every share has stopped and the best rose with the
    trees, the points a doubling added and the doublings to the paper's trees."""

    rows: tuple[dict, ...]
    patience: float
    running: tuple[float, ...]
    paper_f1: float
    paper_trees: int
    paper_above: float
    rate: float | None
    doublings: float | None

    @property
    def top(self) -> dict:
        return self.rows[-1]

    @property
    def all_running(self) -> bool:
        return len(self.running) == len(self.rows)

    @property
    def projects(self) -> bool:
        """Whether the sentence projects the rate to the paper's trees."""
        return not self.running and self.doublings is not None


def extended(document: Mapping, paper_f1: float, paper_trees: int) -> Extended:
    rows = extended_summary(document)
    running = tuple(r["share"] for r in rows if not r["stopped"])
    rate = points_per_doubling(rows)
    top = rows[-1]
    projects = rate is not None and rate > 0 and paper_trees > top["trees"]
    return Extended(
        rows=tuple(rows),
        patience=document.get("patience", 0.2),
        running=running,
        paper_f1=paper_f1,
        paper_trees=paper_trees,
        paper_above=float(gap(paper_f1, top["best"])),
        rate=rate,
        doublings=math.log2(paper_trees / top["trees"]) if projects else None,
    )


@dataclasses.dataclass(frozen=True)
class ChosenModel:
    """What dev chose for a share of the extended run: the epochs of the model (several: the
    average of its snapshots) and the beam (1: greedy)."""

    epochs: tuple[int, ...]
    beam_size: int

    @property
    def averaged(self) -> bool:
        return len(self.epochs) > 1


def chosen_model(job: Mapping) -> ChosenModel:
    """From a share's record in `score_test`'s file."""
    chosen = job["chosen_on_dev"]
    epochs = job["snapshots"][chosen["snapshot"]]["epochs"]
    return ChosenModel(tuple(epochs), chosen["beam_size"])


@dataclasses.dataclass(frozen=True)
class ScoredShare:
    """One share of the extended run scored on test: its trees and epochs, what dev chose (and
    its dev F1 against the other candidates'), its test F1 with its interval, on the sentences
    of at most 40 words, and its margin over the right-branching floor."""

    share: float
    trees: int
    epochs: int
    chosen: ChosenModel
    dev_f1: float
    others_low: float
    others_high: float
    others: int
    sentences: int
    f1: float
    low: float
    high: float
    f1_le40: float
    sentences_le40: int
    over_floor: Margin


def scored_share(job: Mapping) -> ScoredShare:
    t, chosen = job["test"], job["chosen_on_dev"]
    others = [
        s["f1"]
        for snapshot, searches in job["dev"].items()
        for search, s in searches.items()
        if (snapshot, search) != (chosen["snapshot"], chosen["search"])
    ]
    low, high = t["f1_ci95"]
    return ScoredShare(
        share=job["share"],
        trees=job["train_trees"],
        epochs=job["epochs_trained"],
        chosen=chosen_model(job),
        dev_f1=chosen["dev_f1"],
        others_low=min(others),
        others_high=max(others),
        others=len(others),
        sentences=t["sentences"],
        f1=t["f1"],
        low=low,
        high=high,
        f1_le40=t["f1_le40"],
        sentences_le40=t["sentences_le40"],
        over_floor=margin(job["against_floors"][job["right_branching_floor"]]),
    )


@dataclasses.dataclass(frozen=True)
class ExtendedTest:
    """The extended run on the test sentences, largest share first, the paper's F1 and trees
    against the largest share's (how many times its trees, the points above its test F1), and
    the run's shares not scored yet (largest first); no shares where nothing is scored."""

    shares: tuple[ScoredShare, ...]
    paper_f1: float
    paper_trees: int
    times_the_trees: float | None
    paper_above: float | None
    missing: tuple[float, ...]


def extended_test(
    test: Mapping | None, paper_f1: float, paper_trees: int, shares: Sequence[float] = ()
) -> ExtendedTest:
    if not test or not test.get("jobs"):
        return ExtendedTest((), paper_f1, paper_trees, None, None, ())
    jobs = sorted(test["jobs"], key=lambda j: -j["share"])
    scored = tuple(scored_share(job) for job in jobs)
    top = scored[0]
    return ExtendedTest(
        shares=scored,
        paper_f1=paper_f1,
        paper_trees=paper_trees,
        times_the_trees=paper_trees / top.trees,
        paper_above=float(gap(paper_f1, top.f1)),
        missing=tuple(
            s for s in sorted(shares, reverse=True) if float(s) not in scored_jobs(test)
        ),
    )


# ---------------------------------------------------------------------------------- the search
def search_profile(run) -> dict:
    """What a `ParseRun` writes: its name, beam, symbols and counted brackets a sentence, and its
    commonest root with the share of trees it roots."""
    n = len(run.parses)
    root, count = Counter(p.tree.label() for p in run.parses).most_common(1)[0]
    return dict(
        name=run.name,
        beam_size=run.beam_size,
        symbols=sum(len(x.split()) for x in run.lines) / n,
        brackets=run.score.test / n,
        root=root,
        root_share=100 * count / n,
    )


def gold_profile(trees: Sequence, symbols: Sequence[int], brackets: int) -> dict:
    """The same numbers for the gold trees (`symbols`: each tree's linearized length)."""
    n = len(trees)
    root, count = Counter(t.label() for t in trees).most_common(1)[0]
    return dict(
        symbols=sum(symbols) / n,
        brackets=brackets / n,
        root=root,
        root_share=100 * count / n,
    )


@dataclasses.dataclass(frozen=True)
class Searches:
    """What each search writes on the dev sentences beside the gold trees (`search_profile`,
    `gold_profile`), and the beam that writes the shortest trees, shorter than the gold ones
    (None where no beam does)."""

    profiles: tuple[dict, ...]
    gold: dict
    short_beam: str | None


def searches(profiles: Sequence[Mapping], gold: Mapping) -> Searches:
    shortest = min(profiles, key=lambda p: p["symbols"])
    short = shortest["beam_size"] > 1 and shortest["symbols"] < gold["symbols"]
    return Searches(
        tuple(dict(p) for p in profiles),
        dict(gold),
        shortest["name"] if short else None,
    )


# ------------------------------------------------------------------------------------ the variant
@dataclasses.dataclass(frozen=True)
class Variant:
    """The XX variant against the tags parser (first the tags parser, second XX): its F1, the
    margin, the p-value, and the share of the loss each parser's sentence is worth; whether the
    tags make the parser read its sentence (more than twice the variant's share) and whether the
    variant is measurably worse."""

    sentences: int
    f1: float
    difference: float
    margin: Margin
    p: PValue
    tags_share: float
    xx_share: float

    @property
    def tags_read_more(self) -> bool:
        return self.tags_share > 2 * self.xx_share

    @property
    def measurably_worse(self) -> bool:
        return self.margin.beyond_noise and self.difference < 0


def variant(versus: Comparison | Mapping, reads: Mapping, xx_reads: Mapping) -> Variant:
    c = Comparison.of(versus)
    return Variant(
        sentences=c.sentences,
        f1=c.second.f1,
        difference=c.difference,
        margin=margin(c),
        p=p_value(c),
        tags_share=sentence_share(reads),
        xx_share=sentence_share(xx_reads),
    )


# ------------------------------------------------------------------------------ what the run shows
@dataclasses.dataclass(frozen=True)
class Headline:
    """The tags parser on the test sentences at the search chosen on dev: its F1 and 95%
    interval, its margins over the two floors."""

    f1: float
    sentences: int
    low: float
    high: float
    over_right: Margin
    over_flat: Margin


@dataclasses.dataclass(frozen=True)
class AgainstPaper:
    """The tags parser against the paper's F1: the paper's trees, our parameters, epochs and
    trees, the points below the paper, whether the top of the interval is below it, and whether
    the parser barely reads its sentence."""

    paper_f1: float
    paper_trees: int
    params_m: float
    epochs: float
    trees: int
    below: float
    top: float
    top_below: bool
    reads_little: bool


@dataclasses.dataclass(frozen=True)
class ExtendedClosing:
    """The extended run's largest share: its trees and best dev F1, whether its rule stopped it
    and, once scored, its test F1 and interval and the points below the paper's."""

    row: ExtendedRow
    paper_f1: float
    paper_above: float | None


@dataclasses.dataclass(frozen=True)
class Closing:
    headline: Headline
    paper: AgainstPaper
    variant_f1: float
    variant_margin: Margin
    variant_p: PValue
    extended: ExtendedClosing | None


def extended_closing(rows: Sequence[ExtendedRow], paper_f1: float) -> ExtendedClosing:
    top = max(rows, key=lambda r: r.share)
    above = float(gap(paper_f1, top.test_f1)) if top.scored else None
    return ExtendedClosing(top, paper_f1, above)


def closing(record: ConstituencyParsingRecord) -> Closing:
    """What the closing section says, from the record read back: the decoding it rests on is
    the one chosen on dev, whichever scored highest on test."""
    r = record
    low, high = r.f1_ci95
    curves = r.learning_curve
    versus = r.variant_xx.against_tags
    return Closing(
        headline=Headline(
            f1=r.f1,
            sentences=r.test_sentences,
            low=low,
            high=high,
            over_right=margin(r.against_floors[r.right_floor]),
            over_flat=margin(r.against_floors[r.flat_floor]),
        ),
        paper=AgainstPaper(
            paper_f1=r.paper_f1,
            paper_trees=PAPER_TRAINING_TREES,
            params_m=r.params_m,
            epochs=curves[max(curves, key=float)]["epochs"],
            trees=r.train_trees,
            below=float(gap(r.paper_f1, r.f1)),
            top=high,
            top_below=high < r.paper_f1,
            reads_little=reads_little(r.source_dependence),
        ),
        variant_f1=versus.second.f1,
        variant_margin=margin(versus),
        variant_p=p_value(versus),
        extended=extended_closing(r.extended_run, r.paper_f1) if r.extended_run else None,
    )

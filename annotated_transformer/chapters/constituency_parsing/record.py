"""Chapter 07's results record, `results/<profile>/constituency_parsing.json`, and the committed
extended run the chapter shows beside its own.

The chapter fills one `ThisRun` as it goes (`ThisRun.keep`, a line at the end of the cells that
compute a part), `build` makes the typed record of it (`ConstituencyParsingRecord`) and `write`
writes it with one call; `read` reads the record back, typed, and `sentences.closing` makes the
chapter's closing section of what it read.

What the record's fields, the file's "metrics", hold:

* the tags parser on the test sentences at the search chosen on the development trees: `f1` (read
  by the introduction's summary, with `f1_ci95`, its 95% bootstrap interval), `f1_le40` and
  `sentences_le40` (evalb's second summary, sentences of at most 40 words), `precision`,
  `recall`, `invalid_trees`, `exact_trees`, `decoding_chosen_on_dev` and the `dev` scores the
  choice was made on; `test_sentences`; `test`: every test decoding (the chosen search, the other
  beam, the paper's beam unconstrained); `baselines`: the two floors on the same sentences;
* `against_floors`: the paired bootstrap of each floor (first) against the tags parser (second);
  `right_branching_floor`: which of them is the right-branching one;
* `learning_curve`: the live runs by share (dev F1 by snapshot, dev loss by epoch, steps, time);
  `source_dependence`: the dev loss with each tree's own sentence and with another of its length;
* `variant_xx`: the XX variant's numbers (the same fields, its curve, source dependence, its
  paired bootstraps against the tags parser and the right-branching floor, recipe and files);
* `extended_run`: the committed extended run's best dev F1 by share (trees, epochs, the epoch of
  the best, whether its rule stopped it) with, once scored, its test F1, interval and the model
  and search the development trees chose (None where none is committed);
* `recipe`, `scoring`, `decoding`: how the parser was trained, scored and decoded;
* `dataset` (the treebank: "PTB sample (NLTK)", or the folder as the reader gave it),
  `train_trees`, `dev_trees`, `test_files`, `vocabulary` (source words, target symbols),
  `params_m`, `curve_seconds` and `workers` (the live runs' wall time and processes), `paper_f1`.

Beside the record the chapter writes the gold and parsed test trees one per line, for evalb:
`parsing_test_gold.txt`, `parsing_test_predicted.txt` (the tags parser's) and
`parsing_test_predicted_xx.txt` (the variant's). The record's "config" is the tags parser's model
configuration.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...evaluation import results
from ...evaluation.paper import WSJ_ONLY, table4_row
from ..chapter_record import ChapterRecord, typed
from ..chapter_state import ChapterState
from .curve import extended_summary

RESULTS_NAME = "constituency_parsing"
SAMPLE = "PTB sample (NLTK)"  # the treebank when the chapter is given no folder
PAPER_PARSER = "Transformer (4 layers)"  # the paper's row of Table 4
LINEARIZATION = "part-of-speech tags in the word slots (the authors' code)"
XX_LINEARIZATION = "XX in the word slots (the linearization of Vinyals et al.)"

EXTENDED_CURVES = "parser_extended_cpu/curves.json"
EXTENDED_TEST = "parser_extended_cpu/test.json"


def treebank_name(treebank_dir: str | os.PathLike | None) -> str:
    """What the chapter parsed: the sample NLTK distributes, or the folder (or treebank.zip) as
    the reader gave it."""
    return SAMPLE if treebank_dir is None else os.fspath(treebank_dir)


def floor_named(floors: Mapping[str, Any], kind: str) -> str:
    """The name of the floor of `kind` ("right-branching", "flat") among `floors`' names."""
    return next(name for name in floors if name.startswith(kind))


@dataclass
class ThisRun(ChapterState):
    """What chapter 07 computed, kept as it goes for its results record."""

    treebank: str  # `treebank_name`
    split_files: Mapping[str, Sequence[str]] = field(default_factory=dict)
    # the parser (section 7.3): its recipe, trees, vocabularies and parameters
    recipe: Any = None  # curve.ParserRecipe
    train_trees: int = 0
    dev_trees: int = 0
    vocabularies: Any = None  # ParserVocabularies
    parameters: int = 0
    # the live runs (7.4): curve.ChapterRuns, its processes, the tags parser's configuration
    live: Any = None
    workers: int = 1
    config: Any = None
    # the committed extended run (7.4): its curves and test scores (None where not committed)
    extended: Mapping | None = None
    extended_test: Mapping | None = None
    # what the sentence is worth (7.4, 7.6)
    reads: Mapping | None = None
    xx_reads: Mapping | None = None
    # the test (7.5, 7.6): both parsers evaluated, the paired bootstraps
    tags: Any = None  # report.Evaluated
    # floor first, tags second
    floors: Mapping[str, Mapping] = field(default_factory=dict)
    xx: Any = None  # report.Evaluated
    versus: Mapping | None = None  # tags first, XX second
    xx_over_floor: Mapping | None = None  # right-branching floor first, XX second


# ------------------------------------------------------------------------ the record's parts
class _Part:
    @classmethod
    def of(cls, value):
        """`value` as this part (the mapping its computation gives, or the part as it is)."""
        return value if isinstance(value, cls) else typed(cls, value)


@dataclass(frozen=True)
class Scored:
    """One parser's F1 in a paired bootstrap, with its 95% interval."""

    f1: float
    ci95: tuple[float, float]


@dataclass(frozen=True)
class Comparison(_Part):
    """A `paired_f1_bootstrap` of two parsers on the same sentences: the second's F1 minus the
    first's, its 95% interval and its p-value over `samples` resamples."""

    first: Scored
    second: Scored
    difference: float
    difference_ci95: tuple[float, float]
    p_value: float
    samples: int
    sentences: int


@dataclass(frozen=True)
class SourceDependence(_Part):
    """The dev loss a symbol with each tree's own sentence and with another of its length
    (`parsing.source_dependence`), and how many trees got another sentence."""

    nll_own_sentence: float
    nll_other_sentence: float
    trees: int
    trees_with_another_sentence: int


@dataclass(frozen=True)
class Vocabulary:
    """The sizes of the parser's two vocabularies."""

    source_words: int
    target_symbols: int


@dataclass(frozen=True)
class ChosenOnDev:
    """The model and search the development trees chose for a share of the extended run."""

    snapshot: str
    search: str
    beam_size: int
    epoch: int
    dev_f1: float


# the fields an extended run's row holds only once its share is scored on test
SCORED_FIELDS = ("test_f1", "test_f1_ci95", "test_f1_le40", "chosen_on_dev")


@dataclass(frozen=True)
class ExtendedRow:
    """One share of the committed extended run: its trees, epochs, best dev F1 and the epoch it
    came at, whether the run's rule stopped it and, once scored, its test F1 (None before)."""

    share: float
    trees: int
    epochs: int
    best: float
    at: int
    stopped: bool
    test_f1: float | None = None
    test_f1_ci95: tuple[float, float] | None = None
    test_f1_le40: float | None = None
    chosen_on_dev: ChosenOnDev | None = None

    @property
    def scored(self) -> bool:
        return self.test_f1 is not None


@dataclass(frozen=True, kw_only=True)
class ParserScores:
    """One parser's test headline at the search chosen on dev, and the dev scores the choice was
    made on (search: {f1, seconds and, for the tags parser, invalid})."""

    f1: float
    f1_le40: float
    sentences_le40: int
    precision: float
    recall: float
    invalid_trees: int
    exact_trees: int
    decoding_chosen_on_dev: str
    dev: dict[str, dict]


@dataclass(frozen=True, kw_only=True)
class VariantXX(ParserScores):
    """The XX variant's numbers: its test headline, every decoding, its curve, source
    dependence, paired bootstraps against the tags parser (first the tags parser, second XX) and
    the right-branching floor, recipe and files."""

    what: str = XX_LINEARIZATION
    test: dict[str, dict]
    learning_curve: dict
    source_dependence: SourceDependence | None
    against_tags: Comparison
    against_right_branching_floor: Comparison
    recipe: dict
    files: dict[str, str]


# the order of the variant's fields in its file ("what" first, as the record has always held it)
_VARIANT_ORDER = ("what", *(f.name for f in dataclasses.fields(ParserScores)))


@dataclass(frozen=True, kw_only=True)
class ConstituencyParsingRecord(ChapterRecord):
    """Chapter 07's record: the fields the module's docstring lists."""

    RESULTS_NAME = RESULTS_NAME

    linearization: str = LINEARIZATION
    f1: float
    f1_ci95: tuple[float, float]
    f1_le40: float
    sentences_le40: int
    precision: float
    recall: float
    invalid_trees: int
    exact_trees: int
    decoding_chosen_on_dev: str
    dev: dict[str, dict]
    test_sentences: int
    test: dict[str, dict]
    baselines: dict[str, dict]
    against_floors: dict[str, Comparison]
    right_branching_floor: str | None = None  # absent from the oldest records
    learning_curve: dict[str, dict]
    source_dependence: SourceDependence | None
    variant_xx: VariantXX
    extended_run: list[ExtendedRow] | None = None
    recipe: dict
    scoring: str
    decoding: dict
    dataset: str
    train_trees: int
    dev_trees: int
    test_files: list[str]
    vocabulary: Vocabulary
    params_m: float
    curve_seconds: float
    workers: int
    paper_f1: float

    @property
    def right_floor(self) -> str:
        """The right-branching floor's name (found by its name where the record predates
        `right_branching_floor`)."""
        return self.right_branching_floor or floor_named(
            self.against_floors, "right-branching"
        )

    @property
    def flat_floor(self) -> str:
        return floor_named(self.against_floors, "flat")

    def metrics(self) -> dict:
        """As `ChapterRecord.metrics`, the variant's description first and an unscored share of
        the extended run without the test fields it does not have (the file as it has always
        been written)."""
        m = super().metrics()
        variant = m["variant_xx"]
        m["variant_xx"] = {
            **{k: variant[k] for k in _VARIANT_ORDER},
            **{k: v for k, v in variant.items() if k not in _VARIANT_ORDER},
        }
        if m["extended_run"] is not None:
            m["extended_run"] = [
                {
                    k: v
                    for k, v in row.items()
                    if k not in SCORED_FIELDS or row["test_f1"] is not None
                }
                for row in m["extended_run"]
            ]
        return m


# ------------------------------------------------------------------------------------ the record
def _rounded(scores: Mapping, keys: Sequence[str]) -> dict:
    return {k: round(scores[k], 2) for k in keys}


def parser_scores(evaluated, *, with_invalid_dev: bool = True) -> dict:
    """The fields of `ParserScores` for one parser (a `report.Evaluated`): its test headline
    and its choice on dev."""
    h = evaluated.headline
    return {
        **_rounded(h, ["f1", "f1_le40"]),
        "sentences_le40": h["sentences_le40"],
        **_rounded(h, ["precision", "recall"]),
        "invalid_trees": h["invalid"],
        "exact_trees": h["exact"],
        "decoding_chosen_on_dev": evaluated.chosen.name,
        "dev": {
            name: {
                "f1": round(r.score.f1, 2),
                **({"invalid": r.score.invalid} if with_invalid_dev else {}),
                "seconds": round(r.seconds, 1),
            }
            for name, r in evaluated.dev_runs.items()
        },
    }


def extended_rows(
    extended: Mapping | None, test: Mapping | None
) -> list[ExtendedRow] | None:
    """The record's `extended_run`: the extended run by share, with its test score once
    scored."""
    if not extended:
        return None
    rows = []
    for r in extended_summary(extended, test):
        found = r["test"]
        rows.append(
            ExtendedRow(
                **{
                    k: r[k] for k in ("share", "trees", "epochs", "best", "at", "stopped")
                },
                **(
                    dict(
                        test_f1=found["test"]["f1"],
                        test_f1_ci95=tuple(found["test"]["f1_ci95"]),
                        test_f1_le40=found["test"]["f1_le40"],
                        chosen_on_dev=ChosenOnDev(**found["chosen_on_dev"]),
                    )
                    if found
                    else {}
                ),
            )
        )
    return rows


def build(run: ThisRun) -> ConstituencyParsingRecord:
    """The record from what the chapter kept (the module's docstring lists its fields)."""
    tags, xx, live = run.tags, run.xx, run.live
    right = floor_named(run.floors, "right-branching")
    floors = {name: Comparison.of(c) for name, c in run.floors.items()}
    return ConstituencyParsingRecord(
        f1_ci95=tuple(round(x, 2) for x in floors[right].second.ci95),
        **parser_scores(tags),
        test_sentences=tags.report["sentences"],
        test=tags.report["decodings"],
        baselines=tags.report["baselines"],
        against_floors=floors,
        right_branching_floor=right,
        learning_curve={
            f"{share:g}": r.to_dict() for share, r in sorted(live.runs.items())
        },
        source_dependence=run.reads and SourceDependence.of(run.reads),
        variant_xx=VariantXX(
            **parser_scores(xx, with_invalid_dev=False),
            test=xx.report["decodings"],
            learning_curve=live.variant.to_dict(),
            source_dependence=run.xx_reads and SourceDependence.of(run.xx_reads),
            against_tags=Comparison.of(run.versus),
            against_right_branching_floor=Comparison.of(run.xx_over_floor),
            recipe=dataclasses.replace(run.recipe, tags=False).to_dict(),
            files=xx.report["files"],
        ),
        extended_run=extended_rows(run.extended, run.extended_test),
        recipe=run.recipe.to_dict(),
        scoring=tags.report["scoring"],
        decoding=tags.report["decoding"],
        dataset=run.treebank,
        train_trees=run.train_trees,
        dev_trees=run.dev_trees,
        test_files=list(run.split_files["test"]),
        vocabulary=Vocabulary(
            source_words=len(run.vocabularies.source),
            target_symbols=len(run.vocabularies.target),
        ),
        params_m=round(run.parameters / 1e6, 3),
        curve_seconds=round(live.seconds, 1),
        workers=run.workers,
        paper_f1=table4_row(PAPER_PARSER, WSJ_ONLY).f1,
    )


def write(
    record: ConstituencyParsingRecord,
    profile_name: str,
    wall_time_s: float,
    results_dir: str | os.PathLike | None = None,
    *,
    device: Any,
    config: Any = None,
) -> Path:
    """`results/<profile_name>/constituency_parsing.json` (under `results_dir`, default the
    results root), stamped with the device's provenance and the tags parser's `config`; the
    path written."""
    return record.write(
        profile_name, round(wall_time_s, 1), results_dir, device=device, config=config
    )


read = ConstituencyParsingRecord.read


# ------------------------------------------------------------------------------ committed runs
def read_extended_test(root: str | Path | None, curves: Mapping | None) -> dict | None:
    """The extended run's committed test scores (`parsing_extended.score_test`) under the clone's
    results folder `root`, when they are of the run whose `curves` are committed (the same
    recipe); else None (no clone, no file, or another run's)."""
    from ...runtime.records import read_record

    path = Path(root) / EXTENDED_TEST if root else None
    if path is None or not path.is_file():
        return None
    test = read_record(path, "parser_test")
    if curves is None or test.get("recipe") != curves.get("recipe"):
        return None
    return test


def committed_extended(
    root: str | Path | None = None,
) -> tuple[dict | None, dict | None]:
    """The committed extended run under the clone's results folder (`root`, default the
    clone's; none in an installed copy): its curves (`parsing_extended.export`) and its test
    scores (None until they are scored, or when they are of another run)."""
    from .extended import read_curves

    folder = Path(root) if root is not None else results.committed_root()
    path = folder / EXTENDED_CURVES if folder is not None else None
    curves = read_curves(path) if path is not None and path.is_file() else None
    return curves, read_extended_test(folder, curves)

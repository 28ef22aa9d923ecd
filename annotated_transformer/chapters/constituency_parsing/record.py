"""Chapter 07's results record, `results/<profile>/constituency_parsing.json`, and the committed
extended run the chapter shows beside its own.

The chapter fills one `ThisRun` as it goes (`ThisRun.keep`, a line at the end of the cells that
compute a part) and writes it with one call, `write`; `read` reads the record back, and
`sentences.closing` makes the chapter's closing section of what it read.

What the record's "metrics" hold (`build`):

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
from ..chapter_state import ChapterState
from .report import Evaluated
from .sentences import extended_summary

RESULTS_NAME = "constituency_parsing"
SAMPLE = "PTB sample (NLTK)"  # the treebank when the chapter is given no folder
PAPER_PARSER = "Transformer (4 layers)"  # the paper's row of Table 4

EXTENDED_CURVES = "parser_extended_cpu/curves.json"
EXTENDED_TEST = "parser_extended_cpu/test.json"
# the kind of record (runtime.records) each committed file is; the curves are a long run's export
COMMITTED_KINDS = {EXTENDED_CURVES: "long_run_export", EXTENDED_TEST: "parser_test"}


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
    tags: Evaluated | None = None
    floors: Mapping[str, Mapping] = field(
        default_factory=dict
    )  # floor first, tags second
    xx: Evaluated | None = None
    versus: Mapping | None = None  # tags first, XX second
    xx_over_floor: Mapping | None = None  # right-branching floor first, XX second


# ------------------------------------------------------------------------------------ the record
def _rounded(record: Mapping, keys: Sequence[str]) -> dict:
    return {k: round(record[k], 2) for k in keys}


def parser_record(evaluated: Evaluated, *, with_invalid_dev: bool = True) -> dict:
    """The numbers of one parser's test headline and its choice on dev."""
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


def extended_rows(extended: Mapping | None, test: Mapping | None) -> list[dict] | None:
    """`metrics["extended_run"]`: the extended run by share, with its test score once scored."""
    if not extended:
        return None
    return [
        {
            **{k: r[k] for k in ("share", "trees", "epochs", "best", "at", "stopped")},
            **(
                {
                    "test_f1": r["test"]["test"]["f1"],
                    "test_f1_ci95": r["test"]["test"]["f1_ci95"],
                    "test_f1_le40": r["test"]["test"]["f1_le40"],
                    "chosen_on_dev": r["test"]["chosen_on_dev"],
                }
                if r["test"]
                else {}
            ),
        }
        for r in extended_summary(extended, test)
    ]


def build(run: ThisRun) -> dict:
    """The record's metrics from what the chapter kept (the module's docstring lists them)."""
    tags, xx, live = run.tags, run.xx, run.live
    right = floor_named(run.floors, "right-branching")
    recipe = run.recipe.to_dict()
    xx_recipe = dataclasses.replace(run.recipe, tags=False).to_dict()
    return {
        "linearization": "part-of-speech tags in the word slots (the authors' code)",
        "f1": round(tags.headline["f1"], 2),
        "f1_ci95": [round(x, 2) for x in run.floors[right]["second"]["ci95"]],
        **parser_record(tags),
        "test_sentences": tags.report["sentences"],
        "test": tags.report["decodings"],
        "baselines": tags.report["baselines"],
        "against_floors": run.floors,
        "right_branching_floor": right,
        "learning_curve": {
            f"{share:g}": r.to_dict() for share, r in sorted(live.runs.items())
        },
        "source_dependence": run.reads,
        "variant_xx": {
            "what": "XX in the word slots (the linearization of Vinyals et al.)",
            **parser_record(xx, with_invalid_dev=False),
            "test": xx.report["decodings"],
            "learning_curve": live.variant.to_dict(),
            "source_dependence": run.xx_reads,
            # paired bootstrap: first the parser with tags, second the variant (XX minus tags)
            "against_tags": run.versus,
            "against_right_branching_floor": run.xx_over_floor,
            "recipe": xx_recipe,
            "files": xx.report["files"],
        },
        "extended_run": extended_rows(run.extended, run.extended_test),
        "recipe": recipe,
        "scoring": tags.report["scoring"],
        "decoding": tags.report["decoding"],
        "dataset": run.treebank,
        "train_trees": run.train_trees,
        "dev_trees": run.dev_trees,
        "test_files": run.split_files["test"],
        "vocabulary": dict(
            source_words=len(run.vocabularies.source),
            target_symbols=len(run.vocabularies.target),
        ),
        "params_m": round(run.parameters / 1e6, 3),
        "curve_seconds": round(live.seconds, 1),
        "workers": run.workers,
        "paper_f1": table4_row(PAPER_PARSER, WSJ_ONLY).f1,
    }


def write(
    run: ThisRun,
    profile_name: str,
    device: Any,
    wall_time_s: float,
    results_dir: str | os.PathLike | None = None,
) -> Path:
    """`results/<profile_name>/constituency_parsing.json` (under `results_dir`, default the
    results root) of what the chapter kept, stamped with the device's provenance; the path."""
    return results.write_result(
        RESULTS_NAME,
        build(run),
        profile=profile_name,
        config=run.config,
        device=device,
        wall_time_s=round(wall_time_s, 1),
        root=results_dir,
    )


def read(profile_name: str, results_dir: str | os.PathLike | None = None) -> dict | None:
    """The record `write` wrote for `profile_name`, or None when the chapter has not run."""
    return results.read_result(RESULTS_NAME, profile_name, results_dir)


# ------------------------------------------------------------------------------ committed runs
def read_committed(
    root: str | Path | None, relative: str, kind: str | None = None
) -> dict | None:
    """The committed record `relative` under the clone's results folder `root`, checked as a
    record of `kind` (default: `COMMITTED_KINDS`'s); None when there is no clone (`root` None)
    or no such file."""
    from ...runtime.records import read_record

    path = Path(root) / relative if root else None
    if path is None or not path.is_file():
        return None
    return read_record(path, kind or COMMITTED_KINDS[relative])


def read_extended_test(root: str | Path | None, curves: Mapping | None) -> dict | None:
    """The extended run's committed test scores (`parsing_extended.score_test`), when they are
    of the run whose `curves` are committed (the same recipe); else None."""
    test = read_committed(root, EXTENDED_TEST)
    if test is None or curves is None or test.get("recipe") != curves.get("recipe"):
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

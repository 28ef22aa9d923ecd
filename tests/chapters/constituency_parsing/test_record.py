"""Chapter 07's results record and its closing section: the record is built from what the chapter
kept and reads back as it was built, the committed records read back to the same files, the
treebank is recorded as what it is, the committed extended run is found, and the closing renders
its golden text (which decoding and which share it rests on: `test_verdicts`)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from nltk import Tree

from annotated_transformer.chapters import constituency_parsing as parsing
from annotated_transformer.chapters.constituency_parsing import record, report
from annotated_transformer.chapters.constituency_parsing import sentences as describe
from annotated_transformer.chapters.constituency_parsing.curve import (
    ChapterRuns,
    ParserRecipe,
)
from tests.support.golden import assert_golden

from .test_report import (
    comparison,
    extended_document,
    extended_test_document,
    reads,
    share_run,
)

HERE = Path(__file__).parent
ROOT = HERE.parents[2]
RIGHT = "right-branching (S over NPs)"
FLAT = "flat (S)"


def evaluated(chosen_f1=17.2, other_f1=40.0) -> report.Evaluated:
    """A parser whose search chosen on dev scores `chosen_f1` on test, beside an unconstrained
    beam that scores `other_f1` there."""
    tree = Tree.fromstring("(S (NP (DT the) (NN dog)) (VP (VBZ barks)))")
    score = parsing.corpus_score([tree], [tree])
    run = parsing.ParseRun("greedy, constrained", 1, True, ["x"], [parsing.Delinearized(tree)],
                           score, 0.1)  # fmt: skip

    def headline(f1):
        return {"f1": f1, "f1_le40": f1, "sentences_le40": 8, "precision": f1, "recall": f1,
                "invalid": 0, "exact": 1}  # fmt: skip

    test_report = {
        "sentences": 8,
        "decodings": {run.name: headline(chosen_f1),
                      "beam 21, unconstrained": headline(other_f1)},
        "baselines": {}, "scoring": "evalb", "decoding": {}, "files": {"predicted": "p.txt"},
    }  # fmt: skip
    return report.Evaluated({run.name: run}, run, test_report, [tree])


def this_run(treebank_dir=None, extended=True, versus=None) -> record.ThisRun:
    run = record.ThisRun(record.treebank_name(treebank_dir))
    run.keep(
        split_files={"train": ["a"], "dev": ["b"], "test": ["c", "d"]},
        recipe=ParserRecipe(tags=True), train_trees=3396, dev_trees=16,
        vocabularies=SimpleNamespace(source=["w"] * 30, target=["s"] * 12),
        parameters=212_345,
        live=ChapterRuns({0.5: share_run(0.5), 1.0: share_run()}, share_run(tags=False),
                         {}, 12.34),
        workers=2,
        extended=extended_document(stopped=(True, True, True)) if extended else None,
        extended_test=extended_test_document() if extended else None,
        reads=reads(1.869, 1.885), xx_reads=reads(),
        tags=evaluated(), xx=evaluated(9.4, 9.4),
        floors={RIGHT: comparison(11.2, 6.0, (-3.1, 14.1)),
                FLAT: comparison(10.6, 6.6, (1.9, 12.3))},
        versus=versus or comparison(17.2, -7.8, (-15.3, -1.4), p=0.004),
        xx_over_floor=comparison(),
    )  # fmt: skip
    return run


def test_the_record_holds_what_the_summary_reads_and_reads_back_as_built(tmp_path):
    run = this_run()
    built = record.build(run)
    assert built.f1_ci95 == (13.2, 21.2)  # the right-branching floor's second side
    assert built.right_branching_floor == RIGHT
    assert built.recipe["tags"] and not built.variant_xx.recipe["tags"]
    assert built.variant_xx.f1 == 9.4 and built.variant_xx.against_tags.p_value == 0.004
    assert [r.share for r in built.extended_run] == [0.25, 0.5, 1.0]
    assert not built.extended_run[0].scored
    assert built.extended_run[-1].test_f1 == 50.3
    assert built.extended_run[-1].chosen_on_dev.snapshot == "best_average.pt"
    assert built.vocabulary == record.Vocabulary(source_words=30, target_symbols=12)
    assert built.params_m == 0.212 and built.curve_seconds == 12.3
    assert built.test_files == ["c", "d"] and built.paper_f1 == 91.3
    path = record.write(built, "smoke", 3.21, results_dir=tmp_path, device="cpu")
    assert path == tmp_path / "smoke" / f"{record.RESULTS_NAME}.json"
    assert record.read("smoke", tmp_path) == built
    written = json.loads(path.read_text())
    assert written["wall_time_s"] == 3.2
    # the summary reads the file by its keys; an unscored share has no test fields
    metrics = written["metrics"]
    assert metrics["f1_ci95"] == [13.2, 21.2] and "against_tags" in metrics["variant_xx"]
    assert list(metrics["variant_xx"])[0] == "what"
    assert "test_f1" not in metrics["extended_run"][0]
    assert metrics["extended_run"][-1]["chosen_on_dev"]["snapshot"] == "best_average.pt"


COMMITTED = sorted((ROOT / "results").glob(f"*/{record.RESULTS_NAME}.json"))


@pytest.mark.parametrize("path", COMMITTED, ids=[p.parent.name for p in COMMITTED])
def test_the_committed_records_read_back_to_the_same_file(path):
    metrics = json.loads(path.read_text())["metrics"]
    found = record.read(path.parent.name, ROOT / "results")
    assert isinstance(found.variant_xx.against_tags, record.Comparison)
    # the same JSON, key for key and in the same order
    assert json.dumps(found.metrics()) == json.dumps(metrics)


def test_the_closing_reads_as_its_golden_text():
    assert_golden(describe.closing(record.build(this_run())), HERE / "closing.golden.md")


@pytest.mark.parametrize(
    "given, recorded",
    [
        (None, "PTB sample (NLTK)"),
        ("~/ldc/parsed/mrg/wsj", "~/ldc/parsed/mrg/wsj"),  # as given, not expanded
        (Path("data/treebank.zip"), "data/treebank.zip"),
    ],
)
def test_the_treebank_is_recorded_as_the_reader_gave_it(given, recorded):
    assert record.treebank_name(given) == recorded
    assert record.build(this_run(given)).dataset == recorded


def test_keep_refuses_a_name_the_record_has_no_field_for():
    with pytest.raises(TypeError, match="no field flors"):
        record.ThisRun("x").keep(flors={})


def _closing(run: record.ThisRun) -> str:
    return describe.closing(record.build(run))


def test_closing_does_not_call_a_variant_within_the_noise_better():
    # the XX variant scores higher, but the margin's interval includes zero
    noisy = comparison(17.2, 2.0, (-6.0, 8.0), p=0.3)
    text = _closing(this_run(versus=noisy))
    variant = next(line for line in text.splitlines() if "XX variant" in line)
    assert "not distinguishable from the tags parser" in variant
    assert "beyond" not in variant


def test_closing_says_the_extended_run_once_in_one_bullet():
    text = _closing(this_run())
    extended = [line for line in text.splitlines() if "extended run" in line.lower()]
    assert len(extended) == 1
    assert (
        "Best dev F1: with a quarter" not in text
    )  # section 7.4's paragraph stays there
    assert len(re.findall(r"\w+", extended[0])) < 90


def test_closing_says_when_the_extended_run_is_not_scored_or_not_there():
    run = this_run()
    run.keep(extended_test=None, extended=extended_document())
    text = _closing(run)
    assert "still rising by its rule" in text
    assert "has not been scored on the test sentences yet" in text
    alone = _closing(this_run(extended=False))
    assert "extended run" not in alone.lower()
    assert alone.count("\n- ") == 2  # three bullets


def test_the_committed_extended_run_is_none_without_a_file(tmp_path):
    from annotated_transformer.training.long_run import JobRecord, RunExport, write_export

    assert record.committed_extended(tmp_path) == (None, None)
    view = extended_document()
    jobs = tuple(
        JobRecord.from_view({**j, "name": f"share_{j['share']:g}", "precision": "fp32",
                             "device": None}, "parser", ["share"])
        for j in view["jobs"]
    )  # fmt: skip
    identity = {"recipe": view["recipe"], "device_type": "cpu"}
    rule = {"min_epochs": 1, "max_epochs": 9}
    notes = {"patience": view["patience"], "stopped": view["stopped"]}
    write_export(
        tmp_path / record.EXTENDED_CURVES,
        RunExport("parser", identity, rule, jobs, notes=notes),
    )
    curves, test = record.committed_extended(tmp_path)
    assert test is None
    assert {k: curves[k] for k in ("recipe", "patience", "stopped")} == {
        k: view[k] for k in ("recipe", "patience", "stopped")
    }
    assert (curves["min_epochs"], curves["max_epochs"]) == (1, 9)
    shown = ("share", "train_trees", "curve")
    assert [{k: j[k] for k in shown} for j in curves["jobs"]] == view["jobs"]


def test_extended_test_scores_are_read_only_for_the_committed_curves_recipe(tmp_path):
    curves = extended_document()
    assert record.read_extended_test(tmp_path, curves) is None  # no file yet
    (tmp_path / "parser_extended_cpu").mkdir()
    path = tmp_path / record.EXTENDED_TEST
    path.write_text(json.dumps(extended_test_document()))
    assert record.read_extended_test(tmp_path, curves)["jobs"][0]["share"] == 1.0
    path.write_text(json.dumps({**extended_test_document(), "recipe": {"d_model": 256}}))
    assert record.read_extended_test(tmp_path, curves) is None  # another run's
    assert record.read_extended_test(None, curves) is None

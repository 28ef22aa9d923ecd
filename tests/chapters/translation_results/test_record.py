"""Chapter 05's record and closing: the record built from the chapter's objects reads back as it
was built, the committed records read back to the same JSON, its parts are what the page's
sentences read, and the closing renders a fixed record as its golden text."""

import dataclasses
import json
from pathlib import Path

import pandas as pd
import pytest

from annotated_transformer.book import summary
from annotated_transformer.chapters.translation_results import record, sentences
from annotated_transformer.chapters.translation_results import table2 as report
from annotated_transformer.evaluation import results
from annotated_transformer.profiles import get_profile
from tests.support.golden import assert_golden

HERE = Path(__file__).parent
RESULTS = HERE.parents[2] / "results"


def _cost() -> report.RunCost:
    return report.RunCost(
        sustained=3.0e11, how="measured here", train_time_s=900.17, target_tokens=2_567_557,
        parameters=7_577_600, paper_way=2.7e14, counted=1.08e14, six_n=4.2e13,
    )  # fmt: skip


def _decoded() -> dict:
    greedy = {"sacrebleu": 36.56, "bleu_tokenized": 36.5, "decode_seconds": 6.3}
    greedy |= {"test_set": "multi30k/val", "sentences": 1014}
    beamed = greedy | {
        "sacrebleu": 38.09,
        "bleu_tokenized": 38.07,
        "decode_seconds": 16.0,
    }
    beamed |= {"beam_size": 4, "length_penalty_alpha": 1.0}
    intervals = {
        "greedy": {"bleu": 36.56, "ci95": 1.58},
        "beam": {"bleu": 38.09, "ci95": 1.63, "p_value": 0.001, "exceeds_noise": True},
    }
    return record.decoding_record(greedy, beamed, intervals, "beam")


def _sweep() -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"k": 1, "snapshots": "s5.pt", "ppl": 7.643, "bleu": 35.04, "ci95": 1.57,
             "minus_k1": 0.0, "p_value": None, "beyond_noise": None},
            {"k": 2, "snapshots": "s4.pt .. s5.pt", "ppl": 6.992, "bleu": 36.04,
             "ci95": 1.64, "minus_k1": 1.0, "p_value": 0.011, "beyond_noise": True},
            {"k": 5, "snapshots": "s1.pt .. s5.pt", "ppl": 6.9, "bleu": 36.3,
             "ci95": 1.6, "minus_k1": 1.26, "p_value": 0.004, "beyond_noise": True},
        ],
        dtype=object,
    )  # fmt: skip


def _gpu() -> record.GpuRun:
    return record.GpuRun(
        label="gpu, 9.4M", short="gpu, 9.4M", sacrebleu=39.43, ci95=1.6,
        paper_way=3.229085e17, counted=1.0538e15, paired=True, difference=1.77,
        p_value=0.001, exceeds_noise=True,
    )  # fmt: skip


def _built() -> record.TranslationRecord:
    run = report.FinishedRun(
        folder=None, steps=2814, train_time_s=900.17, target_tokens=2_567_557, device="cpu",
        precision="fp32", stopped_by="max_time", snapshots=("s1.pt", "s5.pt"),
    )  # fmt: skip
    beamed = {"test_set": "multi30k/test2016", "sentences": 1000, "bleu_tokenized": 37.02,
              "sacrebleu": 37.0, "bleu_tokenized_signature": "s", "sacrebleu_signature": "s",
              "ppl": 6.4, "sacrebleu_ci95": 1.54}  # fmt: skip
    recipe_cost = report.RecipeCost(
        30, 31, 100_000, 2.5e9, 9.43e17, 3.2832e18, 9.89e14,
        {"assumed": 0.35, "measured for base (benchmarks)": 0.18},
    )  # fmt: skip
    check = report.RecipeCheck(8, 4.1, [10.996, 11.044], [], 10.99, 64, 37_000)
    cache = [{"decoder": "key-value cache", "seconds": 0.48}]
    return record.build(
        get_profile("cpu"), run, beamed, _decoded(), (36.954, 12), _cost(), _sweep(), cache,
        ["s1.pt", "s2.pt", "s3.pt", "s4.pt", "s5.pt"], (recipe_cost, check), _gpu(),
        "the book's run",
    )  # fmt: skip


# ------------------------------------------------------------------------------------------ record
def test_the_record_reads_back_as_it_was_built(tmp_path):
    profile = get_profile("smoke")
    assert record.read(profile.results_folder, tmp_path) is None
    built = _built()
    path = record.write(built, profile, "cpu", 12.34, results_dir=tmp_path)
    assert path == tmp_path / profile.results_folder / "translation.json"
    assert record.read(profile.results_folder, tmp_path) == built
    stored = results.read_result(record.RESULTS_NAME, profile.results_folder, tmp_path)
    assert (
        stored["wall_time_s"] == 12.3 and stored["config"]["profile"]["name"] == "smoke"
    )
    assert stored["metrics"]["run"]["origin"] == "the book's run"
    assert stored["metrics"]["bleu_tokenized_without_compound_splitting"] == 36.95
    hours = stored["metrics"]["paper_recipe"]["h100_gpu_hours"]
    assert set(hours) == {"assumed", "measured for base (benchmarks)"}
    assert hours["assumed"] < hours["measured for base (benchmarks)"]  # the larger share


@pytest.mark.parametrize(
    "folder", sorted(p.parent.name for p in RESULTS.glob("*/translation.json"))
)
def test_a_committed_record_reads_back_to_its_own_metrics(folder):
    """The typed record holds every field a committed file holds, in the file's order: written
    again it gives the same JSON, less the `run` field today's record no longer keeps."""
    found = results.read_result(record.RESULTS_NAME, folder, RESULTS)
    back = record.read(folder, RESULTS).metrics()
    stored = found["metrics"]
    assert list(back) == list(stored)
    assert set(back["run"]) - set(stored["run"]) <= {"origin"}
    for part in (back, stored):
        part["run"] = {
            k: v for k, v in part["run"].items() if k in record.RunInfo.__annotations__
        }
        part["run"].pop("origin", None)
    assert json.loads(json.dumps(back)) == stored


def test_the_record_holds_what_the_summary_reads():
    built = _built()
    claims = [c for c in summary.CLAIMS if c.chapter == "05_translation_results"]
    assert claims
    for claim in claims:
        assert claim.record is record.TranslationRecord
        assert claim.value(built, {"metrics": built.metrics()}) is not None, claim.label
    assert (built.bleu_tokenized, built.sacrebleu, built.sacrebleu_ci95) == (
        37.02,
        37.0,
        1.54,
    )
    assert built.training_flops == 2.7e14 and built.training_flops_counted == 1.08e14


def test_the_record_s_parts_are_typed():
    built = _built()
    assert built.gpu_comparison == _gpu()
    assert built.averaging[1] == record.AveragingRow(
        k=2, snapshots="s4.pt .. s5.pt", ppl=6.992, bleu=36.04, ci95=1.64, minus_k1=1.0,
        p_value=0.011, beyond_noise=True,
    )  # fmt: skip
    assert built.averaged_checkpoints[-1] == "s5.pt" and built.kv_cache_seconds == {
        "key-value cache": 0.48
    }
    assert built.paper_recipe.check_losses == (10.996, 11.044)
    assert built.run == record.RunInfo(
        steps=2814, train_time_s=900.17, target_tokens=2_567_557, device="cpu",
        origin="the book's run",
    )  # fmt: skip


def test_a_record_without_later_fields_takes_their_defaults():
    metrics = json.loads(json.dumps(_built().metrics()))  # as a file holds it
    del metrics["references_with_hyphen"], metrics["gpu_comparison"]
    del metrics["paper_recipe"]["check_vocab_size"]
    metrics["run"] = {k: v for k, v in metrics["run"].items() if k != "origin"}
    older = record.TranslationRecord.from_metrics(metrics)
    assert older.references_with_hyphen is None and older.gpu_comparison is None
    assert older.paper_recipe.check_vocab_size is None and older.run.origin is None
    text = sentences.closing(older)
    assert "few hyphenated compounds" in text and "committed `gpu` run" not in text
    assert "uniform guess over 37,000 pieces" in text  # the paper profile's BPE


def test_decoding_record_keeps_scores_intervals_and_the_test():
    decoded = _decoded()
    assert decoded["greedy"].sacrebleu_ci95 == 1.58
    assert decoded["beam"].p_value_against_greedy == 0.001
    assert decoded["beam"].exceeds_noise and decoded["beam"].beam_size == 4
    assert (decoded["decoding_set"], decoded["decoding_sentences"]) == (
        "multi30k/val",
        1014,
    )
    greedy = {"sacrebleu": 30.0, "bleu_tokenized": 30.1, "decode_seconds": 5.0}
    greedy |= {"test_set": "v", "sentences": 10}
    with pytest.raises(ValueError, match="different sentences"):
        record.decoding_record(greedy, greedy | {"sentences": 9}, {}, "beam")


def test_no_committed_paper_run_is_an_empty_dict(tmp_path):
    assert record.paper_runs(tmp_path) == {}


# ------------------------------------------------------------------------------------------ the words
def test_the_closing_renders_its_golden_text():
    built = _built()
    assert_golden(sentences.closing(built), HERE / "closing.golden.md")
    within = dataclasses.replace(
        built,
        gpu_comparison=dataclasses.replace(built.gpu_comparison, exceeds_noise=False),
    )
    assert "within the resampling noise (no difference)" in sentences.closing(within)

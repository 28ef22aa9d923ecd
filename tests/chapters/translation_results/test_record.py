"""Chapter 05's results record: what `build` keeps (the fields the introduction's summary reads
among them), its parts as the page's sentences read them, and `write` and `read` through the
results folder."""

import pandas as pd
import pytest

from annotated_transformer.chapters.translation_results import record, sentences
from annotated_transformer.chapters.translation_results import table2 as report
from annotated_transformer.profiles import get_profile


def _cost() -> report.RunCost:
    return report.RunCost(
        sustained=3.0e11, how="measured here", train_time_s=900.0, target_tokens=1_000_000,
        parameters=7_000_000, paper_way=2.7e14, counted=1.08e14, six_n=4.2e13,
    )  # fmt: skip


def _metrics() -> dict:
    run = report.FinishedRun(
        folder=None, steps=10, train_time_s=900.0, target_tokens=1_000_000, device="cpu",
        precision="bf16", stopped_by="max_steps", snapshots=("a", "b"),
    )  # fmt: skip
    beamed = {"test_set": "t", "sentences": 3, "bleu_tokenized": 37.02, "sacrebleu": 37.0,
              "bleu_tokenized_signature": "s", "sacrebleu_signature": "s", "ppl": 6.4,
              "sacrebleu_ci95": 1.54}  # fmt: skip
    # the validation split's comparison, whose interval is not the test score's
    decoded = {"decoding_set": "v", "decoding_sentences": 4, "greedy": {},
               "beam": {"sacrebleu_ci95": 9.99}}  # fmt: skip
    recipe_cost = report.RecipeCost(
        30, 31, 100_000, 2.5e9, 1e18, 3.3e18, 1e15, {"a": 0.35}
    )
    check = report.RecipeCheck(2, 1.0, [11.0, 10.9], [], 10.9, 64, 37_000)
    sweep = pd.DataFrame([{"k": 1}])
    return record.build(
        get_profile("smoke"), run, beamed, decoded, (37.004, 12), _cost(), sweep, [],
        ["a", "b"], (recipe_cost, check), None, "the book's run",
    )  # fmt: skip


def test_the_record_holds_what_the_summary_reads():
    m = _metrics()
    assert (m["bleu_tokenized"], m["sacrebleu"], m["sacrebleu_ci95"]) == (
        37.02,
        37.0,
        1.54,
    )
    assert m["training_flops"] == 2.7e14 and m["training_flops_counted"] == 1.08e14
    assert m["bleu_tokenized_without_compound_splitting"] == 37.0
    assert m["paper_recipe"]["check_vocab_size"] == 37_000
    assert m["gpu_comparison"] is None and m["references_with_hyphen"] == 12
    assert (m["test_set"], m["decoding_set"], m["decoding_sentences"]) == ("t", "v", 4)
    assert m["run"] == {
        "steps": 10,
        "train_time_s": 900.0,
        "target_tokens": 1_000_000,
        "device": "cpu",
        "origin": "the book's run",
    }


def test_the_page_s_cost_sentences_read_the_record_s_own_fields():
    costs = record.cost_fields(_cost())
    m = _metrics()
    for key, value in costs.items():
        assert m[key] == value if key != "run" else m["run"]["train_time_s"] == 900.0
    assert sentences.describe_cost(costs) == sentences.describe_cost(m)
    assert sentences.describe_table2(costs) == sentences.describe_table2(m)


def test_decoding_record_keeps_scores_intervals_and_the_test():
    greedy = {"sacrebleu": 30.0, "bleu_tokenized": 30.1, "decode_seconds": 5.0}
    greedy |= {"test_set": "multi30k/val", "sentences": 1014}
    beamed = greedy | {"sacrebleu": 31.0, "beam_size": 4, "length_penalty_alpha": 0.6}
    intervals = {
        "greedy": {"bleu": 30.0, "ci95": 1.5},
        "beam": {"bleu": 31.0, "ci95": 1.4, "p_value": 0.01, "exceeds_noise": True},
    }
    decoded = record.decoding_record(greedy, beamed, intervals, "beam")
    assert decoded["greedy"]["sacrebleu_ci95"] == 1.5
    assert decoded["beam"]["p_value_against_greedy"] == 0.01
    assert decoded["beam"]["exceeds_noise"] and decoded["beam"]["beam_size"] == 4
    assert (decoded["decoding_set"], decoded["decoding_sentences"]) == (
        "multi30k/val",
        1014,
    )
    with pytest.raises(ValueError, match="different sentences"):
        record.decoding_record(greedy, beamed | {"sentences": 1000}, intervals, "beam")


def test_write_and_read_through_the_profile_s_results_folder(tmp_path):
    profile = get_profile("smoke")
    assert record.read(profile.results_folder, tmp_path) is None
    path = record.write(_metrics(), profile, "cpu", 12.34, results_dir=tmp_path)
    assert path == tmp_path / profile.results_folder / "translation.json"
    back = record.read(profile.results_folder, tmp_path)
    assert back["metrics"]["sacrebleu"] == 37.0 and back["wall_time_s"] == 12.3
    assert back["config"]["profile"]["name"] == "smoke"


def test_no_committed_paper_run_is_an_empty_dict(tmp_path):
    assert record.paper_runs(tmp_path) == {}

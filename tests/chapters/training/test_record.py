"""Chapter 04's record: built from the chapter's objects it reads back whole, with the profile
as its config, and the run's published translation record is checked against the run."""

import pandas as pd
import pytest
import torch

from annotated_transformer.book import summary as book_summary
from annotated_transformer.chapters.training import record
from annotated_transformer.chapters.training import sizes as training_sizes
from annotated_transformer.evaluation import results
from annotated_transformer.profiles import get_profile

PROFILE = get_profile("smoke")
RUNS = ("post-norm, warm-up", "post-norm, no warm-up")


def _summary(results_path) -> dict:
    return {
        "train_time_s": 30.0,
        "steps": 60,
        "target_tokens": 51_000,
        "target_tokens_per_s": 1700.0,
        "mfu": None,
        "valid": {"ppl": 230.0},
        "parameters": 297_472,
        "test": {"sacrebleu": 0.03, "bleu_tokenized": 0.04},
        "results_path": str(results_path),
    }


def _metrics(results_path, resume_identical=True) -> dict:
    final = pd.DataFrame(
        {
            "run": RUNS,
            "mean NLL of the last 2 steps": [6.5, 5.9],
            "standard error": [0.1] * 2,
        }
    )
    top = {("post-norm", "decoder"): 2.5}
    return record.build(
        PROFILE,
        _summary(results_path),
        pd.DataFrame([{"split": "train", "side": "en", "pieces per word": 1.7}]),
        pd.DataFrame({"batches": ["random", "sorted"], "padding": [0.48, 0.11]}),
        {"steps": 200, "accuracy": 0.56},
        (final, top),
        pd.DataFrame([{"length": 1, "positions": "learned", "exact_sequence": 1.0}]),
        training_sizes.of(PROFILE.name),
        resume_identical=resume_identical,
    )


def test_the_record_reads_back_as_written(tmp_path):
    metrics = _metrics(tmp_path / "smoke" / "translation_x.json")
    path = record.write(metrics, PROFILE, torch.device("cpu"), 12.34, tmp_path)
    assert path == tmp_path / PROFILE.results_folder / f"{record.RESULTS_NAME}.json"
    back = record.read(PROFILE.results_folder, tmp_path)
    assert back["wall_time_s"] == 12.3
    assert back["metrics"]["step_time_s"] == 0.5
    assert back["metrics"]["translation_results"] == "translation_x.json"
    assert back["metrics"]["warmup_experiment"]["final_nll"] == dict(
        zip(RUNS, (6.5, 5.9))
    )
    assert back["metrics"]["warmup_experiment"]["top_over_bottom_gradient"] == {
        "post-norm, decoder": 2.5
    }
    assert back["config"]["profile"]["vocab_size"] == PROFILE.vocab_size
    assert (
        back["metrics"]["sizes"]["copy_length"]
        == training_sizes.of(PROFILE.name).copy_length
    )
    assert record.read("cpu", tmp_path) is None


def test_a_resumed_run_that_differs_is_recorded_as_such(tmp_path):
    assert (
        _metrics(tmp_path / "t.json", resume_identical=False)["resume_bit_identical"]
        is False
    )


def test_the_summary_reads_the_step_time_from_this_record(tmp_path):
    claim = next(c for c in book_summary.CLAIMS if c.chapter == "04_training")
    assert claim.result == record.RESULTS_NAME
    assert claim.key in _metrics(tmp_path / "t.json")


def _publish(root, sacrebleu: float) -> dict:
    scores = {"sacrebleu": sacrebleu, "bleu_tokenized": 0.04, "steps": 60}
    path = results.write_result("translation_x", scores, profile="smoke", root=root)
    return _summary(path)


def test_the_published_translation_record_is_named_with_its_provenance(tmp_path):
    line = record.published_translation(_publish(tmp_path, 0.03), "smoke", tmp_path)
    assert line.startswith("smoke/translation_x.json: measured on ")


def test_a_published_record_that_is_not_the_run_s_is_refused(tmp_path):
    run = _publish(tmp_path, 0.03)
    run["test"]["sacrebleu"] = 1.5
    with pytest.raises(ValueError, match="does not hold the run's sacrebleu"):
        record.published_translation(run, "smoke", tmp_path)
    with pytest.raises(ValueError, match="published no translation_x.json"):
        record.published_translation(run, "cpu", tmp_path)

"""Chapter 04's record: built from the chapter's objects it reads back as it was built, with the
profile as its config, the committed runs' files read back into it unchanged, and the run's
published translation record is checked against the run."""

import dataclasses
import json
from pathlib import Path

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
RESULTS = Path(__file__).resolve().parents[3] / "results"


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


def _built(results_path, resume_identical=True) -> record.TrainingRecord:
    final = pd.DataFrame(
        {
            "run": RUNS,
            "mean NLL of the last 2 steps": [6.5, 5.9],
            "standard error": [0.1] * 2,
        }
    )
    top = {("post-norm", "decoder"): 2.5}
    extrapolation = pd.DataFrame(
        [dict(length=1, exact_sequence=1.0, tokens_in_place=1.0, positions="learned")]
    )
    return record.build(
        PROFILE,
        _summary(results_path),
        pd.DataFrame([{"split": "train", "side": "en", "pieces per word": 1.7}]),
        pd.DataFrame({"batches": ["random", "sorted"], "padding": [0.48, 0.11]}),
        {"steps": 200, "accuracy": 0.56},
        (final, top),
        extrapolation,
        training_sizes.of(PROFILE.name),
        resume_identical=resume_identical,
    )


def test_the_record_reads_back_as_written(tmp_path):
    built = _built(tmp_path / "smoke" / "translation_x.json")
    path = record.write(built, PROFILE, torch.device("cpu"), 12.34, tmp_path)
    assert path == tmp_path / PROFILE.results_folder / f"{record.RESULTS_NAME}.json"
    assert record.read(PROFILE.results_folder, tmp_path) == built
    assert built.step_time_s == 0.5 and built.translation_results == "translation_x.json"
    assert built.warmup_experiment.final_nll == dict(zip(RUNS, (6.5, 5.9)))
    assert built.vocab_size == PROFILE.vocab_size
    stored = results.read_result(record.RESULTS_NAME, PROFILE.results_folder, tmp_path)
    assert stored["wall_time_s"] == 12.3
    assert stored["config"]["profile"]["vocab_size"] == PROFILE.vocab_size
    metrics = stored["metrics"]
    assert "vocab_size" not in metrics  # the profile's, kept in the config
    assert metrics["warmup_experiment"]["top_over_bottom_gradient"] == {
        "post-norm, decoder": 2.5
    }
    assert metrics["copy_task"] == {"steps": 200, "accuracy": 0.56, "max_length": 6}
    assert metrics["extrapolation"] == [
        dict(length=1, exact_sequence=1.0, tokens_in_place=1.0, positions="learned")
    ]
    assert metrics["sizes"]["copy_length"] == training_sizes.of(PROFILE.name).copy_length
    assert record.read("cpu", tmp_path) is None


@pytest.mark.parametrize("folder", ["book_cpu", "book_cpu_avx2_kernels"])
def test_a_committed_record_reads_back_into_the_same_metrics(folder):
    """The typed record holds every field of the committed file, in its order, and gives the
    same JSON back."""
    path = RESULTS / folder / f"{record.RESULTS_NAME}.json"
    if not path.is_file():
        pytest.skip(f"no committed results/{folder}/training.json")
    stored = json.loads(path.read_text())
    found = record.read(folder, RESULTS)
    assert json.loads(json.dumps(found.metrics())) == stored["metrics"]
    assert list(found.metrics()) == list(stored["metrics"])
    assert found.vocab_size == stored["config"]["profile"]["vocab_size"]
    assert isinstance(found.copy_task, record.CopyTask)
    assert isinstance(found.extrapolation[0], record.ExtrapolationRow)
    assert isinstance(found.sizes, training_sizes.TrainingSizes)


def test_a_resumed_run_that_differs_is_recorded_as_such(tmp_path):
    assert (
        _built(tmp_path / "t.json", resume_identical=False).resume_bit_identical is False
    )


def test_the_summary_reads_the_step_time_from_this_record(tmp_path):
    claim = next(c for c in book_summary.CLAIMS if c.chapter == "04_training")
    built = _built(tmp_path / "t.json")
    assert claim.record is record.TrainingRecord
    assert claim.results[0] == record.RESULTS_NAME
    assert claim.value(built, {}) == built.step_time_s is not None


def test_the_extrapolation_rows_take_the_table_s_columns_and_no_other():
    table = pd.DataFrame(
        [dict(length=3, exact_sequence=0.5, tokens_in_place=0.75, positions="sinusoidal")]
    )
    (row,) = record.extrapolation_rows(table)
    assert dataclasses.astuple(row) == (3, 0.5, 0.75, "sinusoidal")
    with pytest.raises(TypeError, match="unexpected keyword argument 'extra'"):
        record.extrapolation_rows(table.assign(extra=1))


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

"""Chapter 04's words: the closing renders a fixed record as its golden text, says only what the
record holds where a branch of wording matters, and every phrase renders."""

import dataclasses
from pathlib import Path

import pandas as pd
import pytest

from annotated_transformer.chapters.training import record, sentences
from annotated_transformer.chapters.training import sizes as training_sizes
from annotated_transformer.chapters.training.phrases import say
from tests.support.golden import assert_golden

HERE = Path(__file__).parent
RUNS = (
    "post-norm, warm-up",
    "post-norm, no warm-up",
    "pre-norm, warm-up",
    "pre-norm, no warm-up",
)


def _planted(**changes) -> record.TrainingRecord:
    """A chapter 04 record as `record.read` returns it, every finding clear of its noise."""
    found = record.TrainingRecord(
        dataset="multi30k en->de",
        step_time_s=0.3,
        steps=5000,
        train_time_s=1500.0,
        target_tokens_per_step=3000.0,
        target_tokens_per_s=10000.0,
        mfu=None,
        valid_ppl=5.1,
        parameters=9_000_000,
        test_sacrebleu=36.6,
        test_bleu_tokenized=36.9,
        translation_results="translation_multi30k_en_de.json",
        bpe=(
            {"split": "train", "side": "en", "pieces per word": 1.2},
            {"split": "train", "side": "de", "pieces per word": 1.33},
        ),
        padding_fraction={"random": 0.5, "sorted": 0.03, "tokens": 0.02},
        copy_task=record.CopyTask(steps=1600, accuracy=0.999, max_length=10),
        resume_bit_identical=True,
        warmup_experiment=record.WarmupExperiment(
            final_nll=dict(zip(RUNS, (5.51, 6.25, 5.11, 5.13))),
            final_nll_se=dict.fromkeys(RUNS, 0.02),
            top_over_bottom_gradient={
                "post-norm, encoder": 2.0,
                "post-norm, decoder": 3.0,
                "pre-norm, encoder": 0.8,
                "pre-norm, decoder": 0.7,
            },
        ),
        extrapolation=tuple(
            record.ExtrapolationRow(n, acc, acc, kind)
            for kind, at_next in (("sinusoidal", 0.64), ("learned", 0.0))
            for n, acc in ((10, 1.0), (11, at_next), (20, 0.0))
        ),
        sizes=training_sizes.of("cpu"),
        vocab_size=8000,
    )
    return dataclasses.replace(found, **changes)


def test_the_closing_renders_its_golden_text():
    assert_golden(sentences.closing(_planted()), HERE / "closing.golden.md")


def test_the_closing_says_when_the_resumed_run_differs_and_the_copy_task_is_unsolved():
    text = sentences.closing(
        _planted(
            resume_bit_identical=False,
            copy_task=record.CopyTask(steps=200, accuracy=0.96, max_length=10),
        )
    )
    assert "did not end with the weights" in text and "bit-identical" not in text
    assert "too few steps" in text and "work together" not in text


def test_the_warm_up_sentence_names_the_harm_only_when_the_runs_show_it():
    nll = dict(zip(RUNS, (6.59, 5.93, 6.52, 5.79)))
    text = sentences.describe_warmup(nll, dict.fromkeys(RUNS, 0.05))
    assert "0.66 nats per token below its warmed-up twin" in text
    assert "does not show the harm" in text and "The reason" not in text
    assert "one run each, so no interval" in sentences.describe_warmup(nll)


def test_the_extrapolation_sentence_names_no_winner_inside_the_intervals():
    rows = [
        record.ExtrapolationRow(n, acc, acc, kind)
        for kind, at_next in (("sinusoidal", 0.10), ("learned", 0.06))
        for n, acc in ((10, 1.0), (11, at_next), (20, 0.0))
    ]
    text = sentences.describe_extrapolation(rows, 10, 100)
    assert "cannot be told apart" in text and "positions copy more" not in text


def test_the_perplexity_sentence_says_which_way_the_last_steps_moved():
    log = pd.DataFrame({"step": [300, 600, 900], "ppl": [12.0, 9.0, 7.83]})
    run = {"steps": 1000, "test": {"ppl": 6.4, "averaged_checkpoints": ["a", "b"]}}
    lower = sentences.describe_perplexities({**run, "valid": {"ppl": 7.70}}, log, 300)
    assert "read 7.83 (the trainer measures every 300 steps, and the model kept" in lower
    early = sentences.describe_perplexities(
        {**run, "steps": 300, "valid": {"ppl": 7.0}}, log, 300
    )
    assert "step 300. The test perplexity, 6.40" in early


def test_the_plan_names_every_limit_the_profile_sets():
    from annotated_transformer.profiles import get_profile

    one = sentences.describe_plan(get_profile("smoke", max_steps=40), "cpu")
    assert "for 40 steps with batches" in one and "whichever" not in one
    two = sentences.describe_plan(get_profile("gpu"), "cuda")
    assert " or " in two and ", whichever comes first, with batches" in two


def test_closing_reads_the_committed_cpu_record():
    committed = record.read("book_cpu")
    if committed is None:
        pytest.skip("no committed results/book_cpu/training.json")
    text = sentences.closing(committed)
    assert text.count("\n- ") == 8
    assert f"{committed.step_time_s:.3f} s" in text


def test_every_phrase_is_said_by_the_chapter():
    """Each template of the table is used by a sentence: a phrase nobody says is dead wording."""
    source = (Path(sentences.__file__)).read_text()
    unused = [
        key
        for key in say.table
        if f'"{key}"' not in source and f'"{key.split(".")[0]}.{{' not in source
    ]
    assert not unused, unused

"""Chapter 04's sentences: each changes with the numbers it reads, a difference inside its noise
is not called a difference, and the closing section says only what its record holds."""

import copy

import pytest

from annotated_transformer.chapters.training import record, sentences

RUNS = (
    "post-norm, warm-up",
    "post-norm, no warm-up",
    "pre-norm, warm-up",
    "pre-norm, no warm-up",
)


def test_wilson_interval_stays_inside_zero_and_one_and_covers_the_share():
    low, high = sentences.wilson_interval(999, 1000)
    assert 0.99 < low < 0.999 < high <= 1.0
    low, high = sentences.wilson_interval(0, 100)
    assert low == pytest.approx(0.0, abs=1e-12) and 0.03 < high < 0.05
    assert sentences.wilson_interval(0, 0) == (0.0, 1.0)


def test_copy_sentence_says_whether_the_loop_learned():
    solved = sentences.describe_copy({"accuracy": 0.999, "steps": 1600})
    assert "99.9%" in solved and "work together" in solved
    unsolved = sentences.describe_copy({"accuracy": 0.56, "steps": 200})
    assert "too few steps" in unsolved and "work together" not in unsolved


def test_warmup_sentence_calls_a_difference_inside_the_noise_none():
    nll = dict(zip(RUNS, (5.51, 6.25, 5.11, 5.13)))
    clear = sentences.describe_warmup(nll, dict.fromkeys(RUNS, 0.02))
    assert "0.74 nats per token above" in clear and "The reason" in clear
    assert "pre-norm model ends where its twin does" in clear
    noisy = sentences.describe_warmup(nll, dict.fromkeys(RUNS, 0.5))
    assert "post-norm model ends where its twin does" in noisy
    assert "does not show the harm" in noisy


def test_warmup_sentence_follows_the_direction():
    backwards = dict(zip(RUNS, (6.59, 5.93, 6.52, 5.79)))
    text = sentences.describe_warmup(backwards, dict.fromkeys(RUNS, 0.05))
    assert "below its warmed-up twin" in text and "does not show the harm" in text
    without = sentences.describe_warmup(dict(zip(RUNS, (5.51, 6.25, 5.11, 5.13))))
    assert "one run each, so no interval" in without


def _extrapolation(sin_next: float, learned_next: float, n: int = 100) -> list[dict]:
    rows = []
    for kind, nxt in (("sinusoidal", sin_next), ("learned", learned_next)):
        for length, acc in ((10, 1.0), (11, nxt), (20, 0.0)):
            rows.append({"length": length, "positions": kind, "exact_sequence": acc})
    return rows


def test_extrapolation_sentence_names_a_winner_only_beyond_the_intervals():
    apart = sentences.describe_extrapolation(_extrapolation(0.64, 0.0), 10, 100)
    assert "sinusoidal positions copy more" in apart and "64%" in apart
    close = sentences.describe_extrapolation(_extrapolation(0.10, 0.06), 10, 100)
    assert "cannot be told apart" in close
    reverse = sentences.describe_extrapolation(_extrapolation(0.0, 0.64), 10, 100)
    assert "learned positions copy more" in reverse


def test_bpe_and_padding_sentences_read_their_numbers():
    rows = [
        {"split": "train", "side": "en", "pieces per word": 1.2},
        {"split": "train", "side": "de", "pieces_per_word": 1.33},
    ]
    text = sentences.describe_bpe(rows, 8000)
    assert "1.20 pieces per English word" in text and "most words are one piece" in text
    rows[1]["pieces_per_word"] = 2.04
    assert "many words take several pieces" in sentences.describe_bpe(rows, 1000)
    pad = {"random": 0.5, "sorted": 0.028, "tokens": 0.022}
    assert "cuts the padding from 50.0%" in sentences.describe_padding(pad)
    assert "does not cut" in sentences.describe_padding({"r": 0.1, "s": 0.2, "t": 0.2})


def test_closing_reads_the_committed_cpu_record():
    committed = record.read("book_cpu")
    if committed is None:
        pytest.skip("no committed results/book_cpu/training.json")
    text = sentences.closing(committed)
    assert text.count("\n- ") == 8
    assert f"{committed['metrics']['step_time_s']:.3f} s" in text


def _planted(**changes) -> dict:
    """A chapter 04 record as `record.read` returns it, every finding clear of its noise."""
    extrapolation = [
        {"length": n, "positions": kind, "exact_sequence": acc, "tokens_in_place": acc}
        for kind, at_next in (("sinusoidal", 0.64), ("learned", 0.0))
        for n, acc in ((10, 1.0), (11, at_next), (20, 0.0))
    ]
    metrics = {
        "bpe": [
            {"split": "train", "side": "en", "pieces per word": 1.2},
            {"split": "train", "side": "de", "pieces per word": 1.33},
        ],
        "padding_fraction": {"random": 0.5, "sorted": 0.03, "tokens": 0.02},
        "copy_task": {"steps": 1600, "accuracy": 0.999, "max_length": 10},
        "steps": 5000,
        "train_time_s": 1500.0,
        "valid_ppl": 5.1,
        "test_sacrebleu": 36.6,
        "step_time_s": 0.3,
        "target_tokens_per_step": 3000.0,
        "target_tokens_per_s": 10000.0,
        "parameters": 9_000_000,
        "resume_bit_identical": True,
        "warmup_experiment": {
            "final_nll": dict(zip(RUNS, (5.51, 6.25, 5.11, 5.13))),
            "final_nll_se": dict.fromkeys(RUNS, 0.02),
            "top_over_bottom_gradient": {
                "post-norm, encoder": 2.0,
                "post-norm, decoder": 3.0,
                "pre-norm, encoder": 0.8,
                "pre-norm, decoder": 0.7,
            },
        },
        "extrapolation": extrapolation,
        "sizes": {"eval_per_length": 100},
    }
    record = {"metrics": metrics, "config": {"profile": {"vocab_size": 8000}}}
    for key, value in changes.items():
        metrics[key] = value
    return record


def test_closing_says_one_sentence_per_finding_from_the_record():
    text = sentences.closing(_planted())
    assert text.count("\n- ") == 8
    assert "One step took 0.300 s" in text and "copies 99.9%" in text
    assert "bit-identical weights" in text and "The reason" in text
    assert "sinusoidal positions copy more" in text


def test_closing_does_not_call_a_copy_task_solved_below_its_interval():
    text = sentences.closing(
        _planted(copy_task={"steps": 200, "accuracy": 0.96, "max_length": 10})
    )
    assert "too few steps" in text and "work together" not in text


def test_closing_names_no_warm_up_harm_when_the_lowest_loss_is_inside_the_noise():
    # the post-norm run without a warm-up ends lowest, but within its noise of its twin
    nll = dict(zip(RUNS, (5.60, 5.55, 5.70, 5.65)))
    warm = copy.deepcopy(_planted()["metrics"]["warmup_experiment"])
    warm.update(final_nll=nll, final_nll_se=dict.fromkeys(RUNS, 0.1))
    text = sentences.closing(_planted(warmup_experiment=warm))
    assert "post-norm model ends where its twin does" in text
    assert "below its warmed-up twin" not in text and "The reason" not in text


def test_closing_names_no_kind_of_position_whose_lead_is_inside_the_intervals():
    rows = copy.deepcopy(_planted()["metrics"]["extrapolation"])
    for row in rows:
        if row["length"] == 11:  # sinusoids ahead, by less than the intervals
            row["exact_sequence"] = 0.10 if row["positions"] == "sinusoidal" else 0.06
    text = sentences.closing(_planted(extrapolation=rows))
    assert "cannot be told apart" in text and "positions copy more" not in text


def test_closing_says_when_the_resumed_run_differs():
    text = sentences.closing(_planted(resume_bit_identical=False))
    assert "did not end with the weights" in text and "bit-identical" not in text


def test_perplexity_sentence_says_which_way_the_last_steps_moved():
    import pandas as pd

    log = pd.DataFrame({"step": [300, 600, 900], "ppl": [12.0, 9.0, 7.83]})
    run = {"steps": 1000, "test": {"ppl": 6.4, "averaged_checkpoints": ["a", "b"]}}
    lower = sentences.describe_perplexities({**run, "valid": {"ppl": 7.70}}, log, 300)
    higher = sentences.describe_perplexities({**run, "valid": {"ppl": 7.86}}, log, 300)
    assert "read 7.83" in lower and "kept learning after it" in lower
    assert "read 7.83" in higher and "kept learning" not in higher
    assert "the last steps did not lower it" in higher

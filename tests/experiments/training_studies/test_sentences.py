"""Chapter 04's sentences: each changes with the numbers it reads, and a difference inside its
noise is not called a difference."""

import math

import pandas as pd
import pytest

from annotated_transformer.evaluation import results
from annotated_transformer.experiments.training_studies import warmup
from annotated_transformer.experiments.training_studies import write_up as report

RUNS = (
    "post-norm, warm-up",
    "post-norm, no warm-up",
    "pre-norm, warm-up",
    "pre-norm, no warm-up",
)


def test_wilson_interval_stays_inside_zero_and_one_and_covers_the_share():
    low, high = report.wilson_interval(999, 1000)
    assert 0.99 < low < 0.999 < high <= 1.0
    low, high = report.wilson_interval(0, 100)
    assert low == pytest.approx(0.0, abs=1e-12) and 0.03 < high < 0.05
    assert report.wilson_interval(0, 0) == (0.0, 1.0)


def test_copy_sentence_says_whether_the_loop_learned():
    solved = report.describe_copy({"accuracy": 0.999, "steps": 1600})
    assert "99.9%" in solved and "work together" in solved
    unsolved = report.describe_copy({"accuracy": 0.56, "steps": 200})
    assert "too few steps" in unsolved and "work together" not in unsolved


def test_warmup_sentence_calls_a_difference_inside_the_noise_none():
    nll = dict(zip(RUNS, (5.51, 6.25, 5.11, 5.13)))
    clear = report.describe_warmup(nll, dict.fromkeys(RUNS, 0.02))
    assert "0.74 nats per token above" in clear and "The reason" in clear
    assert "pre-norm model ends where its twin does" in clear
    noisy = report.describe_warmup(nll, dict.fromkeys(RUNS, 0.5))
    assert "post-norm model ends where its twin does" in noisy
    assert "does not show the harm" in noisy


def test_warmup_sentence_follows_the_direction():
    backwards = dict(zip(RUNS, (6.59, 5.93, 6.52, 5.79)))
    text = report.describe_warmup(backwards, dict.fromkeys(RUNS, 0.05))
    assert "below its warmed-up twin" in text and "does not show the harm" in text
    without = report.describe_warmup(dict(zip(RUNS, (5.51, 6.25, 5.11, 5.13))))
    assert "one run each, so no interval" in without


def _extrapolation(sin_next: float, learned_next: float, n: int = 100) -> list[dict]:
    rows = []
    for kind, nxt in (("sinusoidal", sin_next), ("learned", learned_next)):
        for length, acc in ((10, 1.0), (11, nxt), (20, 0.0)):
            rows.append({"length": length, "positions": kind, "exact_sequence": acc})
    return rows


def test_extrapolation_sentence_names_a_winner_only_beyond_the_intervals():
    apart = report.describe_extrapolation(_extrapolation(0.64, 0.0), 10, 100)
    assert "sinusoidal positions copy more" in apart and "64%" in apart
    close = report.describe_extrapolation(_extrapolation(0.10, 0.06), 10, 100)
    assert "cannot be told apart" in close
    reverse = report.describe_extrapolation(_extrapolation(0.0, 0.64), 10, 100)
    assert "learned positions copy more" in reverse


def test_bpe_and_padding_sentences_read_their_numbers():
    rows = [
        {"split": "train", "side": "en", "pieces per word": 1.2},
        {"split": "train", "side": "de", "pieces_per_word": 1.33},
    ]
    text = report.describe_bpe(rows, 8000)
    assert "1.20 pieces per English word" in text and "most words are one piece" in text
    rows[1]["pieces_per_word"] = 2.04
    assert "many words take several pieces" in report.describe_bpe(rows, 1000)
    pad = {"random": 0.5, "sorted": 0.028, "tokens": 0.022}
    assert "cuts the padding from 50.0%" in report.describe_padding(pad)
    assert "does not cut" in report.describe_padding({"r": 0.1, "s": 0.2, "t": 0.2})


def test_final_losses_give_the_mean_and_its_standard_error():
    log = pd.DataFrame(
        {"run": ["a"] * 20, "step": range(1, 21), "nll": [5.0] * 10 + [4.0, 6.0] * 5}
    )
    final = warmup.final_losses(log, 20)
    assert final.iloc[0, 1] == pytest.approx(5.0)
    # the last tenth: 4.0 and 6.0, standard deviation sqrt(2), over sqrt(2) values
    assert final["standard error"].iloc[0] == pytest.approx(math.sqrt(2) / math.sqrt(2))


def test_closing_list_reads_the_committed_cpu_record():
    record = results.read_result("training", "book_cpu")
    if record is None:
        pytest.skip("no committed results/book_cpu/training.json")
    text = report.what_this_run_shows(record)
    assert text.count("\n- ") == 8
    assert f"{record['metrics']['step_time_s']:.3f} s" in text

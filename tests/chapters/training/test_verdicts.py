"""Chapter 04's verdicts, by value: each holds the numbers it rests on, and a finding is drawn only
when they hold it (a copy task solved above its interval, a warm-up difference beyond its noise,
a kind of position ahead beyond both intervals)."""

import pandas as pd
import pytest

from annotated_transformer.chapters.training import verdicts
from annotated_transformer.chapters.training.record import ExtrapolationRow
from annotated_transformer.profiles import get_profile

RUNS = (
    "post-norm, warm-up",
    "post-norm, no warm-up",
    "pre-norm, warm-up",
    "pre-norm, no warm-up",
)


def test_wilson_interval_stays_inside_zero_and_one_and_covers_the_share():
    low, high = verdicts.wilson_interval(999, 1000)
    assert 0.99 < low < 0.999 < high <= 1.0
    low, high = verdicts.wilson_interval(0, 100)
    assert low == pytest.approx(0.0, abs=1e-12) and 0.03 < high < 0.05
    assert verdicts.wilson_interval(0, 0) == (0.0, 1.0)


def test_the_copy_task_is_solved_only_when_its_interval_clears_95_percent():
    solved = verdicts.copy(0.999, 1600)
    assert solved.solved and solved.held_out == 1000 and solved.low > 0.99
    # 96% of 1,000 is above 95%, but its interval is not
    close = verdicts.copy(0.96, 200)
    assert close.low < 0.95 < close.accuracy and not close.solved


def test_a_warm_up_difference_inside_its_noise_is_none():
    nll = dict(zip(RUNS, (5.51, 6.25, 5.11, 5.13)))
    clear = verdicts.warmup(nll, dict.fromkeys(RUNS, 0.02))
    assert clear.post.sign == 1 and clear.post.difference == pytest.approx(0.74)
    assert clear.post.noise == pytest.approx(2 * 0.02 * 2**0.5)
    assert clear.pre.sign == 0 and clear.shows_harm
    noisy = verdicts.warmup(nll, dict.fromkeys(RUNS, 0.5))
    assert noisy.post.sign == 0 and not noisy.shows_harm


def test_the_warm_up_verdict_follows_the_direction_and_needs_no_spread():
    backwards = verdicts.warmup(
        dict(zip(RUNS, (6.59, 5.93, 6.52, 5.79))), dict.fromkeys(RUNS, 0.05)
    )
    assert backwards.post.sign == -1 and not backwards.shows_harm
    # without standard errors, 0.05 nats per token is the line
    without = verdicts.warmup(dict(zip(RUNS, (5.51, 5.55, 5.11, 5.20))))
    assert without.post.noise is None and without.post.sign == 0
    assert without.pre.sign == 1 and not without.shows_harm  # pre-norm hurt too


def _rows(sin_next: float, learned_next: float, L: int = 10) -> list[ExtrapolationRow]:
    return [
        ExtrapolationRow(length, acc, acc, kind)
        for kind, nxt in (("sinusoidal", sin_next), ("learned", learned_next))
        for length, acc in ((L, 1.0), (L + 1, nxt), (2 * L, 0.05))
    ]


def test_a_kind_of_position_leads_only_beyond_both_intervals():
    apart = verdicts.extrapolation(_rows(0.64, 0.0), 10, 100)
    assert apart.leader == "sinusoidal" and apart.twice == 20
    assert apart.sinusoidal_next.share == 0.64 and apart.learned_twice.share == 0.05
    assert apart.learned_next.high < apart.sinusoidal_next.low
    assert verdicts.extrapolation(_rows(0.10, 0.06), 10, 100).leader is None
    assert verdicts.extrapolation(_rows(0.0, 0.64), 10, 100).leader == "learned"


def test_the_extrapolation_points_are_at_l_l_plus_one_and_2l():
    rows = _rows(0.5, 0.25) + [ExtrapolationRow(3, 1.0, 1.0, "learned")]
    points = verdicts.extrapolation_points(rows, 10)
    assert points["learned"] == {10: 1.0, 11: 0.25, 20: 0.05}


def test_the_vocabulary_verdict_reads_the_training_split_and_its_hardest_side():
    rows = [
        {"split": "train", "side": "en", "pieces per word": 1.2},
        {"split": "train", "side": "de", "pieces_per_word": 1.33},
        {"split": "test", "side": "de", "pieces per word": 9.0},
    ]
    found = verdicts.vocabulary(rows, 8000)
    assert found.pieces_per_word == (("en", 1.2), ("de", 1.33))
    assert found.most == "de" and found.one_piece
    rows[1]["pieces_per_word"] = 2.04
    assert not verdicts.vocabulary(rows, 1000).one_piece


def test_padding_is_cut_only_when_sorting_lowers_it():
    found = verdicts.padding({"random": 0.5, "sorted": 0.028, "tokens": 0.022})
    assert (found.random, found.by_length, found.by_tokens, found.cuts) == (
        0.5,
        0.028,
        0.022,
        True,
    )
    assert not verdicts.padding({"r": 0.1, "s": 0.2, "t": 0.2}).cuts


def test_the_perplexities_say_whether_the_last_steps_lowered_it():
    log = pd.DataFrame({"step": [300, 600, 900], "ppl": [12.0, 9.0, 7.83]})
    run = {"steps": 1000, "test": {"ppl": 6.4, "averaged_checkpoints": ["a", "b"]}}
    lower = verdicts.perplexities({**run, "valid": {"ppl": 7.70}}, log, 300)
    assert (lower.last_step, lower.last_ppl, lower.snapshots) == (900, 7.83, 2)
    assert lower.kept_learning
    assert not verdicts.perplexities(
        {**run, "valid": {"ppl": 7.86}}, log, 300
    ).kept_learning
    early = verdicts.perplexities({**run, "steps": 300, "valid": {"ppl": 7.0}}, log, 300)
    assert early.last_step is None and not early.kept_learning


def test_the_gradients_are_read_by_norm_and_stack():
    found = verdicts.gradients(
        {"post-norm, encoder": 2.0, "post-norm, decoder": 3.0,
         "pre-norm, encoder": 0.8, "pre-norm, decoder": 0.7}
    )  # fmt: skip
    assert (found.post_decoder, found.pre_decoder) == (3.0, 0.7)
    assert (found.post_encoder, found.pre_encoder) == (2.0, 0.8)


def test_the_plan_holds_only_the_limits_the_profile_sets():
    steps = verdicts.plan(get_profile("smoke", max_steps=40), "cpu")
    assert (steps.max_steps, steps.limits, steps.device) == (40, 1, "cpu")
    gpu = verdicts.plan(get_profile("gpu"), "cuda")
    assert gpu.max_epochs is not None and gpu.minutes is not None and gpu.limits == 2

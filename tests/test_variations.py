"""Table 3 at a smaller scale: each row keeps the paper's change, the verdict rule, the rank
correlation, and a tiny training of two rows on real Multi30k."""

from __future__ import annotations

import math

import pytest

from annotated_transformer.evaluation import paper
from annotated_transformer.experiments import variations
from annotated_transformer.model.config import TABLE3_ALL_ROWS
from annotated_transformer.model.transformer import Transformer, count_parameters
from annotated_transformer.profiles import get_profile

SCALE = variations.VariationScale(width=8, depth=2)
VOCAB = 1000


def params(row: str, scale=SCALE) -> int:
    return count_parameters(
        Transformer(scale.config(row), VOCAB, VOCAB, share_embeddings=True)
    )


def test_rows_are_the_paper_table():
    assert list(TABLE3_ALL_ROWS) == list(paper.TABLE3)
    assert variations.changes("base") == {}
    assert variations.changes("C1") == {"n_layers": 2}
    assert variations.changes("big") == {
        "d_model": 1024,
        "d_ff": 4096,
        "n_heads": 16,
        "dropout": 0.3,
    }


def test_scaled_base_divides_widths_and_depths():
    base = SCALE.config("base")
    assert (base.n_layers, base.d_model, base.d_ff, base.n_heads, base.d_k, base.d_v) == (
        3,
        64,
        256,
        8,
        8,
        8,
    )
    assert (base.dropout, base.label_smoothing, base.positional) == (
        0.1,
        0.1,
        "sinusoidal",
    )
    assert variations.VariationScale(1, 1).config("base").d_model == 512


def test_heads_rows_keep_h_times_dk_equal_to_d_model():
    base = SCALE.config("base")
    a1 = SCALE.config("A1")
    assert a1.n_heads == 1 and a1.d_k == a1.d_v == base.d_model
    for row, heads in (("A2", 4), ("A3", 16), ("A4", 32)):
        c = SCALE.config(row)
        assert c.n_heads == heads and c.n_heads * c.d_k == base.d_model == c.d_model


def test_key_size_rows_shrink_dk_in_the_paper_ratio_with_heads_fixed():
    base = SCALE.config("base")
    for row, paper_dk in (("B1", 16), ("B2", 32)):
        c = SCALE.config(row)
        assert c.n_heads == base.n_heads and c.d_v == base.d_v
        assert c.d_k * 64 == base.d_k * paper_dk


def test_size_rows_scale_depth_width_and_feed_forward():
    base = SCALE.config("base")
    assert [SCALE.config(r).n_layers for r in ("C1", "C2", "C3")] == [1, 2, 4]
    c4, c5 = SCALE.config("C4"), SCALE.config("C5")
    assert (c4.d_model, c4.d_k) == (base.d_model // 2, base.d_k // 2)
    assert (c5.d_model, c5.d_k) == (base.d_model * 2, base.d_k * 2)
    assert SCALE.config("C6").d_ff * 2 == base.d_ff == SCALE.config("C7").d_ff // 2
    big = SCALE.config("big")
    assert (big.d_model, big.d_ff, big.n_heads, big.dropout) == (
        2 * base.d_model,
        2 * base.d_ff,
        16,
        0.3,
    )


def test_regularisation_and_position_rows():
    assert [SCALE.config(r).dropout for r in ("D1", "D2")] == [0.0, 0.2]
    assert [SCALE.config(r).label_smoothing for r in ("D3", "D4")] == [0.0, 0.2]
    assert SCALE.config("E").positional == "learned"
    assert variations.scaled_changes("E", SCALE) == {"positional": "learned"}


def test_parameter_counts_move_in_the_papers_direction():
    base = params("base")
    for row in TABLE3_ALL_ROWS:
        theirs = paper.TABLE3[row].params_m
        if row == "base" or theirs is None or theirs == paper.TABLE3["base"].params_m:
            continue
        assert (params(row) > base) == (theirs > paper.TABLE3["base"].params_m), row
    assert params("A1") == base  # heads with h * d_k fixed cost nothing


def test_a_scale_that_does_not_divide_is_refused():
    with pytest.raises(ValueError, match="not divisible"):
        variations.VariationScale(width=32, depth=2).config("A4")  # d_k = 16 / 32
    with pytest.raises(ValueError, match="unknown Table 3 row"):
        variations.paper_config("Z9")


def test_learning_rate_follows_d_model_to_the_minus_half():
    profile = get_profile("cpu")
    anchor = profile.model_config().d_model
    wide = variations.row_settings(profile, SCALE.config("C5"), 100, 1)
    base = variations.row_settings(profile, SCALE.config("base"), 100, 1)
    assert math.isclose(base.peak_lr, profile.peak_lr * math.sqrt(anchor / 64))
    assert math.isclose(base.peak_lr / wide.peak_lr, math.sqrt(2))
    assert base.max_steps == 100 and base.warmup_steps == 25 and base.seed == 1


def test_spearman_against_hand_computed_values():
    # ranks x: 1 2 3 4 5, y: 2 1 4 3 5 -> d^2 = 4 -> 1 - 6*4 / (5*24) = 0.8
    assert math.isclose(variations.spearman([1, 2, 3, 4, 5], [20, 10, 40, 30, 50]), 0.8)
    assert math.isclose(variations.spearman([1, 2, 3], [3, 2, 1]), -1.0)
    # a tie: y ranks 1.5 1.5 3 -> Pearson of (1, 2, 3) and (1.5, 1.5, 3) = sqrt(3) / 2
    assert math.isclose(variations.spearman([1, 2, 3], [5, 5, 9]), math.sqrt(3) / 2)


def test_spearman_chance_levels_from_permutations():
    # n = 5: only the two perfect orderings of 120 reach |rho| = 1
    assert math.isclose(variations.spearman_p_value(1.0, 5), 2 / 120)
    assert variations.spearman_critical(5) == 1.0
    assert (
        variations.spearman_critical(4) is None
    )  # 2 / 24 > 0.05: nothing is significant
    assert 0.43 < variations.spearman_critical(20) < 0.46  # the textbook table's 0.447
    assert variations.spearman_p_value(0.0, 20) > 0.9


def test_row_config_records_what_the_row_trained_with():
    profile = get_profile("cpu")
    config = variations.row_config("A1", profile, SCALE, 300)
    assert config.max_len == profile.model_config().max_len
    assert (
        config.warmup_steps
        == variations.row_settings(profile, config, 300, 1).warmup_steps
    )
    assert config.warmup_steps == 75 and config.n_heads == 1


def test_verdict_rule_on_synthetic_numbers():
    one_head = variations.FINDINGS[0]
    assert one_head.pairs == (("A1", "base"),)
    holds = variations.verdict(one_head, {"A1": [12.0, 12.4], "base": [10.0, 10.5]})
    assert holds["verdict"] == variations.HOLDS and math.isclose(
        holds["pairs"][0]["noise"], 0.5
    )
    against = variations.verdict(one_head, {"A1": [9.0, 9.2], "base": [10.0, 10.5]})
    assert against["verdict"] == variations.DOES_NOT_HOLD
    unclear = variations.verdict(one_head, {"A1": [10.3, 10.6], "base": [10.0, 10.5]})
    assert unclear["verdict"] == variations.CANNOT_TELL
    one_seed = variations.verdict(one_head, {"A1": [20.0], "base": [10.0]})
    assert (
        one_seed["verdict"] == variations.CANNOT_TELL and "one seed" in one_seed["reason"]
    )
    missing = variations.verdict(one_head, {"base": [10.0, 10.5]})
    assert missing["verdict"] == variations.CANNOT_TELL and "A1" in missing["reason"]


def test_tie_and_several_pairs():
    tie = next(f for f in variations.FINDINGS if f.kind == "tie")
    assert (
        variations.verdict(tie, {"E": [10.2, 10.4], "base": [10.0, 10.5]})["verdict"]
        == variations.HOLDS
    )
    apart = {"E": [12.0, 12.1], "base": [10.0, 10.5]}
    assert variations.verdict(tie, apart)["verdict"] == variations.DOES_NOT_HOLD
    bigger = next(f for f in variations.FINDINGS if f.name == "bigger is better")
    good = {
        "C1": [12, 12.2],
        "C3": [10, 10.1],
        "C4": [13, 13.1],
        "C5": [9, 9.1],
        "C6": [11, 11.1],
        "C7": [10, 10.1],
    }
    assert variations.verdict(bigger, good)["verdict"] == variations.HOLDS
    unclear = {**good, "C7": [11.05, 11.15]}
    assert variations.verdict(bigger, unclear)["verdict"] == variations.CANNOT_TELL
    assert (
        variations.verdict(bigger, {**good, "C7": [14, 14.1]})["verdict"]
        == variations.DOES_NOT_HOLD
    )


def test_profiles_set_the_table3_scale():
    for name in ("smoke", "cpu", "gpu"):
        book = get_profile(name).book
        scale = variations.VariationScale(
            book.table3_width_divisor, book.table3_depth_divisor
        )
        for row in book.table3_rows:
            scale.config(row)  # every row divides exactly
        assert book.table3_seeds >= 2


@pytest.mark.slow  # trains two Table 3 rows on Multi30k
def test_two_rows_train_to_finite_perplexities(data_dir):
    from annotated_transformer import pipeline

    profile = get_profile(
        "smoke", max_train_pairs=300, max_valid_pairs=40, batch_tokens=256
    )
    data = pipeline.prepare_data(profile, data_dir)
    sources = ["A man is riding a bike.", "Two dogs play in the snow."]
    references = ["Ein Mann fährt Fahrrad.", "Zwei Hunde spielen im Schnee."]
    runs = [
        variations.train_row(
            row,
            data,
            profile,
            SCALE,
            steps=3,
            seed=1,
            bleu_sources=sources,
            bleu_references=references,
        )
        for row in ("base", "C1")
    ]
    for run in runs:
        assert len(run.hypotheses) == 2 and "hypotheses" not in run.to_dict()
        assert (
            run.steps == 3
            and math.isfinite(run.ppl)
            and run.ppl > 1
            and 0.0 <= run.bleu <= 100.0
        )
    assert runs[1].params < runs[0].params


@pytest.mark.slow  # trains rows in two worker processes
def test_rows_trained_in_two_processes_match_one_process(data_dir):
    from annotated_transformer import pipeline

    profile = get_profile(
        "smoke", max_train_pairs=200, max_valid_pairs=20, batch_tokens=256
    )
    data = pipeline.prepare_data(profile, data_dir)
    plan = [("base", 1), ("C1", 1)]
    alone = {r.row: r for r in variations.train_rows(plan, data, profile, SCALE, steps=2)}
    side_by_side = {
        r.row: r
        for r in variations.train_rows(
            plan, data, profile, SCALE, steps=2, workers=2, data_dir=data_dir
        )
    }
    assert set(side_by_side) == {"base", "C1"}
    for row in alone:
        assert math.isclose(alone[row].ppl, side_by_side[row].ppl, rel_tol=1e-4)
        assert alone[row].params == side_by_side[row].params

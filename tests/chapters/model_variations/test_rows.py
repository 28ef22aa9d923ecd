"""Table 3 at a smaller scale: each row keeps the paper's change with no head below d_k 8, every
row trains with base's warm-up, and a tiny training of two rows on real Multi30k records a curve."""

from __future__ import annotations

import math

import pytest

from annotated_transformer.chapters.model_variations import rows as variations
from annotated_transformer.evaluation import paper
from annotated_transformer.model.config import TABLE3_ALL_ROWS
from annotated_transformer.model.transformer import Transformer, count_parameters
from annotated_transformer.profiles import get_profile

SCALE = variations.VariationScale(width=8, depth=2, heads=4)  # the cpu profile's
HALF = variations.VariationScale(width=2, depth=2)  # the gpu profile's
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


def test_scaled_base_divides_widths_depths_and_heads():
    base = SCALE.config("base")
    shape = (base.n_layers, base.d_model, base.d_ff, base.n_heads, base.d_k, base.d_v)
    assert shape == (3, 64, 256, 2, 32, 32)
    assert (base.dropout, base.label_smoothing, base.positional) == (
        0.1,
        0.1,
        "sinusoidal",
    )
    half = HALF.config("base")
    assert (half.d_model, half.n_heads, half.d_k) == (256, 8, 32)
    assert variations.VariationScale(1, 1).config("base").d_model == 512


@pytest.mark.parametrize("scale", [SCALE, HALF], ids=["cpu", "gpu"])
def test_heads_rows_keep_h_times_dk_equal_to_d_model(scale):
    base = scale.config("base")
    a1 = scale.config("A1")
    assert a1.n_heads == 1 and a1.d_k == a1.d_v == base.d_model
    a4 = scale.config("A4")
    assert a4.n_heads == 4 * base.n_heads and a4.n_heads * a4.d_k == base.d_model
    assert a4.d_k == base.d_k // 4 == variations.MIN_HEAD_DIM


@pytest.mark.parametrize("scale", [SCALE, HALF], ids=["cpu", "gpu"])
def test_key_size_rows_shrink_dk_in_the_paper_ratio_with_heads_fixed(scale):
    base = scale.config("base")
    for row, paper_dk in (("B1", 16), ("B2", 32)):
        c = scale.config(row)
        assert c.n_heads == base.n_heads and c.d_v == base.d_v
        assert c.d_k * 64 == base.d_k * paper_dk


def test_no_head_narrower_than_eight():
    with pytest.raises(ValueError, match="below 8"):
        variations.VariationScale(width=8, depth=2).config("A4")  # 32 heads of d_k 2
    for row in TABLE3_ALL_ROWS:
        for scale in (SCALE, HALF):
            config = scale.config(row)
            assert min(config.d_k, config.d_v) >= variations.MIN_HEAD_DIM, row


def test_size_rows_scale_depth_width_and_feed_forward():
    base = HALF.config("base")
    assert [HALF.config(r).n_layers for r in ("C1", "C2", "C3")] == [1, 2, 4]
    c4, c5 = HALF.config("C4"), HALF.config("C5")
    assert (c4.d_model, c4.d_k) == (base.d_model // 2, base.d_k // 2)
    assert (c5.d_model, c5.d_k) == (base.d_model * 2, base.d_k * 2)
    assert HALF.config("C6").d_ff * 2 == base.d_ff == HALF.config("C7").d_ff // 2
    big = HALF.config("big")
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
        variations.VariationScale(width=8, depth=2, heads=3).config("base")
    with pytest.raises(ValueError, match="unknown Table 3 row"):
        variations.paper_config("Z9")


def test_every_row_has_base_warm_up_and_the_peak_follows_d_model():
    profile = get_profile("cpu")
    table3 = profile.book.table3
    base = variations.row_settings(
        profile, SCALE.config("base"), epochs=table3.epochs, seed=1
    )
    deep = variations.row_settings(profile, SCALE.config("C3"), epochs=1, seed=2)
    wide = variations.row_settings(profile, SCALE.config("C5"), epochs=1, seed=1)
    assert math.isclose(base.peak_lr, table3.peak_lr) and deep.peak_lr == base.peak_lr
    assert math.isclose(base.peak_lr / wide.peak_lr, math.sqrt(2))
    assert base.warmup_steps == deep.warmup_steps == table3.warmup_steps
    assert base.max_epochs == table3.epochs and base.max_steps is None
    assert base.seed == 1 and deep.seed == 2


def test_row_config_records_what_the_row_trained_with():
    profile = get_profile("cpu")
    config = variations.row_config("A1", profile)
    assert config.max_len == profile.model_config().max_len
    assert config.warmup_steps == profile.book.table3.warmup_steps
    assert config.n_heads == 1


def test_profiles_set_the_table3_scale():
    from annotated_transformer.chapters.model_variations import statistics as findings

    for name in ("smoke", "cpu", "gpu"):
        profile = get_profile(name)
        scale = variations.scale_of(profile)
        for row in profile.book.table3.rows:
            scale.config(row)  # every row divides exactly, no head below 8
        assert profile.book.table3.seeds >= 2
    gpu = get_profile("gpu").book.table3  # every row a finding reads, three seeds
    assert set(findings.finding_rows()) <= set(gpu.rows) and gpu.seeds >= 3
    # cpu trains a subset: every finding keeps a pair of trained rows
    cpu = get_profile("cpu").book.table3
    assert cpu.seeds >= 2  # the pooled analysis then has (rows - 1) degrees of freedom
    assert {"base", "A1", "A4", "B1", "C1", "C3", "C4", "C5", "D1", "D2", "E"} <= set(
        cpu.rows
    )
    for finding in findings.FINDINGS:
        assert any({a, b} <= set(cpu.rows) for a, b in finding.pairs), finding.name


@pytest.mark.slow  # trains two Table 3 rows on Multi30k
def test_two_rows_train_to_finite_perplexities_with_a_curve(data_dir):
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
            epochs=2,
            seed=1,
            curve_points=4,
            train_pairs=100,
            bleu_sources=sources,
            bleu_references=references,
        )
        for row in ("base", "C1")
    ]
    for run in runs:
        assert len(run.hypotheses) == 2 and "hypotheses" not in run.to_dict()
        assert math.isfinite(run.ppl) and run.ppl > 1 and 0.0 <= run.bleu <= 100.0
        assert run.train_pairs == 100 and math.isclose(run.epochs, 2.0)
        assert [p["epoch"] for p in run.curve] == [0.5, 1.0, 1.5, 2.0]
        assert run.curve[-1]["ppl"] == run.ppl and run.curve[-1]["step"] == run.steps
    assert runs[1].params < runs[0].params


@pytest.mark.slow  # trains rows in two worker processes
def test_rows_trained_in_two_processes_match_one_process(data_dir):
    from annotated_transformer import pipeline

    profile = get_profile(
        "smoke", max_train_pairs=200, max_valid_pairs=20, batch_tokens=256
    )
    data = pipeline.prepare_data(profile, data_dir)
    plan = [
        dict(row="base", seed=1, epochs=1, train_pairs=60),
        dict(row="C1", seed=1, epochs=1, train_pairs=60, corpus="part"),
    ]
    alone = {r.row: r for r in variations.train_rows(plan, data, profile)}
    side_by_side = {
        r.row: r
        for r in variations.train_rows(plan, data, profile, workers=2, data_dir=data_dir)
    }
    assert set(side_by_side) == {"base", "C1"} and side_by_side["C1"].corpus == "part"
    for row in alone:
        assert math.isclose(alone[row].ppl, side_by_side[row].ppl, rel_tol=1e-4)
        assert alone[row].params == side_by_side[row].params

"""Table 1 machinery: FLOPs match the closed forms, graphs give the paper's path lengths."""

import math

import pytest
import torch

from annotated_transformer.chapters.why_self_attention import table1 as C
from annotated_transformer.evaluation import paper


@pytest.mark.parametrize("kind", C.LAYER_KINDS)
def test_layers_keep_the_shape_of_a_sequence(kind):
    layer = C.make_layer(kind, 16, kernel_size=3)
    x = torch.randn(2, 9, 16)
    assert layer(x).shape == x.shape


@pytest.mark.parametrize("kind", C.LAYER_KINDS)
@pytest.mark.parametrize("n,d", [(8, 16), (32, 8), (5, 24)])
def test_counted_flops_equal_the_closed_forms(kind, n, d):
    layer = C.make_layer(kind, d, kernel_size=3)
    x = torch.randn(3, n, d)
    assert C.counted_flops(layer, x) == 3 * C.layer_flops(kind, n, d, kernel_size=3)


@pytest.mark.parametrize("kind", C.LAYER_KINDS)
def test_closed_forms_grow_with_the_exponents_of_table_1(kind):
    ns, ds = (64, 128, 256), (32, 64, 128)
    by_n = [C.layer_flops(kind, n, 64) for n in ns]
    by_d = [C.layer_flops(kind, 64, d) for d in ds]
    assert C.loglog_slope(ns, by_n) == pytest.approx(paper.TABLE1[kind].n_exponent)
    assert C.loglog_slope(ds, by_d) == pytest.approx(paper.TABLE1[kind].d_exponent)


def test_attention_projections_add_what_table_1_leaves_out():
    n, d = 12, 16
    layer = C.SelfAttentionLayer(d, projections=True)
    assert C.counted_flops(layer, torch.randn(1, n, d)) == C.attention_flops(
        n, d, projections=True
    )
    assert (
        C.attention_flops(n, d, projections=True) - C.attention_flops(n, d)
        == 8 * n * d * d
    )


def test_fused_and_textbook_attention_layers_agree():
    fused, textbook = C.SelfAttentionLayer(8), C.SelfAttentionLayer(8, fused=False)
    x = torch.randn(2, 6, 8)
    torch.testing.assert_close(
        fused(x), textbook(x), atol=1e-5, rtol=1e-5
    )  # summation order only


def test_flop_crossover_is_n_equals_d():
    d = 64
    n = int(C.flop_crossover_n(d))
    assert C.attention_flops(n, d) == C.recurrent_flops(n, d)
    assert C.attention_flops(n - 1, d) < C.recurrent_flops(n - 1, d)
    assert C.attention_flops(n + 1, d) > C.recurrent_flops(n + 1, d)


def test_textbook_attention_keeps_a_quadratic_weight_matrix_for_backward():
    d = 8
    layer = C.SelfAttentionLayer(d, fused=False)
    small = C.saved_activation_bytes(layer, torch.randn(1, 16, d))
    large = C.saved_activation_bytes(layer, torch.randn(1, 64, d))
    # 4x longer input: the n x n weights grow 16x, the n x d input only 4x.
    assert large / small > 8
    assert large >= 64 * 64 * 4  # at least the float32 weights


def test_recurrent_and_convolutional_memory_is_linear_in_n():
    for kind in ("recurrent", "convolutional"):
        layer = C.make_layer(kind, 8)
        small = C.saved_activation_bytes(layer, torch.randn(1, 16, 8))
        large = C.saved_activation_bytes(layer, torch.randn(1, 64, 8))
        assert 3.5 < large / small < 4.5, kind


def test_measure_layer_reports_consistent_numbers():
    m = C.measure_layer("convolutional", 16, 8, batch=2, repeats=1)
    assert m.flops == m.formula_flops == 2 * C.convolutional_flops(16, 8)
    # The saved bytes are those of the same layer on the same (batch, n, d) input, not some count.
    layer = C.make_layer("convolutional", 8)
    assert m.saved_bytes == C.saved_activation_bytes(layer, torch.randn(2, 16, 8)) > 0
    rows = C.sweep(ns=(4, 8), ds=(4,), repeats=1, memory=False)
    assert len(rows) == 2 * len(C.LAYER_KINDS) and {r["kind"] for r in rows} == set(
        C.LAYER_KINDS
    )
    # memory=False: not measured, reported as 0.
    assert all(r["saved_bytes"] == 0 for r in rows)


@pytest.mark.parametrize("kind", C.PATH_KINDS)
@pytest.mark.parametrize("k", [2, 3, 5])
def test_path_lengths_on_the_graph_match_the_closed_forms(kind, k):
    for n in (1, 2, 3, 8, 9, 27, 28, 50):
        assert C.max_path_length(kind, n, kernel_size=k) == C.path_length_formula(
            kind, n, kernel_size=k
        ), (n, k)


def test_path_lengths_grow_as_table_1_says():
    n = 81
    assert C.max_path_length("self-attention", n) == 1
    assert C.max_path_length("recurrent", n) == n
    assert C.max_path_length("dilated convolutional", n, kernel_size=3) == round(
        math.log(n, 3)
    )
    assert C.max_path_length("convolutional", n, kernel_size=3) == (n - 1) // 2


@pytest.mark.parametrize("kind", C.PATH_KINDS)
def test_path_lengths_to_the_last_position(kind):
    for n in (1, 2, 9, 28):
        lengths = C.path_lengths_to_last(kind, n, kernel_size=3)
        assert len(lengths) == n and lengths[-1] == 1
        assert max(lengths) == C.max_path_length(kind, n, kernel_size=3)
        assert all(
            a >= b for a, b in zip(lengths, lengths[1:])
        )  # farther inputs never have shorter paths
    assert C.path_lengths_to_last("recurrent", 5) == [5, 4, 3, 2, 1]


def test_only_the_recurrent_layer_is_sequential():
    for n in (1, 7, 30):
        assert C.sequential_operations("recurrent", n) == n
        for kind in ("self-attention", "convolutional", "dilated convolutional"):
            assert C.sequential_operations(kind, n) == 1


def test_loglog_slope_recovers_a_power_law():
    xs = [2, 4, 8, 16]
    assert C.loglog_slope(xs, [3 * x**2 for x in xs]) == pytest.approx(2.0)
    with pytest.raises(ValueError):
        C.loglog_slope([1], [1])


def test_crossover_interpolates_on_log_scales():
    xs = [1, 2, 4, 8]
    assert C.crossover(xs, [x**2 for x in xs], [4 * x for x in xs]) == pytest.approx(4.0)
    assert C.crossover(xs, [1, 1, 1, 1], [2, 2, 2, 2]) is None
    assert C.crossover(xs, [3, 3, 3, 3], [2, 2, 2, 2]) == 1.0


def test_invalid_arguments_name_the_problem():
    with pytest.raises(ValueError, match="unknown layer kind"):
        C.make_layer("lstm", 8)
    with pytest.raises(ValueError, match="kernel_size"):
        C.ConvolutionalLayer(8, kernel_size=2)
    with pytest.raises(ValueError, match="kernel_size"):
        C.max_path_length("convolutional", 5, kernel_size=1)

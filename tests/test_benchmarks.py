"""The benchmark is fair and runs: the reference computes our function, the script writes valid JSON.

No timing is asserted here (the machines are shared and noisy); `benchmarks/README.md` holds
the measured numbers and `results/benchmarks/cpu.json` the run that made them.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn as nn

from annotated_transformer import Transformer, greedy_decode, preset
from annotated_transformer.model.flops import peak_flops_entry
from annotated_transformer.model.transformer import count_parameters
from annotated_transformer.training.loss import (
    composite_smoothed_cross_entropy,
    label_smoothed_cross_entropy,
)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_model  # noqa: E402
import reference_transformer as ref_lib  # noqa: E402

V = 50


def pair(dropout: float = 0.0):
    torch.manual_seed(0)
    config = preset("tiny", dropout=dropout)
    ours = Transformer(config, V, V)
    with (
        torch.no_grad()
    ):  # not the init's structure: every weight matters for the comparison
        for p in ours.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    reference = ref_lib.make_model_like(config, V)
    ref_lib.load_from_ours(reference, ours)
    return ours, reference


def batch():
    g = torch.Generator().manual_seed(1)
    src = torch.randint(4, V, (3, 7), generator=g)
    src[1, 5:] = 0
    tgt = torch.randint(4, V, (3, 6), generator=g)
    tgt[:, 0] = 1
    tgt[2, 4:] = 0
    return src, tgt[:, :-1], tgt[:, 1:]


def matching_parameters(ours, reference):
    """(our tensor slice, reference tensor) for every weight, following load_from_ours' layout."""
    cfg = ours.config
    hk = cfg.n_heads * cfg.head_dim_k
    out = [
        (
            lambda: ours.src_embed.weight.grad,
            lambda: reference.src_embed[0].lut.weight.grad,
        )
    ]
    for o, r in zip(ours.encoder_layers, reference.encoder.layers):
        g = lambda o=o: o.self_attn.qkv_proj.weight.grad  # noqa: E731
        out += [
            (lambda g=g: g()[:hk], lambda r=r: r.self_attn.linear_q.weight.grad),
            (lambda g=g: g()[hk : 2 * hk], lambda r=r: r.self_attn.linear_k.weight.grad),
            (lambda g=g: g()[2 * hk :], lambda r=r: r.self_attn.linear_v.weight.grad),
            (
                lambda o=o: o.ffn.linear2.bias.grad,
                lambda r=r: r.feed_forward.w_2.bias.grad,
            ),
            (lambda o=o: o.norm1.weight.grad, lambda r=r: r.sublayer[0].norm.weight.grad),
        ]
    for o, r in zip(ours.decoder_layers, reference.decoder.layers):
        kv = lambda o=o: o.cross_attn.kv_proj.weight.grad  # noqa: E731
        out += [
            (
                lambda o=o: o.cross_attn.q_proj.weight.grad,
                lambda r=r: r.src_attn.linear_q.weight.grad,
            ),
            (lambda kv=kv: kv()[:hk], lambda r=r: r.src_attn.linear_k.weight.grad),
            (lambda kv=kv: kv()[hk:], lambda r=r: r.src_attn.linear_v.weight.grad),
            (lambda o=o: o.norm3.bias.grad, lambda r=r: r.sublayer[2].norm.bias.grad),
        ]
    return out


def test_reference_has_our_parameters():
    ours, reference = pair()
    assert count_parameters(ours) == count_parameters(reference)
    linears = [m for m in reference.modules() if isinstance(m, nn.Linear)]
    # Four separate projections per attention: the classic layout, not our fused one.
    assert len(linears) == 2 * (4 + 2) + 2 * (4 + 4 + 2) + 1


def test_reference_computes_our_function_loss_and_gradients():
    ours, reference = pair()
    src, tgt_in, tgt_out = batch()
    ours_logits = ours(src, tgt_in)
    ref_log_probs = reference.log_probs(src, tgt_in)
    real = (
        tgt_out != 0
    )  # the reference masks target padding too; only real positions are compared
    torch.testing.assert_close(
        ours_logits.log_softmax(-1)[real], ref_log_probs[real], atol=1e-5, rtol=1e-5
    )
    ours_loss = label_smoothed_cross_entropy(ours_logits, tgt_out, 0.1, 0).loss
    ref_loss = ref_lib.LabelSmoothing(V, 0, 0.1)(ref_log_probs, tgt_out)
    torch.testing.assert_close(ours_loss, ref_loss, atol=1e-4, rtol=1e-5)
    ours_loss.backward()
    ref_loss.backward()
    for ours_grad, ref_grad in matching_parameters(ours, reference):
        torch.testing.assert_close(ours_grad(), ref_grad(), atol=1e-5, rtol=1e-4)


def test_reference_puts_dropout_where_we_do():
    """Same seed, same dropout masks: equal outputs in training mode mean equal dropout placement.
    The reference's nn.Dropout modules are swapped for the package's (same distribution, another
    way of drawing the mask on a CPU) so that both draw the same masks."""
    from annotated_transformer.model.layers import Dropout

    ours, reference = pair(dropout=0.3)
    for parent in list(reference.modules()):
        for name, child in list(parent.named_children()):
            if type(child) is torch.nn.Dropout:
                setattr(parent, name, Dropout(child.p))
    src, tgt_in, tgt_out = batch()
    ours.train(), reference.train()
    torch.manual_seed(5)
    a = ours(src, tgt_in).log_softmax(-1)
    torch.manual_seed(5)
    b = reference.log_probs(src, tgt_in)
    real = tgt_out != 0
    torch.testing.assert_close(a[real], b[real], atol=1e-5, rtol=1e-5)


def test_reference_greedy_decoding_gives_our_tokens():
    ours, reference = pair()
    src, _, _ = batch()
    c = ours.config
    expected = greedy_decode(ours, src, 12)
    got = ref_lib.greedy_decode(
        reference, src, 12, c.bos_id, c.eos_id, banned=(c.pad_id, c.bos_id)
    )
    assert torch.equal(expected, got)


def test_package_loss_equals_its_composite_autograd_baseline():
    torch.manual_seed(0)
    logits = torch.randn(4, 5, 40, requires_grad=True)
    target = torch.randint(4, 40, (4, 5))
    target[0, 3:] = 0
    want = label_smoothed_cross_entropy(logits, target, 0.1, 0)
    got = composite_smoothed_cross_entropy(logits, target, 0.1, 0)
    torch.testing.assert_close(got[0], want.loss)
    torch.testing.assert_close(got[1], want.nll)
    assert int(got[2]) == int(want.tokens)
    (g_want,) = torch.autograd.grad(want.loss, logits)
    (g_got,) = torch.autograd.grad(got[0], logits)
    torch.testing.assert_close(g_got, g_want)


def test_the_trainers_real_rows_step_gives_the_full_loss_and_gradients():
    """What `ours_fp32` runs: logits for real target rows only, gradient written over them."""
    ours, _ = pair()
    src, tgt_in, tgt_out = batch()
    want = label_smoothed_cross_entropy(ours(src, tgt_in), tgt_out, 0.1, 0).loss
    want_grads = torch.autograd.grad(want, list(ours.parameters()))
    real = tgt_out != 0
    assert not real.all()  # the batch has padding, so the test can fail
    logits = ours(src, tgt_in, only_at=real)
    assert logits.shape == (int(real.sum()), V)
    got = label_smoothed_cross_entropy(
        logits, tgt_out[real], 0.1, 0, inplace_backward=True
    )[0]
    torch.testing.assert_close(got, want)
    for g, w in zip(torch.autograd.grad(got, list(ours.parameters())), want_grads):
        torch.testing.assert_close(g, w, atol=1e-6, rtol=1e-4)


def test_flop_count_covers_every_weight_matrix():
    """With as many source as target tokens, the weight term is 6 x (all projection weights) x tokens."""
    config = preset("tiny")
    model = Transformer(config, V, V)
    b = bench_model.make_batch(4, 6, 6, V, "cpu")
    b.tgt_out = b.tgt_out[:, : b.src.size(1)]
    b.target_tokens = int((b.tgt_out != 0).sum())
    assert b.target_tokens == b.source_tokens
    weights = sum(
        m.weight.numel()
        for m in model.modules()
        if isinstance(m, nn.Linear) and m is not model.generator
    )
    flops = bench_model.model_flops_per_step(config, V, b)
    assert flops["weights"] == 6 * weights * b.source_tokens
    assert flops["logits"] == 6 * config.d_model * V * b.target_tokens
    # The package's own counter (annotated_transformer.model.flops) agrees when every length is equal.
    from annotated_transformer.model.flops import forward_flops

    n, length = b.source_tokens, b.src.size(1)
    assert flops["total_with_logits"] == pytest.approx(
        3 * forward_flops(config, V, n, n, length, length), rel=1e-9
    )


@pytest.mark.parametrize(
    "name, key, bf16",
    [
        ("NVIDIA H100 80GB HBM3", "H100", 989e12),
        ("NVIDIA H100 PCIe", "H100 PCIe", 756e12),
        ("NVIDIA H100 NVL", "H100 NVL", 835e12),
        ("NVIDIA A100-SXM4-80GB", "A100", 312e12),
    ],
)
def test_mfu_peaks_tell_the_h100_variants_apart(name, key, bf16):
    assert peak_flops_entry(name)[:2] == (key, bf16)


@pytest.mark.slow  # the benchmark script in a subprocess
def test_benchmark_script_quick_run_writes_json(tmp_path):
    out = tmp_path / "bench.json"
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "bench_model.py"),
            "--quick",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(out.read_text())
    prov = result["provenance"]
    for key in ("git_commit", "torch", "cpu_model", "threads", "date"):
        assert key in prov
    m = result["measurements"]
    # The derived numbers are the recorded times' arithmetic (no speed is asserted: see the top).
    tiny = m["training"]["tiny"]
    steps = tiny["steps"]
    for step in steps.values():
        assert len(step["samples_s"]) == tiny["repeats"]
        assert step["min_s"] <= step["median_s"] <= step["max_s"]
        assert step["tokens_per_s"] == pytest.approx(
            tiny["batch"]["target_tokens"] / step["median_s"]
        )
    assert tiny["ratios"]["ours_fp32_vs_reference_fp32"] == pytest.approx(
        steps["reference_fp32"]["median_s"] / steps["ours_fp32"]["median_s"]
    )
    decoding = m["decoding"]["batch1"]
    assert decoding["same_tokens_all"] is True  # every decoder gave the same tokens
    times = decoding["times"]
    assert decoding["ratios"]["kv_cache_vs_reference"] == pytest.approx(
        times["reference_prefix_recompute"]["median_s"]
        / times["ours_kv_cache"]["median_s"]
    )
    headline = result["headline"]
    ratio = tiny["ratios"]["ours_fp32_vs_reference_fp32"]
    assert headline["train_tiny_fp32_ours_vs_reference"] == ratio
    assert headline["targets_met"]["train_tiny_fp32_at_least_1.3x"] == (ratio >= 1.3)
    assert all(
        a["loss_rel_diff"] < 1e-4 for a in m["loss"]["agreement_with_ours"].values()
    )
    # ours is the CPU's strategy; the GPU's is timed beside it and computes the same gradient
    assert m["loss"]["ours_strategy"] == "row_blocks"
    other = m["loss"]["agreement_with_ours"]["ours_softmax_kernels"]
    assert other["grad_max_abs_diff"] < 1e-5

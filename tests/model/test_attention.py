"""The fused attention path equals the textbook formula and the explicit (weights) path."""

import math

import pytest
import torch

from annotated_transformer.model.attention import (
    MultiHeadAttention,
    explicit_attention,
    fused_attention,
)


def reference_attention(q, k, v, allowed=None):
    """softmax(Q K^T / sqrt(d_k)) V written out, with a python loop over rows for masked rows."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if allowed is not None:
        scores = scores.masked_fill(~allowed, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def random_qkv(b=2, h=3, t=5, s=7, dk=8, dv=6):
    return torch.randn(b, h, t, dk), torch.randn(b, h, s, dk), torch.randn(b, h, s, dv)


@pytest.mark.parametrize("masking", ["none", "padding", "causal", "padding+causal"])
def test_fused_and_explicit_equal_the_formula(masking):
    q, k, v = random_qkv(t=7, s=7)
    allowed, mask, is_causal = None, None, False
    if "padding" in masking:
        lengths = torch.tensor([7, 4])
        mask = (torch.arange(7)[None, :] < lengths[:, None])[:, None, None, :]
        allowed = mask.expand(2, 3, 7, 7)
    if "causal" in masking:
        is_causal = True
        causal = torch.ones(7, 7, dtype=torch.bool).tril()
        allowed = causal if allowed is None else allowed & causal
    expected = reference_attention(q, k, v, allowed)
    fused = fused_attention(q, k, v, mask, is_causal)
    explicit, weights = explicit_attention(q, k, v, mask, is_causal)
    # float32 kernels differ only in summation order: 1e-5 is a few ulps at these magnitudes.
    torch.testing.assert_close(fused, expected, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(explicit, expected, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 3, 7), atol=1e-6, rtol=0)
    if allowed is not None:
        assert (weights.masked_select(~allowed.expand_as(weights)) == 0).all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_fully_masked_rows_give_zeros_not_nan(dtype):
    q, k, v = (t.to(dtype) for t in random_qkv())
    mask = torch.ones(2, 1, 5, 7, dtype=torch.bool)
    mask[1, :, 2] = False  # query 2 of batch row 1 may see nothing
    mask[0] = False  # batch row 0 sees nothing at all
    fused = fused_attention(q, k, v, mask)
    explicit, weights = explicit_attention(q, k, v, mask)
    for out in (fused, explicit, weights):
        assert torch.isfinite(out).all()
    assert (fused[0] == 0).all() and (fused[1, :, 2] == 0).all()
    assert (explicit[0] == 0).all() and (weights[1, :, 2] == 0).all()
    torch.testing.assert_close(fused.float(), explicit.float(), atol=2e-2, rtol=2e-2)


def test_masked_keys_get_no_weight_in_half_precision():
    """A large negative additive mask overflows in fp16; boolean masks cannot."""
    q, k, v = (t.half() for t in random_qkv())
    mask = torch.zeros(2, 1, 1, 7, dtype=torch.bool)
    mask[..., :3] = True
    _, weights = explicit_attention(q, k, v, mask)
    assert (weights[..., 3:] == 0).all()
    v_poisoned = v.clone()
    v_poisoned[..., 3:, :] = 1e4
    torch.testing.assert_close(
        fused_attention(q, k, v_poisoned, mask), fused_attention(q, k, v, mask)
    )


@pytest.mark.parametrize("self_attention", [True, False])
def test_module_explicit_path_equals_fused_path(self_attention):
    mha = MultiHeadAttention(16, 4, 4, 4, self_attention=self_attention)
    x, memory = torch.randn(3, 5, 16), torch.randn(3, 6, 16)
    mask = (
        None
        if self_attention
        else torch.tensor([6, 2, 4])[:, None, None, None] > torch.arange(6)
    )
    kwargs = dict(is_causal=True) if self_attention else dict(memory=memory, mask=mask)
    fast = mha(x, **kwargs)
    mha.record = []
    slow = mha(x, **kwargs)
    assert len(mha.record) == 1 and mha.record[0].shape == (
        3,
        4,
        5,
        5 if self_attention else 6,
    )
    torch.testing.assert_close(fast, slow, atol=1e-5, rtol=1e-5)


def test_unequal_key_and_value_widths():
    """Table 3 row B shrinks d_k but keeps d_v = 64: both paths must allow d_k != d_v."""
    mha = MultiHeadAttention(32, 4, 2, 8, self_attention=True)
    x = torch.randn(2, 5, 32)
    fast = mha(x)
    mha.record = []
    torch.testing.assert_close(fast, mha(x), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_cpu_half_precision_attention_runs_the_float32_kernel(dtype):
    """On a CPU, attention of bf16/fp16 inputs that gradients flow through (under autocast, as
    training runs it) is the float32 kernel's result rounded once, not the half-precision kernel's,
    and its gradients reach the half-precision inputs in their dtype; without gradients it is the
    half-precision kernel's."""
    torch.manual_seed(0)
    q, k, v = (t.to(dtype).requires_grad_() for t in random_qkv(t=40, s=40, dk=64, dv=64))
    mask = torch.ones(2, 1, 1, 40, dtype=torch.bool)
    mask[1, ..., 25:] = False
    allowed = mask & torch.ones(40, 40, dtype=torch.bool).tril()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = fused_attention(q, k, v, mask, is_causal=True)
    assert out.dtype == dtype
    full = torch.nn.functional.scaled_dot_product_attention(
        q.float(), k.float(), v.float(), attn_mask=allowed
    )
    torch.testing.assert_close(out, full.to(dtype), atol=0, rtol=0)
    grads = torch.autograd.grad(out.float().square().sum(), (q, k, v))
    as_float = [t.detach().float().requires_grad_() for t in (q, k, v)]
    full = torch.nn.functional.scaled_dot_product_attention(*as_float, attn_mask=allowed)
    expected = torch.autograd.grad(full.to(dtype).float().square().sum(), as_float)
    for grad, want in zip(grads, expected):
        assert grad.dtype == dtype
        torch.testing.assert_close(grad, want.to(dtype), atol=0, rtol=0)
    with (
        torch.no_grad()
    ):  # decoding: no backward to speed up, the half-precision kernel stays
        half = torch.nn.functional.scaled_dot_product_attention(
            q, k, v, attn_mask=allowed
        )
        torch.testing.assert_close(
            fused_attention(q, k, v, mask, True), half, atol=0, rtol=0
        )

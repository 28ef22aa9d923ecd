"""Post-norm (the paper's) and pre-norm layers compute what their formulas say, and a pre-norm model is a
complete Transformer: final LayerNorms, the closed-form parameter count, KV-cache decoding as recomputed."""

import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from annotated_transformer import Transformer, TransformerConfig, greedy_decode, preset
from annotated_transformer.model.layers import DecoderLayer, EncoderLayer
from annotated_transformer.model.transformer import (
    count_parameters,
    expected_parameter_count,
)

D, H, FF = 32, 4, 64


def randomize(module: nn.Module) -> nn.Module:
    """Move gains and biases away from 1 and 0, so a misplaced LayerNorm cannot hide."""
    with torch.no_grad():
        for p in module.parameters():
            p.normal_(0, 0.3)
    return module


def attention_by_hand(x_q, x_kv, q_w, q_b, k_w, k_b, v_w, v_b, out, allowed):
    """softmax(Q K^T / sqrt(d_k)) V over H heads, then the output projection; `allowed` (B|1, 1, Tq, Tk)."""
    heads = lambda t: t.view(t.size(0), t.size(1), H, -1).transpose(
        1, 2
    )  # (B, H, T, d_k)
    q, k, v = (
        heads(F.linear(x_q, q_w, q_b)),
        heads(F.linear(x_kv, k_w, k_b)),
        heads(F.linear(x_kv, v_w, v_b)),
    )
    scores = (q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))).masked_fill(
        ~allowed, float("-inf")
    )
    mixed = (scores.softmax(-1) @ v).transpose(1, 2).reshape(x_q.shape)
    return out(mixed)


def self_attention_by_hand(attn, x, allowed):
    (q_w, k_w, v_w), (q_b, k_b, v_b) = (
        attn.qkv_proj.weight.chunk(3),
        attn.qkv_proj.bias.chunk(3),
    )
    return attention_by_hand(x, x, q_w, q_b, k_w, k_b, v_w, v_b, attn.out_proj, allowed)


def cross_attention_by_hand(attn, x, memory, allowed):
    (k_w, v_w), (k_b, v_b) = attn.kv_proj.weight.chunk(2), attn.kv_proj.bias.chunk(2)
    return attention_by_hand(
        x,
        memory,
        attn.q_proj.weight,
        attn.q_proj.bias,
        k_w,
        k_b,
        v_w,
        v_b,
        attn.out_proj,
        allowed,
    )


def wrap(norm_position, norm, x, sublayer):
    """One residual sub-layer: LayerNorm(x + f(x)) for "post", x + f(LayerNorm(x)) for "pre"."""
    if norm_position == "post":
        return norm(x + sublayer(x))
    return x + sublayer(norm(x))


def encoder_layer_by_hand(layer, norm_position, x, keep):
    allowed = keep[:, None, None, :]
    x = wrap(
        norm_position,
        layer.norm1,
        x,
        lambda h: self_attention_by_hand(layer.self_attn, h, allowed),
    )
    return wrap(
        norm_position,
        layer.norm2,
        x,
        lambda h: layer.ffn.linear2(torch.relu(layer.ffn.linear1(h))),
    )


def decoder_layer_by_hand(layer, norm_position, y, memory, keep):
    causal = torch.ones(y.size(1), y.size(1), dtype=torch.bool).tril()[None, None]
    y = wrap(
        norm_position,
        layer.norm1,
        y,
        lambda h: self_attention_by_hand(layer.self_attn, h, causal),
    )
    y = wrap(
        norm_position,
        layer.norm2,
        y,
        lambda h: cross_attention_by_hand(
            layer.cross_attn, h, memory, keep[:, None, None, :]
        ),
    )
    return wrap(
        norm_position,
        layer.norm3,
        y,
        lambda h: layer.ffn.linear2(torch.relu(layer.ffn.linear1(h))),
    )


@pytest.mark.parametrize("norm_position", ["post", "pre"])
def test_encoder_layer_equals_the_hand_written_reference(norm_position):
    layer = randomize(
        EncoderLayer(
            D, FF, H, D // H, D // H, dropout=0.0, norm_position=norm_position
        ).eval()
    )
    x = torch.randn(3, 6, D)
    keep = torch.tensor([6, 3, 5])[:, None] > torch.arange(6)
    with torch.no_grad():
        expected = encoder_layer_by_hand(layer, norm_position, x, keep)
        got = layer(x, keep[:, None, None, :])
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("norm_position", ["post", "pre"])
def test_decoder_layer_equals_the_hand_written_reference(norm_position):
    layer = randomize(
        DecoderLayer(
            D, FF, H, D // H, D // H, dropout=0.0, norm_position=norm_position
        ).eval()
    )
    y, memory = torch.randn(3, 5, D), torch.randn(3, 6, D)
    keep = torch.tensor([6, 3, 5])[:, None] > torch.arange(6)
    with torch.no_grad():
        expected = decoder_layer_by_hand(layer, norm_position, y, memory, keep)
        got = layer(y, memory, keep[:, None, None, :])
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)


def test_pre_norm_encoder_layer_equals_pytorch_norm_first():
    ours = randomize(
        EncoderLayer(D, FF, H, D // H, D // H, dropout=0.0, norm_position="pre").eval()
    )
    theirs = nn.TransformerEncoderLayer(
        D, H, FF, dropout=0.0, batch_first=True, norm_first=True
    ).eval()
    with torch.no_grad():
        theirs.self_attn.in_proj_weight.copy_(ours.self_attn.qkv_proj.weight)
        theirs.self_attn.in_proj_bias.copy_(ours.self_attn.qkv_proj.bias)
        theirs.self_attn.out_proj.load_state_dict(ours.self_attn.out_proj.state_dict())
        for a, b in (
            (ours.ffn.linear1, theirs.linear1),
            (ours.ffn.linear2, theirs.linear2),
            (ours.norm1, theirs.norm1),
            (ours.norm2, theirs.norm2),
        ):
            b.load_state_dict(a.state_dict())
    x = torch.randn(3, 6, D)
    keep = torch.tensor([6, 3, 5])[:, None] > torch.arange(6)
    with torch.no_grad():
        expected = theirs(x, src_key_padding_mask=~keep)
        got = ours(x, keep[:, None, None, :])
    # PyTorch's inference fast path may zero the rows of padded queries; compare the real tokens.
    torch.testing.assert_close(got[keep], expected[keep], atol=1e-5, rtol=1e-5)


def test_pre_norm_model_ends_each_stack_in_a_layer_norm():
    config = preset("tiny", dropout=0.0, norm_position="pre")
    model = randomize(Transformer(config, 40, 40)).eval()
    src = torch.randint(4, 40, (2, 7))
    tgt = torch.randint(4, 40, (2, 5))
    with torch.no_grad():
        x = model.embed(src, model.src_embed, model.src_positions)
        keep = model.source_mask(src)
        for layer in model.encoder_layers:
            x = layer(x, keep)
        memory = F.layer_norm(
            x, (config.d_model,), model.encoder_norm.weight, model.encoder_norm.bias
        )
        torch.testing.assert_close(model.encode(src), memory)
        y = model.embed(tgt, model.tgt_embed, model.tgt_positions)
        for layer in model.decoder_layers:
            y = layer(y, memory, keep)
        y = F.layer_norm(
            y, (config.d_model,), model.decoder_norm.weight, model.decoder_norm.bias
        )
        torch.testing.assert_close(model(src, tgt), model.generator(y))


@pytest.mark.parametrize("name", ["tiny", "base", "E"])
def test_pre_norm_parameter_count_matches_closed_form(name):
    for norm_position in ("post", "pre"):
        config = preset(name, norm_position=norm_position)
        with torch.device("meta"):
            model = Transformer(config, 1000, 1000)
        assert count_parameters(model) == expected_parameter_count(config, 1000)
    # The two final LayerNorms (a gain and a bias each) are all that pre-norm adds.
    assert (
        expected_parameter_count(preset(name, norm_position="pre"), 1000)
        - expected_parameter_count(preset(name), 1000)
    ) == 4 * preset(name).d_model


def test_post_norm_is_the_default_and_keeps_its_state_dict():
    assert TransformerConfig().norm_position == "post"
    keys = set(Transformer(preset("tiny"), 40, 40).state_dict())
    assert not any(k.startswith(("encoder_norm", "decoder_norm")) for k in keys)
    pre_keys = set(Transformer(preset("tiny", norm_position="pre"), 40, 40).state_dict())
    assert pre_keys - keys == {
        "encoder_norm.weight",
        "encoder_norm.bias",
        "decoder_norm.weight",
        "decoder_norm.bias",
    }


def test_pre_norm_kv_cache_decoding_equals_recomputation():
    model = randomize(
        Transformer(preset("tiny", dropout=0.0, norm_position="pre"), 40, 40)
    ).eval()
    src = torch.randint(4, 40, (3, 8))
    src[1, 5:] = 0
    src[torch.arange(3), torch.tensor([7, 4, 7])] = 2
    cached = greedy_decode(model, src, max_new_tokens=12)
    full = greedy_decode(model, src, max_new_tokens=12, use_cache=False)
    assert torch.equal(cached, full)


def test_invalid_norm_position_names_the_field():
    with pytest.raises(ValueError, match="norm_position"):
        TransformerConfig(norm_position="sandwich")
    with pytest.raises(ValueError, match="norm_position"):
        EncoderLayer(D, FF, H, D // H, D // H, dropout=0.0, norm_position="middle")
    assert (
        TransformerConfig.from_dict(
            preset("base", norm_position="pre").to_dict()
        ).norm_position
        == "pre"
    )

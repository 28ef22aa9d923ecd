"""FLOPs of an encoder-decoder Transformer and model FLOPs utilization (MFU) against the device's peak.

Counting convention (as nanoGPT and the PaLM paper): a multiply-add is 2 FLOPs, the backward pass costs
twice the forward, so training = 3 x forward. Only matrix multiplies are counted (they are >95% of the
work); softmax, layer norm and dropout are left out. Attention's score and weighted-sum products are
counted over the full (unmasked) length, which is what the kernels compute.

The paper's Table 2 estimates training cost as time x GPUs x sustained TFLOPS; `training_flops` here
counts the model's arithmetic instead, so the two can be compared.
"""
from __future__ import annotations

import torch

from .config import TransformerConfig

# Dense (no sparsity) peak FLOP/s by device name substring: (bf16/fp16 tensor cores, fp32).
# Sources: NVIDIA data sheets (H100 SXM 989 TFLOPS bf16 dense, A100 312, V100 125 fp16, T4 65 fp16).
PEAK_FLOPS: dict[str, tuple[float, float]] = {
    "H200": (989e12, 67e12),
    "H100": (989e12, 67e12),
    "A100": (312e12, 19.5e12),
    "A10G": (125e12, 31.2e12),
    "L4": (121e12, 30.3e12),
    "V100": (125e12, 15.7e12),
    "T4": (65e12, 8.1e12),
    "P100": (18.7e12, 9.3e12),  # fp16; the paper's GPU (it assumed 9.5 TFLOPS sustained fp32)
}


def encoder_flops_per_source_token(config: TransformerConfig, mean_src_len: float) -> float:
    """Forward FLOPs the encoder spends per source token."""
    d, f, h = config.d_model, config.d_ff, config.n_heads
    dk, dv = config.head_dim_k, config.head_dim_v
    projections = 2 * d * h * (2 * dk + dv) + 2 * h * dv * d  # Q, K, V and output
    attention = 2 * mean_src_len * h * (dk + dv)  # scores and weighted sum
    ffn = 2 * 2 * d * f
    return config.encoder_layers * (projections + attention + ffn)


def decoder_flops_per_target_token(config: TransformerConfig, vocab_size: int, mean_src_len: float, mean_tgt_len: float) -> float:
    """Forward FLOPs the decoder spends per target token, the output softmax projection included."""
    d, f, h = config.d_model, config.d_ff, config.n_heads
    dk, dv = config.head_dim_k, config.head_dim_v
    self_attention = 2 * d * h * (2 * dk + dv) + 2 * h * dv * d + 2 * mean_tgt_len * h * (dk + dv)
    cross_attention = 2 * d * h * dk + 2 * h * dv * d + 2 * mean_src_len * h * (dk + dv)
    ffn = 2 * 2 * d * f
    return config.decoder_layers * (self_attention + cross_attention + ffn) + 2 * d * vocab_size


def cross_kv_flops_per_source_token(config: TransformerConfig) -> float:
    """Each decoder layer projects the encoder output to keys and values once per source token."""
    return config.decoder_layers * 2 * config.d_model * config.n_heads * (config.head_dim_k + config.head_dim_v)


def forward_flops(config: TransformerConfig, vocab_size: int, src_tokens: float, tgt_tokens: float,
                  mean_src_len: float, mean_tgt_len: float) -> float:
    """Forward FLOPs of a batch with `src_tokens` source and `tgt_tokens` target positions."""
    per_src = encoder_flops_per_source_token(config, mean_src_len) + cross_kv_flops_per_source_token(config)
    per_tgt = decoder_flops_per_target_token(config, vocab_size, mean_src_len, mean_tgt_len)
    return src_tokens * per_src + tgt_tokens * per_tgt


def training_flops_per_target_token(config: TransformerConfig, vocab_size: int, mean_src_len: float, mean_tgt_len: float) -> float:
    """Training FLOPs (forward + backward = 3 x forward) per target token, with source tokens in the
    ratio mean_src_len : mean_tgt_len."""
    ratio = mean_src_len / mean_tgt_len
    return 3.0 * forward_flops(config, vocab_size, ratio, 1.0, mean_src_len, mean_tgt_len)


def peak_flops(device: torch.device | str, precision: str = "bf16") -> float | None:
    """The device's dense peak FLOP/s for `precision` ("bf16" or "fp32"), or None when unknown (CPUs)."""
    device = torch.device(device)
    if device.type != "cuda" or not torch.cuda.is_available():
        return None
    name = torch.cuda.get_device_name(device)
    return peak_flops_by_name(name, precision)


def peak_flops_by_name(device_name: str, precision: str = "bf16") -> float | None:
    for key, (half, single) in PEAK_FLOPS.items():
        if key.lower() in device_name.lower():
            return half if precision in ("bf16", "fp16") else single
    return None


def mfu(achieved_flops_per_s: float, device: torch.device | str, precision: str = "bf16") -> float | None:
    """Model FLOPs utilization: achieved / peak, or None when the peak is unknown."""
    peak = peak_flops(device, precision)
    return None if peak is None else achieved_flops_per_s / peak

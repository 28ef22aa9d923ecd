"""FLOPs of an encoder-decoder Transformer and model FLOPs utilization (MFU) against the device's peak.

Counting convention (as nanoGPT and the PaLM paper): a multiply-add is 2 FLOPs, the backward pass costs
twice the forward, so training = 3 x forward. Only matrix multiplies are counted (they are >95% of the
work); softmax, layer norm and dropout are left out. Attention's score and weighted-sum products are
counted over the full (unmasked) length, which is what the kernels compute. The matrices' sizes come
from `model.layer_weights`, the closed form that the parameter count uses too.

The paper's Table 2 estimates training cost as time x GPUs x sustained TFLOPS;
`training_flops_per_target_token` counts the model's arithmetic instead, so the two can be compared.
"""

from __future__ import annotations

import torch

from .config import TransformerConfig
from .transformer import layer_weights

# Dense (no sparsity) peak FLOP/s by device-name substring, most specific first (the first match wins):
# (bf16/fp16 tensor cores, fp32 without tensor cores). Sources: NVIDIA data sheets (H100 SXM 989 TFLOP/s
# bf16 dense, PCIe 756, NVL 835; A100 312; V100 125 fp16; T4 65 fp16). An H100 named neither PCIe nor NVL
# is the SXM part ("NVIDIA H100 80GB HBM3").
PEAK_FLOPS: dict[str, tuple[float, float]] = {
    "H100 PCIe": (756e12, 51e12),
    "H100 NVL": (835e12, 60e12),
    "H100": (989e12, 67e12),
    "H200": (989e12, 67e12),
    "A100": (312e12, 19.5e12),
    "A10G": (125e12, 31.2e12),
    "L4": (121e12, 30.3e12),
    "V100": (125e12, 15.7e12),
    "T4": (65e12, 8.1e12),
    "P100": (
        18.7e12,
        9.3e12,
    ),  # fp16; the paper's GPU (see paper.TABLE2_SUSTAINED_FLOPS for its estimate)
}


def encoder_flops_per_source_token(
    config: TransformerConfig, mean_src_len: float
) -> float:
    """Forward FLOPs the encoder spends per source token."""
    h, dk, dv = config.n_heads, config.head_dim_k, config.head_dim_v
    attention = 2 * mean_src_len * h * (dk + dv)  # scores and weighted sum
    return config.encoder_layers * (
        2 * layer_weights(config).encoder_matrices + attention
    )


def decoder_flops_per_target_token(
    config: TransformerConfig, vocab_size: int, mean_src_len: float, mean_tgt_len: float
) -> float:
    """Forward FLOPs the decoder spends per target token, the output softmax projection included."""
    h, dk, dv = config.n_heads, config.head_dim_k, config.head_dim_v
    attention = (
        2 * (mean_tgt_len + mean_src_len) * h * (dk + dv)
    )  # self- and cross-attention
    matrices = 2 * layer_weights(config).decoder_target_matrices
    return (
        config.decoder_layers * (matrices + attention) + 2 * config.d_model * vocab_size
    )


def cross_kv_flops_per_source_token(config: TransformerConfig) -> float:
    """Each decoder layer projects the encoder output to keys and values once per source token."""
    return config.decoder_layers * 2 * layer_weights(config).decoder_source_matrices


def forward_flops(
    config: TransformerConfig,
    vocab_size: int,
    src_tokens: float,
    tgt_tokens: float,
    mean_src_len: float,
    mean_tgt_len: float,
) -> float:
    """Forward FLOPs of a batch with `src_tokens` source and `tgt_tokens` target positions."""
    per_src = encoder_flops_per_source_token(
        config, mean_src_len
    ) + cross_kv_flops_per_source_token(config)
    per_tgt = decoder_flops_per_target_token(
        config, vocab_size, mean_src_len, mean_tgt_len
    )
    return src_tokens * per_src + tgt_tokens * per_tgt


def training_flops_per_target_token(
    config: TransformerConfig, vocab_size: int, mean_src_len: float, mean_tgt_len: float
) -> float:
    """Training FLOPs (forward + backward = 3 x forward) per target token, with source tokens in the
    ratio mean_src_len : mean_tgt_len."""
    ratio = mean_src_len / mean_tgt_len
    return 3.0 * forward_flops(config, vocab_size, ratio, 1.0, mean_src_len, mean_tgt_len)


def peak_flops(device: torch.device | str, precision: str = "bf16") -> float | None:
    """The device's dense peak FLOP/s for `precision` ("bf16", "fp16" or "fp32"), or None when
    unknown (CPUs)."""
    device = torch.device(device)
    if device.type != "cuda" or not torch.cuda.is_available():
        return None
    name = torch.cuda.get_device_name(device)
    return peak_flops_by_name(name, precision)


def peak_flops_entry(device_name: str) -> tuple[str, float, float] | None:
    """(the `PEAK_FLOPS` key that matches, bf16 and fp32 dense FLOP/s), or None for an unknown device."""
    for key, (half, single) in PEAK_FLOPS.items():
        if key.lower() in device_name.lower():
            return key, half, single
    return None


def peak_flops_by_name(device_name: str, precision: str = "bf16") -> float | None:
    entry = peak_flops_entry(device_name)
    if entry is None:
        return None
    return entry[1] if precision in ("bf16", "fp16") else entry[2]


def mfu(
    achieved_flops_per_s: float, device: torch.device | str, precision: str = "bf16"
) -> float | None:
    """Model FLOPs utilization: achieved / peak, or None when the peak is unknown."""
    peak = peak_flops(device, precision)
    return None if peak is None else achieved_flops_per_s / peak

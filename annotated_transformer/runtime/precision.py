"""Numeric precision: bf16 autocast where the hardware computes in bf16, float32 elsewhere.

On an AVX2-only CPU bf16 is emulated and several times slower than float32 (results/benchmarks/cpu.json:
0.10x), so "auto" asks the hardware rather than assuming. The loss is computed in float32 either way.
"""

from __future__ import annotations

import contextlib

import torch

from .devices import cpu_supports_bf16

PRECISIONS = ("auto", "bf16", "fp32")


def resolve_precision(precision: str, device: torch.device | str) -> str:
    """ "auto" -> "bf16" on GPUs with bf16 and CPUs with AVX512-BF16/AMX, else "fp32"."""
    if precision not in PRECISIONS:
        raise ValueError(
            f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}"
        )
    if precision != "auto":
        return precision
    device = torch.device(device)
    if device.type == "cuda":
        return "bf16" if torch.cuda.is_bf16_supported() else "fp32"
    if device.type == "cpu":
        return "bf16" if cpu_supports_bf16() else "fp32"
    return "fp32"


def autocast_context(device: torch.device | str, precision: str):
    """bf16 autocast for matrix multiplies; a no-op context for fp32."""
    if precision == "bf16":
        return torch.autocast(device_type=torch.device(device).type, dtype=torch.bfloat16)
    return contextlib.nullcontext()

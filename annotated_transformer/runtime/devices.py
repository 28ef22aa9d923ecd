"""Which device to run on, and what the machine is: the one place that reads /proc/cpuinfo.

Training, evaluation, the commands and the results' provenance all ask the same questions ("auto"
means which device? does this CPU multiply bf16 natively? what is it called?), so the answers live
here, below all of them.
"""

from __future__ import annotations

import functools
import os
import platform
from pathlib import Path

import torch


def resolve_device(device: str = "auto", local_rank: int = 0) -> torch.device:
    """ "auto" is this process's GPU (cuda:local_rank) when CUDA is visible, else the CPU; "cuda" gets the
    local rank's index under torchrun; anything else passes through once this machine has it.

    Raises:
        ValueError: a device torch does not know ("tpu9"), or one this machine lacks (CUDA without
            a GPU, "cuda:3" with two GPUs, "mps" off a Mac), named with the choices.
    """
    device = str(device)
    if device == "auto":
        return torch.device(f"cuda:{local_rank}" if torch.cuda.is_available() else "cpu")
    try:
        resolved = torch.device(device)
    except RuntimeError:
        raise ValueError(
            f"--device {device!r} is not a device: pass auto, cpu, cuda or cuda:N"
        ) from None
    if resolved.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(
                f"--device {device!r}: CUDA is not available on this machine; pass --device cpu or auto"
            )
        if resolved.index is None:
            return torch.device(f"cuda:{local_rank}")
        if resolved.index >= torch.cuda.device_count():
            raise ValueError(
                f"--device {device!r}: this machine has {torch.cuda.device_count()} GPU(s), "
                f"cuda:0 to cuda:{torch.cuda.device_count() - 1}"
            )
    elif resolved.type == "mps" and not torch.backends.mps.is_available():
        raise ValueError(
            f"--device {device!r}: MPS is not available on this machine; pass --device cpu or auto"
        )
    elif resolved.type not in ("cpu", "cuda", "mps"):
        raise ValueError(
            f"--device {device!r}: this package runs on cpu, cuda or mps; pass auto, cpu or cuda"
        )
    return resolved


@functools.lru_cache(maxsize=1)
def _cpuinfo() -> dict[str, str]:
    """The first processor's fields of /proc/cpuinfo (empty where there is none, as on macOS)."""
    fields: dict[str, str] = {}
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return fields
    for line in text.splitlines():
        if not line.strip():
            break  # the first processor is enough: the fields we read are the same on every core
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()
    return fields


def cpu_name() -> str:
    return _cpuinfo().get("model name") or platform.processor() or platform.machine()


def cpu_flags() -> frozenset[str]:
    return frozenset(_cpuinfo().get("flags", "").split())


def cpu_capability() -> str:
    """The instruction set torch's CPU kernels run ("AVX512", "AVX2", ...; "" on a torch too old to
    say): the CPU's best unless ATEN_CPU_CAPABILITY holds them lower."""
    return str(getattr(torch.backends.cpu, "get_cpu_capability", lambda: "")()).upper()


def _bf16_instructions_held_off() -> bool:
    """True when torch's kernels are held below AVX-512 (ATEN_CPU_CAPABILITY=avx2) or oneDNN's
    matrix products below its bf16 instruction sets (ONEDNN_MAX_CPU_ISA, or the older
    DNNL_MAX_CPU_ISA, naming neither BF16, AMX nor AVX10), as when an AVX2-only CPU is imitated."""
    capability = cpu_capability()
    if capability and not capability.startswith("AVX512"):
        return True
    isa = (
        os.environ.get("ONEDNN_MAX_CPU_ISA") or os.environ.get("DNNL_MAX_CPU_ISA") or ""
    ).upper()
    return (
        bool(isa)
        and isa != "DEFAULT"
        and not any(k in isa for k in ("BF16", "AMX", "AVX10"))
    )


def cpu_supports_bf16() -> bool:
    """True when the CPU multiplies bf16 natively (AVX512-BF16 or AMX) and torch may use it; elsewhere,
    and where the kernels are held to AVX2 (an AVX2-only CPU imitated), bf16 is emulated and slow."""
    if _bf16_instructions_held_off():
        return False
    if {"avx512_bf16", "amx_bf16"} & cpu_flags():
        return True
    return "AMX" in cpu_capability()


def device_name(device: str | torch.device = "auto") -> str:
    """A human-readable name: "NVIDIA H100 80GB HBM3", "2 x NVIDIA A100", or "<CPU model> (2 cores)"."""
    device = resolve_device(str(device))
    if device.type == "cuda":
        name = torch.cuda.get_device_name(device.index or 0)
        count = torch.cuda.device_count()
        return name if count == 1 else f"{count} x {name}"
    if device.type == "cpu":
        return f"{cpu_name()} ({os.cpu_count()} cores)"
    return str(device)

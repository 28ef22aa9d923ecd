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


# oneDNN's instruction-set caps (ONEDNN_MAX_CPU_ISA) below its first with bf16 dot products,
# AVX512_CORE_BF16. "DEFAULT", "ALL" (oneDNN 2.x), the bf16 and later sets and names oneDNN does
# not know (which it ignores) leave bf16 on.
_ONEDNN_CAPS_WITHOUT_BF16 = frozenset(
    {
        "SSE41",
        "AVX",
        "AVX2",
        "AVX2_VNNI",
        "AVX2_VNNI_2",
        "AVX512_CORE",
        "AVX512_CORE_VNNI",
    }
)


def onednn_isa_cap() -> str:
    """The instruction set oneDNN's matrix products are held to ("" when none is set)."""
    cap = os.environ.get("ONEDNN_MAX_CPU_ISA") or os.environ.get("DNNL_MAX_CPU_ISA") or ""
    return cap.strip().upper()


def cpu_has_bf16_instructions() -> bool:
    """True when the CPU has bf16 dot products (AVX512-BF16 or AMX), whatever torch is told to use."""
    return bool({"avx512_bf16", "amx_bf16"} & cpu_flags()) or "AMX" in cpu_capability()


def cpu_supports_bf16() -> bool:
    """True when bf16 matrix products run natively: the CPU has AVX512-BF16 or AMX and oneDNN, which
    runs them, is not held below those instructions (ONEDNN_MAX_CPU_ISA=AVX2 imitates an
    AVX2-only CPU). Elsewhere bf16 is emulated and slow. ATEN_CPU_CAPABILITY alone does not decide
    it: it holds torch's elementwise kernels, not oneDNN's products (the step is then measured)."""
    return (
        cpu_has_bf16_instructions() and onednn_isa_cap() not in _ONEDNN_CAPS_WITHOUT_BF16
    )


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

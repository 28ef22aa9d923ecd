"""Numeric precision: bf16 or fp16 autocast, or float32, chosen by measurement where the answer is
not certain.

A CPU flag says which instructions exist, not which path PyTorch makes fast for a model's shapes: on
an Intel Xeon with AVX512-BF16 (no AMX) the `cpu` profile's training step ran 2.3 times slower in
bf16 than in fp32. So "auto" decides like this:

- a GPU with bf16 tensor cores (compute capability 8.0 on: A100, H100) uses bf16; one with fp16
  tensor cores only (7.x: V100, T4) uses fp16 autocast, which training pairs with a gradient
  scaler, since fp16's narrow range lets small gradients underflow to zero; an older one uses fp32;
- a CPU without AVX512-BF16 or AMX uses fp32: bf16 is emulated there, about 10x slower
  (results/benchmarks/cpu.json);
- a CPU with them times the caller's own training step in both precisions (`probe`) and keeps the
  faster, caching the answer per machine, torch version, thread count and model shape, so the
  measurement runs once.

The loss is computed in float32 either way.
"""

from __future__ import annotations

import contextlib
import json
import logging
from dataclasses import asdict, dataclass
from typing import Callable

import torch

from .checks import POSITIVE, check_types
from .devices import (
    cpu_capability,
    cpu_flags,
    cpu_has_bf16_instructions,
    cpu_name,
    cpu_supports_bf16,
    onednn_isa_cap,
)
from .records import read_measured, write_measured

PRECISIONS = ("auto", "bf16", "fp16", "fp32")
CACHE_NAME = "precision.json"
AUTOCAST_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PrecisionChoice:
    """The precision a run uses and, in a few words, why."""

    precision: str  # "bf16", "fp16" or "fp32"
    reason: str
    seconds: dict[str, float] | None = None  # measured seconds per step, by precision

    def __post_init__(self):
        check_types(self, choices={"precision": ("bf16", "fp16", "fp32")})


@dataclass(frozen=True)
class MeasuredPrecision:
    """A CPU's measured answer as the cache keeps it: the faster of fp32 and bf16, and the
    seconds per step of each (what `probe` returned)."""

    precision: str
    seconds: dict[str, float]

    def __post_init__(self):
        check_types(self, choices={"precision": ("fp32", "bf16")})
        for name in ("fp32", "bf16"):
            POSITIVE.check(f"MeasuredPrecision.seconds[{name!r}]", self.seconds.get(name))


def cached_measurement(cls, name: str, key: str):
    """`cls(**entry)` of the entry `key` of the cache file `name`; None when there is none, or
    when it is not one (edited by hand, written by another version: logged in one line), and
    the step is then measured again."""
    entry = read_measured(name).get(key)
    if entry is None:
        return None
    try:
        return cls(**entry)
    except (TypeError, ValueError) as error:
        log.warning(
            "%s: a cached entry is not a measurement (%s); measuring again", name, error
        )
        return None


def choose_precision(
    precision: str,
    device: torch.device | str,
    *,
    probe: Callable[[], dict[str, float]] | None = None,
    shape: dict | None = None,
) -> PrecisionChoice:
    """Resolve "auto" (see the module's docstring); "bf16", "fp16" and "fp32" are taken as asked,
    on any device (a CPU autocasts to float16 too, slowly: for tests, not for speed).

    probe: times one training step in each precision, returning seconds by precision; called
        only on a CPU with bf16 instructions and no cached answer for `shape`.
    shape: what the timing depends on besides the machine (model widths, vocabulary, batch).
    """
    if precision not in PRECISIONS:
        raise ValueError(
            f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}"
        )
    if precision != "auto":
        return PrecisionChoice(precision, "as asked")
    device = torch.device(device)
    if device.type == "cuda":
        # is_bf16_supported() also says yes where bf16 is only emulated (a T4, sm_75): the compute
        # capability says which tensor cores there are, bf16 from 8.0, fp16 from 7.0.
        capability = torch.cuda.get_device_capability(device)
        if capability >= (8, 0) and torch.cuda.is_bf16_supported():
            return PrecisionChoice("bf16", "auto: this GPU computes in bf16")
        if capability >= (7, 0):
            return PrecisionChoice(
                "fp16", "auto: this GPU has no bf16; fp16 autocast with a gradient scaler"
            )
        return PrecisionChoice(
            "fp32",
            "auto: this GPU has neither bf16 nor fp16 tensor cores, so neither helps",
        )
    if device.type != "cpu":
        return PrecisionChoice("fp32", f"auto: fp32 on {device.type}")
    if not cpu_supports_bf16():
        return PrecisionChoice(
            "fp32",
            f"auto: oneDNN is held to {onednn_isa_cap()}, below this CPU's bf16 instructions "
            "(imitating a CPU without them), so bf16 is emulated"
            if cpu_has_bf16_instructions()
            else "auto: this CPU has no AVX512-BF16 or AMX, so bf16 is emulated",
        )
    if probe is None:
        return PrecisionChoice(
            "fp32", "auto: bf16 instructions, but no step was timed; fp32"
        )
    key = measurement_key(shape or {})
    cached = cached_measurement(MeasuredPrecision, CACHE_NAME, key)
    if cached is not None:
        seconds = cached.seconds
        return PrecisionChoice(
            cached.precision, _measured_reason(seconds, "measured before"), seconds
        )
    seconds = probe()
    winner = min(("fp32", "bf16"), key=lambda p: seconds[p])
    # a probe's wrong answer is refused here
    measured = MeasuredPrecision(winner, seconds)
    write_measured(CACHE_NAME, key, asdict(measured))
    return PrecisionChoice(winner, _measured_reason(seconds, "measured now"), seconds)


def resolve_precision(precision: str, device: torch.device | str) -> str:
    """ "auto" without a measurement: bf16 or fp16 on GPUs by their tensor cores, fp32 on CPUs (see
    `choose_precision`, which training uses to measure a CPU with bf16 instructions)."""
    return choose_precision(precision, device).precision


#: The revision of the training step's own code and of its probe that a measured answer was timed
#: on: raised when a change can reverse which way is faster (2: a CPU's attention in float32 under
#: bf16 autocast, which made bf16 1.57x as fast on an AMX Xeon; 3: the probe times distinct batches,
#: where one batch timed again and again hid bf16's kernels built per shape), so answers cached
#: before it are measured again.
STEP_REVISION = 3


def measurement_key(shape: dict) -> str:
    """What a measured answer depends on: the CPU, its bf16 instructions, the instruction sets torch's
    kernels and oneDNN's products are held to, torch, the step's revision, the threads, the shape."""
    bf16_flags = sorted(f for f in cpu_flags() if "bf16" in f or f.startswith("amx"))
    return json.dumps(
        {
            "cpu": cpu_name(),
            "flags": bf16_flags,
            "kernels": cpu_capability(),
            "onednn_cap": onednn_isa_cap(),
            "torch": torch.__version__,
            "step": STEP_REVISION,
            "threads": torch.get_num_threads(),
            **shape,
        },
        sort_keys=True,
    )


def _measured_reason(seconds: dict, when: str) -> str:
    ratio = seconds["fp32"] / seconds["bf16"]
    return (
        f"auto: {when} on this CPU, a training step takes {seconds['fp32'] * 1e3:.0f} ms in fp32 "
        f"and {seconds['bf16'] * 1e3:.0f} ms in bf16 (bf16 {ratio:.2f}x the speed of fp32)"
    )


def autocast_context(
    device: torch.device | str, precision: str, *, cache_casts: bool = True
):
    """bf16 or fp16 autocast for matrix multiplies; a no-op context for fp32.

    `cache_casts=False` casts the weights again at every use instead of once per context, as a
    CUDA graph capture needs: the cache is emptied when the context exits, and a graph that
    captured a cached cast would go on reading its freed memory (torch's make_graphed_callables
    refuses autocast with the cache on for this reason)."""
    dtype = AUTOCAST_DTYPES.get(precision)
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(
        device_type=torch.device(device).type, dtype=dtype, cache_enabled=cache_casts
    )

"""torch.compile or eager: taken by measurement where the answer depends on the machine.

On a GPU the compiled training step is 1.6x the eager one (results/benchmarks/gpu_compile.json):
Inductor fuses the elementwise work around the matrix products into few kernels, and launches fewer
of them. On a CPU neither gain is certain: the matrix products, most of a step, run the same BLAS
either way, the eager step computes logits for real target rows only (a data-dependent shape a
compiled graph cannot take), and compiling costs a minute or more of a run's budget. So
`compile="auto"` decides like this:

- a GPU compiles;
- a CPU times the caller's own step eager and compiled (`probe`, on a copy of the model) and
  compiles only when that pays: the compiled step must be at least `MARGIN` times the speed of the
  eager one *after* the seconds spent compiling are charged to the run's length (a 15-minute run
  cannot spend 3 minutes compiling to gain 5%). The measured seconds are cached per machine, torch
  version, thread count and step shape (`compile.json` beside the precision's cache), so the
  probe runs once; the decision is remade from them for every run's length.
- if compiling fails (no C++ compiler, an operator Inductor cannot lower, any exception of the
  compiler stack), the run trains eagerly and one log line says why.

True and False are taken as asked.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from typing import Callable

import torch

from .checks import NON_NEGATIVE, POSITIVE, check_types
from .precision import cached_measurement, measurement_key
from .records import write_measured

# torch.compile's modes: "reduce-overhead" replays the compiled graphs as CUDA graphs on a GPU
# (one launch where there were hundreds), which wants few shapes (length buckets).
COMPILE_MODES = (
    "default",
    "reduce-overhead",
    "max-autotune",
    "max-autotune-no-cudagraphs",
)
CACHE_NAME = "compile.json"
# A compiled step must be 5% faster, compile time charged: the probe's eager and compiled medians
# move by a few percent between repeats on a shared 2-core machine (results/benchmarks/cpu_compile.json),
# and a compiled run carries costs the probe does not see (a recompile when a batch's shape leaves
# the range the graph was traced for). A smaller gain is not worth an answer that noise could flip.
MARGIN = 1.05

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CompileChoice:
    """Whether a run compiles its model and loss and, in a few words, why."""

    compile: bool
    reason: str
    # measured seconds when measured: "eager" and "compiled" per step, "compile" once
    seconds: dict[str, float] | None = None
    failed: bool = False  # compiling raised; the reason says what

    def __post_init__(self):
        check_types(self)


@dataclass(frozen=True)
class MeasuredCompile:
    """A CPU's measured seconds as the cache keeps them: "eager" and "compiled" per step (more
    than 0: they divide), "compile" once (0 or more)."""

    seconds: dict[str, float]

    def __post_init__(self):
        check_types(self)
        for name, bounds in (
            ("eager", POSITIVE),
            ("compiled", POSITIVE),
            ("compile", NON_NEGATIVE),
        ):
            bounds.check(f"MeasuredCompile.seconds[{name!r}]", self.seconds.get(name))


def check_compile(value) -> bool | str:
    """`value` when it is a compile setting (True, False or "auto"); else ValueError naming them."""
    if isinstance(value, bool) or value == "auto":
        return value
    raise ValueError(f"compile must be true, false or 'auto', got {value!r}")


def choose_compile(
    compile: bool | str,
    device: torch.device | str,
    *,
    probe: Callable[[], dict[str, float]] | None = None,
    shape: dict | None = None,
    run_seconds: Callable[[float], float | None] | None = None,
) -> CompileChoice:
    """Resolve "auto" (see the module's docstring); True and False are taken as asked.

    probe: times the run's step eager and compiled, returning seconds {"eager": per step,
        "compiled": per step, "compile": the compiled first steps' extra}; called only on a CPU
        with no cached answer for `shape`. Any exception it raises means eager, logged once.
    shape: what the timing depends on besides the machine (model widths, vocabulary, batch,
        precision).
    run_seconds: the run's planned training seconds given an eager step's seconds (its time
        budget, or its steps times the step); None charges nothing for compiling.
    """
    check_compile(compile)
    if compile != "auto":
        return CompileChoice(bool(compile), "as asked")
    device = torch.device(device)
    if device.type == "cuda":
        return CompileChoice(
            True,
            "auto: a GPU compiles (1.6x eager on an H100, results/benchmarks/gpu_compile.json)",
        )
    if device.type != "cpu":
        return CompileChoice(False, f"auto: eager on {device.type}")
    if probe is None:
        return CompileChoice(False, "auto: no step was timed; eager")
    key = measurement_key(
        {
            "measured": "compile",
            # the vector instructions Inductor generates code for (AVX2, AVX512, ...)
            "capability": str(torch.backends.cpu.get_cpu_capability()),
            **(shape or {}),
        }
    )
    cached = cached_measurement(MeasuredCompile, CACHE_NAME, key)
    when = "measured before"
    if cached is not None:
        seconds = cached.seconds
    else:
        try:
            seconds = probe()
        except Exception as error:  # noqa: BLE001 (whatever the compiler stack raises means eager)
            reason = (
                f"auto: compiling failed, training eagerly ({failure_summary(error)})"
            )
            log.warning(reason)
            return CompileChoice(False, reason, failed=True)
        write_measured(CACHE_NAME, key, asdict(MeasuredCompile(seconds)))
        when = "measured now"
    planned = run_seconds(seconds["eager"]) if run_seconds is not None else None
    speed = effective_speed(seconds, planned)
    return CompileChoice(
        speed >= MARGIN, _measured_reason(seconds, planned, speed, when), seconds
    )


def effective_speed(seconds: dict, run_seconds: float | None) -> float:
    """How much more a compiled run trains than an eager one in the same time: the step's speed-up
    (eager / compiled seconds) times the share of the run left after compiling."""
    speed = seconds["eager"] / seconds["compiled"]
    if run_seconds:
        speed *= max(0.0, 1.0 - seconds["compile"] / run_seconds)
    return speed


def failure_summary(error: BaseException, limit: int = 200) -> str:
    """The exception's type and the first line of its message, cut to `limit` characters."""
    lines = str(error).strip().splitlines()
    first = lines[0] if lines else ""
    text = f"{type(error).__name__}: {first}" if first else type(error).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _measured_reason(
    seconds: dict, run_seconds: float | None, speed: float, when: str
) -> str:
    step = seconds["eager"] / seconds["compiled"]
    text = (
        f"auto: {when} on this CPU, a step takes {seconds['eager'] * 1e3:.0f} ms eager and "
        f"{seconds['compiled'] * 1e3:.0f} ms compiled ({step:.2f}x) after "
        f"{seconds['compile']:.0f} s of compiling"
    )
    if run_seconds:
        text += f"; over this run's {run_seconds:.0f} s that is {speed:.2f}x"
    verdict = "compiled" if speed >= MARGIN else "eager"
    return f"{text}; {verdict} (compiling must give {MARGIN:.2f}x)"

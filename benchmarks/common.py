"""What the benchmarks share: the interleaved timing loop, where a run ran (provenance), progress
lines and the record's write.

Importing it puts the checkout first on sys.path, so a benchmark run from a clone measures that
clone's package, not an installed one.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import torch

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from annotated_transformer.runtime.devices import cpu_flags, cpu_name  # noqa: E402
from annotated_transformer.runtime.files import atomic_write_text  # noqa: E402


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def interleaved(
    fns: dict[str, Callable[[], None]], repeats: int, warmup: int, device, inner: int = 1
) -> dict:
    """Seconds per call of each function: warm-ups, then `repeats` rounds that run each once, in
    rotating order, so that load on a shared machine hits all of them alike."""
    names = list(fns)
    for _ in range(warmup):
        for name in names:
            fns[name]()
    sync(device)
    samples: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    for r in range(repeats):
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            sync(device)
            t0, c0 = time.perf_counter(), time.process_time()
            for _ in range(inner):
                fns[name]()
            sync(device)
            samples[name].append((time.perf_counter() - t0) / inner)
            cpu[name].append((time.process_time() - c0) / inner)
    return {name: summarize(s, cpu[name]) for name, s in samples.items()}


def summarize(samples: list[float], cpu: list[float] | None = None) -> dict:
    """Median wall time with its spread; process CPU time beside it (less sensitive to other load)."""
    out = {
        "median_s": statistics.median(samples),
        "min_s": min(samples),
        "max_s": max(samples),
        "samples_s": [round(s, 6) for s in samples],
    }
    if cpu:
        out["median_process_cpu_s"] = statistics.median(cpu)
    return out


def _git(*args: str) -> str | None:
    try:
        return subprocess.run(
            ["git", *args], cwd=REPO, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def provenance(device: torch.device) -> dict:
    """The commit (and whether its code had local changes), torch, the date, the device, the
    threads, the load and the CPU's model and the instruction sets that decide whether bf16 can
    be fast."""
    flags = cpu_flags()
    wanted = ("avx2", "avx512f", "avx512bw", "avx512_bf16", "amx_bf16", "amx_tile")
    info = {
        "git_commit": _git("rev-parse", "HEAD"),
        # Uncommitted changes to the code that ran (documentation edits do not count).
        "git_dirty": bool(
            _git(
                "status",
                "--porcelain",
                "--",
                "annotated_transformer/*.py",
                "benchmarks/*.py",
            )
        ),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "device": device.type,
        "threads": torch.get_num_threads(),
        "load_average_at_start": os.getloadavg() if hasattr(os, "getloadavg") else None,
        "cpu_model": cpu_name(),
        "cpu_flags": {name: name in flags for name in wanted},
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "onednn_bf16_supported": bool(torch.ops.mkldnn._is_mkldnn_bf16_supported()),
        "logical_cpus": os.cpu_count(),
    }
    if device.type == "cuda":
        info["gpu_name"] = torch.cuda.get_device_name(device)
        info["cuda"] = torch.version.cuda
    return info


def load_average() -> float:
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


def log(message: str) -> None:
    """A progress line with the time and the load average beside it (the noise's cause)."""
    print(
        f"[{time.strftime('%H:%M:%S')} load {load_average():.2f}] {message}", flush=True
    )


def run_fresh(
    command: list[str], env: dict[str, str], log_path: Path, cwd: Path | None = None
) -> tuple[int, float]:
    """`command` in a fresh process with `env` added to this one's, its output into `log_path`:
    (exit status, its peak resident memory in MB, which on Linux counts from the fork, so it is at
    least this process's at that moment). For what a process reads once (OpenMP's pool, oneDNN's
    cache size), which only a new process can measure again. An interrupt stops the child too."""
    with (
        open(log_path, "w") as output,
        subprocess.Popen(
            command, cwd=cwd, env={**os.environ, **env}, stdout=output, stderr=output
        ) as process,
    ):
        try:
            # wait4, not wait: this child's peak memory, where getrusage gives the largest child's
            _, status, usage = os.wait4(process.pid, 0)
        except BaseException:
            process.kill()
            raise
        process.returncode = os.waitstatus_to_exitcode(status)
    return process.returncode, usage.ru_maxrss / 1024


def write_json(path, record: dict, indent: int = 2) -> None:
    """The record written whole (a reader never sees half of it), its folder made on the way."""
    atomic_write_text(path, json.dumps(record, indent=indent, default=float) + "\n")

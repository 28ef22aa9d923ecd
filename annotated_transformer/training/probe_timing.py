"""The one timing loop of the run's probes (precision, compile): variants of the run's own step
timed against each other on this machine, as `benchmarks/` times them.

Each variant is called once to warm up (a compile, a kernel's first use), then `rounds` more times
in an order that turns round by round, so that a change of load on the machine hits every variant
alike; the median of those calls is its time. Every random generator is put back afterwards, so a
probe changes nothing about the run it measures.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping, Sequence

import torch

from ..data.batching import EncodedPairs, collate_pairs


def _seconds(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def time_alternately(
    variants: Mapping[str, Callable[[], object]], rounds: int
) -> tuple[dict[str, float], dict[str, float]]:
    """({variant: seconds of its first call}, {variant: median seconds of the next `rounds`})."""
    names = list(variants)
    with torch.random.fork_rng(devices=[]):
        first = {name: _seconds(variants[name]) for name in names}
        times: dict[str, list[float]] = {name: [] for name in names}
        for r in range(rounds):
            for name in names[::-1] if r % 2 else names:
                times[name].append(_seconds(variants[name]))
    return first, {name: statistics.median(t) for name, t in times.items()}


def collated_batches(
    config, data: EncodedPairs, batches: Sequence[list[int]], device: torch.device
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(source, target) tensors on `device` of each batch of pair indices into `data`, collated
    with `config`'s special ids, so a probe's timings hold no collating."""
    tensors = []
    for indices in batches:
        src, tgt = collate_pairs(
            [data[j] for j in indices], config.pad_id, config.bos_id, config.eos_id
        )
        tensors.append((src.to(device), tgt.to(device)))
    return tensors

"""Section 6.1 and Table 2 of the paper applied to one of our runs: which snapshots to average, and
what the training cost, counted two ways.

The paper reports a model as the average of its last checkpoints and prices training as
time x GPUs x a sustained FLOP/s per GPU (Table 2). This module reads a finished run folder
(`pipeline.run` writes `metrics.jsonl`, `checkpoints/step_*.pt` and `averaged.pt` there), picks the
snapshot counts a sweep over averaging compares, and holds the small cost arithmetic, so that the
chapter and the tests use one formula each:

- the paper's way: seconds x devices x sustained FLOP/s per device (`paper_way_flops`);
- counted from the model: training FLOPs per target token (`model/flops.py`) x target tokens seen
  (`counted_training_flops`), with `six_n_flops` (6 x parameters x tokens) as the usual shorthand.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import torch

from ..data.batching import EncodedPairs
from ..model import flops
from ..model.config import TransformerConfig
from ..pipeline import AVERAGED_NAME, TRANSLATIONS_NAME
from ..profiles import Profile
from ..training.checkpoint import average_last, list_snapshots
from ..training.run_folder import METRICS_NAME

# Section 5.1: each training batch held about 25,000 source and 25,000 target tokens.
PAPER_TARGET_TOKENS_PER_STEP = 25_000


# ------------------------------------------------------------------------------------------ the run
@dataclass(frozen=True)
class FinishedRun:
    """What a finished run folder says about its training (from `metrics.jsonl`)."""

    folder: Path
    steps: int
    train_time_s: float
    target_tokens: int
    device: str
    precision: str
    stopped_by: str
    snapshots: tuple[str, ...]


def read_metrics(folder: str | Path) -> list[dict]:
    """The records of a run's `metrics.jsonl`, oldest first ([] when there is none)."""
    path = Path(folder) / METRICS_NAME
    if not path.is_file():
        return []
    return [
        json.loads(line)
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]


def finished_run(folder: str | Path, profile: Profile) -> FinishedRun | None:
    """The run in `folder` if it is a run of exactly `profile` that trained to its limit and was averaged
    and scored (what `pipeline.run` leaves); None for no run, another profile's, or an interrupted one."""
    folder = Path(folder)
    records = read_metrics(folder)
    starts = [r for r in records if r.get("kind") == "start"]
    trains = [r for r in records if r.get("kind") == "train"]
    if not starts or not trains or records[-1].get("kind") != "stop":
        return None
    stop = records[-1]
    same_profile = _training_fields(starts[0].get("profile") or {}) == _training_fields(
        profile.to_dict()
    )
    snapshots = list_snapshots(folder)
    complete = (
        (folder / AVERAGED_NAME).is_file()
        and (folder / TRANSLATIONS_NAME).is_file()
        and bool(snapshots)
    )
    if not same_profile or stop.get("stopped_by") == "interrupted" or not complete:
        return None
    return FinishedRun(
        folder=folder,
        steps=int(stop["step"]),
        train_time_s=float(stop["train_time_s"]),
        target_tokens=int(trains[-1]["target_tokens"]),
        device=str(starts[-1]["device"]),
        precision=str(starts[-1]["precision"]),
        stopped_by=str(stop["stopped_by"]),
        snapshots=tuple(p.name for p in snapshots),
    )


def _training_fields(profile: dict) -> dict:
    """A profile's fields that decide what a run trains and scores: all but the name's description and the
    scales of the book's other chapters, which may change without making a trained model stale. The round
    trip through JSON makes tuples lists, as they are in the file."""
    return {
        k: v
        for k, v in json.loads(json.dumps(profile)).items()
        if k not in ("book", "description")
    }


# ------------------------------------------------------------------------------------------ averaging
def averaging_sizes(average_last_k: int, available: int) -> list[int]:
    """How many of the newest snapshots each point of an averaging sweep merges: 1 (no averaging), 2,
    the profile's `average_last`, and every kept snapshot; none above what is available."""
    if available < 1:
        raise ValueError(
            "no snapshots to average: the run folder holds no checkpoints/step_*.pt"
        )
    return sorted({k for k in (1, 2, average_last_k, available) if 1 <= k <= available})


def averaging_sweep(
    folder: str | Path, sizes: list[int]
) -> Iterator[tuple[int, dict, list[str]]]:
    """(k, the average of the newest k snapshots, their file names) for each k, as section 6.1 averages."""
    for k in sizes:
        checkpoint, used = average_last(folder, k)
        yield k, checkpoint, [p.name for p in used]


# ------------------------------------------------------------------------------------------ cost
def paper_way_flops(
    train_time_s: float, devices: int, sustained_flops_per_device: float
) -> float:
    """Table 2's estimate: training time x number of devices x sustained FLOP/s of one device."""
    return train_time_s * devices * sustained_flops_per_device


def mean_lengths(pairs: EncodedPairs) -> tuple[float, float]:
    """Mean source and target lengths in positions, as the trainer counts them (with eos; with bos on the
    decoder's side), which is how `pipeline.train` feeds `flops.training_flops_per_target_token`."""
    return float(pairs.src_lengths.mean()) + 1, float(pairs.tgt_lengths.mean()) + 1


def counted_training_flops(
    config: TransformerConfig,
    vocab_size: int,
    mean_src_len: float,
    mean_tgt_len: float,
    target_tokens: float,
) -> float:
    """Training FLOPs counted from the model: FLOPs per target token x target tokens trained on."""
    return (
        flops.training_flops_per_target_token(
            config, vocab_size, mean_src_len, mean_tgt_len
        )
        * target_tokens
    )


def six_n_flops(parameters: int, tokens: float) -> float:
    """The rule of thumb: 6 FLOPs per parameter per token (2 forward, 4 backward). For an encoder-decoder
    it is only indicative: every token passes half of the weights, but the embeddings cost no multiply."""
    return 6.0 * parameters * tokens


def device_hours(
    total_flops: float, peak_flops_per_s: float, fraction_of_peak: float
) -> float:
    """Hours one device needs for `total_flops` when it sustains `fraction_of_peak` of its peak."""
    if not 0 < fraction_of_peak <= 1:
        raise ValueError(f"fraction_of_peak must be in (0, 1], got {fraction_of_peak}")
    return total_flops / (peak_flops_per_s * fraction_of_peak) / 3600.0


def measured_matmul_flops(
    size: int = 1024, seconds: float = 1.0, device: str | torch.device = "cpu"
) -> float:
    """Sustained fp32 FLOP/s of square matrix products on `device`, measured for about `seconds`.

    For a CPU, where no data sheet gives the number Table 2 needs, this stands in for the paper's
    "sustained single-precision" rate: the speed of the kind of work that dominates a training step.
    """
    device = torch.device(device)
    a = torch.randn(size, size, device=device)
    b = torch.randn(size, size, device=device)
    torch.mm(a, b)  # warm-up: thread pool, allocations
    repeats, started = 0, time.perf_counter()
    while True:
        torch.mm(a, b)
        repeats += 1
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        elapsed = time.perf_counter() - started
        if elapsed >= seconds:
            return 2.0 * size**3 * repeats / elapsed

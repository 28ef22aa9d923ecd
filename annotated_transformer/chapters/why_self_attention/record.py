"""Chapter 03's results record, `results/<profile>/why_self_attention.json`.

What its "metrics" hold, built by `build` from what the chapter measured:

* `device_name`, `threads`: where the timings ran (threads: CPU only, else None);
* `crossover_d`, `crossover_n`: the width of the crossover sweep and the first length at which
  self-attention's mixing step stops being faster than a recurrent layer's, interpolated on log
  scales (`table1.crossover`), or "above N" when it stays faster up to the longest length N;
  the introduction's summary reads `crossover_n`;
* `crossover_n_flops`: the length where the two cost the same FLOPs (n = d);
  `lstm_crossover_n_flops_with_projections`: the first length where a full attention sub-layer
  (projections included) costs as many FLOPs as an LSTM;
* `slopes`: per layer kind, the fitted exponents of time and memory against n and d
  (`time_vs_n`, `time_vs_d`, `memory_vs_n`, `memory_vs_d`) and Table 1's (`paper_n`, `paper_d`);
* `max_path_length`: per kind of `table1.PATH_KINDS`, {n: maximum path length};
* `timings`: every measured point of the `by_n`, `by_d` and `crossover` sweeps;
* `sizes`, `kernel_size`, `dataset`: what was measured;
* `sentence_lengths`: per test corpus and language, the number of sentences, the median and
  longest length in subwords and the share shorter than `d_model`;
* `d_model`: the width the sentence lengths are held against (the base model's 512);
* `restricted_attention`: the window r and the time exponents of restricted and full attention.

`write` writes it through `results.write_result` and `read` reads it back; `sentences.closing`
turns the record read back into the chapter's closing section.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from ...evaluation import results
from ...runtime.devices import device_name
from . import table1

RESULTS_NAME = "why_self_attention"
DATASET = "random tensors; multi30k and wmt14 test lengths"


def build(
    *,
    device: torch.device,
    sizes: Any,
    kernel_size: int,
    slopes: pd.DataFrame,
    paths: pd.DataFrame,
    by_n: pd.DataFrame,
    by_d: pd.DataFrame,
    crossover_times: pd.DataFrame,
    measured_crossover: float | None,
    lstm_crossover: int | None,
    sentence_lengths: pd.DataFrame,
    d_model: int,
    restricted: tuple[int, float, float],
) -> dict:
    """The record's metrics from the chapter's computed objects: `slopes` (one row per layer
    kind, as the chapter's table of exponents), `paths` (kind, n, max_path_length), the three
    sweeps' measurements, the measured and LSTM crossovers, `sentence_lengths` (the table of
    section 3.8, share column `share_below_d`) and `restricted` (r, its time exponent, full
    attention's)."""
    cross = sizes.crossover
    r, restricted_slope, full_slope = restricted
    return {
        "device_name": device_name(device),
        "threads": torch.get_num_threads() if device.type == "cpu" else None,
        "crossover_d": cross.d,
        "crossover_n": measured_crossover
        if measured_crossover is not None
        else f"above {max(cross.ns):,}",
        "crossover_n_flops": table1.flop_crossover_n(cross.d),
        "lstm_crossover_n_flops_with_projections": lstm_crossover,
        "slopes": {
            row.kind: {
                "time_vs_n": row.time_vs_n,
                "time_vs_d": row.time_vs_d,
                "memory_vs_n": row.memory_vs_n,
                "memory_vs_d": row.memory_vs_d,
                "paper_n": row.paper_n,
                "paper_d": row.paper_d,
            }
            for row in slopes.itertuples()
        },
        "max_path_length": {
            kind: {
                int(row.n): int(row.max_path_length)
                for row in paths[paths.kind == kind].itertuples()
            }
            for kind in table1.PATH_KINDS
        },
        "timings": {
            "by_n": by_n.to_dict(orient="records"),
            "by_d": by_d.to_dict(orient="records"),
            "crossover": crossover_times.to_dict(orient="records"),
        },
        "sizes": sizes,
        "kernel_size": kernel_size,
        "dataset": DATASET,
        "sentence_lengths": sentence_lengths.to_dict(orient="records"),
        "d_model": d_model,
        "restricted_attention": {
            "r": r,
            "time_slope": restricted_slope,
            "full_time_slope": full_slope,
        },
    }


def write(
    metrics: dict,
    profile_name: str,
    device: torch.device,
    wall_time_s: float,
    results_dir: str | os.PathLike | None = None,
) -> Path:
    """`results/<profile_name>/why_self_attention.json` (under `results_dir`, default the
    results root), stamped with the device's provenance; the path written."""
    return results.write_result(
        RESULTS_NAME,
        metrics,
        profile=profile_name,
        device=device,
        wall_time_s=round(wall_time_s, 2),
        root=results_dir,
    )


def read(profile_name: str, results_dir: str | os.PathLike | None = None) -> dict | None:
    """The record `write` wrote for `profile_name`, or None when the chapter has not run."""
    return results.read_result(RESULTS_NAME, profile_name, results_dir)

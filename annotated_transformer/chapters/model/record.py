"""Chapter 02's results record, `results/<profile>/model.json`.

What its "metrics" hold, built by `build` from what the chapter counted and checked:

* `vocab_size`: the shared vocabulary every count assumes (the paper's 37,000, section 5.1);
* `params_m`: per row of Table 3 (`model.config.TABLE3_ALL_ROWS`), our parameter count in
  millions, tied embeddings counted once; the introduction's summary reads `params_m.base` and
  `params_m.big`;
* `paper_params_m`: the paper's count for the rows that list one;
* `gap_in_vocabulary_rows`: per row the paper counts, the paper's count minus ours in rows of
  width d_model (how many more vocabulary entries would close it); positive where ours falls
  short;
* `median_gap_in_vocabulary_rows`: the median of the positive gaps (`median_shortfall`);
* `ffn_share_at_4x`: at d_ff = 4 d_model, the feed-forward network's share of an encoder
  layer's parameters and, per sentence length n, of its FLOPs (`ffn_share_at_4x`);
* `positional_shift_max_abs_error`: the largest error of PE(pos + k) = M_k PE(pos) over the
  profile's shifts k and positions (`sizes`: `positions`, `shifts`);
* `tying_saves_m`: the parameters in millions that one shared embedding matrix saves in the
  base model against three;
* `sizes`, `dataset`: what was checked ("none (counts)": no data).

`write` writes it through `results.write_result` and `read` reads it back;
`sentences.closing` turns the record read back into the chapter's closing section.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ...evaluation import results

RESULTS_NAME = "model"
DATASET = "none (counts)"


def gaps(counts: pd.DataFrame) -> dict[str, float]:
    """{row: gap in vocabulary rows} for the rows of the chapter's count table (columns row,
    paper_m, gap_in_vocabulary_rows) that the paper counts."""
    listed = counts.dropna(subset=["paper_m"])
    return {r.row: float(r.gap_in_vocabulary_rows) for r in listed.itertuples()}


def median_shortfall(gaps: Mapping[str, float]) -> float | None:
    """The median gap of the rows where our count falls short of the paper's (positive gaps),
    or None when none does."""
    positive = [g for g in gaps.values() if g > 0]
    return float(statistics.median(positive)) if positive else None


def ffn_share_at_4x(split: pd.DataFrame) -> dict:
    """{"parameters": share, "flops_by_n": {n: share}} at d_ff = 4 d_model, from the chapter's
    split table (columns d_ff_over_d_model, n, ffn_parameter_share, ffn_flop_share)."""
    at4 = split[split.d_ff_over_d_model == 4].set_index("n")
    return {
        "parameters": float(at4.ffn_parameter_share.iloc[0]),
        "flops_by_n": {int(n): float(v) for n, v in at4.ffn_flop_share.items()},
    }


def build(
    *,
    sizes: Any,
    vocab_size: int,
    counts: pd.DataFrame,
    split: pd.DataFrame,
    shift_errors: Sequence[Mapping[str, float]],
    tying_saves: int,
) -> dict:
    """The record's metrics from the chapter's computed objects: `counts` (one row per row of
    Table 3: row, ours_m, paper_m, gap_in_vocabulary_rows), `split` (the feed-forward share
    table), `shift_errors` (one {"k", "positions_checked", "max_abs_error"} per shift) and
    the parameters the shared embedding matrix saves."""
    row_gaps = gaps(counts)
    return {
        "vocab_size": vocab_size,
        "params_m": {r.row: r.ours_m for r in counts.itertuples()},
        "paper_params_m": {
            r.row: r.paper_m for r in counts.dropna(subset=["paper_m"]).itertuples()
        },
        "gap_in_vocabulary_rows": row_gaps,
        "median_gap_in_vocabulary_rows": median_shortfall(row_gaps),
        "ffn_share_at_4x": ffn_share_at_4x(split),
        "positional_shift_max_abs_error": max(e["max_abs_error"] for e in shift_errors),
        "tying_saves_m": tying_saves / 1e6,
        "dataset": DATASET,
        "sizes": sizes,
    }


def write(
    metrics: dict,
    profile_name: str,
    wall_time_s: float,
    results_dir: str | os.PathLike | None = None,
) -> Path:
    """`results/<profile_name>/model.json` (under `results_dir`, default the results root),
    stamped with the CPU's provenance (the chapter counts on the CPU whatever the device);
    the path written."""
    return results.write_result(
        RESULTS_NAME,
        metrics,
        profile=profile_name,
        device="cpu",
        wall_time_s=round(wall_time_s, 2),
        root=results_dir,
    )


def read(profile_name: str, results_dir: str | os.PathLike | None = None) -> dict | None:
    """The record `write` wrote for `profile_name`, or None when the chapter has not run."""
    return results.read_result(RESULTS_NAME, profile_name, results_dir)

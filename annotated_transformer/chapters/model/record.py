"""Chapter 02's results record, `results/<profile>/model.json`.

What its "metrics" hold, built by `build` from what the chapter counted and checked:

* `vocab_size`: the shared vocabulary every count assumes (the paper's 37,000, section 5.1);
* `params_m`: per row of Table 3 (`model.config.TABLE3_ALL_ROWS`), our parameter count in
  millions, tied embeddings counted once; the introduction's summary reads its base and big
  rows;
* `paper_params_m`: the paper's count for the rows that list one;
* `gap_in_vocabulary_rows`: per row the paper counts, the paper's count minus ours in rows of
  width d_model (how many more vocabulary entries would close it); positive where ours falls
  short;
* `ffn_share_at_4x`: at d_ff = 4 d_model, the feed-forward network's share of an encoder
  layer's parameters and, per sentence length n, of its FLOPs (`ffn_share_at_4x`);
* `positional_shift_max_abs_error`: the largest error of PE(pos + k) = M_k PE(pos) over the
  profile's shifts k and positions (`sizes`: `positions`, `shifts`);
* `tying_saves_m`: the parameters in millions that one shared embedding matrix saves in the
  base model against three;
* `sizes`, `dataset`: what was checked ("none (counts)": no data).

`ModelRecord` holds them typed; `write` writes it and `read` reads it back (`ChapterRecord`);
`sentences.closing` turns the record read back into the chapter's closing section.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Mapping, Sequence

import pandas as pd

from ..chapter_record import ChapterRecord
from .sizes import ModelSizes

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


@dataclasses.dataclass(frozen=True)
class FfnShare:
    """The feed-forward network's share of an encoder layer at d_ff = 4 d_model: of its
    parameters, and of its FLOPs on a sentence of n tokens."""

    parameters: float
    flops_by_n: dict[int, float]


def ffn_share_at_4x(split: pd.DataFrame) -> FfnShare:
    """The share at d_ff = 4 d_model, from the chapter's split table (columns
    d_ff_over_d_model, n, ffn_parameter_share, ffn_flop_share)."""
    at4 = split[split.d_ff_over_d_model == 4].set_index("n")
    return FfnShare(
        parameters=float(at4.ffn_parameter_share.iloc[0]),
        flops_by_n={int(n): float(v) for n, v in at4.ffn_flop_share.items()},
    )


@dataclasses.dataclass(frozen=True)
class ModelRecord(ChapterRecord):
    """Chapter 02's record: the fields the module's docstring lists."""

    RESULTS_NAME = "model"
    DEVICE = "cpu"  # the chapter counts on the CPU whatever the book's device

    vocab_size: int
    params_m: dict[str, float]
    paper_params_m: dict[str, float]
    gap_in_vocabulary_rows: dict[str, float]
    ffn_share_at_4x: FfnShare
    positional_shift_max_abs_error: float
    tying_saves_m: float
    dataset: str = DATASET
    sizes: ModelSizes | None = None


def build(
    *,
    sizes: ModelSizes,
    vocab_size: int,
    counts: pd.DataFrame,
    split: pd.DataFrame,
    shift_errors: Sequence[Mapping[str, float]],
    tying_saves: int,
) -> ModelRecord:
    """The record from the chapter's computed objects: `counts` (one row per row of Table 3:
    row, ours_m, paper_m, gap_in_vocabulary_rows), `split` (the feed-forward share table),
    `shift_errors` (one {"k", "positions_checked", "max_abs_error"} per shift) and the
    parameters the shared embedding matrix saves."""
    return ModelRecord(
        vocab_size=vocab_size,
        params_m={r.row: r.ours_m for r in counts.itertuples()},
        paper_params_m={
            r.row: r.paper_m for r in counts.dropna(subset=["paper_m"]).itertuples()
        },
        gap_in_vocabulary_rows=gaps(counts),
        ffn_share_at_4x=ffn_share_at_4x(split),
        positional_shift_max_abs_error=max(e["max_abs_error"] for e in shift_errors),
        tying_saves_m=tying_saves / 1e6,
        sizes=sizes,
    )


write = ModelRecord.write
read = ModelRecord.read

"""Chapter 01's results record, `results/<profile>/attention.json`.

What its "metrics" hold, built by `build` from what the chapter measured:

* `dot_product_variance`: per d_k, the sample variance of q·k (`unscaled`) and of q·k/√d_k
  (`scaled`) for standard normal q and k, over the profile's `samples` draws;
* `softmax_saturation`: per d_k, the mean largest softmax weight and the median gradient norm
  reaching the scores, with and without the scale (`largest_weight_unscaled`, ...);
* `additive_attention`: per d_k of the additive comparison, the median time of additive and of
  dot-product scores (`additive_ms`, `dot_product_ms`) with every timed run behind it
  (`additive_runs_ms`, `dot_product_runs_ms`, the profile's `repeats` each; records before them
  hold means) and the mean largest weight of each kind of score's softmax;
* `multi_head_cost`: per number of heads at d_model = 512 and n = 64, the parameters, the
  matrix-product FLOPs and the softmax's score entries;
* `projection_ms`, `attention_path_ms`: the median time of each projection (three against one
  fused, `THREE_PROJECTIONS` and `ONE_PROJECTION`) and of each code path (`FUSED_PATH`,
  `EXPLICIT_PATH`); `projection_runs_ms`, `attention_path_runs_ms`: every timed run behind those
  medians, whose spread is the timing noise the closing weighs a difference against;
* `explicit_weights_kept_mb`: the memory of the weights the explicit path keeps for one layer;
* `sizes`, `dataset`: what was measured (random tensors).

Records written before the runs were kept lack `additive_attention`, the `*_runs_ms` fields and
`explicit_weights_kept_mb`: they read back as None.

`AttentionRecord` holds them typed, with `timed_on`, the device its file's provenance names (not
one of its metrics); `write` writes it and `read` reads it back (`ChapterRecord`);
`sentences.closing` turns the record read back into the chapter's closing section.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import pandas as pd

from ..chapter_record import ChapterRecord, beside_metrics
from .sizes import AttentionSizes

RESULTS_NAME = "attention"
DATASET = "random tensors"

# The timed alternatives, as the chapter's tables and the record name them.
THREE_PROJECTIONS = "three nn.Linear(512, 512)"
ONE_PROJECTION = "one nn.Linear(512, 1536), split"
FUSED_PATH = "fused (F.scaled_dot_product_attention)"
EXPLICIT_PATH = "explicit (records the weights)"

# The additive comparison's columns, as the chapter's table names them, and the record's names.
ADDITIVE_COLUMNS = {
    "d_k": "d_k",
    "additive (ms)": "additive_ms",
    "dot product (ms)": "dot_product_ms",
    "largest weight, additive": "largest_weight_additive",
    "largest weight, unscaled dot product": "largest_weight_unscaled_dot_product",
    "additive runs (ms)": "additive_runs_ms",
    "dot product runs (ms)": "dot_product_runs_ms",
}


def median(times: Sequence[float]) -> float:
    """The chapter's median of timed runs: the middle one (the upper of the two middle ones
    for an even count)."""
    return sorted(times)[len(times) // 2]


def timing_table(runs: Mapping[str, Sequence[float]], label: str) -> pd.DataFrame:
    """One row per timed alternative of `runs` ({name: milliseconds of each run}): `label`
    (the name), `ms` (the median), `fastest_ms` and `slowest_ms` (the spread of the runs)."""
    return pd.DataFrame(
        [
            {label: name, "ms": median(t), "fastest_ms": min(t), "slowest_ms": max(t)}
            for name, t in runs.items()
        ]
    )


@dataclasses.dataclass(frozen=True)
class Variance:
    """The sample variance of q·k and of q·k/√d_k at one d_k."""

    unscaled: float
    scaled: float


@dataclasses.dataclass(frozen=True)
class Saturation:
    """At one d_k, the softmax's mean largest weight and the median gradient norm reaching the
    scores, without and with the scale."""

    largest_weight_unscaled: float
    largest_weight_scaled: float
    gradient_norm_unscaled: float
    gradient_norm_scaled: float


@dataclasses.dataclass(frozen=True)
class AdditiveRow:
    """Additive against dot-product scores at one d_k: the median milliseconds of each, the mean
    largest weight of each softmax, and every timed run (None in records that kept means)."""

    d_k: int
    additive_ms: float
    dot_product_ms: float
    largest_weight_additive: float
    largest_weight_unscaled_dot_product: float
    additive_runs_ms: tuple[float, ...] | None = None
    dot_product_runs_ms: tuple[float, ...] | None = None


@dataclasses.dataclass(frozen=True)
class HeadCost:
    """The cost of `heads` heads of width d_k at d_model = 512 and n = 64."""

    heads: int
    d_k: int
    parameters: int
    flops: int
    score_entries: int


def additive_rows(additive: pd.DataFrame) -> tuple[AdditiveRow, ...]:
    """The chapter's additive table (`ADDITIVE_COLUMNS`) as the record's `additive_attention`:
    one row per d_k, the medians beside every timed run."""
    rows = additive[list(ADDITIVE_COLUMNS)].rename(columns=ADDITIVE_COLUMNS)
    return tuple(
        AdditiveRow(
            **{
                **row,
                "d_k": int(row["d_k"]),
                "additive_runs_ms": tuple(row["additive_runs_ms"]),
                "dot_product_runs_ms": tuple(row["dot_product_runs_ms"]),
            }
        )
        for row in rows.to_dict(orient="records")
    )


def additive_table(additive: pd.DataFrame) -> pd.DataFrame:
    """The additive comparison as the page shows it: each scoring's median milliseconds with the
    fastest and the slowest run beside it, and each softmax's mean largest weight."""

    def timed(runs: Sequence[float], digits: int) -> str:
        return f"{median(runs):.{digits}f} ({min(runs):.{digits}f} to {max(runs):.{digits}f})"

    return pd.DataFrame(
        {
            "d_k": additive["d_k"],
            "additive, ms: median (fastest to slowest)": [
                timed(r, 2) for r in additive["additive runs (ms)"]
            ],
            "dot product, ms: median (fastest to slowest)": [
                timed(r, 3) for r in additive["dot product runs (ms)"]
            ],
            "largest weight, additive": additive["largest weight, additive"].map(
                "{:.3f}".format
            ),
            "largest weight, unscaled dot product": additive[
                "largest weight, unscaled dot product"
            ].map("{:.3f}".format),
        }
    )


def saturation_by_d_k(saturation: pd.DataFrame) -> dict[int, Saturation]:
    """{d_k: Saturation} from the chapter's long table (columns d_k, scores, largest_weight,
    gradient_norm): the record's `softmax_saturation`, which the page's sentence reads too."""
    wide = saturation.pivot(
        index="d_k", columns="scores", values=["largest_weight", "gradient_norm"]
    )
    return {
        int(d): Saturation(
            **{
                f"{quantity}_{scores}": float(wide.loc[d, (quantity, scores)])
                for quantity in ("largest_weight", "gradient_norm")
                for scores in ("unscaled", "scaled")
            }
        )
        for d in wide.index
    }


def _timed_on(found: dict) -> str:
    provenance = found.get("provenance") or {}
    return str(provenance.get("device_name") or provenance.get("device") or "")


@dataclasses.dataclass(frozen=True, kw_only=True)
class AttentionRecord(ChapterRecord):
    """Chapter 01's record: the fields the module's docstring lists, and `timed_on`."""

    RESULTS_NAME = "attention"

    dot_product_variance: dict[int, Variance]
    softmax_saturation: dict[int, Saturation]
    additive_attention: tuple[AdditiveRow, ...] | None = None
    multi_head_cost: tuple[HeadCost, ...]
    projection_ms: dict[str, float]
    projection_runs_ms: dict[str, tuple[float, ...]] | None = None
    attention_path_ms: dict[str, float]
    attention_path_runs_ms: dict[str, tuple[float, ...]] | None = None
    explicit_weights_kept_mb: float | None = None
    sizes: AttentionSizes | None = None
    dataset: str = DATASET
    # the device the timings ran on, as the file's provenance names it
    timed_on: str = beside_metrics(_timed_on, "")


def build(
    *,
    sizes: AttentionSizes,
    variance: pd.DataFrame,
    saturation: pd.DataFrame,
    additive: pd.DataFrame,
    head_costs: pd.DataFrame,
    projection_runs: Mapping[str, Sequence[float]],
    path_runs: Mapping[str, Sequence[float]],
    explicit_weights_mb: float,
) -> AttentionRecord:
    """The record from the chapter's computed objects: `variance` (d_k, unscaled, scaled),
    `saturation` (d_k, scores, largest_weight, gradient_norm), `additive` (the additive table,
    `ADDITIVE_COLUMNS`), `head_costs` (one row per number of heads), the milliseconds of every
    timed run of the projections and the code paths, and the explicit path's kept weights in
    MB."""
    return AttentionRecord(
        dot_product_variance={
            int(r.d_k): Variance(float(r.unscaled), float(r.scaled))
            for r in variance.itertuples()
        },
        softmax_saturation=saturation_by_d_k(saturation),
        additive_attention=additive_rows(additive),
        multi_head_cost=tuple(
            HeadCost(**{k: int(v) for k, v in row.items()})
            for row in head_costs.to_dict(orient="records")
        ),
        projection_ms={name: median(t) for name, t in projection_runs.items()},
        projection_runs_ms={name: tuple(t) for name, t in projection_runs.items()},
        attention_path_ms={name: median(t) for name, t in path_runs.items()},
        attention_path_runs_ms={name: tuple(t) for name, t in path_runs.items()},
        explicit_weights_kept_mb=explicit_weights_mb,
        sizes=sizes,
    )


write = AttentionRecord.write
read = AttentionRecord.read

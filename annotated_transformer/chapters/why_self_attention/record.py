"""Chapter 03's results record, `results/<profile>/why_self_attention.json`.

What its "metrics" hold, built by `build` from what the chapter measured:

* `device_name`, `threads`: where the timings ran (threads: CPU only, else None);
* `crossover_d`, `crossover_n`: the width of the crossover sweep and the first length at which
  self-attention's mixing step stops being faster than a recurrent layer's, interpolated on log
  scales (`table1.crossover`), or "above N" when it stays faster up to the longest length N;
  the introduction's summary reads `crossover_n`;
* `lstm_crossover_n_flops_with_projections`: the first length where a full attention
  sub-layer (projections included) costs as many FLOPs as an LSTM;
* `slopes`: per layer kind, the fitted exponents of time and memory against n and d
  (`time_vs_n`, `time_vs_d`, `memory_vs_n`, `memory_vs_d`) and Table 1's (`paper_n`, `paper_d`);
* `max_path_length`: per kind of `table1.PATH_KINDS`, {n: maximum path length};
* `timings`: every measured point of the `by_n`, `by_d` and `crossover` sweeps;
* `sizes`, `kernel_size`, `dataset`: what was measured;
* `sentence_lengths`: per test corpus and language, the number of sentences, the median and
  longest length in subwords and the share shorter than `d_model`;
* `d_model`: the width the sentence lengths are held against (the base model's 512).

Records written before `d_model` was recorded read back with the base model's 512.

`WhySelfAttentionRecord` holds them typed; `write` writes it and `read` reads it back
(`ChapterRecord`); `sentences.closing` turns the record read back into the chapter's closing
section.
"""

from __future__ import annotations

import dataclasses

import pandas as pd
import torch

from ...runtime.devices import device_name
from ..chapter_record import ChapterRecord
from . import table1
from .sizes import WhySelfAttentionSizes

RESULTS_NAME = "why_self_attention"
DATASET = "random tensors; multi30k and wmt14 test lengths"


@dataclasses.dataclass(frozen=True)
class Slopes:
    """One layer kind's fitted exponents of time and memory against n and d, and Table 1's."""

    time_vs_n: float
    time_vs_d: float
    memory_vs_n: float
    memory_vs_d: float
    paper_n: float
    paper_d: float


@dataclasses.dataclass(frozen=True)
class Timings:
    """Every measured point of the three sweeps."""

    by_n: tuple[table1.Measurement, ...]
    by_d: tuple[table1.Measurement, ...]
    crossover: tuple[table1.Measurement, ...]


@dataclasses.dataclass(frozen=True)
class SentenceLengths:
    """One test corpus and language: its sentences, their median and longest length in subwords,
    and the share shorter than `d_model`."""

    corpus: str
    sentences: int
    median: float
    longest: int
    share_below_d: float


def slopes_by_kind(slopes: pd.DataFrame) -> dict[str, Slopes]:
    """{kind: Slopes} from the chapter's table of exponents (one row per layer kind): the
    record's `slopes`, which the page's sentence reads too."""
    names = [f.name for f in dataclasses.fields(Slopes)]
    return {
        row["kind"]: Slopes(**{k: row[k] for k in names})
        for row in slopes.to_dict(orient="records")
    }


def _measurements(table: pd.DataFrame) -> tuple[table1.Measurement, ...]:
    return tuple(table1.Measurement(**row) for row in table.to_dict(orient="records"))


@dataclasses.dataclass(frozen=True, kw_only=True)
class WhySelfAttentionRecord(ChapterRecord):
    """Chapter 03's record: the fields the module's docstring lists."""

    RESULTS_NAME = "why_self_attention"

    device_name: str
    threads: int | None
    crossover_d: int
    crossover_n: float | str
    lstm_crossover_n_flops_with_projections: int | None
    slopes: dict[str, Slopes]
    max_path_length: dict[str, dict[int, int]]
    timings: Timings
    sizes: WhySelfAttentionSizes
    kernel_size: int
    dataset: str = DATASET
    sentence_lengths: tuple[SentenceLengths, ...]
    d_model: int = 512


def build(
    *,
    device: torch.device,
    sizes: WhySelfAttentionSizes,
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
) -> WhySelfAttentionRecord:
    """The record from the chapter's computed objects: `slopes` (one row per layer kind, as the
    chapter's table of exponents), `paths` (kind, n, max_path_length), the three sweeps'
    measurements (`table1.Measurement`'s columns), the measured and LSTM crossovers,
    and `sentence_lengths` (the table of section 3.8, share column
    `share_below_d`)."""
    cross = sizes.crossover
    return WhySelfAttentionRecord(
        device_name=device_name(device),
        threads=torch.get_num_threads() if device.type == "cpu" else None,
        crossover_d=cross.d,
        crossover_n=measured_crossover
        if measured_crossover is not None
        else f"above {max(cross.ns):,}",
        lstm_crossover_n_flops_with_projections=lstm_crossover,
        slopes=slopes_by_kind(slopes),
        max_path_length={
            kind: {
                int(row.n): int(row.max_path_length)
                for row in paths[paths.kind == kind].itertuples()
            }
            for kind in table1.PATH_KINDS
        },
        timings=Timings(
            _measurements(by_n), _measurements(by_d), _measurements(crossover_times)
        ),
        sizes=sizes,
        kernel_size=kernel_size,
        sentence_lengths=tuple(
            SentenceLengths(**row) for row in sentence_lengths.to_dict(orient="records")
        ),
        d_model=d_model,
    )


write = WhySelfAttentionRecord.write
read = WhySelfAttentionRecord.read

"""The committed calibration of chapter 06's warm-up and peak rate, as the chapter reads it.

`scripts/table3_calibration.py` trains base, C1 and C3 with a few (warm-up, peak) candidates and
writes its records under the clone's ``results/tuning_table3_<profile>/``: ``calibration.json``
(the grid the profile's choice comes from, its rule and its choice), ``calibration_epoch1.json``
(the same rule over a whole epoch) and ``calibration_epoch1_prenorm.json`` (base, C1 and C3 with
the norm before each sub-layer, a diagnostic). `Calibration` holds the three records (None where a
file is not committed) and turns them into the chapter's tables; `record.committed_calibration`
finds them.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from ...profiles import Table3Scale

CALIBRATED_ROWS = ["base", "C1", "C3"]


def _by_candidate(record: dict) -> pd.DataFrame:
    """Perplexity per candidate (rows) and calibrated row (columns) of one record's runs."""
    runs = pd.DataFrame(record["metrics"]["runs"])
    return runs.pivot(index="candidate", columns="row", values="ppl")


def recorded_batch_tokens(record: dict) -> int | None:
    """The Table 3 batches (tokens) the calibration record `record` trained with."""
    return Table3Scale.recorded(record["config"]["profile"]["book"]).batch_tokens


@dataclass
class Calibration:
    """The committed calibration records of one profile, and that profile's Table 3 batches."""

    chosen: dict | None  # calibration.json: the grid, its rule and its choice
    whole_epoch: dict | None  # calibration_epoch1.json: the rule over a whole epoch
    pre_norm: dict | None  # calibration_epoch1_prenorm.json: the pre-norm diagnostic
    batch_tokens: int | None  # the profile's Table 3 batches

    @property
    def choice(self) -> str:
        """The chosen candidate, "warm-up:peak" ("200:0.004")."""
        return self.chosen["metrics"]["chosen"]

    @property
    def same_batches(self) -> bool:
        """Whether both whole-epoch grids trained on this profile's batches."""
        grids = (self.whole_epoch, self.pre_norm)
        return all(grids) and all(
            recorded_batch_tokens(r) == self.batch_tokens for r in grids
        )

    @property
    def other_batches(self) -> bool:
        """A whole-epoch grid is committed, but not both at this profile's batches."""
        return bool(self.whole_epoch) and not self.same_batches

    @property
    def shows_grid(self) -> bool:
        """Whether the chapter can set the two whole-epoch grids together."""
        return bool(self.chosen) and self.same_batches

    def agrees(self, warmup: int, peak: float) -> bool:
        """Whether the profile's warm-up and peak are the calibration's choice; True when the
        calibration ran at other batches (then it cannot say)."""
        if recorded_batch_tokens(self.chosen) != self.batch_tokens:
            return True
        chosen_warmup, chosen_peak = self.choice.split(":")
        return (int(chosen_warmup), float(chosen_peak)) == (warmup, peak)

    def tried(self) -> pd.DataFrame:
        """The chosen grid: one line per candidate, the perplexity of base, C1 and C3."""
        table = _by_candidate(self.chosen).reset_index().rename_axis(columns=None)
        return table[["candidate", *CALIBRATED_ROWS]]

    def grid(self) -> pd.DataFrame:
        """Both whole-epoch grids, one line per norm position and candidate."""
        runs = pd.concat(
            [
                pd.DataFrame(self.whole_epoch["metrics"]["runs"]).assign(
                    norm="post (the paper's)"
                ),
                pd.DataFrame(self.pre_norm["metrics"]["runs"]).assign(
                    norm="pre (diagnostic)"
                ),
            ]
        )
        table = runs.pivot(index=["norm", "candidate"], columns="row", values="ppl")
        table = table.reset_index().rename_axis(columns=None)
        return table[["norm", "candidate", *CALIBRATED_ROWS]]

    def post_norm(self) -> pd.DataFrame:
        """The whole-epoch post-norm grid: perplexity, candidates × rows."""
        return _by_candidate(self.whole_epoch)

    def pre_norm_at_choice(self) -> pd.Series:
        """The pre-norm diagnostic's perplexity per row at the chosen candidate."""
        runs = pd.DataFrame(self.pre_norm["metrics"]["runs"])
        return runs[runs.candidate == self.choice].set_index("row").ppl

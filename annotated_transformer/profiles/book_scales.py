"""How much of the book a profile affords: the whole book's minutes and Table 3's scale.

`BookScales` is the `book` part of a `Profile`: the whole book's minutes and how chapter 06 and the
`table3` command train Table 3's rows (`Table3Scale`). The sizes of the other chapters' own
experiments are each chapter's (`chapters/<chapter>/sizes.py`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..data.tokenizer import SPECIAL_IDS
from ..runtime.checks import (
    COUNT,
    OPTIONAL_COUNT,
    OPTIONAL_POSITIVE,
    POSITIVE,
    Bounds,
    check_all,
    check_types,
)

OPTIONAL_VOCABULARY = Bounds(int, len(SPECIAL_IDS) + 1, optional=True)
TABLE3_BOUNDS: dict[str, Bounds] = {
    "epochs": COUNT,
    "seeds": COUNT,
    "width_divisor": COUNT,
    "depth_divisor": COUNT,
    "heads_divisor": COUNT,
    "warmup_steps": COUNT,
    "peak_lr": OPTIONAL_POSITIVE,
    "overfit_share": COUNT,
    "overfit_epochs": COUNT,
    "accelerator_workers": COUNT,
    "batch_tokens": OPTIONAL_COUNT,
    "vocab_size": OPTIONAL_VOCABULARY,
}
BOOK_BOUNDS: dict[str, Bounds] = {"minutes": POSITIVE}


def _as_tuples(value):
    """JSON turns the tuples of a record into lists; this turns them back, at any depth."""
    if isinstance(value, dict):
        return {k: _as_tuples(v) for k, v in value.items()}
    if isinstance(value, list):
        return tuple(_as_tuples(v) for v in value)
    return value


@dataclass(frozen=True)
class Table3Scale:
    """How chapter 06 trains the rows of Table 3 under a profile (`chapters.model_variations.rows`).

    Attributes:
        rows: the Table 3 rows the chapter trains, in the table's order.
        epochs: epochs of the whole training split per row.
        seeds: seeds (training runs) per row.
        width_divisor, depth_divisor, heads_divisor: the rows are the paper's configurations with
            every width (d_model, d_ff), depth and head count divided by these (1: the paper's);
            d_k and d_v keep each row's h * d_k / d_model.
        warmup_steps, peak_lr: every row's warm-up and peak rate, chosen on base (the peak follows
            d_model^-0.5 from base's width; None: the paper's curve).
        overfit_share, overfit_epochs: dropout's rows also train on the first 1/overfit_share of
            the training pairs for overfit_epochs epochs, where they can overfit.
        batch_tokens, vocab_size: the rows' batches and shared vocabulary (None: the profile's).
        accelerator_workers: processes that train rows side by side on one GPU (on a CPU: one per
            core). One small row leaves a GPU mostly idle: on an H100, four processes trained
            each row about as fast as one process alone (results/gpu/book_calibration).
    """

    rows: tuple[str, ...]
    epochs: int
    seeds: int = 1
    width_divisor: int = 1
    depth_divisor: int = 1
    heads_divisor: int = 1
    warmup_steps: int = 4000
    peak_lr: float | None = None
    overfit_share: int = 10
    overfit_epochs: int = 10
    accelerator_workers: int = 1
    batch_tokens: int | None = None
    vocab_size: int | None = None

    def __post_init__(self):
        check_types(self, "book.table3")
        check_all("book.table3", dataclasses.asdict(self), TABLE3_BOUNDS)

    @classmethod
    def recorded(cls, book: dict) -> "Table3Scale":
        """The scale a recorded profile's book (`Profile.to_dict()["book"]`) holds: its `table3`,
        or, written before the scale was one record, its `table3_<field>` keys. Fields that no
        longer exist are ignored; a field missing raises TypeError."""
        values = book.get("table3")
        if not isinstance(values, dict):
            values = {
                key.removeprefix("table3_"): value
                for key, value in book.items()
                if key.startswith("table3_")
            }
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: _as_tuples(v) for k, v in values.items() if k in known})


@dataclass(frozen=True)
class BookScales:
    """How much of the book a profile affords: the whole book's `minutes` and Table 3's scale
    (chapters 01-04 and 07 keep their own sizes under each profile in their folder's `sizes`)."""

    minutes: float
    table3: Table3Scale

    def __post_init__(self):
        check_types(self, "book")
        check_all("book", dataclasses.asdict(self), BOOK_BOUNDS)

    @classmethod
    def from_dict(cls, values: dict) -> "BookScales":
        """Rebuild from `Profile.to_dict()["book"]`, an older version's too (`Table3Scale.recorded`);
        unknown keys are ignored, a missing field is a TypeError."""
        return cls(
            **{k: v for k, v in values.items() if k == "minutes"},
            table3=Table3Scale.recorded(values),
        )

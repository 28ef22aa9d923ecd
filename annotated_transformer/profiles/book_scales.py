"""How much of the book's own experiments a profile affords: Table 3's scale and each chapter's sizes.

`BookScales` is the `book` part of a `Profile`: the whole book's minutes, how chapter 06 trains
Table 3's rows (`Table3Scale`), and one record of sizes for each chapter that has experiments of
its own (`CHAPTER_SIZES`), which the chapter reads with `Profile.chapter_sizes`.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field

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


def _record(cls, values: dict):
    """Record `cls` from its `dataclasses.asdict` form (as JSON gives it back: lists for tuples),
    the records it holds included; a missing or unknown field raises TypeError."""
    hints = typing.get_type_hints(cls)
    return cls(
        **{
            name: _record(hints[name], value)
            if isinstance(value, dict) and dataclasses.is_dataclass(hints.get(name))
            else _as_tuples(value)
            for name, value in values.items()
        }
    )


class _Sizes:
    """A record of sizes: each field of its annotated type, checked when it is made."""

    def __post_init__(self):
        check_types(self)


@dataclass(frozen=True)
class Table3Scale:
    """How chapter 06 trains the rows of Table 3 under a profile (`experiments.table3.rows`).

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
        return _record(cls, {k: v for k, v in values.items() if k in known})


@dataclass(frozen=True)
class AttentionSizes(_Sizes):
    """Chapter 01's experiments: the statistics of scaled dot products and the timed attention.

    Attributes:
        samples: query-key pairs each variance of q . k averages over (a twentieth of them, at
            least 200, for the softmax's saturation).
        d_ks: the key widths d_k the statistics sweep.
        n_keys: keys per query in the softmax's saturation (four times as many in the timing of
            additive against dot-product scores).
        time_batch: sequences in a timed batch.
        time_len: positions in a timed sequence (and queries in the timing of the two scorings).
        repeats: timed runs behind each timing's median and spread.
    """

    samples: int
    d_ks: tuple[int, ...]
    n_keys: int
    time_batch: int
    time_len: int
    repeats: int


@dataclass(frozen=True)
class ModelSizes(_Sizes):
    """Chapter 02's checks of the positional encoding.

    Attributes:
        positions: positions of the table the checks compare.
        shifts: the offsets k checked to be a rotation, PE(pos + k) = M_k PE(pos).
    """

    positions: int
    shifts: tuple[int, ...]


@dataclass(frozen=True)
class LengthSweep(_Sizes):
    """Timed sequence lengths at one width.

    Attributes:
        ns: the sequence lengths n.
        d: the model width.
        batch: sequences per timed batch.
    """

    ns: tuple[int, ...]
    d: int
    batch: int


@dataclass(frozen=True)
class WidthSweep(_Sizes):
    """Timed model widths at one sequence length.

    Attributes:
        n: the sequence length.
        ds: the model widths d.
        batch: sequences per timed batch.
    """

    n: int
    ds: tuple[int, ...]
    batch: int


@dataclass(frozen=True)
class SubwordSample(_Sizes):
    """The small BPE model chapter 03 measures sentence lengths with.

    Attributes:
        lines: training sentences of each side of each corpus (Multi30k and the WMT14 sample)
            the model learns from.
        vocab: its vocabulary size.
        test_lines: test sentences of each corpus and language measured.
    """

    lines: int
    vocab: int
    test_lines: int


@dataclass(frozen=True)
class WhySelfAttentionSizes(_Sizes):
    """Chapter 03's measurements of Table 1.

    Attributes:
        by_n: the sweep growing the length at a fixed width.
        by_d: the sweep growing the width at a fixed length.
        crossover: self-attention against recurrence at the base model's width, d = 512.
        repeats: runs each timing takes the fastest of.
        path_ns: the lengths whose maximum path lengths are computed.
        path_example_n: the length whose paths to the last output are drawn.
        bpe: the BPE model that measures the corpora's sentences in subwords.
    """

    by_n: LengthSweep
    by_d: WidthSweep
    crossover: LengthSweep
    repeats: int
    path_ns: tuple[int, ...]
    path_example_n: int
    bpe: SubwordSample


@dataclass(frozen=True)
class TrainingSizes(_Sizes):
    """Chapter 04's own small experiments (the profile's translation run is the profile's).

    Attributes:
        bpe_sample_pairs: training pairs the chapter's own BPE learns its merges from.
        bpe_merges: merges it learns.
        copy_steps: training steps of the copy task (sinusoidal and learned positions alike).
        copy_length: the longest sequence the copy task trains on (it starts at 1).
        copy_batch: sequences per copy-task batch.
        eval_per_length: sequences scored at each length in the extrapolation test.
        norm_steps: training steps of each model in the post-norm/pre-norm comparison.
        resume_steps: steps of the stopped-and-resumed demonstration run.
        resume_stop_at: the step where it is stopped.
    """

    bpe_sample_pairs: int
    bpe_merges: int
    copy_steps: int
    copy_length: int
    copy_batch: int
    eval_per_length: int
    norm_steps: int
    resume_steps: int
    resume_stop_at: int


@dataclass(frozen=True)
class ParsingSizes(_Sizes):
    """Chapter 07's parser and its learning curve.

    Attributes:
        recipe: the fields of the parser's recipe this profile sets (`ParserRecipe.from_dict` of
            `experiments.parsing.curve`; the others keep the recipe's defaults).
        shares: the shares of the training files, one run each, that the learning curve trains on.
        workers: processes training the runs side by side (one thread each on a CPU; sharing the device on a GPU).
        dev_trees: development trees each snapshot is scored on (None: all).
        test_sentences: test sentences the averaged parser is scored on (None: all).
    """

    recipe: dict
    shares: tuple[float, ...]
    workers: int
    dev_trees: int | None
    test_sentences: int | None


ChapterSizes = (
    AttentionSizes | ModelSizes | WhySelfAttentionSizes | TrainingSizes | ParsingSizes
)
# The record of each chapter that has sizes of its own, by chapter number.
CHAPTER_SIZES: dict[str, type] = {
    "01": AttentionSizes,
    "02": ModelSizes,
    "03": WhySelfAttentionSizes,
    "04": TrainingSizes,
    "07": ParsingSizes,
}


@dataclass(frozen=True)
class BookScales:
    """How much of the book's other experiments a profile affords.

    Attributes:
        minutes: what the whole book should take under this profile.
        table3: how chapter 06 trains the rows of Table 3.
        chapters: the sizes of the experiments of chapters 01-04 and 07, one record per chapter
            (`CHAPTER_SIZES`), by chapter number; a chapter reads its own with
            `Profile.chapter_sizes`.
    """

    minutes: float
    table3: Table3Scale
    chapters: dict[str, ChapterSizes] = field(default_factory=dict)

    def __post_init__(self):
        check_types(self, "book")
        check_all("book", dataclasses.asdict(self), BOOK_BOUNDS)
        if not isinstance(self.table3, Table3Scale):
            raise ValueError(
                f"book.table3 must be a Table3Scale, got {type(self.table3).__name__}"
            )
        for chapter, sizes in self.chapters.items():
            if chapter not in CHAPTER_SIZES:
                raise ValueError(
                    f"book.chapters: chapter {chapter} has no sizes; chapters with sizes: "
                    f"{', '.join(CHAPTER_SIZES)}"
                )
            if not isinstance(sizes, CHAPTER_SIZES[chapter]):
                raise ValueError(
                    f"book.chapters[{chapter!r}] must be a {CHAPTER_SIZES[chapter].__name__}, "
                    f"got {type(sizes).__name__}"
                )

    @classmethod
    def from_dict(cls, values: dict) -> "BookScales":
        """Rebuild from `Profile.to_dict()["book"]`, an older version's too (`Table3Scale.recorded`);
        unknown keys are ignored.

        Raises:
            TypeError: a field missing, or a chapter's sizes that no longer fit its record.
        """
        chapters = values.get("chapters", {})
        unknown = sorted(set(chapters) - set(CHAPTER_SIZES))
        if unknown:
            raise TypeError(f"no chapter {', '.join(unknown)} has sizes today")
        return cls(
            **{k: v for k, v in values.items() if k == "minutes"},
            table3=Table3Scale.recorded(values),
            chapters={
                chapter: _record(CHAPTER_SIZES[chapter], sizes)
                for chapter, sizes in chapters.items()
            },
        )

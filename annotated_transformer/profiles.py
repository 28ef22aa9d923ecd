"""Profiles: one word that decides every default of a run, for the commands and the book alike.

A profile is one record: what to train (corpus, direction, vocabulary, model), how (batch, schedule,
precision), for how long (steps, epochs or minutes), how to evaluate (beam, length penalty, checkpoint
averaging), and the scales of the book's other experiments (Table 3 rows, parsing). `train --profile P`
and `book --profile P` read the same record, so chapter 04 trains exactly what the command trains and
the number the README quotes is the number the book shows. Any field can be overridden for one run
(`get_profile("cpu", max_steps=100)`, or a flag of `train`); None keeps the profile's value.

Variants are names of their own (`gpu-iwslt14`, `paper-big`) and write to a results folder of their own.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field

from .data.registry import corpus_info
from .data.tokenizer import SPECIAL_IDS
from .model import decoding
from .model.config import TABLE3_ALL_ROWS, TransformerConfig, preset
from .model.decoding import DecodeSettings
from .runtime.checks import (
    COUNT,
    OPTIONAL_COUNT,
    OPTIONAL_POSITIVE,
    POSITIVE,
    PROBABILITY,
    Bounds,
    check_all,
)
from .runtime.compiling import check_compile
from .runtime.precision import PRECISIONS, resolve_precision
from .training import settings as train_settings
from .training.settings import TrainSettings

# The Table 3 rows that cover the six findings of section 6.2 (chapter 06), for budgets short of all
# 20: bigger-is-better reads depth (C1/C3) and width (C4/C5); the feed-forward pair C6/C7 is left to
# the profiles that train every row.
TABLE3_CPU_ROWS = (
    "base",
    "A1",
    "A4",
    "B1",
    "C1",
    "C3",
    "C4",
    "C5",
    "D1",
    "D2",
    "E",
)


def _as_tuples(value):
    """JSON turns the tuples of a record into lists; this turns them back, at any depth."""
    if isinstance(value, dict):
        return {k: _as_tuples(v) for k, v in value.items()}
    if isinstance(value, list):
        return tuple(_as_tuples(v) for v in value)
    return value


VOCABULARY = Bounds(int, len(SPECIAL_IDS) + 1)  # more pieces than the special ids
OPTIONAL_VOCABULARY = Bounds(int, len(SPECIAL_IDS) + 1, optional=True)
# What each number of a profile may be: the trainer's and the decoder's own bounds for the fields
# they read, and these for the rest. `Profile` checks them when it is made (also by `replace` and
# `get_profile`), and every flag that sets one parses with the same bounds (commands/arguments.py).
PROFILE_BOUNDS: dict[str, Bounds] = {
    **{
        name: bounds
        for name, bounds in train_settings.BOUNDS.items()
        if name != "eval_batch_tokens"
    },
    "max_train_pairs": OPTIONAL_COUNT,
    "max_valid_pairs": OPTIONAL_COUNT,
    "max_sentence_words": OPTIONAL_COUNT,
    "vocab_size": VOCABULARY,
    "threads": OPTIONAL_COUNT,
    "average_last": COUNT,
    "beam_size": decoding.BOUNDS["beam_size"],
    "length_penalty_alpha": decoding.BOUNDS["alpha"],
    "max_len_a": decoding.BOUNDS["max_len_a"],
    "max_len_b": decoding.BOUNDS["max_len_b"],
    "eval_batch_tokens": decoding.BOUNDS["batch_tokens"],
    "eval_max_sentences": OPTIONAL_COUNT,
}
# The flag of `train` that sets each field (commands/train.py makes its options from this table,
# and messages about a field name its flag). adam_betas and the splits have none.
FLAGS: dict[str, str] = {
    "corpus": "--corpus",
    "src_lang": "--src-lang",
    "tgt_lang": "--tgt-lang",
    "max_train_pairs": "--max-train-pairs",
    "max_valid_pairs": "--max-valid-pairs",
    "max_sentence_words": "--max-sentence-words",
    "vocab_size": "--vocab-size",
    "preset": "--preset",
    "batch_tokens": "--batch-tokens",
    "accumulation": "--accumulation",
    "peak_lr": "--lr",
    "warmup_steps": "--warmup",
    "adam_eps": "--adam-eps",
    "clip_norm": "--clip-norm",
    "max_steps": "--max-steps",
    "max_epochs": "--max-epochs",
    "time_budget_minutes": "--minutes",
    "budget_clock": "--budget-clock",
    "precision": "--precision",
    "compile": "--compile",
    "threads": "--threads",
    "seed": "--seed",
    "log_every": "--log-every",
    "eval_every": "--eval-every",
    "save_every_steps": "--save-every-steps",
    "save_every_minutes": "--save-every-minutes",
    "keep_snapshots": "--keep-snapshots",
    "average_last": "--average-last",
    "beam_size": "--beam",
    "length_penalty_alpha": "--alpha",
    "max_len_a": "--max-len-a",
    "max_len_b": "--max-len-b",
    "eval_batch_tokens": "--eval-batch-tokens",
    "eval_max_sentences": "--eval-max-sentences",
}
# The model's fields that `train` sets directly (into `model_overrides`), with their flags.
MODEL_FLAGS: dict[str, str] = {
    "n_layers": "--layers",
    "d_model": "--d-model",
    "d_ff": "--d-ff",
    "n_heads": "--heads",
    "dropout": "--dropout",
    "label_smoothing": "--label-smoothing",
}
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


@dataclass(frozen=True)
class Table3Scale:
    """How chapter 06 trains the rows of Table 3 under a profile (`experiments.variations`).

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
class AttentionSizes:
    """Chapter 01's experiments: the statistics of scaled dot products and the timed attention.

    Attributes:
        samples: query-key pairs each variance of q . k averages over (a twentieth of them, at
            least 200, for the softmax's saturation).
        d_ks: the key widths d_k the statistics sweep.
        n_keys: keys per query in the softmax's saturation (four times as many in the timing of
            additive against dot-product scores).
        time_batch: sequences in a timed batch.
        time_len: positions in a timed sequence (and queries in the timing of the two scorings).
        repeats: runs each timing takes the mean or the median of.
    """

    samples: int
    d_ks: tuple[int, ...]
    n_keys: int
    time_batch: int
    time_len: int
    repeats: int


@dataclass(frozen=True)
class ModelSizes:
    """Chapter 02's checks of the positional encoding.

    Attributes:
        positions: positions of the table the checks compare.
        shifts: the offsets k checked to be a rotation, PE(pos + k) = M_k PE(pos).
    """

    positions: int
    shifts: tuple[int, ...]


@dataclass(frozen=True)
class LengthSweep:
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
class WidthSweep:
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
class SubwordSample:
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
class WhySelfAttentionSizes:
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
class TrainingSizes:
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
class ParsingSizes:
    """Chapter 07's parser and its learning curve.

    Attributes:
        recipe: the fields of the parser's recipe this profile sets (`ParserRecipe.from_dict` of
            `experiments.parsing_curve`; the others keep the recipe's defaults).
        shares: the shares of the training files, one run each, that the learning curve trains on.
        workers: processes training the runs side by side on a CPU (one on a GPU).
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


@dataclass(frozen=True)
class Profile:
    """Everything a run needs besides where the data is and where to write.

    Learning rate: the paper's schedule (section 5.3) is lr = d_model^-0.5 * min(step^-0.5, step *
    warmup^-1.5); `peak_lr` rescales that curve so its top (at step == warmup_steps) is the given rate,
    and None keeps the paper's own scale (7.0e-4 for base with 4000 warm-up steps).
    """

    name: str
    description: str
    book: BookScales
    # data
    corpus: str = "multi30k"
    src_lang: str = "en"
    tgt_lang: str = "de"
    train_split: str = "train"
    valid_split: str = "valid"
    test_split: str = "test"
    max_train_pairs: int | None = None  # None: the whole training split
    max_valid_pairs: int | None = None  # None: the whole validation split
    # pairs with a longer side (in words of raw text) are skipped
    max_sentence_words: int | None = 250
    vocab_size: int = 8000
    # model: a named preset with overrides (config field -> value)
    preset: str = "base"
    model_overrides: dict = field(default_factory=dict)
    # batching: `batch_tokens` padded target (and source) slots per micro-batch; an optimizer step takes
    # `accumulation` micro-batches per rank, about batch_tokens * accumulation * world_size tokens.
    batch_tokens: int = 4096
    accumulation: int = 1
    # optimisation (section 5.3)
    peak_lr: float | None = None
    warmup_steps: int = 4000
    adam_betas: tuple[float, float] = (0.9, 0.98)
    adam_eps: float = 1e-9
    clip_norm: float | None = None  # the paper clips nothing
    # length of training: whichever limit comes first (None: no limit of that kind)
    max_steps: int | None = None
    max_epochs: int | None = None
    time_budget_minutes: float | None = None
    # "wall": minutes on the clock. "cpu": CPU time of this process divided by its threads, i.e. the wall
    # time the run would take alone on that many cores: fair on a machine shared with other jobs.
    budget_clock: str = "wall"
    # engineering
    # "auto": bf16 where the hardware has it, fp16 on a GPU without it, else fp32; or "bf16",
    # "fp16", "fp32" (runtime.precision)
    precision: str = "auto"
    # torch.compile the model and loss: True, False, or "auto" (on a CPU, measured on the run's own
    # step and taken where it pays: runtime.compiling)
    compile: bool | str = False
    # CPU threads for torch (None: torch's default, one per core)
    threads: int | None = None
    seed: int = 1
    log_every: int = 50
    eval_every: int = 500  # steps between validation losses (0: only at the end)
    save_every_steps: int | None = None  # snapshot for averaging every so many steps
    # ... or minutes (section 6.1: every 10 minutes)
    save_every_minutes: float | None = 10.0
    keep_snapshots: int = 20
    # evaluation (section 6.1)
    average_last: int = 5
    beam_size: int = 4
    length_penalty_alpha: float = 0.6
    # outputs may be max_len_a * source length + max_len_b subwords long
    max_len_a: float = 1.0
    max_len_b: int = 50
    eval_batch_tokens: int = 4000
    eval_max_sentences: int | None = None  # None: the whole test set

    def __post_init__(self):
        """Every setting is checked here, once, whoever made the profile (a flag, a chapter's
        parameters, `get_profile`, `replace`): a run that cannot be meant never starts."""
        check_all("", dataclasses.asdict(self), PROFILE_BOUNDS)
        betas = tuple(self.adam_betas)
        if len(betas) != 2:
            raise ValueError(f"adam_betas must be two numbers, got {self.adam_betas!r}")
        for beta in betas:
            PROBABILITY.check("adam_betas", beta)
        if self.budget_clock not in ("wall", "cpu"):
            raise ValueError(
                f"budget_clock must be 'wall' or 'cpu', got {self.budget_clock!r}"
            )
        if self.precision not in PRECISIONS:
            raise ValueError(
                f"precision must be one of {', '.join(PRECISIONS)}, got {self.precision!r}"
            )
        check_compile(self.compile)
        if not isinstance(self.book, BookScales):
            raise ValueError(f"book must be a BookScales, got {type(self.book).__name__}")
        info = corpus_info(self.corpus)  # an unknown corpus names the known ones
        info.direction(self.src_lang, self.tgt_lang)  # each language the corpus's own
        for split in (self.train_split, self.valid_split, self.test_split):
            info.canonical_split(split)
        if info.canonical_split(self.train_split) not in info.training_splits:
            raise ValueError(
                f"train_split {self.train_split!r} is not a training split of {info.title} "
                f"({', '.join(info.training_splits)})"
            )
        if (
            self.max_steps is None
            and self.max_epochs is None
            and self.time_budget_minutes is None
        ):
            raise ValueError(
                "the profile sets no limit: give max_steps, max_epochs or time_budget_minutes"
            )
        if self.average_last > self.keep_snapshots:
            raise ValueError(
                f"average_last (--average-last) {self.average_last} is more than keep_snapshots "
                f"(--keep-snapshots) {self.keep_snapshots}: only {self.keep_snapshots} snapshots "
                f"are kept to average; raise --keep-snapshots to at least {self.average_last} or "
                "lower --average-last"
            )
        self.model_config()  # an unknown preset or an invalid override, in the config's words

    @property
    def results_folder(self) -> str:
        """`results/<this>/`: each profile, variants included, keeps its numbers apart."""
        return self.name

    def model_config(self) -> TransformerConfig:
        """The model configuration: the named preset with this profile's overrides."""
        return preset(
            self.preset, **{"warmup_steps": self.warmup_steps, **self.model_overrides}
        )

    def train_settings(self) -> TrainSettings:
        """What the trainer reads of this profile (the rest, corpus, beam and book, it never sees)."""
        values = {name: getattr(self, name) for name in TrainSettings.fields()}
        return TrainSettings(**values)

    def decode_settings(self, device: str | None = None) -> DecodeSettings:
        """How this profile translates: beam, length penalty, output allowance, batches, and the
        precision its `precision` field means on `device` (None: fp32)."""
        precision = (
            "fp32" if device is None else resolve_precision(self.precision, device)
        )
        return DecodeSettings(
            beam_size=self.beam_size,
            alpha=self.length_penalty_alpha,
            max_len_a=self.max_len_a,
            max_len_b=self.max_len_b,
            batch_tokens=self.eval_batch_tokens,
            precision=precision,
        )

    def chapter_sizes(self, chapter: str) -> ChapterSizes:
        """The sizes of chapter `chapter`'s own experiments under this profile: its record of
        `CHAPTER_SIZES` ("01": `AttentionSizes` ... "07": `ParsingSizes`)."""
        if chapter not in self.book.chapters:
            raise KeyError(
                f"profile {self.name!r} has no sizes for chapter {chapter}; "
                f"it has {', '.join(sorted(self.book.chapters))}"
            )
        return self.book.chapters[chapter]

    def replace(self, **overrides) -> "Profile":
        return dataclasses.replace(self, **overrides)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: dict) -> "Profile":
        """Rebuild from `to_dict()` (as stored in checkpoints and results); unknown keys are ignored."""
        known = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in values.items() if k in known}
        if "adam_betas" in values:
            values["adam_betas"] = tuple(values["adam_betas"])
        if isinstance(values.get("book"), dict):
            # A checkpoint of an older version may name book fields that no longer exist.
            try:
                values["book"] = BookScales.from_dict(values["book"])
            except TypeError:
                # A field added since: the scales of today's profile of that name.
                if values.get("name") not in PROFILES:
                    raise
                values["book"] = PROFILES[values["name"]].book
        return cls(**values)


# The cpu profile is the candidate chosen on validation BLEU (2-core CPU, 15 minutes; chapter 05
# checks it): results/tuning_multi30k_cpu.md. Dropout 0: in 15 minutes nothing overfits yet, and
# dropout makes every step dearer (the same file).
_CPU_MODEL = dict(n_layers=3, d_model=256, d_ff=1024, n_heads=4, dropout=0.0, max_len=256)
# The gpu profile's model and schedule were chosen on validation perplexity from the sweep in
# results/gpu/README.md; training stops at the validation minimum's epoch.
_GPU_MODEL = dict(n_layers=4, d_model=256, d_ff=1024, n_heads=4, dropout=0.3, max_len=256)

# The sizes of the chapters' own experiments (each record's docstring says what every size is).
_SMOKE_CHAPTERS = {
    "01": AttentionSizes(
        samples=4_000,
        d_ks=(4, 16, 64, 256, 512),
        n_keys=32,
        time_batch=4,
        time_len=64,
        repeats=3,
    ),
    "02": ModelSizes(positions=256, shifts=(1, 2, 5, 17, 50)),
    "03": WhySelfAttentionSizes(
        by_n=LengthSweep(ns=(32, 64, 128, 256, 512), d=64, batch=2),
        by_d=WidthSweep(n=64, ds=(32, 64, 128, 256, 512), batch=2),
        crossover=LengthSweep(ns=(128, 256, 512, 1024, 2048), d=512, batch=1),
        repeats=2,
        path_ns=(2, 4, 8, 16, 32, 64, 128),
        path_example_n=32,
        bpe=SubwordSample(lines=1000, vocab=1000, test_lines=300),
    ),
    "04": TrainingSizes(
        bpe_sample_pairs=1000,
        bpe_merges=30,
        copy_steps=200,
        copy_length=6,
        copy_batch=32,
        eval_per_length=40,
        norm_steps=20,
        resume_steps=24,
        resume_stop_at=10,
    ),
    "07": ParsingSizes(
        recipe=dict(
            n_layers=1,
            d_model=32,
            d_ff=64,
            n_heads=2,
            dropout=0.1,
            batch_tokens=2048,
            warmup_steps=20,
            peak_lr=3e-3,
            epochs=2,
            snapshot_epochs=1,
            average_last=2,
            tags=True,
        ),
        shares=(0.5, 1.0),
        workers=2,
        dev_trees=16,
        test_sentences=8,
    ),
}
_CPU_CHAPTERS = {
    "01": AttentionSizes(
        samples=20_000,
        d_ks=(2, 4, 8, 16, 32, 64, 128, 256, 512, 1024),
        n_keys=64,
        time_batch=16,
        time_len=256,
        repeats=5,
    ),
    "02": ModelSizes(positions=2048, shifts=(1, 2, 3, 5, 8, 17, 50, 100, 333, 1000)),
    "03": WhySelfAttentionSizes(
        by_n=LengthSweep(ns=(32, 64, 128, 256, 512, 1024, 2048), d=128, batch=2),
        by_d=WidthSweep(n=256, ds=(32, 64, 128, 256, 512, 1024), batch=2),
        crossover=LengthSweep(
            ns=(64, 128, 256, 512, 768, 1024, 1536, 2048, 3072), d=512, batch=1
        ),
        repeats=3,
        path_ns=(2, 4, 8, 16, 32, 64, 128, 256, 512),
        path_example_n=32,
        bpe=SubwordSample(lines=4000, vocab=4000, test_lines=3003),
    ),
    "04": TrainingSizes(
        bpe_sample_pairs=2000,
        bpe_merges=40,
        copy_steps=1600,
        copy_length=10,
        copy_batch=64,
        eval_per_length=100,
        norm_steps=250,
        resume_steps=36,
        resume_stop_at=15,
    ),
    # `tags=True` in every profile: the parser writes each word's part-of-speech tag in its slot,
    # as the authors' code (tensor2tensor's wsj_parsing.py) writes its targets; the chapter trains
    # XX in the slots (Vinyals et al.) beside it as a variant. The recipe was chosen on the 273
    # development trees with scripts/parser_sweep.py, tags in the slots, one thread each, two
    # candidates at a time (results/tuning_parser_cpu/sweep_tags.json): 1,024-token batches (twice
    # the updates of 2,048 per epoch) with the warm-up at a sixth of the 4,884 steps beat 2,048-token
    # batches at d_model 128 and 192, and a shorter warm-up with dropout 0.2 did not learn.
    "07": ParsingSizes(
        recipe=dict(
            n_layers=2,
            d_model=128,
            d_ff=512,
            n_heads=4,
            dropout=0.1,
            label_smoothing=0.1,
            batch_tokens=1024,
            warmup_steps=800,
            epochs=22,
            snapshot_epochs=2,
            average_last=3,
            tags=True,
        ),
        # All the training files only: the tags parser and the XX variant train side by side, one
        # per core; F1 against a quarter and a half of the files comes from the committed extended
        # run (results/parser_extended_cpu), which trains each share until dev F1 stops rising.
        shares=(1.0,),
        workers=2,
        dev_trees=None,
        test_sentences=None,
    ),
}
# On a GPU: longer timed inputs, wider sweeps, and a longer post-norm/pre-norm comparison.
_GPU_CHAPTERS = {
    **_CPU_CHAPTERS,
    "01": dataclasses.replace(_CPU_CHAPTERS["01"], time_batch=64, time_len=1024),
    "03": WhySelfAttentionSizes(
        by_n=LengthSweep(ns=(64, 128, 256, 512, 1024, 2048, 4096, 8192), d=256, batch=8),
        by_d=WidthSweep(n=1024, ds=(64, 128, 256, 512, 1024, 2048), batch=8),
        crossover=LengthSweep(
            ns=(256, 512, 1024, 2048, 4096, 8192, 16384), d=512, batch=8
        ),
        repeats=5,
        path_ns=(2, 4, 8, 16, 32, 64, 128, 256, 512),
        path_example_n=32,
        bpe=SubwordSample(lines=4000, vocab=4000, test_lines=3003),
    ),
    "04": dataclasses.replace(_CPU_CHAPTERS["04"], norm_steps=400),
    # Not yet run on a GPU: the cpu recipe one size up, and the epochs where the cpu curve flattens
    # times four; the curve this profile draws is what should set its scale.
    "07": dataclasses.replace(
        _CPU_CHAPTERS["07"],
        recipe=dict(
            _CPU_CHAPTERS["07"].recipe,
            n_layers=3,
            d_model=256,
            d_ff=1024,
            dropout=0.2,
            batch_tokens=4096,
            epochs=50,
            snapshot_epochs=5,
            average_last=5,
            tags=True,
        ),
        shares=(0.25, 0.5, 1.0),
        workers=1,
    ),
}
_PAPER_CHAPTERS = {
    **_GPU_CHAPTERS,
    # Section 6.3: 4 layers at d_model 1024 (the `parsing` preset), the paper's schedule.
    "07": ParsingSizes(
        recipe=dict(
            n_layers=4,
            d_model=1024,
            d_ff=4096,
            n_heads=16,
            dropout=0.3,
            batch_tokens=25_000,
            warmup_steps=4000,
            epochs=100,
            snapshot_epochs=10,
            average_last=5,
            tags=True,
        ),
        shares=(1.0,),
        workers=1,
        dev_trees=None,
        test_sentences=None,
    ),
}

PROFILES: dict[str, Profile] = {
    "smoke": Profile(
        name="smoke",
        description="CI and tests: a tiny model on 2,000 Multi30k pairs, every chapter in minutes on 2 cores",
        book=BookScales(
            minutes=10,
            table3=Table3Scale(
                rows=("base", "A1", "C1"),
                epochs=1,
                seeds=2,
                width_divisor=8,
                depth_divisor=2,
                heads_divisor=4,
                batch_tokens=1024,
                warmup_steps=20,
                peak_lr=2e-3,
                overfit_epochs=2,
            ),
            chapters=_SMOKE_CHAPTERS,
        ),
        max_train_pairs=2000,
        max_valid_pairs=200,
        vocab_size=1000,
        preset="tiny",
        model_overrides=dict(dropout=0.1),
        batch_tokens=1024,
        peak_lr=2e-3,
        warmup_steps=50,
        max_steps=60,
        log_every=10,
        eval_every=30,
        save_every_steps=20,
        save_every_minutes=None,
        keep_snapshots=3,
        average_last=2,
        beam_size=2,
        eval_max_sentences=32,
        eval_batch_tokens=2000,
    ),
    "cpu": Profile(
        name="cpu",
        description="a laptop or a 2-core machine: Multi30k EN->DE in 15 minutes of training",
        # Table 3 (chapter 06): 11 rows that cover the six findings x 3 seeds, one epoch each, at widths / 8,
        # depths / 2 and heads / 4 (base: 3 layers, d_model 64, 2 heads of d_k 32; A4 and B1: d_k 8), a
        # 2,000-piece vocabulary; dropout's rows also 10 epochs of a twentieth of the pairs. One process per
        # core, 1,024-token batches (half the steps of 512: these 0.5M-parameter models are bound by per-step
        # overhead). Warm-up 200 at peak 4e-3, chosen on base's validation perplexity after half an
        # epoch (results/tuning_table3_cpu/calibration.json) and again after a whole one
        # (results/tuning_table3_cpu/calibration_epoch1.json), where only the candidates that slow
        # every row end C3 below C1.
        # All 13 rows of the findings took longer than chapter 06's 15 minutes (commit a581480); the
        # feed-forward pair C6/C7 is the one the findings can spare.
        book=BookScales(
            minutes=55,
            table3=Table3Scale(
                rows=TABLE3_CPU_ROWS,
                epochs=1,
                # Two seeds: the pooled analysis keeps (rows-1)(seeds-1) = 10 degrees of freedom,
                # and the chapter fits 15 minutes on an AVX2-only CPU (three took 1,334 s there);
                # the committed extended run (results/table3_extended_cpu) has three seeds.
                seeds=2,
                width_divisor=8,
                depth_divisor=2,
                heads_divisor=4,
                batch_tokens=1024,
                vocab_size=2000,
                warmup_steps=200,
                peak_lr=4e-3,
                overfit_share=20,
                overfit_epochs=10,
            ),
            chapters=_CPU_CHAPTERS,
        ),
        vocab_size=8000,
        preset="base",
        model_overrides=_CPU_MODEL,
        # 1,024-token batches: twice the updates of 2,048 in the same 15 minutes, the biggest single
        # gain (results/tuning_multi30k_cpu.md).
        batch_tokens=1024,
        accumulation=1,
        peak_lr=2e-3,
        warmup_steps=400,
        time_budget_minutes=15.0,
        log_every=25,
        eval_every=300,
        save_every_steps=None,
        save_every_minutes=1.0,
        keep_snapshots=10,
        average_last=5,
        beam_size=4,
        # Chosen on validation against the paper's 0.6, more averaging and beam 6:
        # results/tuning_multi30k_cpu/decode_choice.json.
        length_penalty_alpha=1.0,
        eval_batch_tokens=3000,
        # Eager, measured: on a 2-core AMD EPYC with AVX512-BF16 the compiled step was 0.91x to 1.11x
        # the eager one (fp32 and bf16, 1 and 2 threads) after 150-170 s of compiling, 17-19% of the
        # budget, so a compiled run would train 0.76x to 0.92x the steps
        # (results/benchmarks/cpu_compile.json, benchmarks/README.md). "auto" would also spend about
        # three minutes measuring on each machine's first run; `--compile auto` is there to ask.
        compile=False,
    ),
    "gpu": Profile(
        name="gpu",
        description="one GPU or Colab: Multi30k EN->DE, 41 epochs (about 6 minutes on an H100)",
        # Table 3: all 20 rows x 3 seeds at half the paper's widths and depths (base: 3 layers,
        # d_model 256, 8 heads of d_k 32), 3 epochs each, and dropout's rows 30 epochs of a tenth,
        # four processes sharing the GPU. Sized on one H100 (results/gpu/book_calibration): a row-epoch
        # takes 2-5 s once a process is warm, four warm processes train about as fast each as one
        # alone: 60 runs x 3 epochs x ~4 s / 4 processes ~ 3 minutes, the small corpus ~1. Unmeasured:
        # the start-up, 46-53 s for a process's first row and again for new shapes (a new width,
        # new batch shapes): once per process it is ~1 minute more, once per row shape it could be
        # several; calibrate_book.sh's sdpa_backends and table3_all_rows measure it before the
        # chapter runs. Warm-up 200 at peak 2e-3, chosen on base's validation perplexity after two
        # epochs (results/tuning_table3_gpu/calibration.json).
        book=BookScales(
            minutes=30,
            table3=Table3Scale(
                rows=TABLE3_ALL_ROWS,
                epochs=3,
                seeds=3,
                width_divisor=2,
                depth_divisor=2,
                warmup_steps=200,
                peak_lr=2e-3,
                overfit_epochs=30,
                accelerator_workers=4,
            ),
            chapters=_GPU_CHAPTERS,
        ),
        vocab_size=8000,
        preset="base",
        model_overrides=_GPU_MODEL,
        # 134 steps per epoch at 4k tokens.
        batch_tokens=4096,
        accumulation=1,
        peak_lr=2e-3,
        warmup_steps=1000,
        time_budget_minutes=10.0,
        max_epochs=41,
        log_every=50,
        eval_every=250,
        save_every_steps=300,
        save_every_minutes=None,
        keep_snapshots=10,
        average_last=5,
        precision="auto",
        compile=True,
        eval_batch_tokens=20_000,
    ),
    "paper": Profile(
        name="paper",
        description="8 GPUs with torchrun: WMT14 EN->DE, Transformer base with the paper's schedule (100k steps)",
        book=BookScales(
            minutes=4 * 24 * 60,
            table3=Table3Scale(
                rows=TABLE3_ALL_ROWS,
                # 100,000 steps of 25,000 tokens: about 20 epochs of WMT14
                epochs=20,
            ),
            chapters=_PAPER_CHAPTERS,
        ),
        corpus="wmt14",
        train_split="train",
        valid_split="newstest2013",
        test_split="newstest2014",
        vocab_size=37000,
        preset="base",
        model_overrides=dict(max_len=1024),
        # 8 ranks x 1 micro-batch of 3,584 padded slots ~ 25,000 real tokens per side per step (section 5.1);
        # on one GPU, --accumulation 8 takes the same steps.
        batch_tokens=3584,
        accumulation=1,
        peak_lr=None,
        warmup_steps=4000,
        max_steps=100_000,
        log_every=100,
        eval_every=2000,
        save_every_steps=None,
        save_every_minutes=10.0,
        keep_snapshots=25,
        average_last=5,
        precision="auto",
        compile=True,
        eval_batch_tokens=20_000,
    ),
}
PROFILES["gpu-iwslt14"] = PROFILES["gpu"].replace(
    name="gpu-iwslt14",
    description="one GPU: IWSLT14 DE->EN (fairseq's small-data recipe: 10k joint BPE, dropout 0.3); downloads the training text",
    corpus="iwslt14",
    src_lang="de",
    tgt_lang="en",
    valid_split="valid",
    test_split="test",
    vocab_size=10_000,
    model_overrides=dict(dropout=0.3, d_ff=1024, n_heads=4, max_len=512),
    batch_tokens=8192,
    peak_lr=5e-4,
    warmup_steps=4000,
    time_budget_minutes=None,
    max_steps=60_000,
    max_epochs=None,
    save_every_steps=2000,
    keep_snapshots=10,
    average_last=5,
)
PROFILES["paper-big"] = PROFILES["paper"].replace(
    name="paper-big",
    description="8 GPUs with torchrun: WMT14 EN->DE, Transformer big, 300k steps, average of the last 20 snapshots",
    preset="big",
    model_overrides=dict(max_len=1024),
    max_steps=300_000,
    keep_snapshots=20,
    average_last=20,
)

PROFILE_NAMES: tuple[str, ...] = tuple(PROFILES)


def get_profile(name: str, **overrides) -> Profile:
    """The profile called `name` with every override that is not None applied.

    Chapters pass their parameters cell straight through (`get_profile(profile, max_steps=max_steps)`),
    so a knob left at None keeps the profile's value.

    Raises:
        ValueError: an unknown profile, a field that does not exist, a value its field does not
            allow (`PROFILE_BOUNDS`: `max_steps=0`, `peak_lr=inf`, `corpus="bogus"` ...), or a model
            override that makes an invalid configuration (the config's own message).
    """
    if name not in PROFILES:
        raise ValueError(
            f"unknown profile {name!r}; choose one of {', '.join(PROFILE_NAMES)}"
        )
    known = {f.name for f in dataclasses.fields(Profile)} - {"name", "description"}
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise ValueError(
            f"unknown profile fields {unknown}; known: {', '.join(sorted(known))}"
        )
    return PROFILES[name].replace(**{k: v for k, v in overrides.items() if v is not None})

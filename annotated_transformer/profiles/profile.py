"""`Profile`: one record of everything a run needs besides where the data is and where to write.

A profile is composed of the parts that already exist on their own: the data (`DataSettings`), the
model (`ModelChoice`), the trainer's `TrainSettings`, the evaluation (`EvaluationSettings`) and the
book's scales (`BookScales`). Each field is declared once, in its part. Outside, a profile reads as
one flat record, the way its flags and its JSON form (in checkpoints and results) have always
been: `profile.max_steps` is `profile.train.max_steps`, `profile.replace(max_steps=100)` changes
the train part, and `to_dict()` writes the flat record every committed result holds.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Mapping

from ..model.config import TransformerConfig
from ..model.decoding import DecodeSettings
from ..runtime.checks import OPTIONAL_COUNT, Bounds, check_types
from ..runtime.precision import resolve_precision
from ..training import settings as train_settings
from ..training.settings import TrainSettings
from .book_scales import BookScales
from .parts import (
    DATA_BOUNDS,
    EVALUATION_BOUNDS,
    DataSettings,
    EvaluationSettings,
    ModelChoice,
)

# The part each flat field lives in, in the order of the flat record.
PARTS: dict[str, type] = {
    "data": DataSettings,
    "model": ModelChoice,
    "train": TrainSettings,
    "evaluation": EvaluationSettings,
}
_OWN = ("name", "description", "book", "threads")
FIELD_PART: dict[str, str] = {
    f.name: part
    for part, cls in PARTS.items()
    for f in dataclasses.fields(cls)
    if f.name != "name"  # the trainer's label is the profile's name
}
# The flat record's order, as every record written before the parts existed holds it.
FLAT_ORDER: tuple[str, ...] = (
    *("name", "description", "book"),
    *("corpus", "src_lang", "tgt_lang", "train_split", "valid_split", "test_split"),
    *("max_train_pairs", "max_valid_pairs", "max_sentence_words", "vocab_size"),
    *("preset", "model_overrides"),
    *("batch_tokens", "accumulation", "peak_lr", "warmup_steps", "adam_betas"),
    *("adam_eps", "clip_norm", "dropout_from_epoch", "max_steps", "max_epochs"),
    *("time_budget_minutes", "budget_clock"),
    *("precision", "compile", "compile_mode", "length_buckets", "cuda_graphs"),
    *("threads", "seed", "log_every", "eval_every"),
    *("save_every_steps", "save_every_minutes", "keep_snapshots", "average_last"),
    *("beam_size", "length_penalty_alpha", "max_len_a", "max_len_b"),
    *("eval_batch_tokens", "eval_max_sentences"),
)
# What each number of a profile may be: each part's own bounds (the flags parse with these).
PROFILE_BOUNDS: dict[str, Bounds] = {
    **train_settings.BOUNDS,
    **DATA_BOUNDS,
    **EVALUATION_BOUNDS,
    "threads": OPTIONAL_COUNT,
}


def flat_fields() -> dict[str, dataclasses.Field]:
    """Every field of the flat record (the parts' and the profile's own), by name."""
    own = {f.name: f for f in dataclasses.fields(Profile) if f.name in _OWN}
    parts = {
        f.name: f
        for cls in PARTS.values()
        for f in dataclasses.fields(cls)
        if f.name in FIELD_PART
    }
    return {name: {**own, **parts}[name] for name in FLAT_ORDER}


@dataclass(frozen=True)
class Profile:
    """Everything a run needs besides where the data is and where to write."""

    name: str
    description: str
    book: BookScales
    train: TrainSettings
    data: DataSettings = field(default_factory=DataSettings)
    model: ModelChoice = field(default_factory=ModelChoice)
    evaluation: EvaluationSettings = field(default_factory=EvaluationSettings)
    # CPU threads for torch (None: torch's default, one per core)
    threads: int | None = None

    def __post_init__(self):
        """The rules that span parts; each part checked its own fields when it was made."""
        check_types(self, "")  # its own fields, and each part of its part's type
        OPTIONAL_COUNT.check("threads", self.threads)
        if self.train.name != self.name:  # the progress bar says which profile trains
            object.__setattr__(self, "train", self.train.replace(name=self.name))
        train, evaluation = self.train, self.evaluation
        if evaluation.average_last > train.keep_snapshots:
            raise ValueError(
                f"average_last (--average-last) {evaluation.average_last} is more than "
                f"keep_snapshots (--keep-snapshots) {train.keep_snapshots}: only "
                f"{train.keep_snapshots} snapshots are kept to average; raise "
                f"--keep-snapshots to at least {evaluation.average_last} or lower --average-last"
            )
        self.model_config()  # an unknown preset or an invalid override, in the config's words

    def __getattr__(self, name: str):
        """A flat field's value from its part (called only for names the profile lacks)."""
        part = FIELD_PART.get(name)
        if part is None:
            raise AttributeError(f"Profile has no field {name!r}")
        return getattr(object.__getattribute__(self, part), name)

    @classmethod
    def flat(cls, **values) -> "Profile":
        """A profile from flat fields, each routed to its part (missing ones take its default);
        an unknown field raises TypeError naming it."""
        unknown = sorted(set(values) - set(FLAT_ORDER))
        if unknown:
            raise TypeError(f"unknown profile fields {unknown}")
        parts = {part: {} for part in PARTS}
        own = {}
        for name, value in values.items():
            if name in FIELD_PART:
                parts[FIELD_PART[name]][name] = value
            else:
                own[name] = value
        if isinstance(parts["train"].get("adam_betas"), list):  # JSON's form of the tuple
            parts["train"]["adam_betas"] = tuple(parts["train"]["adam_betas"])
        parts["train"].setdefault("name", own.get("name", "run"))
        return cls(**own, **{part: PARTS[part](**v) for part, v in parts.items()})

    @property
    def results_folder(self) -> str:
        """`results/<this>/`: each profile, variants included, keeps its numbers apart."""
        return self.name

    def model_config(self) -> TransformerConfig:
        """The model configuration: the named preset with this profile's overrides."""
        return self.model.config(self.train.warmup_steps)

    def train_settings(self) -> TrainSettings:
        """What the trainer reads of this profile (the rest, corpus, beam and book, it never sees)."""
        return self.train

    def decode_settings(self, device: str | None = None) -> DecodeSettings:
        """How this profile translates: beam, length penalty, output allowance, batches, and the
        precision its `precision` field means on `device` (None: fp32)."""
        e = self.evaluation
        precision = (
            "fp32" if device is None else resolve_precision(self.train.precision, device)
        )
        return DecodeSettings(
            beam_size=e.beam_size,
            alpha=e.length_penalty_alpha,
            max_len_a=e.max_len_a,
            max_len_b=e.max_len_b,
            batch_tokens=self.train.eval_batch_tokens,
            precision=precision,
        )

    def replace(self, **overrides) -> "Profile":
        """This profile with flat fields (or whole parts) changed, each part checked again."""
        flat = {k: v for k, v in overrides.items() if k in FIELD_PART}
        changes = {k: v for k, v in overrides.items() if k not in FIELD_PART}
        for part in PARTS:
            mine = {k: v for k, v in flat.items() if FIELD_PART[k] == part}
            if mine:
                base = changes.get(part, getattr(self, part))
                changes[part] = dataclasses.replace(base, **mine)
        if "name" in changes and "train" not in changes:
            changes["train"] = self.train.replace(name=changes["name"])
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        """The flat record (as checkpoints and results store a profile)."""
        values = {
            "name": self.name,
            "description": self.description,
            "book": dataclasses.asdict(self.book),
            "threads": self.threads,
        }
        for part in PARTS:
            values.update(dataclasses.asdict(getattr(self, part)))
        values["name"] = self.name
        return {name: values[name] for name in FLAT_ORDER}

    @classmethod
    def from_dict(
        cls, values: dict, books: Mapping[str, BookScales] | None = None
    ) -> "Profile":
        """Rebuild from `to_dict()` (as stored in checkpoints and results); unknown keys are
        ignored, and a book written by an older version takes the scales `books` holds for its
        name (`catalogue.profile_from_record` passes today's)."""
        values = {k: v for k, v in values.items() if k in FLAT_ORDER}
        if isinstance(values.get("book"), dict):
            # A checkpoint of an older version may name book fields that no longer exist.
            try:
                values["book"] = BookScales.from_dict(values["book"])
            except TypeError:
                # A field added since: the scales of today's profile of that name.
                if values.get("name") not in (books or {}):
                    raise
                values["book"] = books[values["name"]]
        return cls.flat(**values)

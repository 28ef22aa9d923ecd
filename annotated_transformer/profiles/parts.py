"""The parts of a profile that are not the trainer's: which data, which model, how to evaluate.

The trainer's part is `training.settings.TrainSettings` itself, and the book's is `BookScales`;
these three complete a `Profile`. Each part checks its own fields when it is made, with the bounds
its flags parse with (`commands/arguments.py`), so a value that cannot be meant is refused by name
whoever wrote it: a flag, a chapter's parameters cell, `get_profile` or a test.
"""

from __future__ import annotations

import contextlib
import dataclasses
import typing
from dataclasses import dataclass, field

from ..data.corpora import corpus_info
from ..data.tokenizer import SPECIAL_IDS
from ..model import decoding
from ..model.config import TransformerConfig, preset
from ..runtime.checks import COUNT, OPTIONAL_COUNT, Bounds, check_all, check_types

VOCABULARY = Bounds(int, len(SPECIAL_IDS) + 1)  # more pieces than the special ids

DATA_BOUNDS: dict[str, Bounds] = {
    "max_train_pairs": OPTIONAL_COUNT,
    "max_valid_pairs": OPTIONAL_COUNT,
    "max_sentence_words": OPTIONAL_COUNT,
    "vocab_size": VOCABULARY,
}
EVALUATION_BOUNDS: dict[str, Bounds] = {
    "average_last": COUNT,
    "beam_size": decoding.BOUNDS["beam_size"],
    "length_penalty_alpha": decoding.BOUNDS["alpha"],
    "max_len_a": decoding.BOUNDS["max_len_a"],
    "max_len_b": decoding.BOUNDS["max_len_b"],
    "eval_max_sentences": OPTIONAL_COUNT,
}


@contextlib.contextmanager
def _naming(**fields):
    """`corpus_info`'s ValueError, prefixed with the fields it is about (`corpus='x': ...`)."""
    try:
        yield
    except ValueError as error:
        given = ", ".join(f"{k}={v!r}" for k, v in fields.items())
        raise ValueError(f"{given}: {error}") from None


@dataclass(frozen=True)
class DataSettings:
    """The corpus, its direction and splits, how much of it, and the shared vocabulary's size."""

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

    def __post_init__(self):
        check_types(self, "")
        check_all("", dataclasses.asdict(self), DATA_BOUNDS)
        with _naming(corpus=self.corpus):
            info = corpus_info(self.corpus)  # an unknown corpus names the known ones
        with _naming(src_lang=self.src_lang, tgt_lang=self.tgt_lang):
            info.direction(self.src_lang, self.tgt_lang)  # each language the corpus's own
        for name in ("train_split", "valid_split", "test_split"):
            with _naming(**{name: getattr(self, name)}):
                info.canonical_split(getattr(self, name))
        if info.canonical_split(self.train_split) not in info.training_splits:
            raise ValueError(
                f"train_split {self.train_split!r} is not a training split of {info.title} "
                f"({', '.join(info.training_splits)})"
            )


@dataclass(frozen=True)
class ModelChoice:
    """A named preset (`model.config.preset`) with overrides of its fields."""

    preset: str = "base"
    model_overrides: dict[str, typing.Any] = field(default_factory=dict)

    def __post_init__(self):
        check_types(self, "")

    def config(self, warmup_steps: int) -> TransformerConfig:
        """The configuration; an unknown preset or an invalid override raises in its own words."""
        return preset(
            self.preset, **{"warmup_steps": warmup_steps, **self.model_overrides}
        )


@dataclass(frozen=True)
class EvaluationSettings:
    """How a finished run is scored (section 6.1): the snapshots averaged, the beam, the length
    penalty, the output allowance (max_len_a * source length + max_len_b subwords) and how many
    test sentences (None: all)."""

    average_last: int = 5
    beam_size: int = 4
    length_penalty_alpha: float = 0.6
    max_len_a: float = 1.0
    max_len_b: int = 50
    eval_max_sentences: int | None = None

    def __post_init__(self):
        check_types(self, "")
        check_all("", dataclasses.asdict(self), EVALUATION_BOUNDS)

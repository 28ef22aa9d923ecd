"""Profiles: one word that decides every default of a run, for the commands and the book alike.

A profile is one record: what to train (corpus, direction, vocabulary, model), how (batch, schedule,
precision), for how long (steps, epochs or minutes), how to evaluate (beam, length penalty,
checkpoint averaging), the book's minutes and Table 3's scale (each chapter keeps the sizes of its
own experiments in `chapters/<chapter>/sizes.py`). `train --profile P` and
`book --profile P` read the same record, so chapter 04 trains exactly what the command trains and
the number the README quotes is the number the book shows. Any field can be overridden for one run
(`get_profile("cpu", max_steps=100)`, or a flag of `train`); None keeps the profile's value.

- `profile`: the `Profile` record, composed of its parts, read and written flat;
- `parts`: the data, model and evaluation parts (the trainer's is `TrainSettings`);
- `book_scales`: the book's part: its minutes and Table 3's scale;
- `catalogue`: the profiles themselves and `get_profile`.

Variants are names of their own (`gpu-iwslt14`, `paper-big`) and write to a results folder of their own.
"""

from .book_scales import (
    BOOK_BOUNDS,
    TABLE3_BOUNDS,
    BookScales,
    Table3Scale,
)
from .catalogue import (
    PROFILE_NAMES,
    PROFILES,
    comparable_record,
    get_profile,
    profile_from_record,
)
from .parts import DataSettings, EvaluationSettings, ModelChoice
from .profile import (
    FIELD_PART,
    FLAT_ORDER,
    PROFILE_BOUNDS,
    Profile,
    flat_fields,
)

__all__ = [
    "BOOK_BOUNDS",
    "FIELD_PART",
    "FLAT_ORDER",
    "PROFILES",
    "PROFILE_BOUNDS",
    "PROFILE_NAMES",
    "TABLE3_BOUNDS",
    "BookScales",
    "DataSettings",
    "EvaluationSettings",
    "ModelChoice",
    "Profile",
    "Table3Scale",
    "comparable_record",
    "flat_fields",
    "get_profile",
    "profile_from_record",
]

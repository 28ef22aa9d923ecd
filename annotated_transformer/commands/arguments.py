"""Argument types that refuse nonsense at parse time, with argparse's one-line usage error.

`--minutes -1` would otherwise train nothing and write a results file with BLEU 0; `--beam 0`
would quietly decode greedily; `--minutes inf` would die mid-run. A number that cannot be meant
is an error naming the flag. The bounds are the settings' own (`runtime.checks.Bounds`, used by
`Profile`, `TrainSettings` and `DecodeSettings`), so a flag accepts exactly what its field does.
"""

from __future__ import annotations

from typing import Callable

from ..profiles import PROFILE_BOUNDS
from ..runtime.checks import (
    COUNT,
    NON_NEGATIVE,
    NON_NEGATIVE_INT,
    POSITIVE,
    PROBABILITY,
)


def setting(field: str) -> Callable[[str], int | float]:
    """The argparse type of the profile field `field`: the very bounds `Profile` checks."""
    return PROFILE_BOUNDS[field].argument()


positive_int = COUNT.argument()
non_negative_int = NON_NEGATIVE_INT.argument()
positive_float = POSITIVE.argument()
non_negative_float = NON_NEGATIVE.argument()
probability = (
    PROBABILITY.argument()
)  # a rate such as dropout or label smoothing: 0 <= p < 1

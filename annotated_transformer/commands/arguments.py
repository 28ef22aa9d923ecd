"""Argument types that refuse nonsense at parse time, with argparse's one-line usage error.

`--minutes -1` would otherwise train nothing and write a results file with BLEU 0; `--beam 0`
would quietly decode greedily. A number that cannot be meant is an error naming the flag.
"""

from __future__ import annotations

import argparse


def positive_int(text: str) -> int:
    value = _number(text, int)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, got {text}")
    return value


def non_negative_int(text: str) -> int:
    value = _number(text, int)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 0, got {text}")
    return value


def positive_float(text: str) -> float:
    value = _number(text, float)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a number > 0, got {text}")
    return value


def non_negative_float(text: str) -> float:
    value = _number(text, float)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be a number >= 0, got {text}")
    return value


def probability(text: str) -> float:
    """A rate such as dropout or label smoothing: 0 <= p < 1."""
    value = _number(text, float)
    if not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError(f"must lie in [0, 1), got {text}")
    return value


def _number(text: str, kind: type):
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not a {'whole number' if kind is int else 'number'}: {text!r}"
        ) from None
    if kind is float and value != value:  # NaN compares unequal to itself
        raise argparse.ArgumentTypeError(f"not a number: {text!r}")
    return value

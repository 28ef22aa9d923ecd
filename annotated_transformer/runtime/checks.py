"""The numbers a setting accepts: whole where it counts, finite, and small enough for any tensor.

A setting reaches the code from a flag, a chapter's parameters cell or a Python call; every one
passes through a `Bounds`, so `--minutes inf`, `max_steps=0` or `max_len_b=2**63 - 1` fail at the
door with the setting's name, instead of later as a NaN, an int64 overflow or a run that trains
nothing and reports BLEU 0. The command line parses with the same `Bounds` (`Bounds.parse`), so a
flag and its Python field can never disagree about what is allowed.
"""

from __future__ import annotations

import argparse
import math
import numbers
from dataclasses import dataclass

# Counts above this are mistakes, and int32 holds them in every index tensor and counter.
LARGEST_INT = 2**31 - 1
# Rates, minutes and penalties above this are mistakes; keeping them finite keeps `60 * minutes`
# and `a * length + b` finite too.
LARGEST_FLOAT = 1e9


@dataclass(frozen=True)
class Bounds:
    """What one numeric setting may be: `kind` (int or float) between `low` and `high`.

    low_open / high_open exclude the end itself (a rate > 0, a probability < 1); `optional`
    also allows None (a limit that is not set). `high` defaults to LARGEST_INT or LARGEST_FLOAT.
    """

    kind: type
    low: float
    low_open: bool = False
    high: float | None = None
    high_open: bool = False
    optional: bool = False

    @property
    def top(self) -> float:
        if self.high is not None:
            return self.high
        return LARGEST_INT if self.kind is int else LARGEST_FLOAT

    def describe(self, none: bool = True) -> str:
        """'a whole number from 1 to 2147483647', 'a number > 0 and <= 1e+09', ...; `none`
        mentions that None is allowed too (not on a command line, where it cannot be typed)."""
        low, top = (
            (int(self.low), int(self.top)) if self.kind is int else (self.low, self.top)
        )
        if self.kind is int and not self.low_open and not self.high_open:
            text = f"a whole number from {low} to {top}"
        else:
            what = "a whole number" if self.kind is int else "a number"
            text = (
                f"{what} {'>' if self.low_open else '>='} {low:g} "
                f"and {'<' if self.high_open else '<='} {top:g}"
            )
        return text + (" (or None)" if self.optional and none else "")

    def check(self, name: str, value):
        """`value` (a float setting as float), or ValueError naming `name` and what it may be."""
        if value is None and self.optional:
            return None
        kind = numbers.Integral if self.kind is int else numbers.Real
        if isinstance(value, kind) and not isinstance(value, bool):
            number = self.kind(value)
            if math.isfinite(number) and self._inside(number):
                return number
        raise ValueError(f"{name} must be {self.describe()}, got {value!r}")

    def _inside(self, value: float) -> bool:
        above = value > self.low if self.low_open else value >= self.low
        below = value < self.top if self.high_open else value <= self.top
        return above and below

    def parse(self, text: str):
        """A command-line word as this setting's value; ValueError with the reason otherwise."""
        try:
            value = self.kind(text)
        except ValueError:
            kind = "whole number" if self.kind is int else "number"
            raise ValueError(f"not a {kind}: {text!r}") from None
        if not (math.isfinite(value) and self._inside(value)):
            raise ValueError(f"must be {self.describe(none=False)}, got {text}")
        return value

    def argument(self):
        """An argparse `type` parsing with `parse`: a bad word is argparse's one-line error."""

        def number(text: str):
            try:
                return self.parse(text)
            except ValueError as error:
                raise argparse.ArgumentTypeError(str(error)) from None

        return number


COUNT = Bounds(int, 1)  # steps, tokens, sizes: at least one
OPTIONAL_COUNT = Bounds(int, 1, optional=True)  # a limit that may be left unset
NON_NEGATIVE_INT = Bounds(int, 0)
POSITIVE = Bounds(float, 0, low_open=True)
OPTIONAL_POSITIVE = Bounds(float, 0, low_open=True, optional=True)
NON_NEGATIVE = Bounds(float, 0)
PROBABILITY = Bounds(float, 0, high=1, high_open=True)  # dropout, smoothing, Adam's betas


def check_all(owner: str, values: dict, bounds: dict[str, Bounds]) -> None:
    """Check every field of `values` that `bounds` names; the error says `owner.field`."""
    for name, rule in bounds.items():
        if name in values:
            rule.check(f"{owner}.{name}" if owner else name, values[name])

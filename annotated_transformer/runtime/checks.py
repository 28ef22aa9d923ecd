"""The numbers a setting accepts: whole where it counts, finite, and small enough for any tensor.

Every settings record (a model's config, a profile and its parts, the decoding and training
settings, a cached measurement) first checks each field against its own annotation
(`check_types`): a string where a number belongs, True for a count or a list for a dict is refused
at construction, in one line naming the field, the value and the type it expects, instead of
failing later inside torch. Then every number passes through a `Bounds`, so `--minutes inf`, `max_steps=0` or `max_len_b=2**63 - 1` fail at the
door with the setting's name, instead of later as a NaN, an int64 overflow or a run that trains
nothing and reports BLEU 0. The command line parses with the same `Bounds` (`Bounds.parse`), so a
flag and its Python field can never disagree about what is allowed.
"""

from __future__ import annotations

import argparse
import collections.abc
import dataclasses
import functools
import math
import numbers
import types
import typing
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


def check_types(record, owner: str | None = None, choices: dict | None = None) -> None:
    """Check every field of the dataclass instance `record` against its annotation: an int is a
    whole number and never a bool, a float any real number (an int too), a bool only True or
    False, a str a string, `X | None` X or None, `tuple[X, ...]` a tuple of X, `dict[K, V]` a dict
    of them, a dataclass an instance of it; annotations of other kinds are not checked.

    `choices` names the values a field of a few may take (`{"precision": PRECISIONS}`), which
    are then checked instead of its annotation. A ValueError is one line, '<owner>.<field> must
    be <type>, got <value> (<its type>)'; `owner` defaults to the class name ("": the field's).
    """
    cls = type(record)
    owner = cls.__name__ if owner is None else owner
    hints = _hints(cls)
    for f in dataclasses.fields(record):
        annotation = hints.get(f.name)
        value = getattr(record, f.name)
        name = f"{owner}.{f.name}" if owner else f.name
        if choices and f.name in choices:
            allowed = choices[f.name]
            if not any(value == a and type(value) is type(a) for a in allowed):
                raise ValueError(
                    f"{name} must be one of {', '.join(map(str, allowed))}, "
                    f"got {_shown(value)}"
                )
        elif annotation is not None and not _matches(value, annotation):
            raise ValueError(
                f"{name} must be {_describe(annotation)}, got {_shown(value)} "
                f"({type(value).__name__})"
            )


@functools.cache
def _hints(cls: type) -> dict:
    return typing.get_type_hints(cls)


def _matches(value, annotation) -> bool:
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if annotation is typing.Any:
        return True
    if origin in (typing.Union, types.UnionType):
        return any(_matches(value, arg) for arg in args)
    if annotation is type(None) or annotation is None:
        return value is None
    if annotation is bool:
        return isinstance(value, bool)
    if annotation is int:
        return isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if annotation is float:
        return isinstance(value, numbers.Real) and not isinstance(value, bool)
    if origin is typing.Literal:
        return any(value == arg and type(value) is type(arg) for arg in args)
    if origin is tuple:
        if not isinstance(value, tuple):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(_matches(item, args[0]) for item in value)
        return not args or (len(value) == len(args) and all(map(_matches, value, args)))
    if origin in (list, dict, set, frozenset):
        if not isinstance(value, origin):
            return False
        if origin is dict and args:
            return all(
                _matches(k, args[0]) and _matches(v, args[1]) for k, v in value.items()
            )
        return not args or all(_matches(item, args[0]) for item in value)
    if origin is collections.abc.Callable or annotation is collections.abc.Callable:
        return callable(value)
    if isinstance(annotation, type):
        return isinstance(value, annotation)
    return True  # an annotation this check does not read


def _describe(annotation) -> str:
    """What an annotation allows, in words: 'a whole number (int)', 'a number (int or float)' ..."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    words = {
        int: "a whole number (int)",
        float: "a number (int or float)",
        bool: "true or false",
        str: "a string",
        type(None): "None",
    }
    if annotation in words:
        return words[annotation]
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_describe(arg) for arg in args)
    if origin is typing.Literal:
        return " or ".join(repr(arg) for arg in args)
    plural = {int: "whole numbers", float: "numbers", bool: "bools", str: "strings"}
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis and args[0] in plural:
        return f"a tuple of {plural[args[0]]}"
    if origin is tuple and args and len(set(args)) == 1 and args[0] in plural:
        count = {2: "two", 3: "three"}.get(len(args), str(len(args)))
        return f"{count} {plural[args[0]]} (a tuple)"
    if origin is not None:
        return f"a {str(annotation).replace('typing.', '')}"
    return f"a {getattr(annotation, '__name__', annotation)}"


def _shown(value, limit: int = 80) -> str:
    """`repr(value)` on one line, cut to `limit` characters."""
    text = repr(value).replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 3] + "..."

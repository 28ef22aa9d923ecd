"""A chapter's sizes: how much of its own experiments each profile affords, one typed record per
chapter (its `sizes` module), and the table a chapter opens with."""

from __future__ import annotations

import dataclasses
from functools import partial
from typing import Any, Callable, Mapping, TypeVar

import pandas as pd

from ..runtime.checks import check_types

MAIN_PROFILES = ("smoke", "cpu", "gpu", "paper")
S = TypeVar("S")


class Sizes:
    """A record of sizes: each field of its annotated type, checked when it is made."""

    def __post_init__(self):
        check_types(self)


def of_profile(by_profile: Mapping[str, S], profile_name: str) -> S:
    """The sizes of the profile named `profile_name`; a variant (`gpu-iwslt14`, `paper-big`) takes
    those of the profile it varies. Any other name is a KeyError in one line naming the profiles."""
    for name in (profile_name, profile_name.split("-", 1)[0]):
        if name in by_profile:
            return by_profile[name]
    raise KeyError(
        f"no sizes for a profile named {profile_name!r}; there are sizes for "
        f"{', '.join(by_profile)} and their variants (gpu-...)"
    )


def accessors(
    by_profile: Mapping[str, S],
) -> tuple[Callable[[str], S], Callable[[str], pd.DataFrame]]:
    """A chapter's `of(profile_name)` (its sizes under that profile, `of_profile`) and
    `table(profile_name)` (every profile side by side, `profiles_table`), for its `sizes` module."""
    return partial(of_profile, by_profile), partial(profiles_table, by_profile)


def profiles_table(by_profile: Mapping[str, Any], profile_name: str) -> pd.DataFrame:
    """The sizes as one row per field of the record and one column per profile: the main
    profiles and the executing one, whose column is marked "(this run)"."""
    names = list(dict.fromkeys([*MAIN_PROFILES, profile_name]))
    sizes = {name: dataclasses.asdict(of_profile(by_profile, name)) for name in names}
    knobs = list(dict.fromkeys(k for p in names for k in sizes[p]))

    def cell(value: Any) -> str:
        if isinstance(value, Mapping):
            return "; ".join(f"{k} {cell(v)}" for k, v in value.items())
        if isinstance(value, (tuple, list)):
            return ", ".join(str(v) for v in value)
        return (
            f"{value:,}"
            if isinstance(value, int) and not isinstance(value, bool)
            else str(value)
        )

    rows = [
        {
            "knob": knob,
            **{
                (f"{p} (this run)" if p == profile_name else p): cell(
                    sizes[p].get(knob, "")
                )
                for p in names
            },
        }
        for knob in knobs
    ]
    return pd.DataFrame(rows)

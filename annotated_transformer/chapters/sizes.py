"""Each chapter's sizes under the profiles, as the table a chapter opens with."""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping

import pandas as pd


def sizes_table(chapter: str, profile_name: str) -> pd.DataFrame:
    """A chapter's sizes (`Profile.chapter_sizes`) as one row per field of its record and one column
    per profile: the four main profiles and the executing one, whose column is marked "(this run)"."""
    from ..profiles import get_profile

    names = list(dict.fromkeys(["smoke", "cpu", "gpu", "paper", profile_name]))
    sizes = {
        name: dataclasses.asdict(get_profile(name).chapter_sizes(chapter))
        for name in names
    }
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

"""What a chapter computed, kept as it goes: the shared base of the artefact packages' `ThisRun`.

A chapter fills its package's `ThisRun` (a dataclass) one cell at a time with `keep(...)`, and
its record is built from it at the end, so the page never assembles dictionaries. A misspelt
field is an error where it is kept, not a missing key at the end.
"""

from __future__ import annotations

import dataclasses
from typing import Any


class ChapterState:
    """Mixin of a dataclass: `keep(name=value, ...)` sets existing fields only."""

    def keep(self, **values: Any) -> None:
        """Set the named fields to what the chapter has just computed."""
        names = {x.name for x in dataclasses.fields(self)}
        unknown = sorted(set(values) - names)
        if unknown:
            raise TypeError(f"{type(self).__name__} has no field {', '.join(unknown)}")
        for name, value in values.items():
            setattr(self, name, value)

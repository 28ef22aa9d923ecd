"""A chapter's results record as a typed dataclass, with the one way every chapter writes and reads
it: `results/<profile>/<RESULTS_NAME>.json`, its fields as the file's "metrics" (the JSON the
committed runs hold), read back into the same types."""

from __future__ import annotations

import dataclasses
import os
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Callable, ClassVar, TypeVar

from ..evaluation import results

R = TypeVar("R", bound="ChapterRecord")


def _typed(annotation: Any, value: Any) -> Any:
    """`value` as JSON gave it back, in the type `annotation` names: a record's own records,
    tuples for tuples, dict keys of an int-keyed mapping as ints; anything else as it is."""
    if value is None:
        return None
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        kinds = [a for a in typing.get_args(annotation) if a is not type(None)]
        return _typed(kinds[0], value) if len(kinds) == 1 else value
    if dataclasses.is_dataclass(annotation) and isinstance(value, dict):
        return typed(annotation, value)
    if origin is tuple and isinstance(value, list):
        args = typing.get_args(annotation)
        inner = args[0] if args else Any
        return tuple(_typed(inner, v) for v in value)
    if origin is list and isinstance(value, list):
        (inner,) = typing.get_args(annotation) or (Any,)
        return [_typed(inner, v) for v in value]
    if origin in (dict, Mapping) and isinstance(value, dict):
        key, inner = typing.get_args(annotation) or (Any, Any)
        return {(int(k) if key is int else k): _typed(inner, v) for k, v in value.items()}
    return value


def typed(cls: type, values: Mapping) -> Any:
    """A dataclass `cls` from a mapping as JSON gives it back (`_typed` per field); keys that are
    no field are left out, a field the mapping lacks takes its default."""
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls) if f.init}
    return cls(**{k: _typed(hints[k], v) for k, v in values.items() if k in names})


def beside_metrics(read: Callable[[dict], Any], default: Any = None) -> Any:
    """A record's field that its file keeps outside "metrics" (in its provenance or its
    config): `read` takes it from the whole file as the record is read, and `metrics`
    leaves it out."""
    return dataclasses.field(default=default, compare=False, metadata={"read": read})


@dataclasses.dataclass(frozen=True)
class ChapterRecord:
    """What one chapter found, field by field. A subclass names its file (`RESULTS_NAME`) and, where
    the chapter computes on the CPU whatever the book's device, `DEVICE = "cpu"`."""

    RESULTS_NAME: ClassVar[str]
    DEVICE: ClassVar[str | None] = None

    def metrics(self) -> dict:
        """The record as its file's "metrics" (plain JSON types), without the fields its
        file keeps elsewhere (`beside_metrics`)."""
        metrics = dataclasses.asdict(self)
        for f in dataclasses.fields(self):
            if "read" in f.metadata:
                del metrics[f.name]
        return metrics

    @classmethod
    def from_metrics(cls: type[R], metrics: dict) -> R:
        """The record from a file's "metrics": fields the file lacks take their defaults, fields
        an older version wrote and this one no longer has are left out."""
        return typed(cls, metrics)

    def write(
        self,
        profile_name: str,
        wall_time_s: float | None = None,
        results_dir: str | os.PathLike | None = None,
        *,
        device: Any = None,
        config: Any = None,
    ) -> Path:
        """`results/<profile_name>/<RESULTS_NAME>.json` under `results_dir` (default the results
        root), with its provenance; the path written."""
        return results.write_result(
            self.RESULTS_NAME,
            self.metrics(),
            profile=profile_name,
            device=self.DEVICE if device is None else device,
            config=config,
            wall_time_s=None if wall_time_s is None else round(wall_time_s, 2),
            root=results_dir,
        )

    @classmethod
    def read(
        cls: type[R], profile_name: str, results_dir: str | os.PathLike | None = None
    ) -> R | None:
        """The record the chapter last wrote for `profile_name`, or None when it has not run."""
        found = results.read_result(cls.RESULTS_NAME, profile_name, results_dir)
        if found is None:
            return None
        beside = {
            f.name: f.metadata["read"](found)
            for f in dataclasses.fields(cls)
            if "read" in f.metadata
        }
        return dataclasses.replace(cls.from_metrics(found["metrics"]), **beside)

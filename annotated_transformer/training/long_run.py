"""A run too long for a chapter: trained outside the book by a command, one epoch of one job at a
time, resumed over as many invocations as it needs, and exported to a results file the chapter reads
beside its live run.

Table 3's extended run (`table3`: a job per row, seed and corpus) and the parser's
(`parser-curve`: a job per share of the training trees) are both such runs. What a job is, how it
trains an epoch and when it stops are theirs; the folder, its records and the export are this
module's, in one format:

    <run folder>/<plan name>       a `RunPlan`: what every job shares (`identity`: a later
                                   invocation under another is refused), how far the run trains
                                   (`targets`), and where jobs stopped (`stops`)
    <run folder>/<job>/curve.json  a `JobRecord`: the values that name the job, its precision and
                                   device, what it trained on (`facts`), a point per finished epoch
    <results file>                 a `RunExport`: the plan's identity and targets, every job's
                                   record, when and where it was written, and the kind's own notes

Each is a frozen dataclass written and read through `runtime.records` (one JSON Schema per record,
checked on read and write). A job's record gains one point per epoch and is written whole after
it, so an interrupted run keeps every finished epoch, and a later invocation continues from there
(the job's checkpoint holds the position inside a cut-short epoch). An export never replaces a
file that holds a job or an epoch the run folder lacks.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..runtime.files import ensure_folder
from ..runtime.locks import folder_lock, output_lock
from ..runtime.records import read_record, write_record
from .run_folder import LOCK_NAME

CURVE_NAME = "curve.json"
# The values a view of a job holds besides its own (`JobRecord.view`).
_COMMON = ("name", "precision", "device", "curve")


@dataclass(frozen=True)
class JobRecord:
    """One job of a long run: its `kind` ("table3", "parser"), its folder's `name`, the values
    that name it among the run's (`job`: {"corpus", "row", "seed"}, {"share"}), the precision and
    device it trained in, what it trained on (`facts`: the pairs or trees, the model), and one
    point per finished epoch (`curve`, each with its "epoch" and the kind's measures)."""

    kind: str
    name: str
    job: Mapping[str, Any]
    precision: str
    device: str | None  # None: a record from before jobs named their device
    facts: Mapping[str, Any] = field(default_factory=dict)
    curve: tuple[Mapping[str, Any], ...] = ()

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping) -> JobRecord:
        return cls(**{**data, "curve": tuple(data["curve"])})

    def with_point(self, point: Mapping[str, Any], **changed) -> JobRecord:
        """This record one epoch on (`point`), with any field `changed` (the device it ran on)."""
        return replace(self, curve=(*self.curve, dict(point)), **changed)

    def view(self) -> dict:
        """The job as one flat dict, as the chapters read it: its name, the values that name it,
        its facts, precision, device and curve."""
        return {
            "name": self.name,
            **self.job,
            **self.facts,
            "precision": self.precision,
            "device": self.device,
            "curve": [dict(p) for p in self.curve],
        }

    @classmethod
    def from_view(cls, view: Mapping, kind: str, job_keys: Sequence[str]) -> JobRecord:
        """The record of a flat `view` whose `job_keys` name the job (the rest are its facts)."""
        return cls(
            kind=kind,
            name=view["name"],
            job={k: view[k] for k in job_keys},
            precision=view["precision"],
            device=view["device"],
            facts={k: v for k, v in view.items() if k not in (*_COMMON, *job_keys)},
            curve=tuple(view["curve"]),
        )


@dataclass(frozen=True)
class RunPlan:
    """A run folder's plan: its `kind`, what every job shares (`identity`: the settings, the
    precision or the device type; a later invocation under another is refused), how far it
    trains (`targets`: {corpus: epochs}, or the stopping rule), and where jobs stopped (`stops`:
    {job name: {"epochs": n, ...the rule it stopped under}})."""

    kind: str
    identity: Mapping[str, Any]
    targets: Mapping[str, Any] = field(default_factory=dict)
    stops: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping) -> RunPlan:
        return cls(**data)


@dataclass(frozen=True)
class RunExport:
    """A long run as a results file: the plan's `identity` and `targets`, every job's record,
    when it was `written` and on which `machine` its jobs trained (None where a file did not
    record them), and the kind's own `notes` (the parts it was merged from, the stopping rule)."""

    kind: str
    identity: Mapping[str, Any]
    targets: Mapping[str, Any]
    jobs: tuple[JobRecord, ...]
    written: str | None = None
    machine: str | None = None
    notes: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping) -> RunExport:
        return cls(
            **{**data, "jobs": tuple(JobRecord.from_dict(j) for j in data["jobs"])}
        )

    def view(self) -> dict:
        """The export as the chapters read it: its fields and notes at the top, each job a view."""
        return {
            **self.notes,
            "identity": dict(self.identity),
            "targets": dict(self.targets),
            "written": self.written,
            "machine": self.machine,
            "jobs": [j.view() for j in self.jobs],
        }


def read_export(path: str | os.PathLike, kind: str) -> RunExport:
    """The long run of `kind` exported to `path` (a RecordError in one line when it is not one)."""
    export = RunExport.from_dict(read_record(path, "long_run_export"))
    if export.kind != kind:
        raise ValueError(
            f"{path} is the export of a {export.kind} run, not of a {kind} run: give the "
            f"{kind} run's results file"
        )
    return export


def now() -> str:
    """The time an export is written, as its `written` records it."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def machines(jobs: Iterable[JobRecord]) -> str | None:
    """Where `jobs` trained, every device once ("AMD EPYC, NVIDIA H100"), or None."""
    return ", ".join(sorted({j.device for j in jobs if j.device})) or None


def deadline(minutes: float | None) -> Callable[[], bool]:
    """Whether another epoch may start: always without `minutes`, else until that many minutes
    from now (those running finish), so a bounded invocation ends with whole epochs kept."""
    if minutes is None:
        return lambda: True
    if not minutes > 0:
        raise ValueError(f"minutes must be positive, got {minutes}")
    end = time.monotonic() + 60.0 * minutes
    return lambda: time.monotonic() < end


@dataclass
class LongRun:
    """The run folder `out_dir` of a long run of `kind`, whose plan is `plan_name` (the file that
    marks the folder as the `command`'s); `what` names such a run in words ("a Table 3 run")."""

    out_dir: Path
    kind: str
    plan_name: str
    command: str
    what: str

    def __post_init__(self):
        self.out_dir = Path(self.out_dir)  # a str too
        self.plan_path = self.out_dir / self.plan_name

    # ------------------------------------------------------------------------------ the plan
    def plan(self) -> RunPlan | None:
        """The folder's plan, or None when it has none yet."""
        if not self.plan_path.is_file():
            return None
        plan = RunPlan.from_dict(read_record(self.plan_path, "long_run_plan"))
        if plan.kind != self.kind:
            raise ValueError(
                f"{self.out_dir} is a {plan.kind} run, not {self.what}: give another --out"
            )
        return plan

    def check_folder(self) -> RunPlan | None:
        """The folder's plan; a folder that holds files but no plan is refused (one line)."""
        plan = self.plan()
        if plan is None and self.out_dir.is_dir():
            if any(p.name != LOCK_NAME for p in self.out_dir.iterdir()):
                raise ValueError(
                    f"{self.out_dir} holds files but no {self.plan_path.name}: it is not "
                    f"{self.what}; give an empty or new --out"
                )
        return plan

    def changed(
        self, identity: Mapping[str, Any], ignore: Iterable[str] = ()
    ) -> dict[str, Any]:
        """{key: the folder's value} of each key of `identity` the folder's plan records
        otherwise (but those in `ignore`); {} for a folder without a plan."""
        plan = self.plan()
        if plan is None:
            return {}
        ignore = set(ignore)
        return {
            k: plan.identity.get(k)
            for k in sorted(identity)
            if k not in ignore and plan.identity.get(k) != identity[k]
        }

    def write_plan(self, plan: RunPlan) -> None:
        """Write the folder's plan where it changed (the folder made where missing)."""
        if plan != self.plan():
            ensure_folder(self.out_dir)
            write_record(self.plan_path, "long_run_plan", plan.to_dict())

    @contextmanager
    def lock(self) -> Iterator[None]:
        """The folder to this process alone for the block; another is refused at once."""
        ensure_folder(self.out_dir)
        busy = (
            f"{self.out_dir} is in use by another {self.command} process; wait for it or give "
            "another --out"
        )
        with folder_lock(self.out_dir / LOCK_NAME, busy):
            yield

    # ------------------------------------------------------------------------------ the jobs
    def folder(self, name: str) -> Path:
        return self.out_dir / name

    def job(self, name: str) -> JobRecord | None:
        """The record of the job `name`, or None before its first epoch."""
        path = self.folder(name) / CURVE_NAME
        if not path.is_file():
            return None
        return JobRecord.from_dict(read_record(path, "long_run_job"))

    def curve(self, name: str) -> list[dict]:
        record = self.job(name)
        return [dict(p) for p in record.curve] if record else []

    def write_job(self, record: JobRecord) -> None:
        write_record(
            self.folder(record.name) / CURVE_NAME, "long_run_job", record.to_dict()
        )

    def jobs(self) -> list[JobRecord]:
        """Every job's record, in the order of their names."""
        return [
            JobRecord.from_dict(read_record(path, "long_run_job"))
            for path in sorted(self.out_dir.glob(f"*/{CURVE_NAME}"))
        ]

    # ------------------------------------------------------------------------------ the export
    def export(
        self,
        path: str | os.PathLike,
        export: RunExport,
        other: str = "other settings",
        example: str = "results/",
    ) -> Path:
        """Write `export` to `path` under its lock. Refused, in one line: a path inside the run
        folder (`example`: a path outside it), and a file that holds a job or an epoch the export
        lacks, or another identity (`other`: what that is in words)."""
        path = Path(path)
        if path.resolve().is_relative_to(self.out_dir.resolve()):
            raise ValueError(
                f"--export {path} lies inside the run folder {self.out_dir}, whose files it "
                f"reads; export to a path outside it ({example})"
            )
        if not export.jobs:
            raise ValueError(f"{self.out_dir} holds no finished epoch: nothing to export")
        with output_lock(path, f"{self.command} --export"):
            if path.is_file():
                old = read_export(path, self.kind)
                held = {j.name: len(j.curve) for j in export.jobs}
                missing = [
                    f"{j.name} ({len(j.curve)} epochs)"
                    for j in old.jobs
                    if held.get(j.name, 0) < len(j.curve)
                ]
                if missing or old.identity != export.identity:
                    what = ", ".join(missing[:4]) or other
                    raise ValueError(
                        f"{path} holds what {self.out_dir} lacks ({what}); export to another "
                        "path, or continue the run that wrote it"
                    )
            return write_export(path, export)


def write_export(path: str | os.PathLike, export: RunExport) -> Path:
    """`export` written to `path` as its record (checked first: a file a reader would refuse is
    never written)."""
    return write_record(path, "long_run_export", export.to_dict())

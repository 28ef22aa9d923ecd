"""What the trainer reads, and nothing else: how to step, for how long, when to save.

A `Profile` carries this and much more (the corpus, the beam, the book's scales); the trainer sees
only `TrainSettings`, built from a profile by `Profile.train_settings()` or written directly by an
experiment that wants "train this model on these batches for N steps". Keeping the record small is
what lets Table 3 and the parser train through the same door as the pipeline without faking a
profile.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..runtime.checks import (
    COUNT,
    NON_NEGATIVE_INT,
    OPTIONAL_COUNT,
    OPTIONAL_POSITIVE,
    POSITIVE,
    PROBABILITY,
    Bounds,
    check_all,
    check_types,
)
from ..runtime.compiling import COMPILE_MODES, check_compile
from ..runtime.precision import PRECISIONS

# What each number may be; `Profile` checks its copies of these fields with the same bounds.
BOUNDS: dict[str, Bounds] = {
    "batch_tokens": COUNT,
    "accumulation": COUNT,
    "peak_lr": OPTIONAL_POSITIVE,
    "warmup_steps": COUNT,
    "adam_eps": POSITIVE,
    "clip_norm": OPTIONAL_POSITIVE,
    "dropout_from_epoch": NON_NEGATIVE_INT,
    "max_steps": OPTIONAL_COUNT,
    "max_epochs": OPTIONAL_COUNT,
    "time_budget_minutes": OPTIONAL_POSITIVE,
    "seed": NON_NEGATIVE_INT,
    "log_every": COUNT,
    "eval_every": NON_NEGATIVE_INT,
    "eval_batch_tokens": COUNT,
    "save_every_steps": OPTIONAL_COUNT,
    "save_every_minutes": OPTIONAL_POSITIVE,
    "keep_snapshots": COUNT,
}
# The settings a resumed run must keep: they shape the batches or the learning-rate schedule, so
# a change would be ignored (the schedule comes from the checkpoint) or would quietly make another
# run. The limits, the snapshots' rhythm and the engineering (precision, compile, threads) may
# change on resume: they take effect as given, and the metrics' start record says so.
FIXED_ON_RESUME = (
    "batch_tokens",
    "accumulation",
    "peak_lr",
    "warmup_steps",
    "adam_betas",
    "adam_eps",
    "clip_norm",
    "dropout_from_epoch",
    "seed",
    "length_buckets",
)
# What a checkpoint written before a fixed setting existed trained with: compared as if saved.
BEFORE_IT_EXISTED = {"length_buckets": False, "dropout_from_epoch": 0}


@dataclass(frozen=True)
class TrainSettings:
    """The knobs of one training run (section 5 of the paper, plus the engineering around it).

    Learning rate: the paper's schedule is lr = d_model^-0.5 * min(step^-0.5, step * warmup^-1.5);
    `peak_lr` rescales that curve so its top (at step == warmup_steps) is the given rate, and None
    keeps the paper's own scale (7.0e-4 for base with 4000 warm-up steps).
    """

    name: str = "run"  # the progress bar's label
    # batches: `batch_tokens` padded slots per micro-batch, `accumulation` micro-batches per rank a step
    batch_tokens: int = 4096
    accumulation: int = 1
    # optimisation (section 5.3)
    peak_lr: float | None = None
    warmup_steps: int = 4000
    adam_betas: tuple[float, float] = (0.9, 0.98)
    adam_eps: float = 1e-9
    clip_norm: float | None = None  # the paper clips nothing
    # the model's dropout only from this epoch on (counted from 0), none before: 0 is the
    # paper's dropout throughout; a later start lets a short run learn at full speed and still
    # regularizes a long one once it begins to overfit ("late dropout", Liu et al., 2023)
    dropout_from_epoch: int = 0
    # length: whichever limit comes first (None: no limit of that kind)
    max_steps: int | None = None
    max_epochs: int | None = None
    time_budget_minutes: float | None = None
    # "wall": minutes on the clock; "cpu": CPU time of this process divided by its threads
    budget_clock: str = "wall"
    # engineering
    # "auto" (bf16 or fp16 on GPUs by their tensor cores, fp32 or measured on CPUs:
    # runtime.precision), "bf16", "fp16" (autocast with a gradient scaler) or "fp32"
    precision: str = "auto"
    # torch.compile of the model and the loss: True, False, or "auto" (measured on a CPU: runtime.compiling)
    compile: bool | str = False
    # torch.compile's mode when compiled (runtime.compiling.COMPILE_MODES): "reduce-overhead"
    # replays the step's graphs as CUDA graphs on a GPU, one recording per batch shape
    compile_mode: str = "default"
    # pad every batch to one of a few widths (data.LengthBuckets.doubling, up to the longest
    # pair), rows to what the token budget allows there: at most len(buckets) ** 2 shapes for a
    # compiled or graphed step; the batches are packed by the bucketed widths, so another plan
    length_buckets: bool = False
    # the eager step's forward and backward captured as CUDA graphs, a pair per batch shape, and
    # replayed (training.graphed_step): on a GPU, with length_buckets; elsewhere it runs eagerly
    cuda_graphs: bool = False
    # the batches' order (and, through `fit`, the initial weights and dropout)
    seed: int = 1
    log_every: int = 50
    eval_every: int = 500  # steps between validation losses (0: only at the end)
    eval_batch_tokens: int = 4000
    save_every_steps: int | None = None  # snapshots for averaging, by steps ...
    # ... or by minutes (section 6.1: every 10 minutes)
    save_every_minutes: float | None = None
    keep_snapshots: int = 20

    def __post_init__(self):
        choices = {"precision": PRECISIONS, "compile_mode": COMPILE_MODES}
        check_types(self, "", choices=choices)
        check_all("", dataclasses.asdict(self), BOUNDS)
        for beta in self.adam_betas:  # two numbers: check_types saw to that
            PROBABILITY.check("adam_betas", beta)
        if (
            self.max_steps is None
            and self.max_epochs is None
            and self.time_budget_minutes is None
        ):
            raise ValueError(
                "the training settings set no limit: give max_steps, max_epochs or time_budget_minutes"
            )
        if self.budget_clock not in ("wall", "cpu"):
            raise ValueError(
                f"budget_clock must be 'wall' or 'cpu', got {self.budget_clock!r}"
            )
        check_compile(self.compile)
        if self.compile_mode != "default" and self.compile is False:
            raise ValueError(
                f"compile_mode (--compile-mode) {self.compile_mode} applies to a compiled step, "
                "and compile (--compile) is off: add --compile, or leave --compile-mode out"
            )
        if self.cuda_graphs and not self.length_buckets:
            raise ValueError(
                "cuda_graphs (--cuda-graphs) captures a graph for every batch shape, and token "
                "batches have a new shape almost every step: add --length-buckets"
            )
        if self.cuda_graphs and self.compile is not False:
            raise ValueError(
                "cuda_graphs (--cuda-graphs) graphs the eager step; a compiled one graphs with "
                "--compile-mode reduce-overhead: pass --no-compile (the profile may compile), "
                "or leave out --cuda-graphs"
            )

    @classmethod
    def fields(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))

    def resume_conflicts(self, saved: dict) -> list[tuple[str, object, object]]:
        """(field, saved value, this value) for each FIXED_ON_RESUME setting that differs from
        `saved` (a checkpoint's settings); a field the checkpoint lacks is compared with what runs
        did before it existed (`BEFORE_IT_EXISTED`), or not at all."""
        mine = self.to_dict()
        saved = {**BEFORE_IT_EXISTED, **saved}
        found = []
        for name in FIXED_ON_RESUME:
            if name not in saved:
                continue
            old, new = saved[name], mine[name]
            if name == "adam_betas":
                old, new = tuple(old), tuple(new)
            if old != new:
                found.append((name, old, new))
        return found

    def replace(self, **changes) -> "TrainSettings":
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: dict) -> "TrainSettings":
        known = set(cls.fields())
        values = {k: v for k, v in values.items() if k in known}
        if isinstance(values.get("adam_betas"), list):  # JSON's form of the tuple
            values["adam_betas"] = tuple(values["adam_betas"])
        return cls(**values)

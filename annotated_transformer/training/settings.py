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


@dataclass(frozen=True)
class TrainSettings:
    """The knobs of one training run (section 5 of the paper, plus the engineering around it).

    Learning rate: the paper's schedule is lr = d_model^-0.5 * min(step^-0.5, step * warmup^-1.5);
    `peak_lr` rescales that curve so its top (at step == warmup_steps) is the given rate, and None
    keeps the paper's own scale.
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
    # length: whichever limit comes first (None: no limit of that kind)
    max_steps: int | None = None
    max_epochs: int | None = None
    time_budget_minutes: float | None = None
    # "wall": minutes on the clock; "cpu": CPU time of this process divided by its threads
    budget_clock: str = "wall"
    # engineering
    precision: str = "auto"  # "auto", "bf16" or "fp32"
    compile: bool = False
    seed: int = (
        1  # the batches' order (and, through `fit`, the initial weights and dropout)
    )
    log_every: int = 50
    eval_every: int = 500  # steps between validation losses (0: only at the end)
    eval_batch_tokens: int = 4000
    save_every_steps: int | None = None  # snapshots for averaging, by steps ...
    save_every_minutes: float | None = (
        None  # ... or by minutes (section 6.1: every 10 minutes)
    )
    keep_snapshots: int = 20

    def __post_init__(self):
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
        if self.accumulation < 1 or self.batch_tokens < 1:
            raise ValueError("batch_tokens and accumulation must be at least 1")
        if self.log_every < 1:
            raise ValueError(f"log_every must be at least 1, got {self.log_every}")

    @classmethod
    def fields(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))

    def replace(self, **changes) -> "TrainSettings":
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: dict) -> "TrainSettings":
        known = set(cls.fields())
        values = {k: v for k, v in values.items() if k in known}
        if "adam_betas" in values:
            values["adam_betas"] = tuple(values["adam_betas"])
        return cls(**values)

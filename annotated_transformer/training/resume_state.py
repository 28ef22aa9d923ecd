"""What a resume checkpoint (`last.pt`) holds beyond the weights, and which runs may continue from it.

A resumed run must end bit-identical to one that never stopped, so `last.pt` holds the optimizer,
the schedule, the fp16 gradient scaler's factor, every RNG state and the position in the data
(`TrainingProgress`). It also refuses, by name, whatever would make the continuation a different
run: another model, another tokenizer, settings that shape the batches or the schedule, another
number of micro-batches per step, other validation pairs (`data_digest`: a curve would mix two
validation sets). A refused resume changes nothing; an accepted one restores
everything.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import torch

from ..model.config import TransformerConfig
from .checkpoint import capture_rng_state, restore_rng_state
from .settings import TrainSettings


@dataclass
class TrainingProgress:
    """Where a run is: saved in the resume checkpoint so the run continues at the next global batch."""

    step: int = 0  # optimizer updates done
    epoch: int = 0
    batch_cursor: int = 0  # global batches of `epoch` already consumed
    target_tokens: int = 0  # real target tokens trained on so far
    train_time_s: float = 0.0  # wall time inside the training loop, over every resumption
    # CPU time of this process inside the loop, divided by its threads
    train_cpu_s: float = 0.0
    last_snapshot_time_s: float = 0.0
    last_valid: dict = field(default_factory=dict)


def data_digest(pairs) -> str | None:
    """What a run validates on, as a digest of its pairs (None: data that cannot say)."""
    digest = getattr(pairs, "digest", None)
    return digest() if callable(digest) else None


def resume_state(
    snapshot: dict,
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler,
    progress: TrainingProgress,
    micro_batches_per_step: int,
    scaler: torch.amp.GradScaler | None = None,
    data: dict | None = None,
) -> dict:
    """The resume checkpoint: a snapshot (weights and what they need) plus everything needed to
    continue this run exactly. The gradient scaler's state is kept only where it is enabled (fp16):
    bf16 and fp32 checkpoints stay as they were."""
    state = {
        **snapshot,
        "kind": "resume",
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "rng": capture_rng_state(),
        "progress": asdict(progress),
        "micro_batches_per_step": micro_batches_per_step,
    }
    if data:
        state["data"] = dict(data)
    if scaler is not None and scaler.is_enabled():
        state["scaler"] = scaler.state_dict()
    return state


def check_resumable(
    state: dict,
    source: str,
    *,
    config: TransformerConfig,
    settings: TrainSettings,
    tokenizer,
    micro_batches_per_step: int,
    data: dict | None = None,
) -> None:
    """Raise ValueError, naming the change, unless this run may continue the one `state` saved."""
    if state.get("kind") != "resume":
        raise ValueError(
            f"{source} holds weights only (a snapshot or an average): resume from the run's last.pt"
        )
    if state["config"] != config.to_dict():
        changed = sorted(
            key
            for key in set(state["config"]) | set(config.to_dict())
            if state["config"].get(key) != config.to_dict().get(key)
        )
        raise ValueError(
            f"{source} was trained with another model ({', '.join(changed)} differ): resume "
            "with the run's own profile and options, or start afresh with --overwrite"
        )
    conflicts = settings.resume_conflicts(state.get("settings", {}))
    if conflicts:  # every one at once, not one per attempt
        changed = ", ".join(
            f"{name} {old!r}, this run asks for {new!r}" for name, old, new in conflicts
        )
        raise ValueError(
            f"{source} was trained with {changed}: a resumed run keeps what shapes its "
            "batches and schedule; drop the change, or start afresh with --overwrite or "
            "another --out"
        )
    saved_tokenizer = state.get("tokenizer") or None
    mine = (tokenizer.to_bytes() or None) if tokenizer is not None else None
    if saved_tokenizer != mine:
        raise ValueError(
            f"{source} was trained with another tokenizer than this run's (other training "
            "text or --data-dir): resume with the run's own data, or start afresh with --overwrite"
        )
    saved_data, data = state.get("data") or {}, data or {}
    for name in sorted(set(saved_data) & set(data)):
        if saved_data[name] is not None and data[name] is not None:
            if saved_data[name] != data[name]:
                raise ValueError(
                    f"{source} was validated on other {name} data than this run's (other "
                    "files or --data-dir): its curve would mix two validation sets; resume with "
                    "the run's own data, or start afresh with --overwrite or another --out"
                )
    saved_batches = state.get("micro_batches_per_step", micro_batches_per_step)
    if saved_batches != micro_batches_per_step:
        raise ValueError(
            f"{source} took {saved_batches} micro-batches per step (--accumulation x "
            f"processes), this run {micro_batches_per_step}: resume with the same "
            "product, or start afresh with --overwrite"
        )


def restore_resume_state(
    state: dict,
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler,
    scaler: torch.amp.GradScaler | None = None,
) -> TrainingProgress:
    """Load a checked resume state into the run's objects and the RNGs; returns where the run was.

    An enabled scaler (fp16) takes the saved factor where there is one; a checkpoint without it (an
    older one, or one trained in bf16 or fp32: precision may change on resume) starts it afresh."""
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    if scaler is not None and scaler.is_enabled() and state.get("scaler"):
        scaler.load_state_dict(state["scaler"])
    progress = TrainingProgress(**state["progress"])
    restore_rng_state(state["rng"])
    return progress

"""The training loop of section 5: Adam with the warm-up schedule, label smoothing, token-count batches.

What it adds to the paper is what makes a run trustworthy on any hardware:

- one optimizer step = one *global batch* of `accumulation x world_size` micro-batches, fixed by the data
  and the seed alone, so one process with accumulation N and N processes (DDP) take the same step;
- the loss of a step is summed over the global batch's target tokens and divided by their count, so
  micro-batches of different sizes weigh exactly as in one big batch;
- bf16 autocast where the hardware computes in bf16 (the loss itself stays in float32);
- a resume checkpoint after every snapshot and on Ctrl-C / SIGTERM, holding everything down to the RNG
  states and the position inside the epoch, so a resumed run ends with bit-identical parameters;
- limits by steps, epochs or minutes, whichever comes first; metrics as JSON lines; a progress bar.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import json
import logging
import math
import os
import signal
import statistics
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import torch
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel

from ..data.batching import EncodedPairs, TokenBatcher, collate_pairs
from ..runtime.distributed import (
    DistributedContext,
    all_reduce_sum,
    barrier,
    max_over_ranks,
)
from ..runtime.precision import PrecisionChoice, choose_precision
from ..runtime.progress import on_a_page, progress_bar
from .checkpoint import (
    RESUME_NAME,
    atomic_torch_save,
    capture_rng_state,
    load_checkpoint,
    prune_snapshots,
    restore_rng_state,
    snapshot_of,
    snapshot_path,
)
from .loss import label_smoothed_cross_entropy
from .run_folder import METRICS_NAME
from .schedule import NoamSchedule, peak_lr
from .settings import TrainSettings
from .teacher_forcing import batch_loss, teacher_forced_loss

logger = logging.getLogger(__name__)

STOP_CHECK_EVERY = (
    10  # steps between the ranks' agreement on Ctrl-C / time limits under DDP
)


# ------------------------------------------------------------------------------------------ optimizer
def build_optimizer(
    model: nn.Module, settings: TrainSettings, device: torch.device
) -> torch.optim.Adam:
    """Adam(beta1=0.9, beta2=0.98, eps=1e-9) of section 5.3 with PyTorch's fused kernel (CPU and GPU).

    On a 2-core CPU the fused update of a `base` step is several times faster than PyTorch's default
    (results/benchmarks/cpu_train.json); on GPUs it is one kernel launch instead of many. Other devices
    fall back to foreach.
    """
    params = [p for p in model.parameters() if p.requires_grad]
    kernel = {"fused": True} if device.type in ("cuda", "cpu") else {"foreach": True}
    return torch.optim.Adam(
        params, lr=1.0, betas=tuple(settings.adam_betas), eps=settings.adam_eps, **kernel
    )


def schedule_factor(settings: TrainSettings, d_model: int) -> float:
    """Scale of the paper's curve: 1.0 for the paper, or whatever makes its top equal settings.peak_lr."""
    if settings.peak_lr is None:
        return 1.0
    return settings.peak_lr / peak_lr(d_model, settings.warmup_steps, 1.0)


# ------------------------------------------------------------------------------------------ progress
@dataclass
class TrainingProgress:
    """Where a run is: saved in the resume checkpoint so the run continues at the next global batch."""

    step: int = 0  # optimizer updates done
    epoch: int = 0
    batch_cursor: int = 0  # global batches of `epoch` already consumed
    target_tokens: int = 0  # real target tokens trained on so far
    train_time_s: float = 0.0  # wall time inside the training loop, over all sessions
    train_cpu_s: float = (
        0.0  # CPU time of this process inside the loop, divided by its threads
    )
    last_snapshot_time_s: float = 0.0
    last_valid: dict = field(default_factory=dict)


@dataclass
class TrainResult:
    out_dir: Path
    progress: TrainingProgress
    stopped_by: str  # "max_steps" | "max_epochs" | "time_budget" | "interrupted"
    valid: dict


class TrainingDiverged(RuntimeError):
    """The loss or the weights stopped being finite numbers; nothing from that point on was saved."""


class _StopRequest:
    """Ctrl-C or SIGTERM set a flag the loop checks after each step; a second Ctrl-C aborts at once."""

    def __init__(self):
        self.requested = False
        self.reason = ""
        self._previous: dict = {}

    def _handle(self, signum, frame):
        if self.requested and signum == signal.SIGINT:
            raise KeyboardInterrupt
        self.requested = True
        self.reason = signal.Signals(signum).name

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc):
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        return False


# ------------------------------------------------------------------------------------------ trainer
class Trainer:
    """Trains `model` on `train_data` following `settings`; writes metrics and checkpoints under `out_dir`.

    Most callers use `training.fit`, which builds the model and seeds it the same way every time.

    Args:
        model: a Transformer on its device (not wrapped: the trainer adds DDP and torch.compile itself).
        tokenizer: stored in every checkpoint (anything with `to_bytes()`), so checkpoints are self-contained.
        train_data, valid_data: encoded pairs (see `annotated_transformer.data.EncodedPairs`).
        settings: how to train, for how long and when to save (`TrainSettings`).
        out_dir: `metrics.jsonl`, `last.pt` (resume) and `checkpoints/step_*.pt` (snapshots) go here.
        context: rank, world size and device (default: one process on the model's device).
        show_progress: draw a tqdm bar on rank 0.
        on_step: called as on_step(trainer) after every optimizer step (tests use it to interrupt a run).
        metadata: JSON-able facts stored in every checkpoint and in the `start` record of the metrics
            (the pipeline stores its profile there, so a checkpoint knows its corpus and direction).
    """

    def __init__(
        self,
        model: nn.Module,
        tokenizer,
        train_data: EncodedPairs,
        valid_data: EncodedPairs | None,
        settings: TrainSettings,
        out_dir: str | os.PathLike,
        context: DistributedContext | None = None,
        *,
        show_progress: bool = True,
        on_step: Callable[["Trainer"], None] | None = None,
        metadata: dict | None = None,
    ):
        self.model = model
        self.config = model.config
        self.tokenizer = tokenizer
        self.train_data, self.valid_data = train_data, valid_data
        self.settings = settings
        self.metadata = dict(metadata or {})
        self.out_dir = Path(out_dir)
        device = next(model.parameters()).device
        self.context = context or DistributedContext(device=device)
        self.device = self.context.device
        self.show_progress = show_progress
        self.on_step = on_step
        self.progress = TrainingProgress()
        self._stop = _StopRequest()
        self._bar = None

        self.optimizer = build_optimizer(model, settings, self.device)
        self.scheduler = NoamSchedule(
            self.optimizer,
            self.config.d_model,
            settings.warmup_steps,
            schedule_factor(settings, self.config.d_model),
        )
        # One global batch = accumulation micro-batches on each of world_size ranks; the batcher makes the
        # number of micro-batches per epoch a multiple of that, so the plan does not depend on how the
        # product is split between ranks and accumulation.
        self.micro_batches_per_step = settings.accumulation * self.context.world_size
        self.batcher = TokenBatcher(
            train_data.src_lengths,
            train_data.tgt_lengths,
            settings.batch_tokens,
            shuffle=True,
            seed=settings.seed,
            batches_per_step=self.micro_batches_per_step,
            skip_too_long=True,
        )
        self._tgt_label_counts = (
            np.asarray(train_data.tgt_lengths, dtype=np.int64) + 1
        )  # tokens + eos

        forward_model: nn.Module = model
        # The step reads nothing of the logits after backward, so their storage can take the gradient.
        self.loss_fn = functools.partial(
            label_smoothed_cross_entropy, inplace_backward=True
        )
        # On the CPU (eager), logits only for real target tokens: the output projection skips padding
        # (4% of a `base` step, results/benchmarks/cpu_train.json). Compiled training keeps all rows: a
        # boolean selection's output size depends on the data, which breaks the graph; and on a GPU it
        # costs a host sync per micro-batch, unmeasured against what it saves, so GPUs keep all rows too.
        self.real_rows_only = not settings.compile and self.device.type == "cpu"
        # "auto" on a CPU with bf16 instructions times this model's own step in both precisions.
        choice = choose_precision(
            settings.precision,
            self.device,
            probe=self._time_both_precisions,
            shape=self._shape(),
        )
        if (
            self.context.is_distributed
        ):  # every rank must compute alike: fp32 if any rank says so
            any_fp32 = max_over_ranks(int(choice.precision == "fp32"), self.context)
            if any_fp32 and choice.precision != "fp32":
                choice = PrecisionChoice(
                    "fp32", choice.reason + "; another rank chose fp32"
                )
        self.precision, self.precision_reason = choice.precision, choice.reason

        if settings.compile:
            forward_model = torch.compile(forward_model)
            # A graph of its own: log-softmax, gather and mean fuse instead of several float32 passes
            # over the (tokens x vocabulary) logits.
            self.loss_fn = torch.compile(label_smoothed_cross_entropy)
        if self.context.is_distributed:
            ids = [self.device.index] if self.device.type == "cuda" else None
            forward_model = DistributedDataParallel(forward_model, device_ids=ids)
        self.forward_model = forward_model

    # -------------------------------------------------------------------------------------- precision
    def _shape(self) -> dict:
        c = self.config
        return {
            "d_model": c.d_model,
            "d_ff": c.d_ff,
            "n_heads": c.n_heads,
            "layers": [c.encoder_layers, c.decoder_layers],
            "vocab": self.model.tgt_embed.num_embeddings,
            "batch_tokens": self.settings.batch_tokens,
        }

    def _time_both_precisions(self, steps: int = 3) -> dict[str, float]:
        """Median seconds of this model's forward and backward on its first batch, fp32 and bf16
        interleaved, on a copy of the model and with every random generator put back afterwards, so
        measuring changes nothing about the run."""
        model = copy.deepcopy(self.model).train()
        indices = self.batcher.epoch_batches(0)[0]
        c = self.config
        src, tgt = collate_pairs(
            [self.train_data[j] for j in indices], c.pad_id, c.bos_id, c.eos_id
        )
        src, tgt = src.to(self.device), tgt.to(self.device)
        times: dict[str, list[float]] = {"fp32": [], "bf16": []}
        with torch.random.fork_rng(devices=[]):
            for step in range(steps + 1):  # the first round warms up
                for precision in ("fp32", "bf16") if step % 2 else ("bf16", "fp32"):
                    started = time.perf_counter()
                    parts = batch_loss(
                        model,
                        src,
                        tgt,
                        smoothing=c.label_smoothing,
                        pad_id=c.pad_id,
                        precision=precision,
                        real_rows_only=self.real_rows_only,
                    )
                    parts.loss.backward()
                    model.zero_grad(set_to_none=True)
                    if step:
                        times[precision].append(time.perf_counter() - started)
        return {p: statistics.median(v) for p, v in times.items()}

    # -------------------------------------------------------------------------------------- state
    def state_dict(self) -> dict:
        """The resume checkpoint: everything needed to continue this run exactly."""
        return {
            **self.snapshot_dict(),
            "kind": "resume",
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "rng": capture_rng_state(),
            "progress": asdict(self.progress),
            "micro_batches_per_step": self.micro_batches_per_step,
        }

    def snapshot_dict(self) -> dict:
        """Model weights with what is needed to use them (config, vocabulary sizes, tokenizer, settings)."""
        return snapshot_of(
            self.model,
            self.tokenizer,
            step=self.progress.step,
            settings=self.settings.to_dict(),
            **self.metadata,
        )

    def load_state_dict(self, state: dict, source: str = "the checkpoint") -> None:
        """Continue the run `state` saved. Everything that shapes the model, the batches or the
        schedule must be what it was: a change is refused with its name, never half applied."""
        if state.get("kind") != "resume":
            raise ValueError(
                f"{source} holds weights only (a snapshot or an average): resume from the run's last.pt"
            )
        if state["config"] != self.config.to_dict():
            changed = sorted(
                key
                for key in set(state["config"]) | set(self.config.to_dict())
                if state["config"].get(key) != self.config.to_dict().get(key)
            )
            raise ValueError(
                f"{source} was trained with another model ({', '.join(changed)} differ): resume "
                "with the run's own profile and options, or start afresh with --overwrite"
            )
        for name, old, new in self.settings.resume_conflicts(state.get("settings", {})):
            raise ValueError(
                f"{source} was trained with {name} {old!r}, this run asks for {new!r}: a resumed "
                "run keeps what shapes its batches and schedule; drop the change, or start "
                "afresh with --overwrite or another --out"
            )
        saved_tokenizer = state.get("tokenizer") or None
        mine = (self.tokenizer.to_bytes() or None) if self.tokenizer is not None else None
        if saved_tokenizer != mine:
            raise ValueError(
                f"{source} was trained with another tokenizer than this run's (other training "
                "text or --data-dir): resume with the run's own data, or start afresh with --overwrite"
            )
        saved_batches = state.get("micro_batches_per_step", self.micro_batches_per_step)
        if saved_batches != self.micro_batches_per_step:
            raise ValueError(
                f"{source} took {saved_batches} micro-batches per step (--accumulation x "
                f"processes), this run {self.micro_batches_per_step}: resume with the same "
                "product, or start afresh with --overwrite"
            )
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.progress = TrainingProgress(**state["progress"])
        restore_rng_state(state["rng"])

    def resume_from(self, path: str | os.PathLike) -> None:
        """Continue from a resume checkpoint (a `last.pt` or the `--out` folder holding it)."""
        self.load_state_dict(load_checkpoint(path, map_location="cpu"), str(path))
        self._log({"kind": "resume", "step": self.progress.step, "from": str(path)})

    def _stop_if_diverged(self, step_sums: torch.Tensor) -> None:
        """Raise TrainingDiverged once the step's loss is not finite (NaN or inf).

        Every step on a CPU; on other devices every STOP_CHECK_EVERY steps (each check waits for the
        device) and, through `_weights_are_finite`, before anything is saved. Ranks decide together.
        """
        if self.device.type != "cpu" and self.progress.step % STOP_CHECK_EVERY:
            return
        bad = int(not bool(torch.isfinite(step_sums[:2]).all()))
        if max_over_ranks(bad, self.context):
            self._raise_diverged(f"the loss is {float(step_sums[0]):g}")

    def _weights_are_finite(self) -> bool:
        norms = torch.stack([p.detach().float().norm() for p in self.model.parameters()])
        return bool(torch.isfinite(norms).all())

    def _raise_diverged(self, what: str) -> None:
        last_good = self.out_dir / RESUME_NAME
        if last_good.is_file():
            kept, then = (
                f"the last good checkpoint is {last_good}",
                "continue from it with --resume or start afresh with --overwrite",
            )
        else:
            kept, then = "no checkpoint was written", "start afresh with --overwrite"
        message = (
            f"training diverged at step {self.progress.step}: {what} (learning rate "
            f"{self.scheduler.get_last_lr()[0]:.2e}). Nothing from this point was saved; {kept}. Lower the "
            f"peak learning rate (--lr) or lengthen the warm-up (--warmup), then {then}"
        )
        if self._bar is not None:
            self._bar.close()
        self._log({"kind": "diverged", "step": self.progress.step, "message": message})
        raise TrainingDiverged(message)

    def save_resume_checkpoint(self) -> Path | None:
        if not self._weights_are_finite():
            self._raise_diverged("the weights are no longer finite")
        path = self.out_dir / RESUME_NAME
        if self.context.is_main:
            atomic_torch_save(self.state_dict(), path)
        barrier(self.context)
        return path

    def save_snapshot(self) -> Path | None:
        if not self._weights_are_finite():
            self._raise_diverged("the weights are no longer finite")
        path = snapshot_path(self.out_dir, self.progress.step)
        if self.context.is_main:
            atomic_torch_save(self.snapshot_dict(), path)
            prune_snapshots(self.out_dir, self.settings.keep_snapshots)
        return path

    def epochs_done(self) -> float:
        """Epochs trained, the current one counted by its share of steps taken."""
        p = self.progress
        return p.epoch + p.batch_cursor / max(1, self.batcher.steps_per_epoch(p.epoch))

    def request_stop(self, reason: str = "requested") -> None:
        """Stop after the current step, saving a resume checkpoint first (what Ctrl-C does)."""
        self._stop.requested, self._stop.reason = True, reason

    # -------------------------------------------------------------------------------------- logging
    def _log(self, record: dict) -> None:
        if not self.context.is_main:
            return
        self.out_dir.mkdir(parents=True, exist_ok=True)
        with open(self.out_dir / METRICS_NAME, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")

    # -------------------------------------------------------------------------------------- one step
    def _to_device(self, tensor: torch.Tensor) -> torch.Tensor:
        if self.device.type == "cuda":
            return tensor.pin_memory().to(self.device, non_blocking=True)
        return tensor.to(self.device)

    def train_step(self, global_batch: list[list[int]]) -> torch.Tensor:
        """One optimizer update on this rank's share of `global_batch`; returns (loss_sum, nll_sum, tokens)."""
        mine = global_batch[self.context.rank :: self.context.world_size]
        global_tokens = int(
            sum(self._tgt_label_counts[b].sum() for b in map(np.asarray, global_batch))
        )
        # DDP averages gradients over ranks; multiplying by world_size turns that average into the sum.
        scale = self.context.world_size / global_tokens
        sums = torch.zeros(3, device=self.device, dtype=torch.float64)
        self.forward_model.train()
        for i, indices in enumerate(mine):
            src, tgt = collate_pairs(
                [self.train_data[j] for j in indices],
                self.config.pad_id,
                self.config.bos_id,
                self.config.eos_id,
            )
            src, tgt = self._to_device(src), self._to_device(tgt)
            last = i == len(mine) - 1
            sync = (
                contextlib.nullcontext()
                if (last or not self.context.is_distributed)
                else self.forward_model.no_sync()
            )
            with sync:
                parts = batch_loss(
                    self.forward_model,
                    src,
                    tgt,
                    smoothing=self.config.label_smoothing,
                    pad_id=self.config.pad_id,
                    precision=self.precision,
                    real_rows_only=self.real_rows_only,
                    loss_fn=self.loss_fn,
                )
                # The logits' storage now holds their gradient (inplace_backward) and is freed with the graph.
                (parts.loss * scale).backward()
            sums += torch.stack(
                [
                    parts.loss.detach().double(),
                    parts.nll.detach().double(),
                    parts.tokens.double(),
                ]
            )
        if self.settings.clip_norm is not None:
            torch.nn.utils.clip_grad_norm_(
                self.model.parameters(), self.settings.clip_norm
            )
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        return sums

    # -------------------------------------------------------------------------------------- validation
    def validate(self) -> dict:
        if self.valid_data is None or len(self.valid_data) == 0:
            return {}
        result = teacher_forced_loss(
            self.model,
            self.valid_data,
            batch_tokens=self.settings.eval_batch_tokens,
            precision=self.precision,
            context=self.context,
        )
        self.progress.last_valid = {**result, "step": self.progress.step}
        self._log(
            {
                "kind": "valid",
                "step": self.progress.step,
                "epoch": self.progress.epoch,
                **result,
            }
        )
        return result

    # -------------------------------------------------------------------------------------- the loop
    def _limit_reached(self) -> str | None:
        r, p = self.settings, self.progress
        if r.max_steps is not None and p.step >= r.max_steps:
            return "max_steps"
        if r.max_epochs is not None and p.epoch >= r.max_epochs:
            return "max_epochs"
        if (
            r.time_budget_minutes is not None
            and self.budget_seconds_used() >= 60.0 * r.time_budget_minutes
        ):
            return "time_budget"
        return None

    def budget_seconds_used(self) -> float:
        """Seconds spent so far on the settings' budget clock (wall, or CPU time per thread)."""
        return (
            self.progress.train_cpu_s
            if self.settings.budget_clock == "cpu"
            else self.progress.train_time_s
        )

    def _stop_decision(self) -> str | None:
        """Why to stop after this step, if at all; the same answer on every rank.

        Step and epoch limits are the same everywhere; a signal or the clock may reach one rank first, so
        ranks agree on those through an all-reduce, every step in one process and every
        `STOP_CHECK_EVERY` steps with DDP (a GPU sync per step would cost more than a few extra steps).
        """
        limit = self._limit_reached()
        if limit in ("max_steps", "max_epochs"):
            return limit
        if self.context.is_distributed and self.progress.step % STOP_CHECK_EVERY:
            return None
        urgency = max_over_ranks(
            2 if self._stop.requested else 1 if limit == "time_budget" else 0,
            self.context,
        )
        return {2: "interrupted", 1: "time_budget"}.get(urgency)

    def _snapshot_due(self) -> bool:
        """A snapshot every save_every_steps steps or save_every_minutes minutes (ranks agree on the clock)."""
        r, p = self.settings, self.progress
        by_steps = bool(r.save_every_steps) and p.step % r.save_every_steps == 0
        by_time = (
            bool(r.save_every_minutes)
            and self.budget_seconds_used() - p.last_snapshot_time_s
            >= 60.0 * r.save_every_minutes
        )
        if (
            self.context.is_distributed
        ):  # rank 0 writes, then all ranks meet at a barrier: all must decide alike
            by_time = p.step % STOP_CHECK_EVERY == 0 and bool(
                max_over_ranks(int(by_time), self.context)
            )
        return by_steps or by_time

    def _next_global_batch(self) -> list[list[int]] | None:
        """The next step's micro-batches, moving to the next epoch when this one is used up."""
        while True:
            batches = self.batcher.epoch_batches(self.progress.epoch)
            steps_in_epoch = len(batches) // self.micro_batches_per_step
            if self.progress.batch_cursor < steps_in_epoch:
                start = self.progress.batch_cursor * self.micro_batches_per_step
                return batches[start : start + self.micro_batches_per_step]
            self.progress.epoch += 1
            self.progress.batch_cursor = 0
            if self._limit_reached() == "max_epochs":
                return None

    def train(self) -> TrainResult:
        """Run until a limit (steps, epochs, minutes) or a stop request; always leaves a resume checkpoint."""
        r, p = self.settings, self.progress
        if self.context.is_main:
            self.out_dir.mkdir(parents=True, exist_ok=True)
            self._log(
                {
                    "kind": "start",
                    "step": p.step,
                    "world_size": self.context.world_size,
                    "precision": self.precision,
                    "device": str(self.device),
                    "settings": r.to_dict(),
                    **self.metadata,
                    "padding_fraction": round(self.batcher.padding_fraction(p.epoch), 4),
                }
            )
        bar = self._bar = self._progress_bar()
        window = torch.zeros(3, device=self.device, dtype=torch.float64)
        window_start, window_steps = time.perf_counter(), 0
        stopped_by = self._limit_reached()
        with self._stop:
            session_start, cpu_start = time.perf_counter(), time.process_time()
            time_before, cpu_before = p.train_time_s, p.train_cpu_s
            threads = max(1, torch.get_num_threads())
            while stopped_by is None:
                global_batch = self._next_global_batch()
                if global_batch is None:
                    stopped_by = "max_epochs"
                    break
                step_sums = self.train_step(global_batch)
                window += step_sums
                p.step += 1
                p.batch_cursor += 1
                window_steps += 1
                p.train_time_s = time_before + (time.perf_counter() - session_start)
                p.train_cpu_s = cpu_before + (time.process_time() - cpu_start) / threads
                self._stop_if_diverged(step_sums)
                if self.on_step is not None:
                    self.on_step(self)
                if p.step % r.log_every == 0:
                    window_start = self._report(window, window_start, window_steps, bar)
                    window.zero_()
                    window_steps = 0
                elif bar is not None:
                    bar.update(1)
                if r.eval_every and p.step % r.eval_every == 0:
                    self.validate()
                if self._snapshot_due():
                    p.last_snapshot_time_s = self.budget_seconds_used()
                    self.save_snapshot()
                    self.save_resume_checkpoint()
                stopped_by = self._stop_decision()
            if bar is not None:
                bar.close()
            if window_steps:
                self._report(window, window_start, window_steps, None)
            if stopped_by != "interrupted":
                just_validated = (
                    bool(r.eval_every)
                    and p.step % r.eval_every == 0
                    and p.last_valid.get("step") == p.step
                )
                valid = p.last_valid if just_validated else self.validate()
                if not (
                    r.save_every_steps
                    and p.step % r.save_every_steps == 0
                    and self._snapshot_exists()
                ):
                    self.save_snapshot()
            else:
                valid = p.last_valid
            self.save_resume_checkpoint()
        if self.show_progress and self.context.is_main and on_a_page():
            # The page's one line in place of the bar.
            ppl = f", valid ppl {valid['ppl']:.2f}" if valid and "ppl" in valid else ""
            print(
                f"train {r.name}: {p.step:,} steps in {p.train_time_s:,.0f} s "
                f"({stopped_by}){ppl}"
            )
        self._log(
            {
                "kind": "stop",
                "step": p.step,
                "stopped_by": stopped_by,
                "train_time_s": round(p.train_time_s, 2),
                "reason": self._stop.reason,
            }
        )
        return TrainResult(
            out_dir=self.out_dir, progress=p, stopped_by=stopped_by, valid=valid
        )

    def _snapshot_exists(self) -> bool:
        return snapshot_path(self.out_dir, self.progress.step).is_file()

    def _progress_bar(self):
        if not (self.show_progress and self.context.is_main):
            return None
        return progress_bar(
            total=self.settings.max_steps,
            initial=self.progress.step,
            unit="step",
            dynamic_ncols=True,
            desc=f"train {self.settings.name}",
        )

    def _report(
        self, window: torch.Tensor, window_start: float, steps: int, bar
    ) -> float:
        """Log the mean loss of the last steps (summed over ranks) with speed and learning rate."""
        totals = all_reduce_sum(window.clone(), self.context).tolist()
        loss_sum, nll_sum, tokens = totals
        now = time.perf_counter()
        seconds = max(now - window_start, 1e-9)
        tokens = max(tokens, 1.0)
        self.progress.target_tokens += int(tokens)
        record = {
            "kind": "train",
            "step": self.progress.step,
            "epoch": self.progress.epoch,
            "loss": loss_sum / tokens,
            "nll": nll_sum / tokens,
            "ppl": math.exp(min(nll_sum / tokens, 50.0)),
            "lr": self.scheduler.get_last_lr()[0],
            "target_tokens_per_s": tokens / seconds,
            "target_tokens": self.progress.target_tokens,
            "train_time_s": round(self.progress.train_time_s, 2),
            "train_cpu_s": round(self.progress.train_cpu_s, 2),
        }
        self._log(record)
        if bar is not None:
            postfix = {
                "loss": f"{record['loss']:.3f}",
                "lr": f"{record['lr']:.2e}",
                "tok/s": f"{record['target_tokens_per_s']:.0f}",
            }
            budget = self.settings.time_budget_minutes
            if budget is not None:
                left = max(0.0, 60.0 * budget - self.budget_seconds_used())
                postfix["left"] = f"{int(left // 60)}:{int(left % 60):02d}"
            if self.progress.last_valid:
                postfix["val_ppl"] = f"{self.progress.last_valid['ppl']:.2f}"
            bar.set_postfix(postfix, refresh=False)
            bar.update(1)
        return now

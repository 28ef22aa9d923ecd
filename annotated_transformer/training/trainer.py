"""The training loop of section 5: Adam with the warm-up schedule, label smoothing, token-count batches.

Read it as a recipe: `Trainer.__init__` sets up (optimizer, schedule, batches, precision, DDP),
`train_step` is one optimizer update, `validate` one pass over the validation pairs, and `train` is
the loop that calls them, then saves. What it adds to the paper makes a run trustworthy anywhere:

- one optimizer step = one *global batch* of `accumulation x world_size` micro-batches, fixed by the data
  and the seed alone, so one process with accumulation N and N processes (DDP) take the same step;
- the loss of a step is summed over the global batch's target tokens and divided by their count, so
  micro-batches of different sizes weigh exactly as in one big batch;
- bf16 autocast where the hardware computes in bf16, fp16 autocast with a gradient scaler on GPUs
  with fp16 tensor cores only (the loss stays in float32), and torch.compile of the model and the
  loss: both decided before the trainer is built (`execution.choose_execution`) and passed in;
- a resume checkpoint after every snapshot and on Ctrl-C / SIGTERM, holding everything down to the RNG
  states and the position inside the epoch, so a resumed run ends with bit-identical parameters
  (`resume_state`); a loss that is no longer finite stops the run before it is saved (`divergence`);
- limits by steps, epochs or minutes, whichever comes first (`stopping`); metrics as JSON lines and
  a progress bar (`training_log`).
"""

from __future__ import annotations

import contextlib
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, NoReturn

import numpy as np
import torch
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel

from ..data.batching import EncodedPairs, collate_pairs
from ..runtime.distributed import DistributedContext, barrier
from . import divergence, stopping
from .checkpoint import (
    RESUME_NAME,
    atomic_torch_save,
    load_checkpoint,
    prune_snapshots,
    snapshot_of,
    snapshot_path,
)
from .compile_probe import compile_options, compiled_step_parts, eager_loss
from .divergence import TrainingDiverged
from .execution import StepExecution
from .global_batches import micro_batches_per_step, run_batcher
from .graphed_step import GraphedLosses
from .resume_state import (
    TrainingProgress,
    check_resumable,
    data_digest,
    restore_resume_state,
    resume_state,
)
from .schedule import NoamSchedule, build_optimizer, schedule_factor
from .settings import TrainSettings
from .step_stats import StepStats
from .teacher_forcing import batch_loss, teacher_forced_loss
from .training_log import TrainingLog

logger = logging.getLogger(__name__)


@dataclass
class TrainResult:
    out_dir: Path
    progress: TrainingProgress
    stopped_by: str  # "max_steps" | "max_epochs" | "time_budget" | "interrupted"
    valid: dict


class Trainer:
    """Trains `model` on `train_data` following `settings`; writes metrics and checkpoints under `out_dir`.

    Most callers use `training.fit`, which builds the model and seeds it the same way every time.
    `model` is a Transformer on its device, not wrapped (the trainer adds DDP and torch.compile
    itself). The `tokenizer` (anything with `to_bytes()`) goes into every checkpoint, so each is
    self-contained, and so do the JSON-able facts of `metadata`, also written in the metrics'
    `start` record (the pipeline's profile: a checkpoint knows its corpus and direction).
    `on_step(trainer)` is called after every optimizer step (tests use it to interrupt a run).
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
        execution: StepExecution,
        show_progress: bool = True,
        on_step: Callable[["Trainer"], None] | None = None,
        metadata: dict | None = None,
    ):
        self.model = model
        self.config = model.config
        # each dropout module's own rate, for `dropout_from_epoch` to switch on and off
        self._dropout_rates = {
            m: m.p for m in model.modules() if isinstance(m, nn.Dropout)
        }
        self.tokenizer = tokenizer
        self.train_data, self.valid_data = train_data, valid_data
        self.settings = settings
        self.metadata = dict(metadata or {})
        self.out_dir = Path(out_dir)
        device = next(model.parameters()).device
        self.context = context or DistributedContext(device=device)
        self.device = self.context.device
        self.on_step = on_step
        self.progress = TrainingProgress()
        self.log = TrainingLog(
            self.out_dir, settings, self.context, show_progress=show_progress
        )
        self._stop = stopping.StopRequest()

        self.optimizer = build_optimizer(model, settings, self.device)
        self.scheduler = NoamSchedule(
            self.optimizer,
            self.config.d_model,
            settings.warmup_steps,
            schedule_factor(settings, self.config.d_model),
        )
        self.micro_batches_per_step = micro_batches_per_step(
            settings, self.context.world_size
        )
        self.batcher = run_batcher(train_data, settings, self.context.world_size)
        # tokens + eos
        self._tgt_label_counts = np.asarray(train_data.tgt_lengths, dtype=np.int64) + 1

        self.execution = execution
        # fp16 rounds gradients below 6e-8 to zero, so the loss is multiplied by a large factor
        # before backward and the gradients divided by it before the update; a step whose gradients
        # overflowed is skipped and the factor halved. Disabled (bf16, fp32), every call of the
        # scaler is a no-op: scale() returns its input, step() calls optimizer.step().
        self.scaler = torch.amp.GradScaler(
            self.device.type, enabled=execution.precision == "fp16"
        )
        # The step reads nothing of the logits after backward, so their storage can take the gradient.
        forward_model, self.loss_fn = model, eager_loss()
        if execution.compiled:
            forward_model, self.loss_fn = compiled_step_parts(
                forward_model, **compile_options(settings)
            )
            if (
                settings.compile_mode == "reduce-overhead"
                and not settings.length_buckets
                and self.device.type == "cuda"
            ):
                logger.warning(
                    "--compile-mode reduce-overhead records a CUDA graph for every batch shape, "
                    "and token batches have a new shape almost every step: add --length-buckets"
                )
        # With cuda_graphs each batch shape's forward and backward is captured once and replayed.
        self.graphed: GraphedLosses | None = None
        if settings.cuda_graphs:
            if self.context.is_distributed:
                raise ValueError(
                    "cuda_graphs (--cuda-graphs) graphs one process's step, and DDP's hooks live "
                    "in the module the graph bypasses: leave --cuda-graphs out under torchrun"
                )
            self.graphed = GraphedLosses(
                model,
                self.loss_fn,
                smoothing=self.config.label_smoothing,
                pad_id=self.config.pad_id,
                precision=execution.precision,
            )
            if self.graphed.graphed and settings.dropout_from_epoch:
                raise ValueError(
                    "--dropout-from-epoch changes the dropout rate during the run, which the "
                    "captured CUDA graphs would not see: leave out --cuda-graphs, or pass "
                    "--dropout-from-epoch 0"
                )
            if not self.graphed.graphed:
                logger.warning(
                    "--cuda-graphs on %s: no CUDA graphs there, so the step runs eagerly "
                    "(every target row projected)",
                    self.device.type,
                )
        if self.context.is_distributed:
            ids = [self.device.index] if self.device.type == "cuda" else None
            forward_model = DistributedDataParallel(forward_model, device_ids=ids)
        self.forward_model = forward_model
        # Set where they happen, read at the end of the run: the step last validated and saved.
        self._snapshot_step: int | None = None
        # The learning rate of the last step this process took (set before each step; until the
        # first, the schedule's current rate, which a divergence message could only name after
        # a resumed run that took no step).
        self._step_lr: float = self.scheduler.get_last_lr()[0]
        # A loss a token above this is a diverged run, however finite (divergence.loss_limit).
        self._loss_limit = divergence.loss_limit(
            model.generator.out_features, self.config.label_smoothing
        )

    @property
    def precision(self) -> str:
        return self.execution.precision

    @property
    def compiled(self) -> bool:
        return self.execution.compiled

    # -------------------------------------------------------------------------------------- one step
    def train_step(self, global_batch: list[list[int]]) -> StepStats:
        """One optimizer update on this rank's share of `global_batch`; returns its sums."""
        mine = global_batch[self.context.rank :: self.context.world_size]
        global_tokens = int(
            sum(self._tgt_label_counts[b].sum() for b in map(np.asarray, global_batch))
        )
        # DDP averages gradients over ranks; multiplying by world_size turns that average into the sum.
        scale = self.context.world_size / global_tokens
        stats = StepStats.zeros(self.device)
        self.forward_model.train()
        for i, indices in enumerate(mine):
            src, tgt = self._micro_batch(indices)
            # Gradients of the micro-batches accumulate; DDP all-reduces them once, in the last backward.
            last = i == len(mine) - 1
            sync = (
                contextlib.nullcontext()
                if (last or not self.context.is_distributed)
                else self.forward_model.no_sync()
            )
            with sync:
                parts = (
                    self.graphed(src, tgt)
                    if self.graphed
                    else batch_loss(
                        self.forward_model,
                        src,
                        tgt,
                        smoothing=self.config.label_smoothing,
                        pad_id=self.config.pad_id,
                        precision=self.execution.precision,
                        real_rows_only=self.execution.real_rows_only,
                        loss_fn=self.loss_fn,
                    )
                )
                # The logits' storage now holds their gradient (inplace_backward) and is freed with the graph.
                self.scaler.scale(parts.loss * scale).backward()
            stats.add_micro_batch(parts.loss, parts.nll, parts.tokens)
        if self.settings.clip_norm is not None:
            # the true gradients are clipped, not the fp16 scaler's multiples of them
            self.scaler.unscale_(self.optimizer)
            torch.nn.utils.clip_grad_norm_(
                self.model.parameters(), self.settings.clip_norm
            )
        self.scaler.step(self.optimizer)
        self.scaler.update()
        # The schedule moves on every step, also one the fp16 scaler skipped: it counts global
        # batches, not updates, so the learning rate at each step is the paper's, and a skipped
        # step (a few at the start while the scaler finds its factor, then rarely) is one update
        # the run does without.
        self.scheduler.step()
        # A graphed step keeps its gradient tensors (GraphedLosses.keep_gradients).
        self.optimizer.zero_grad(set_to_none=self.graphed is None)
        return stats

    def _micro_batch(self, indices: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
        """The pairs `indices` as padded source and target ids on the device."""
        c = self.config
        pairs = [self.train_data[j] for j in indices]
        # A batcher with length buckets pads each batch to one of a few shapes (None: to its longest).
        pad_to = self.batcher.padded_shape(indices)
        src, tgt = collate_pairs(pairs, c.pad_id, c.bos_id, c.eos_id, pad_to=pad_to)
        if self.device.type != "cuda":
            return src.to(self.device), tgt.to(self.device)
        # From pinned host memory the copy to the GPU runs while the GPU is still busy.
        return (
            src.pin_memory().to(self.device, non_blocking=True),
            tgt.pin_memory().to(self.device, non_blocking=True),
        )

    # -------------------------------------------------------------------------------------- validation
    def validate(self) -> dict:
        if self.valid_data is None or len(self.valid_data) == 0:
            return {}
        result = teacher_forced_loss(
            self.model,
            self.valid_data,
            batch_tokens=self.settings.eval_batch_tokens,
            precision=self.execution.precision,
            context=self.context,
        )
        self.progress.last_valid = {**result, "step": self.progress.step}
        self.log.write(
            {
                "kind": "valid",
                "step": self.progress.step,
                "epoch": self.progress.epoch,
                **result,
            }
        )
        return result

    # -------------------------------------------------------------------------------------- the loop
    def train(self) -> TrainResult:
        """Run until a limit (steps, epochs, minutes) or a stop request; always leaves a resume checkpoint."""
        r, p = self.settings, self.progress
        if self.context.is_main:
            self.log.write(
                {
                    "kind": "start",
                    "step": p.step,
                    "world_size": self.context.world_size,
                    "precision": self.execution.precision,
                    "compiled": self.execution.compiled,
                    "device": str(self.device),
                    "settings": r.to_dict(),
                    **self.metadata,
                    "padding_fraction": round(self.batcher.padding_fraction(p.epoch), 4),
                }
            )
        self.log.open(p)
        stopped_by = stopping.limit_reached(r, p)
        with self._stop:  # Ctrl-C and SIGTERM now ask the loop to stop after the step
            clock = stopping.InvocationClock(p)
            stats = None
            while stopped_by is None:
                global_batch = self._next_global_batch()
                if global_batch is None:
                    stopped_by = "max_epochs"
                    break
                self._apply_dropout_start()
                # the rate this step's update uses: the log and a divergence name it, not the next one's
                self._step_lr = self.scheduler.get_last_lr()[0]
                stats = self.train_step(global_batch)
                self.log.add(stats)
                p.step += 1
                p.batch_cursor += 1
                clock.tick(p)
                self._check_loss(stats)
                if self.on_step is not None:
                    self.on_step(self)
                if p.step % r.log_every == 0:
                    self._check_loss(stats, every_step=True)  # no loss logged unchecked
                    self.log.report(p, self._step_lr)
                else:
                    self.log.tick()
                if r.eval_every and p.step % r.eval_every == 0:
                    self.validate()
                if stopping.snapshot_due(r, p, self.context):
                    # on every device before a save
                    self._check_loss(stats, every_step=True)
                    p.last_snapshot_time_s = stopping.budget_seconds_used(r, p)
                    self.save_snapshot()
                    self.save_resume_checkpoint()
                stopped_by = stopping.stop_decision(r, p, self._stop, self.context)
            # the last step, checked on every device before the end saves
            if stats is not None:
                self._check_loss(stats, every_step=True)
            self.log.close(p, self._step_lr)
            if stopped_by != "interrupted":  # the end of a run: validate and save
                # validate() records the step it validated at; a run that just did needs no second pass
                validated_now = p.last_valid.get("step") == p.step
                valid = p.last_valid if validated_now else self.validate()
                if self._snapshot_step != p.step:
                    self.save_snapshot()
            else:
                valid = p.last_valid
            self.save_resume_checkpoint()
        self.log.finish(p, stopped_by, valid, self._stop.reason)
        return TrainResult(
            out_dir=self.out_dir, progress=p, stopped_by=stopped_by, valid=valid
        )

    def _apply_dropout_start(self) -> None:
        """No dropout before epoch `dropout_from_epoch`, the model's own rates from it on: set
        before every step from the epoch alone, so a resumed run drops out as the straight one."""
        start = self.settings.dropout_from_epoch
        if start:
            on = self.progress.epoch >= start
            for module, rate in self._dropout_rates.items():
                module.p = rate if on else 0.0

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
            if stopping.limit_reached(self.settings, self.progress) == "max_epochs":
                return None

    def epochs_done(self) -> float:
        """Epochs trained, the current one counted by its share of steps taken."""
        p = self.progress
        return p.epoch + p.batch_cursor / max(1, self.batcher.steps_per_epoch(p.epoch))

    def request_stop(self, reason: str = "requested") -> None:
        """Stop after the current step, saving a resume checkpoint first (what Ctrl-C does)."""
        self._stop.requested, self._stop.reason = True, reason

    # -------------------------------------------------------------------------------------- saving
    def save_snapshot(self) -> Path | None:
        """The weights (`checkpoints/step_*.pt`), keeping the last `keep_snapshots`."""
        if not divergence.weights_are_finite(self.model):
            self._diverged("the weights are no longer finite")
        path = snapshot_path(self.out_dir, self.progress.step)
        if self.context.is_main:
            atomic_torch_save(self.snapshot_dict(), path)
            prune_snapshots(self.out_dir, self.settings.keep_snapshots)
        self._snapshot_step = self.progress.step
        return path

    def save_resume_checkpoint(self) -> Path | None:
        """Everything needed to continue exactly (`last.pt`); every rank waits until it is written."""
        if not divergence.weights_are_finite(self.model):
            self._diverged("the weights are no longer finite")
        path = self.out_dir / RESUME_NAME
        if self.context.is_main:
            atomic_torch_save(self.state_dict(), path)
        barrier(self.context)
        return path

    def snapshot_dict(self) -> dict:
        """Model weights with what is needed to use them (config, vocabulary sizes, tokenizer, settings)."""
        return snapshot_of(
            self.model,
            self.tokenizer,
            step=self.progress.step,
            settings=self.settings.to_dict(),
            **self.metadata,
        )

    def state_dict(self) -> dict:
        """The resume checkpoint: everything needed to continue this run exactly."""
        return resume_state(
            self.snapshot_dict(),
            self.optimizer,
            self.scheduler,
            self.progress,
            self.micro_batches_per_step,
            self.scaler,
            data=self._data_identity(),
        )

    def _data_identity(self) -> dict:
        """What the run validates on (its pairs' digest), computed once: the data never changes."""
        if getattr(self, "_valid_digest", None) is None:
            self._valid_digest = data_digest(self.valid_data)
        return {"valid": self._valid_digest}

    def load_state_dict(self, state: dict, source: str = "the checkpoint") -> None:
        """Continue the run `state` saved. Everything that shapes the model, the batches or the
        schedule must be what it was: a change is refused with its name, never half applied."""
        check_resumable(
            state,
            source,
            config=self.config,
            settings=self.settings,
            tokenizer=self.tokenizer,
            micro_batches_per_step=self.micro_batches_per_step,
            data=self._data_identity(),
        )
        self.progress = restore_resume_state(
            state, self.model, self.optimizer, self.scheduler, self.scaler
        )
        # the snapshot of the step resumed at, when the run that stopped there saved one
        saved = snapshot_path(self.out_dir, self.progress.step).is_file()
        self._snapshot_step = self.progress.step if saved else None

    def resume_from(self, path: str | os.PathLike) -> None:
        """Continue from a resume checkpoint (a `last.pt` or the `--out` folder holding it)."""
        self.load_state_dict(load_checkpoint(path, map_location="cpu"), str(path))
        self.log.write({"kind": "resume", "step": self.progress.step, "from": str(path)})

    def _check_loss(self, stats: StepStats, *, every_step: bool = False) -> None:
        """Stop with TrainingDiverged when the step's loss is not finite or above the limit."""
        p = self.progress
        if divergence.loss_diverged(
            stats,
            p.step,
            self.device,
            self.context,
            self._loss_limit,
            every_step=every_step,
        ):
            self._diverged(divergence.describe_loss(stats, self._loss_limit))

    def _diverged(self, what: str) -> NoReturn:
        """Stop with TrainingDiverged; nothing from this step on is saved."""
        message = divergence.message(
            what, self.progress.step, self._step_lr, self.out_dir
        )
        self.log.diverged(self.progress.step, message)
        raise TrainingDiverged(message)

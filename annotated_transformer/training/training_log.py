"""What a run tells as it goes: `metrics.jsonl`, the mean loss of every few steps, the progress bar.

Every record is one JSON line in the run folder's `metrics.jsonl`, written by rank 0 only:
`start`, `train` (every `log_every` steps), `valid`, `resume`, `diverged` and `stop`; chapter 04
and the experiments read them back. A `train` record averages the loss over the target tokens of
the steps since the last one, summed over all ranks, so it is the loss of the global batches,
whatever the number of processes. The bar is tqdm's on rank 0, or a single line on a page the book
runner executes.
"""

from __future__ import annotations

import time
from pathlib import Path

from ..runtime.distributed import DistributedContext
from ..runtime.files import append_line
from ..runtime.progress import on_a_page, progress_bar
from ..runtime.records import json_text, read_lines
from .resume_state import TrainingProgress
from .run_folder import METRICS_NAME
from .settings import TrainSettings
from .step_stats import StepStats, per_token
from .stopping import budget_seconds_used


class TrainingLog:
    """The run's records and its bar; `add` each step's `StepStats`, `report` their means."""

    def __init__(
        self,
        out_dir: Path,
        settings: TrainSettings,
        context: DistributedContext,
        *,
        show_progress: bool,
    ):
        self.out_dir, self.settings, self.context = out_dir, settings, context
        self.show_progress = show_progress
        self.bar = None

    def write(self, record: dict) -> None:
        """Append `record` to metrics.jsonl (rank 0 only)."""
        if not self.context.is_main:
            return
        path = self.out_dir / METRICS_NAME
        append_line(path, json_text(record, path, "metrics_log"))

    def open(self, progress: TrainingProgress) -> None:
        """Start the bar (rank 0, when asked for) and an empty window of steps."""
        self.bar = None
        if self.show_progress and self.context.is_main:
            self.bar = progress_bar(
                total=self.settings.max_steps,
                initial=progress.step,
                unit="step",
                dynamic_ncols=True,
                desc=f"train {self.settings.name}",
            )
        self.window = StepStats.zeros(self.context.device)
        self.window_start, self.window_steps = time.perf_counter(), 0

    def add(self, stats: StepStats) -> None:
        """Count one step's sums towards the next report."""
        self.window += stats
        self.window_steps += 1

    def tick(self) -> None:
        """A step without a report moves the bar only."""
        if self.bar is not None:
            self.bar.update(1)

    def report(self, progress: TrainingProgress, lr: float) -> None:
        """Log the mean loss of the steps since the last report, with speed and learning rate."""
        self._report(progress, lr, self.bar)

    def close(self, progress: TrainingProgress, lr: float) -> None:
        """Close the bar and report the steps not reported yet."""
        if self.bar is not None:
            self.bar.close()
        if self.window_steps:
            self._report(progress, lr, None)

    def diverged(self, step: int, message: str) -> None:
        """The `diverged` record, with the bar closed first so the error reads on its own."""
        if self.bar is not None:
            self.bar.close()
        self.write({"kind": "diverged", "step": step, "message": message})

    def finish(
        self, progress: TrainingProgress, stopped_by: str, valid: dict, reason: str
    ) -> None:
        """The `stop` record, and on an executed page the one line in place of the bar."""
        if self.show_progress and self.context.is_main and on_a_page():
            ppl = f", valid ppl {valid['ppl']:.2f}" if valid and "ppl" in valid else ""
            print(
                f"train {self.settings.name}: {progress.step:,} steps in "
                f"{progress.train_time_s:,.0f} s ({stopped_by}){ppl}"
            )
        self.write(
            {
                "kind": "stop",
                "step": progress.step,
                "stopped_by": stopped_by,
                "train_time_s": round(progress.train_time_s, 2),
                "reason": reason,
            }
        )

    def _report(self, progress: TrainingProgress, lr: float, bar) -> None:
        # The all-reduce runs on every rank; the tokens it counts are added to the progress.
        loss_sum, nll_sum, tokens = self.window.totals(self.context)
        now = time.perf_counter()
        seconds = max(now - self.window_start, 1e-9)
        progress.target_tokens += int(tokens)
        record = {
            "kind": "train",
            "step": progress.step,
            "epoch": progress.epoch,
            **per_token(loss_sum, nll_sum, tokens),
            "lr": lr,
            "target_tokens_per_s": max(tokens, 1.0) / seconds,
            "target_tokens": progress.target_tokens,
            "train_time_s": round(progress.train_time_s, 2),
            "train_cpu_s": round(progress.train_cpu_s, 2),
        }
        self.write(record)
        self.window.zero_()
        self.window_start, self.window_steps = now, 0
        if bar is not None:
            postfix = {
                "loss": f"{record['loss']:.3f}",
                "lr": f"{record['lr']:.2e}",
                "tok/s": f"{record['target_tokens_per_s']:.0f}",
            }
            budget = self.settings.time_budget_minutes
            if budget is not None:
                left = max(
                    0.0, 60.0 * budget - budget_seconds_used(self.settings, progress)
                )
                postfix["left"] = f"{int(left // 60)}:{int(left % 60):02d}"
            if progress.last_valid:
                postfix["val_ppl"] = f"{progress.last_valid['ppl']:.2f}"
            bar.set_postfix(postfix, refresh=False)
            bar.update(1)


def read_metrics(folder: str | Path) -> list[dict]:
    """The records of a run's `metrics.jsonl`, oldest first ([] when there is none); a line
    that is not strict JSON is one RecordError naming the file and the line."""
    path = Path(folder) / METRICS_NAME
    if not path.is_file():
        return []
    fix = "the run's log is damaged: restore it, or train the run again with --overwrite"
    return read_lines(path, "metrics_log", fix=fix)

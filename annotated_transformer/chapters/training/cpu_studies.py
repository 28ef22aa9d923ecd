"""Chapter 04's two studies that train on the CPU under every profile, started early on a GPU machine.

The copy task (section 4.5: sinusoidal and learned positions) and post-norm against pre-norm (4.7:
four six-layer runs of width 64) train small models in one-thread processes (`runtime.side_by_side`)
whatever the profile: on one H100 the norm runs had not finished 400 steps after more than a minute
on the GPU, where two CPU cores train them in under one (results/book_gpu/README.md).

On a CPU each study starts in its own section, when the cores are free. On a GPU machine the
chapter's process mostly waits on the device while its other cores idle, so there, given a core
for each of the six runs and one more for the chapter, both start as soon as their inputs exist:
the copy task at once, beside the chapter's set-up and demonstrations (it is collected in 4.5,
before the real run), and the norm runs once the training pairs are encoded, beside the rest and
the real run on the GPU (4.6); their sections then collect them. Where and when they run changes
nothing they compute: one thread per run, the same seeds and batches.
"""

from __future__ import annotations

import pandas as pd

from ...profiles import Profile
from ...runtime.progress import progress_bar
from ...runtime.side_by_side import StartedEarly, side_by_side_workers, usable_cores
from . import warmup
from .copy_task import train_copy_task
from .sizes import TrainingSizes

POSITIONALS = ("sinusoidal", "learned")


def copy_jobs(sizes: TrainingSizes, seed: int) -> list[dict]:
    """The two copy-task runs' arguments for `train_copy_task`: the paper's sinusoids and learned
    positions (Table 3's row E), trained on 1 to `sizes.copy_length` tokens."""
    return [
        dict(
            steps=sizes.copy_steps,
            batch_size=sizes.copy_batch,
            length=(1, sizes.copy_length),
            seed=seed,
            log_every=max(1, sizes.copy_steps // 40),
            verbose=False,
            positional=positional,
        )
        for positional in POSITIONALS
    ]


class CpuStudies:
    """The copy task and the norm study of one chapter run. With `early` (the chapter's device is
    a GPU) each starts as soon as it can, when the machine has a core for every run and one for
    the chapter; `self.early` says whether they did."""

    def __init__(self, sizes: TrainingSizes, seed: int, *, early: bool):
        self.sizes, self.seed = sizes, seed
        jobs = copy_jobs(sizes, seed)
        self.copy_workers = side_by_side_workers("cpu", len(jobs))
        self._copy = StartedEarly(train_copy_task, jobs, workers=self.copy_workers)
        self.norm_workers = side_by_side_workers("cpu", len(warmup.RUN_ORDER))
        self.early = early and usable_cores() > self.copy_workers + self.norm_workers
        self.norm_experiment: warmup.NormExperiment | None = None
        self._norm: StartedEarly | None = None
        if self.early:
            self._copy.start()

    def prepare_norm_study(
        self, pairs, vocab: int, profile: Profile
    ) -> warmup.NormExperiment:
        """The norm study's models and batches on the profile's training `pairs` (on the CPU, with
        the profile's Adam), its four runs started when `early`."""
        self.norm_experiment = warmup.NormExperiment(
            pairs, vocab, warmup.NormSetup(), self.seed, "cpu",
            profile.adam_betas, profile.adam_eps,
        )  # fmt: skip
        # each run's own bar only when the runs go one after another in this process
        one_by_one = self.norm_workers <= 1 and not self.early
        jobs = warmup.warmup_jobs(
            self.norm_experiment, self.sizes.norm_steps, progress=one_by_one
        )
        self._norm = StartedEarly(warmup.warmup_run, jobs, workers=self.norm_workers)
        if self.early:
            self._norm.start()
        return self.norm_experiment

    def where(self, study: str, workers: int) -> str:
        """How a study's runs were placed, for its progress bar."""
        when = "started early" if self.early else "started now"
        return f"{study}, {when}, on {workers} CPU process(es)"

    def copy_task(self) -> dict[str, dict]:
        """{positional: train_copy_task's result}, waiting for the runs still training."""
        runs = progress_bar(
            self._copy.results(),
            total=len(POSITIONALS),
            desc=self.where("copy task", self.copy_workers),
        )
        return {run["positional"]: run for run in runs}

    def norm_study(self) -> pd.DataFrame:
        """The four norm runs as `warmup.log_frame` gives them, waiting for those still training."""
        if self._norm is None:
            raise RuntimeError(
                "prepare_norm_study first: the runs need the training pairs"
            )
        logs = self._norm.results()
        if self.norm_workers > 1:
            logs = progress_bar(
                logs,
                total=len(warmup.RUN_ORDER),
                desc=self.where("post-norm against pre-norm", self.norm_workers),
            )
        return warmup.log_frame(logs, self.sizes.norm_steps)

"""How much of chapter 04's own small experiments each profile affords: its record of sizes and its value under
every profile (the `gpu` sizes grow the `cpu` ones where a GPU affords more)."""

from __future__ import annotations

from dataclasses import dataclass

from ..sizes import Sizes, accessors


@dataclass(frozen=True)
class TrainingSizes(Sizes):
    """Chapter 04's own small experiments (the profile's translation run is the profile's).

    Attributes:
        bpe_sample_pairs: training pairs the chapter's own BPE learns its merges from.
        bpe_merges: merges it learns.
        copy_steps: training steps of the copy task (sinusoidal and learned positions alike).
        copy_length: the longest sequence the copy task trains on (it starts at 1).
        copy_batch: sequences per copy-task batch.
        eval_per_length: sequences scored at each length in the extrapolation test.
        norm_steps: training steps of each model in the post-norm/pre-norm comparison.
        resume_steps: steps of the stopped-and-resumed demonstration run.
        resume_stop_at: the step where it is stopped.
    """

    bpe_sample_pairs: int
    bpe_merges: int
    copy_steps: int
    copy_length: int
    copy_batch: int
    eval_per_length: int
    norm_steps: int
    resume_steps: int
    resume_stop_at: int


SMOKE = TrainingSizes(
    bpe_sample_pairs=1000,
    bpe_merges=30,
    copy_steps=200,
    copy_length=6,
    copy_batch=32,
    eval_per_length=40,
    norm_steps=20,
    resume_steps=24,
    resume_stop_at=10,
)
CPU = TrainingSizes(
    bpe_sample_pairs=2000,
    bpe_merges=40,
    copy_steps=1600,
    copy_length=10,
    copy_batch=64,
    eval_per_length=100,
    norm_steps=250,
    resume_steps=36,
    resume_stop_at=15,
)
# The copy task and post-norm against pre-norm train on the CPU under every profile, at the cpu
# sizes: on one H100 the four norm runs of 400 steps had not finished after more than a minute, where
# two cores train them for 250 steps in under one (results/book_gpu/README.md).
GPU = CPU
PAPER = GPU
BY_PROFILE = {"smoke": SMOKE, "cpu": CPU, "gpu": GPU, "paper": PAPER}

# `of(profile_name)`: the sizes under a profile; `table(profile_name)`: every profile side by side
of, table = accessors(BY_PROFILE)

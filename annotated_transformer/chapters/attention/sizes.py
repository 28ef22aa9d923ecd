"""How much of chapter 01's statistics of scaled dot products and its timed attention each profile affords: its record of sizes and its value under
every profile (the `gpu` sizes grow the `cpu` ones where a GPU affords more)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..sizes import Sizes, accessors


@dataclass(frozen=True)
class AttentionSizes(Sizes):
    """Chapter 01's experiments: the statistics of scaled dot products and the timed attention.

    Attributes:
        samples: query-key pairs each variance of q . k averages over (a twentieth of them, at
            least 200, for the softmax's saturation).
        d_ks: the key widths d_k the statistics sweep.
        n_keys: keys per query in the softmax's saturation (four times as many in the timing of
            additive against dot-product scores).
        time_batch: sequences in a timed batch.
        time_len: positions in a timed sequence (and queries in the timing of the two scorings).
        repeats: timed runs behind each timing's median and spread.
    """

    samples: int
    d_ks: tuple[int, ...]
    n_keys: int
    time_batch: int
    time_len: int
    repeats: int


SMOKE = AttentionSizes(
    samples=4_000,
    d_ks=(4, 16, 64, 256, 512),
    n_keys=32,
    time_batch=4,
    time_len=64,
    repeats=3,
)
CPU = AttentionSizes(
    samples=20_000,
    d_ks=(2, 4, 8, 16, 32, 64, 128, 256, 512, 1024),
    n_keys=64,
    time_batch=16,
    time_len=256,
    repeats=5,
)
GPU = dataclasses.replace(CPU, time_batch=64, time_len=1024)
PAPER = GPU
BY_PROFILE = {"smoke": SMOKE, "cpu": CPU, "gpu": GPU, "paper": PAPER}

# `of(profile_name)`: the sizes under a profile; `table(profile_name)`: every profile side by side
of, table = accessors(BY_PROFILE)

"""How much of chapter 02's checks of the positional encoding each profile affords: its record of sizes and its value under
every profile (the `gpu` sizes grow the `cpu` ones where a GPU affords more)."""

from __future__ import annotations

from dataclasses import dataclass

from ..sizes import Sizes, accessors


@dataclass(frozen=True)
class ModelSizes(Sizes):
    """Chapter 02's checks of the positional encoding.

    Attributes:
        positions: positions of the table the checks compare.
        shifts: the offsets k checked to be a rotation, PE(pos + k) = M_k PE(pos).
    """

    positions: int
    shifts: tuple[int, ...]


SMOKE = ModelSizes(positions=256, shifts=(1, 2, 5, 17, 50))
CPU = ModelSizes(positions=2048, shifts=(1, 2, 3, 5, 8, 17, 50, 100, 333, 1000))
GPU = CPU
PAPER = GPU
BY_PROFILE = {"smoke": SMOKE, "cpu": CPU, "gpu": GPU, "paper": PAPER}

# `of(profile_name)`: the sizes under a profile; `table(profile_name)`: every profile side by side
of, table = accessors(BY_PROFILE)

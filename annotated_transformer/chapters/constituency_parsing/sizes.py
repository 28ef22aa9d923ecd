"""How much of chapter 07's parser and its learning curve each profile affords: its record of sizes and its value under
every profile (the `gpu` sizes grow the `cpu` ones where a GPU affords more)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..sizes import Sizes, accessors


@dataclass(frozen=True)
class ParsingSizes(Sizes):
    """Chapter 07's parser and its learning curve.

    Attributes:
        recipe: the fields of the parser's recipe this profile sets (`ParserRecipe.from_dict` of
            `curve`; the others keep the recipe's defaults).
        shares: the shares of the training files, one run each, that the learning curve trains on.
        workers: processes training the runs side by side (one thread each on a CPU; sharing the device on a GPU).
        dev_trees: development trees each snapshot is scored on (None: all).
        test_sentences: test sentences the averaged parser is scored on (None: all).
    """

    recipe: dict
    shares: tuple[float, ...]
    workers: int
    dev_trees: int | None
    test_sentences: int | None


SMOKE = ParsingSizes(
    recipe=dict(
        n_layers=1,
        d_model=32,
        d_ff=64,
        n_heads=2,
        dropout=0.1,
        batch_tokens=2048,
        warmup_steps=20,
        peak_lr=3e-3,
        epochs=2,
        snapshot_epochs=1,
        average_last=2,
        tags=True,
    ),
    shares=(0.5, 1.0),
    workers=2,
    dev_trees=16,
    test_sentences=8,
)
# tags in the slots, as the authors' code writes its targets; chosen on the 273 dev trees
CPU = ParsingSizes(
    recipe=dict(
        n_layers=2,
        d_model=128,
        d_ff=512,
        n_heads=4,
        dropout=0.1,
        label_smoothing=0.1,
        batch_tokens=1024,
        warmup_steps=800,
        epochs=22,
        snapshot_epochs=2,
        average_last=3,
        tags=True,
    ),
    # all the files; other shares come from results/parser_extended_cpu
    shares=(1.0,),
    workers=2,
    dev_trees=None,
    test_sentences=None,
)
# Not yet run on a GPU: the cpu recipe one size up, and the epochs where the cpu curve flattens
# times four; the curve this profile draws is what should set its scale.
GPU = dataclasses.replace(
    CPU,
    recipe=dict(
        CPU.recipe,
        n_layers=3,
        d_model=256,
        d_ff=1024,
        dropout=0.2,
        batch_tokens=4096,
        epochs=50,
        snapshot_epochs=5,
        average_last=5,
        tags=True,
    ),
    shares=(0.25, 0.5, 1.0),
    # the four runs (three shares and the XX variant) in four processes sharing the GPU: a
    # model of this size (3+3 layers at d_model 256, Table 3's base at the gpu scale) trained
    # about as fast in each of four processes as alone (results/gpu/book_calibration)
    workers=4,
)
# Section 6.3: 4 layers at d_model 1024 (the `parsing` preset), the paper's schedule.
PAPER = ParsingSizes(
    recipe=dict(
        n_layers=4,
        d_model=1024,
        d_ff=4096,
        n_heads=16,
        dropout=0.3,
        batch_tokens=25_000,
        warmup_steps=4000,
        epochs=100,
        snapshot_epochs=10,
        average_last=5,
        tags=True,
    ),
    shares=(1.0,),
    workers=1,
    dev_trees=None,
    test_sentences=None,
)
BY_PROFILE = {"smoke": SMOKE, "cpu": CPU, "gpu": GPU, "paper": PAPER}

# `of(profile_name)`: the sizes under a profile; `table(profile_name)`: every profile side by side
of, table = accessors(BY_PROFILE)

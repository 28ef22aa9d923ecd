"""How much of chapter 03's measurements of Table 1 each profile affords: its record of sizes and its value under
every profile (the `gpu` sizes grow the `cpu` ones where a GPU affords more)."""

from __future__ import annotations

from dataclasses import dataclass

from ..sizes import Sizes, accessors


@dataclass(frozen=True)
class LengthSweep(Sizes):
    """Timed sequence lengths at one width.

    Attributes:
        ns: the sequence lengths n.
        d: the model width.
        batch: sequences per timed batch.
    """

    ns: tuple[int, ...]
    d: int
    batch: int


@dataclass(frozen=True)
class WidthSweep(Sizes):
    """Timed model widths at one sequence length.

    Attributes:
        n: the sequence length.
        ds: the model widths d.
        batch: sequences per timed batch.
    """

    n: int
    ds: tuple[int, ...]
    batch: int


@dataclass(frozen=True)
class SubwordSample(Sizes):
    """The small BPE model chapter 03 measures sentence lengths with.

    Attributes:
        lines: training sentences of each side of each corpus (Multi30k and the WMT14 sample)
            the model learns from.
        vocab: its vocabulary size.
        test_lines: test sentences of each corpus and language measured.
    """

    lines: int
    vocab: int
    test_lines: int


@dataclass(frozen=True)
class WhySelfAttentionSizes(Sizes):
    """Chapter 03's measurements of Table 1.

    Attributes:
        by_n: the sweep growing the length at a fixed width.
        by_d: the sweep growing the width at a fixed length.
        crossover: self-attention against recurrence at the base model's width, d = 512.
        repeats: runs each timing takes the fastest of.
        path_ns: the lengths whose maximum path lengths are computed.
        path_example_n: the length whose paths to the last output are drawn.
        bpe: the BPE model that measures the corpora's sentences in subwords.
    """

    by_n: LengthSweep
    by_d: WidthSweep
    crossover: LengthSweep
    repeats: int
    path_ns: tuple[int, ...]
    path_example_n: int
    bpe: SubwordSample


SMOKE = WhySelfAttentionSizes(
    by_n=LengthSweep(ns=(32, 64, 128, 256, 512), d=64, batch=2),
    by_d=WidthSweep(n=64, ds=(32, 64, 128, 256, 512), batch=2),
    crossover=LengthSweep(ns=(128, 256, 512, 1024, 2048), d=512, batch=1),
    repeats=2,
    path_ns=(2, 4, 8, 16, 32, 64, 128),
    path_example_n=32,
    bpe=SubwordSample(lines=1000, vocab=1000, test_lines=300),
)
CPU = WhySelfAttentionSizes(
    by_n=LengthSweep(ns=(32, 64, 128, 256, 512, 1024, 2048), d=128, batch=2),
    by_d=WidthSweep(n=256, ds=(32, 64, 128, 256, 512, 1024), batch=2),
    crossover=LengthSweep(
        ns=(64, 128, 256, 512, 768, 1024, 1536, 2048, 3072), d=512, batch=1
    ),
    repeats=3,
    path_ns=(2, 4, 8, 16, 32, 64, 128, 256, 512),
    path_example_n=32,
    bpe=SubwordSample(lines=4000, vocab=4000, test_lines=3003),
)
GPU = WhySelfAttentionSizes(
    by_n=LengthSweep(ns=(64, 128, 256, 512, 1024, 2048, 4096, 8192), d=256, batch=8),
    by_d=WidthSweep(n=1024, ds=(64, 128, 256, 512, 1024, 2048), batch=8),
    crossover=LengthSweep(ns=(256, 512, 1024, 2048, 4096, 8192, 16384), d=512, batch=8),
    repeats=5,
    path_ns=(2, 4, 8, 16, 32, 64, 128, 256, 512),
    path_example_n=32,
    bpe=SubwordSample(lines=4000, vocab=4000, test_lines=3003),
)
PAPER = GPU
BY_PROFILE = {"smoke": SMOKE, "cpu": CPU, "gpu": GPU, "paper": PAPER}

# `of(profile_name)`: the sizes under a profile; `table(profile_name)`: every profile side by side
of, table = accessors(BY_PROFILE)

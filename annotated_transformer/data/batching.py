"""Batches by token count, bucketed by length (paper, section 5.1: "each training batch contained a set of
sentence pairs containing approximately 25000 source tokens and 25000 target tokens").

A fixed number of sentences per batch would waste most of a batch on padding when lengths vary; instead
pairs of similar length are packed until the padded tensor would exceed `max_tokens`. The batch order is
shuffled from (seed, epoch) alone, so a resumed run sees exactly the batches it would have seen.
"""

from __future__ import annotations

import logging
from typing import Sequence

import numpy as np
import torch
from torch.utils.data import Dataset

logger = logging.getLogger(__name__)

# Tokens the collate function adds: the source gets eos, the target bos and eos.
SRC_SPECIALS = 1
TGT_SPECIALS = 2


def pair_fits(src_length: int, tgt_length: int, max_positions: int) -> bool:
    """Whether a pair of `src_length` and `tgt_length` subwords fits a model with `max_positions` positions.

    The encoder reads the source plus eos, the decoder bos plus the target (and predicts the target plus
    eos), so each side needs its length + 1 positions. The one rule training and evaluation both apply.
    """
    return (
        src_length + SRC_SPECIALS <= max_positions
        and tgt_length + TGT_SPECIALS - 1 <= max_positions
    )


def pack_by_tokens(
    order: Sequence[int],
    widths: Sequence[Sequence[int]],
    max_tokens: int,
    max_pairs: int | None = None,
) -> list[list[int]]:
    """Pack items, in `order`, into consecutive batches whose padded size fits `max_tokens` on every side.

    A batch of n items costs max(width) * n slots per side (`widths` holds one sequence of widths per side,
    indexed by item). An item that does not fit even alone gets a batch of its own; callers that must not
    see such batches leave those items out first (TokenBatcher does).
    """
    sides = [np.asarray(side, dtype=np.int64).tolist() for side in widths]
    batches: list[list[int]] = []
    current: list[int] = []
    widest = [0] * len(sides)
    for index in order:
        index = int(index)
        new = [max(w, side[index]) for w, side in zip(widest, sides)]
        n = len(current) + 1
        if current and (
            any(w * n > max_tokens for w in new)
            or (max_pairs is not None and n > max_pairs)
        ):
            batches.append(current)
            current, new = [], [side[index] for side in sides]
        current.append(index)
        widest = new
    if current:
        batches.append(current)
    return batches


class LengthBuckets:
    """A few padded widths that every batch's source and target tensors are padded up to.

    A compiled step (torch.compile, CUDA graphs) is specialised to its tensors' shapes; batches packed
    by tokens have a new (rows, source width, target width) almost every step. With buckets, each side's
    width is padded to the smallest bucket size that holds it, and the rows to what the token budget
    allows at those widths (`TokenBatcher.padded_shape`), so an epoch has at most len(sizes) ** 2 shapes.
    Padding is masked (source keys) or ignored (target labels), so a batch's loss is the unpadded one
    to float rounding. `sizes` are tensor widths, bos/eos included, in increasing order.
    """

    def __init__(self, sizes: Sequence[int]):
        sizes = [int(s) for s in sizes]
        if not sizes or any(s < 1 for s in sizes) or sorted(set(sizes)) != sizes:
            raise ValueError(
                f"bucket sizes must be increasing positive widths, got {sizes}"
            )
        self.sizes: tuple[int, ...] = tuple(sizes)

    @classmethod
    def doubling(cls, largest: int) -> "LengthBuckets":
        """Sizes from 8 up in two even steps per doubling (8, 12, 16, 24, 32, ...), each a multiple
        of 4, and `largest` last: padding wastes under half a width."""
        if largest < 1:
            raise ValueError(f"largest must be >= 1, got {largest}")
        sizes, low = set(), 8
        while low < largest:
            sizes.update((low, low + low // 2))  # multiples of 4 from 8 on
            low *= 2
        return cls(sorted(s for s in sizes if s < largest) + [largest])

    @property
    def largest(self) -> int:
        return self.sizes[-1]

    def widths(self, widths: Sequence[int] | np.ndarray) -> np.ndarray:
        """Each width's bucket; a width past the largest size stays as it is (the batcher leaves
        such pairs out)."""
        widths = np.asarray(widths, dtype=np.int64)
        sizes = np.asarray(self.sizes, dtype=np.int64)
        index = np.searchsorted(sizes, widths, side="left")
        return np.where(
            index < len(sizes), sizes[np.minimum(index, len(sizes) - 1)], widths
        )

    def __len__(self) -> int:
        return len(self.sizes)

    def __repr__(self) -> str:
        return f"LengthBuckets({list(self.sizes)})"


class TokenBatcher:
    """The batches of each epoch: lists of pair indices whose padded size fits `max_tokens` on both sides.

    A batch of n pairs costs max(len(src) + 1) * n source slots and max(len(tgt) + 2) * n target slots
    (the + 1 / + 2 are the eos / bos + eos that `collate_pairs` adds); neither may exceed max_tokens.
    Pairs are sorted by length (ties broken at random per epoch when shuffling) and packed greedily, which
    keeps padding low; then the batch order is shuffled. Every pair is in exactly one batch per epoch, and
    the batches are a function of (lengths, max_tokens, seed, epoch) alone, so a resumed run sees exactly
    the batches it would have seen.

    With `buckets` (a `LengthBuckets`; default None, batches exactly as without the option) each pair
    costs its bucketed widths in the packing, a pair past the largest bucket counts as too long, and
    `padded_shape(batch)` gives the (rows, source width, target width) to collate a batch to: rows
    max_tokens // the wider bucket, so the shape is a function of the two buckets alone.

    Pairs that do not fit the budget even alone raise ValueError by default; with skip_too_long=True they
    are left out of every epoch instead and listed in `.too_long` (and logged once).

    One optimizer step reads `batches_per_step` consecutive batches (gradient accumulation x DDP ranks):
    the number of batches per epoch is made a multiple of it by halving the batches with the most pairs
    (halves still fit the budget), so no pair is dropped or repeated and one process with accumulation N
    takes the steps that N ranks take.
    """

    def __init__(
        self,
        src_lengths: Sequence[int],
        tgt_lengths: Sequence[int],
        max_tokens: int,
        *,
        shuffle: bool = True,
        seed: int = 0,
        batches_per_step: int = 1,
        max_pairs: int | None = None,
        skip_too_long: bool = False,
        buckets: LengthBuckets | None = None,
    ):
        if len(src_lengths) != len(tgt_lengths):
            raise ValueError(
                f"{len(src_lengths)} source lengths but {len(tgt_lengths)} target lengths"
            )
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
        if batches_per_step < 1:
            raise ValueError(f"batches_per_step must be >= 1, got {batches_per_step}")
        if max_pairs is not None and max_pairs < 1:
            raise ValueError(f"max_pairs must be >= 1 or None, got {max_pairs}")
        self.src_widths = np.asarray(src_lengths, dtype=np.int64) + SRC_SPECIALS
        self.tgt_widths = np.asarray(tgt_lengths, dtype=np.int64) + TGT_SPECIALS
        self.max_tokens = int(max_tokens)
        self.shuffle = shuffle
        self.seed = int(seed)
        self.batches_per_step = batches_per_step
        self.max_pairs = max_pairs
        self.buckets = buckets
        self._cached: tuple[int, list[list[int]]] | None = None
        # What a pair costs in a batch: its widths, or with buckets the bucketed widths.
        self._src_cost, self._tgt_cost = self.src_widths, self.tgt_widths
        unbucketable = np.zeros(len(self.src_widths), dtype=bool)
        if buckets is not None:
            self._src_cost = buckets.widths(self.src_widths)
            self._tgt_cost = buckets.widths(self.tgt_widths)
            unbucketable = (self.src_widths > buckets.largest) | (
                self.tgt_widths > buckets.largest
            )

        too_long = np.flatnonzero(
            (self._src_cost > max_tokens) | (self._tgt_cost > max_tokens) | unbucketable
        )
        self.too_long: list[int] = too_long.tolist()
        if self.too_long:
            worst = int(
                max(self._src_cost[too_long].max(), self._tgt_cost[too_long].max())
            )
            if not skip_too_long:
                raise ValueError(
                    f"{len(self.too_long)} pairs do not fit max_tokens={max_tokens} even alone (the longest needs "
                    f"{worst} slots with bos/eos): raise max_tokens to at least {worst}, drop long pairs when "
                    "loading (load_parallel(..., max_words=...)), or pass skip_too_long=True"
                )
            logger.warning(
                "left out %d pairs longer than max_tokens=%d (longest: %d)",
                len(too_long),
                max_tokens,
                worst,
            )
        keep = np.ones(len(self.src_widths), dtype=bool)
        keep[too_long] = False
        self._kept = np.flatnonzero(keep)
        if len(self._kept) < batches_per_step:
            raise ValueError(
                f"{len(self._kept)} usable pairs cannot fill the {batches_per_step} batches of one step"
            )

    def epoch_batches(self, epoch: int) -> list[list[int]]:
        """All batches of `epoch`, in the order the steps read them."""
        epoch = int(epoch)
        if self._cached is not None and self._cached[0] == epoch:
            return self._cached[1]
        rng = np.random.default_rng([self.seed, epoch])
        order = self._kept
        if self.shuffle:
            order = rng.permutation(order)
        # Stable sort by target then source width: equal lengths keep their (random) order.
        order = order[np.lexsort((self.src_widths[order], self.tgt_widths[order]))]
        batches = pack_by_tokens(
            order, (self._src_cost, self._tgt_cost), self.max_tokens, self.max_pairs
        )
        batches = self._split_to_multiple(batches, self.batches_per_step)
        if self.shuffle:
            batches = [batches[i] for i in rng.permutation(len(batches))]
        self._cached = (epoch, batches)
        return batches

    def padded_shape(self, batch: Sequence[int]) -> tuple[int, int, int] | None:
        """(rows, source width, target width) to collate `batch` to (`collate_pairs(pad_to=...)`),
        or None without buckets (each side padded to its longest pair, as always)."""
        if self.buckets is None:
            return None
        index = np.asarray(batch, dtype=np.int64)
        src = int(self._src_cost[index].max())
        tgt = int(self._tgt_cost[index].max())
        rows = self.max_tokens // max(src, tgt)
        if self.max_pairs is not None:
            rows = min(rows, self.max_pairs)
        return max(rows, len(index)), src, tgt

    def steps_per_epoch(self, epoch: int) -> int:
        return len(self.epoch_batches(epoch)) // self.batches_per_step

    @staticmethod
    def _split_to_multiple(batches: list[list[int]], multiple: int) -> list[list[int]]:
        """Halve the largest batches until their number divides by `multiple` (all ranks step together)."""
        while len(batches) % multiple:
            largest = max(range(len(batches)), key=lambda i: (len(batches[i]), -i))
            batch = batches[largest]
            if len(batch) < 2:
                raise ValueError(
                    f"cannot split {len(batches)} single-pair batches into a multiple of {multiple}"
                )
            half = len(batch) // 2
            batches[largest : largest + 1] = [batch[:half], batch[half:]]
        return batches

    def padding_fraction(self, epoch: int = 0) -> float:
        """Share of the epoch's source and target tensor slots that are padding."""
        return padding_fraction(
            self.epoch_batches(epoch), self.src_widths, self.tgt_widths
        )


def padding_fraction(batches: Sequence[Sequence[int]], *lengths: Sequence[int]) -> float:
    """Padding slots / all slots over `batches`, for one or more sides whose per-pair tensor widths
    (including bos/eos) are given, e.g. ``padding_fraction(batches, src_widths, tgt_widths)``."""
    if not lengths:
        raise ValueError("pass the per-pair lengths of at least one side")
    padded = real = 0
    for side in lengths:
        side = np.asarray(side)
        for batch in batches:
            widths = side[np.asarray(batch, dtype=np.int64)]
            padded += int(widths.max(initial=0)) * len(batch)
            real += int(widths.sum())
    return 0.0 if padded == 0 else 1.0 - real / padded


def _padded(rows: int, width: int, pad_to: tuple[int, int] | None, side: str):
    """The (rows, width) of a collated side, or `pad_to` when given (never smaller)."""
    if pad_to is None:
        return rows, width
    if pad_to[0] < rows or pad_to[1] < width:
        raise ValueError(
            f"cannot pad a {side} batch of {rows} rows x {width} to {pad_to[0]} x {pad_to[1]}"
        )
    return int(pad_to[0]), int(pad_to[1])


def collate_sources(
    sources: Sequence[Sequence[int]],
    pad_id: int = 0,
    eos_id: int = 2,
    *,
    pad_to: tuple[int, int] | None = None,
) -> torch.Tensor:
    """A (batch, width) LongTensor of source ids + eos, padded with pad_id: what the encoder reads.
    `pad_to` (rows, width) pads further, with rows of padding only (a bucketed batch)."""
    if len(sources) == 0:
        raise ValueError("cannot collate an empty batch")
    width = max(len(ids) for ids in sources) + SRC_SPECIALS
    src = np.full(
        _padded(len(sources), width, pad_to, "source"),
        pad_id,
        dtype=np.int64,
    )
    for row, ids in enumerate(sources):
        src[row, : len(ids)] = ids
        src[row, len(ids)] = eos_id
    return torch.from_numpy(src)


def collate_pairs(
    pairs: Sequence[tuple[Sequence[int], Sequence[int]]],
    pad_id: int = 0,
    bos_id: int = 1,
    eos_id: int = 2,
    *,
    pad_to: tuple[int, int, int] | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(src, tgt) LongTensors from encoded pairs: src = tokens + eos, tgt = bos + tokens + eos, padded with
    pad_id. The decoder reads tgt[:, :-1] and learns to predict tgt[:, 1:] (teacher forcing).

    `pad_to` = (rows, source width, target width), as `TokenBatcher.padded_shape` gives with buckets,
    pads both further: rows past the pairs are padding only (their bos too, so nothing is scored)."""
    if len(pairs) == 0:
        raise ValueError("cannot collate an empty batch")
    rows = None if pad_to is None else pad_to[0]
    src = collate_sources(
        [src_ids for src_ids, _ in pairs],
        pad_id,
        eos_id,
        pad_to=None if pad_to is None else (pad_to[0], pad_to[1]),
    )
    # Filled in numpy and handed over without a copy: per-row torch indexing costs ~10x more.
    tgt = np.full(
        _padded(
            len(pairs),
            max(len(ids) for _, ids in pairs) + TGT_SPECIALS,
            None if pad_to is None else (rows, pad_to[2]),
            "target",
        ),
        pad_id,
        dtype=np.int64,
    )
    tgt[: len(pairs), 0] = bos_id
    for row, (_, tgt_ids) in enumerate(pairs):
        tgt[row, 1 : len(tgt_ids) + 1] = tgt_ids
        tgt[row, len(tgt_ids) + 1] = eos_id
    return src, torch.from_numpy(tgt)


class EncodedPairs(Dataset):
    """Token ids of a corpus's pairs, stored flat (two int32 arrays and offsets per side) because 4.5M
    pairs as Python lists of ints would take gigabytes; `dataset[i]` is (src_ids, tgt_ids) as arrays."""

    def __init__(
        self, src_ids: Sequence[Sequence[int]], tgt_ids: Sequence[Sequence[int]]
    ):
        if len(src_ids) != len(tgt_ids):
            raise ValueError(
                f"{len(src_ids)} source sequences but {len(tgt_ids)} target sequences"
            )
        self._src_flat, self._src_offsets = _flatten(src_ids)
        self._tgt_flat, self._tgt_offsets = _flatten(tgt_ids)

    def digest(self) -> str:
        """A sha256 of every pair's token ids: the same pairs, in the same order, give the same
        digest (a resume checks that it validates on what the run validated on)."""
        import hashlib

        h = hashlib.sha256()
        for array in (
            self._src_flat,
            self._src_offsets,
            self._tgt_flat,
            self._tgt_offsets,
        ):
            h.update(np.ascontiguousarray(array).tobytes())
        return h.hexdigest()

    @classmethod
    def from_texts(
        cls,
        tokenizer,
        src_texts: Sequence[str],
        tgt_texts: Sequence[str],
        chunk: int = 100_000,
    ) -> "EncodedPairs":
        """Encode parallel texts with a Tokenizer, a chunk at a time to bound memory."""
        if len(src_texts) != len(tgt_texts):
            raise ValueError(
                f"{len(src_texts)} source sentences but {len(tgt_texts)} target sentences"
            )
        src_ids: list = []
        tgt_ids: list = []
        for start in range(0, len(src_texts), chunk):
            src_ids.extend(
                np.asarray(ids, dtype=np.int32)
                for ids in tokenizer.encode_batch(src_texts[start : start + chunk])
            )
            tgt_ids.extend(
                np.asarray(ids, dtype=np.int32)
                for ids in tokenizer.encode_batch(tgt_texts[start : start + chunk])
            )
        return cls(src_ids, tgt_ids)

    @classmethod
    def from_corpus(cls, tokenizer, corpus) -> "EncodedPairs":
        """Encode a ParallelCorpus (see reading.load_parallel)."""
        return cls.from_texts(tokenizer, corpus.src, corpus.tgt)

    def __len__(self) -> int:
        return len(self._src_offsets) - 1

    def __getitem__(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        s0, s1 = self._src_offsets[index], self._src_offsets[index + 1]
        t0, t1 = self._tgt_offsets[index], self._tgt_offsets[index + 1]
        return self._src_flat[s0:s1], self._tgt_flat[t0:t1]

    def subset(self, indices: Sequence[int]) -> "EncodedPairs":
        return EncodedPairs([self[i][0] for i in indices], [self[i][1] for i in indices])

    def fitting(self, max_positions: int) -> tuple["EncodedPairs", int]:
        """(the pairs that fit a model of `max_positions` positions, how many did not); see `pair_fits`."""
        keep = [
            i
            for i, (s, t) in enumerate(
                zip(self.src_lengths.tolist(), self.tgt_lengths.tolist())
            )
            if pair_fits(s, t, max_positions)
        ]
        if len(keep) == len(self):
            return self, 0
        return self.subset(keep), len(self) - len(keep)

    @property
    def src_lengths(self) -> np.ndarray:
        return np.diff(self._src_offsets)

    @property
    def tgt_lengths(self) -> np.ndarray:
        return np.diff(self._tgt_offsets)


def _flatten(sequences: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    lengths = np.fromiter(
        (len(seq) for seq in sequences), dtype=np.int64, count=len(sequences)
    )
    offsets = np.zeros(len(sequences) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    flat = np.empty(int(offsets[-1]), dtype=np.int32)
    for seq, start, end in zip(sequences, offsets[:-1].tolist(), offsets[1:].tolist()):
        flat[start:end] = seq
    return flat, offsets

"""Batches by token count, bucketed by length (paper, section 5.1: "each training batch contained a set of
sentence pairs containing approximately 25000 source tokens and 25000 target tokens").

A fixed number of sentences per batch would waste most of a batch on padding when lengths vary; instead
pairs of similar length are packed until the padded tensor would exceed `max_tokens`. The batch order is
shuffled from (seed, epoch) alone, so a resumed run sees exactly the batches it would have seen, and the
batches of one global step are dealt out to DDP ranks so that all ranks take the same number of steps.
"""
from __future__ import annotations

import logging
from typing import Iterator, Sequence

import numpy as np
import torch
from torch.utils.data import Dataset, Sampler

logger = logging.getLogger(__name__)

# Tokens the collate function adds: the source gets eos, the target bos and eos.
SRC_SPECIALS = 1
TGT_SPECIALS = 2


class TokenBatchSampler(Sampler[list[int]]):
    """Yield lists of pair indices whose padded size fits `max_tokens` on both sides.

    A batch of n pairs costs max(len(src) + 1) * n source slots and max(len(tgt) + 2) * n target slots
    (the + 1 / + 2 are the eos / bos + eos that `collate_pairs` adds); neither may exceed max_tokens.
    Pairs are sorted by length (ties broken at random per epoch when shuffling) and packed greedily, which
    keeps padding low; then the batch order is shuffled. Every pair is in exactly one batch per epoch.

    Pairs that do not fit the budget even alone raise ValueError by default; with skip_too_long=True they
    are left out of every epoch instead and listed in `.too_long` (and logged once).

    DDP: with world_size > 1 the epoch's batches are dealt out so that rank r takes global batches
    r, r + world_size, ... (global step s = batches s*world_size .. s*world_size + world_size - 1). The
    number of batches is made a multiple of world_size by halving the batches with the most pairs (halves
    still fit the budget), so every rank takes the same number of steps and no pair is dropped or repeated.
    A single process reproduces an N-rank run by building the sampler with world_size=N and reading
    `global_batches()` in groups of N (gradient accumulation).
    """

    def __init__(
        self,
        src_lengths: Sequence[int],
        tgt_lengths: Sequence[int],
        max_tokens: int,
        *,
        shuffle: bool = True,
        seed: int = 0,
        rank: int = 0,
        world_size: int = 1,
        max_pairs: int | None = None,
        skip_too_long: bool = False,
        src_specials: int = SRC_SPECIALS,
        tgt_specials: int = TGT_SPECIALS,
    ):
        if len(src_lengths) != len(tgt_lengths):
            raise ValueError(f"{len(src_lengths)} source lengths but {len(tgt_lengths)} target lengths")
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
        if world_size < 1 or not 0 <= rank < world_size:
            raise ValueError(f"rank must lie in [0, world_size) and world_size >= 1, got rank={rank}, world_size={world_size}")
        if max_pairs is not None and max_pairs < 1:
            raise ValueError(f"max_pairs must be >= 1 or None, got {max_pairs}")
        self.src_widths = np.asarray(src_lengths, dtype=np.int64) + src_specials
        self.tgt_widths = np.asarray(tgt_lengths, dtype=np.int64) + tgt_specials
        self.max_tokens = int(max_tokens)
        self.shuffle = shuffle
        self.seed = int(seed)
        self.rank = rank
        self.world_size = world_size
        self.max_pairs = max_pairs
        self.epoch = 0
        self.start_step = 0
        self._cached: tuple[int, list[list[int]]] | None = None

        too_long = np.flatnonzero((self.src_widths > max_tokens) | (self.tgt_widths > max_tokens))
        self.too_long: list[int] = too_long.tolist()
        if self.too_long:
            worst = int(max(self.src_widths[too_long].max(), self.tgt_widths[too_long].max()))
            if not skip_too_long:
                raise ValueError(
                    f"{len(self.too_long)} pairs do not fit max_tokens={max_tokens} even alone (the longest needs "
                    f"{worst} slots with bos/eos): raise max_tokens to at least {worst}, drop long pairs when "
                    "loading (load_parallel(..., max_len=...)), or pass skip_too_long=True"
                )
            logger.warning("left out %d pairs longer than max_tokens=%d (longest: %d)", len(too_long), max_tokens, worst)
        keep = np.ones(len(self.src_widths), dtype=bool)
        keep[too_long] = False
        self._kept = np.flatnonzero(keep)
        if len(self._kept) < world_size:
            raise ValueError(f"{len(self._kept)} usable pairs cannot feed {world_size} ranks a batch each")

    def set_epoch(self, epoch: int, start_step: int = 0) -> None:
        """Choose the epoch whose batches to make (call before each epoch, as with DistributedSampler);
        start_step > 0 resumes inside it, skipping this rank's first start_step batches."""
        self.epoch = int(epoch)
        self.start_step = int(start_step)

    def global_batches(self, epoch: int | None = None) -> list[list[int]]:
        """All ranks' batches of an epoch, in step order; a function of (lengths, max_tokens, seed, epoch)."""
        epoch = self.epoch if epoch is None else int(epoch)
        if self._cached is not None and self._cached[0] == epoch:
            return self._cached[1]
        rng = np.random.default_rng([self.seed, epoch])
        order = self._kept
        if self.shuffle:
            order = rng.permutation(order)
        # Stable sort by target then source width: equal lengths keep their (random) order.
        order = order[np.lexsort((self.src_widths[order], self.tgt_widths[order]))]
        batches = self._pack(order)
        batches = self._split_to_multiple(batches, self.world_size)
        if self.shuffle:
            batches = [batches[i] for i in rng.permutation(len(batches))]
        self._cached = (epoch, batches)
        return batches

    def _pack(self, order: np.ndarray) -> list[list[int]]:
        batches: list[list[int]] = []
        current: list[int] = []
        max_src = max_tgt = 0
        src_widths, tgt_widths = self.src_widths.tolist(), self.tgt_widths.tolist()
        limit, max_pairs = self.max_tokens, self.max_pairs
        for index in order.tolist():
            new_src = max(max_src, src_widths[index])
            new_tgt = max(max_tgt, tgt_widths[index])
            n = len(current) + 1
            if current and (new_src * n > limit or new_tgt * n > limit or (max_pairs is not None and n > max_pairs)):
                batches.append(current)
                current, new_src, new_tgt = [], src_widths[index], tgt_widths[index]
            current.append(index)
            max_src, max_tgt = new_src, new_tgt
        if current:
            batches.append(current)
        return batches

    @staticmethod
    def _split_to_multiple(batches: list[list[int]], multiple: int) -> list[list[int]]:
        """Halve the largest batches until their number divides by `multiple` (all ranks step together)."""
        while len(batches) % multiple:
            largest = max(range(len(batches)), key=lambda i: (len(batches[i]), -i))
            batch = batches[largest]
            if len(batch) < 2:
                raise ValueError(f"cannot split {len(batches)} single-pair batches evenly over {multiple} ranks")
            half = len(batch) // 2
            batches[largest : largest + 1] = [batch[:half], batch[half:]]
        return batches

    def __iter__(self) -> Iterator[list[int]]:
        mine = self.global_batches()[self.rank :: self.world_size]
        return iter(mine[self.start_step :])

    def __len__(self) -> int:
        return max(0, len(self.global_batches()) // self.world_size - self.start_step)

    def padding_fraction(self, epoch: int | None = None) -> float:
        """Share of the epoch's source and target tensor slots that are padding."""
        return padding_fraction(self.global_batches(epoch), self.src_widths, self.tgt_widths)


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


def collate_pairs(
    pairs: Sequence[tuple[Sequence[int], Sequence[int]]],
    pad_id: int = 0,
    bos_id: int = 1,
    eos_id: int = 2,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(src, tgt) LongTensors from encoded pairs: src = tokens + eos, tgt = bos + tokens + eos, padded with
    pad_id. The decoder reads tgt[:, :-1] and learns to predict tgt[:, 1:] (teacher forcing)."""
    if len(pairs) == 0:
        raise ValueError("cannot collate an empty batch")
    src_width = max(len(src) for src, _ in pairs) + 1
    tgt_width = max(len(tgt) for _, tgt in pairs) + 2
    # Filled in numpy and handed over without a copy: per-row torch indexing costs ~10x more.
    src = np.full((len(pairs), src_width), pad_id, dtype=np.int64)
    tgt = np.full((len(pairs), tgt_width), pad_id, dtype=np.int64)
    tgt[:, 0] = bos_id
    for row, (src_ids, tgt_ids) in enumerate(pairs):
        n_src, n_tgt = len(src_ids), len(tgt_ids)
        src[row, :n_src] = src_ids
        src[row, n_src] = eos_id
        tgt[row, 1 : n_tgt + 1] = tgt_ids
        tgt[row, n_tgt + 1] = eos_id
    src, tgt = torch.from_numpy(src), torch.from_numpy(tgt)
    return src, tgt


class EncodedPairs(Dataset):
    """Token ids of a corpus's pairs, stored flat (two int32 arrays and offsets per side) because 4.5M
    pairs as Python lists of ints would take gigabytes; `dataset[i]` is (src_ids, tgt_ids) as arrays."""

    def __init__(self, src_ids: Sequence[Sequence[int]], tgt_ids: Sequence[Sequence[int]]):
        if len(src_ids) != len(tgt_ids):
            raise ValueError(f"{len(src_ids)} source sequences but {len(tgt_ids)} target sequences")
        self._src_flat, self._src_offsets = _flatten(src_ids)
        self._tgt_flat, self._tgt_offsets = _flatten(tgt_ids)

    @classmethod
    def from_texts(cls, tokenizer, src_texts: Sequence[str], tgt_texts: Sequence[str], chunk: int = 100_000) -> "EncodedPairs":
        """Encode parallel texts with a Tokenizer, a chunk at a time to bound memory."""
        if len(src_texts) != len(tgt_texts):
            raise ValueError(f"{len(src_texts)} source sentences but {len(tgt_texts)} target sentences")
        src_ids: list = []
        tgt_ids: list = []
        for start in range(0, len(src_texts), chunk):
            src_ids.extend(np.asarray(ids, dtype=np.int32) for ids in tokenizer.encode_batch(src_texts[start : start + chunk]))
            tgt_ids.extend(np.asarray(ids, dtype=np.int32) for ids in tokenizer.encode_batch(tgt_texts[start : start + chunk]))
        return cls(src_ids, tgt_ids)

    @classmethod
    def from_corpus(cls, tokenizer, corpus) -> "EncodedPairs":
        """Encode a ParallelCorpus (see corpora.load_parallel)."""
        return cls.from_texts(tokenizer, corpus.src, corpus.tgt)

    def __len__(self) -> int:
        return len(self._src_offsets) - 1

    def __getitem__(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        s0, s1 = self._src_offsets[index], self._src_offsets[index + 1]
        t0, t1 = self._tgt_offsets[index], self._tgt_offsets[index + 1]
        return self._src_flat[s0:s1], self._tgt_flat[t0:t1]

    @property
    def src_lengths(self) -> np.ndarray:
        return np.diff(self._src_offsets)

    @property
    def tgt_lengths(self) -> np.ndarray:
        return np.diff(self._tgt_offsets)


def _flatten(sequences: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    lengths = np.fromiter((len(seq) for seq in sequences), dtype=np.int64, count=len(sequences))
    offsets = np.zeros(len(sequences) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    flat = np.empty(int(offsets[-1]), dtype=np.int32)
    for seq, start, end in zip(sequences, offsets[:-1].tolist(), offsets[1:].tolist()):
        flat[start:end] = seq
    return flat, offsets

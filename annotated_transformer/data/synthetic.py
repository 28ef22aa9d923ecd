"""Synthetic sequence tasks that need no files: copy and reverse.

Tokens are drawn from the ids after the special ones, so a batch can be fed straight to the model.
"""

from __future__ import annotations

import torch

from .tokenizer import SPECIAL_IDS


def synthetic_batch(
    task: str,
    batch_size: int,
    length: int | tuple[int, int],
    vocab_size: int,
    *,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Return (src, tgt) for the copy or reverse task.

    src is `tokens + [eos]`, padded with pad_id; tgt is `[bos] + answer + [eos]`, padded. A length
    range (lo, hi) draws each sequence's length uniformly from [lo, hi].
    """
    n_special, pad_id = len(SPECIAL_IDS), SPECIAL_IDS["pad"]
    bos_id, eos_id = SPECIAL_IDS["bos"], SPECIAL_IDS["eos"]
    if task not in ("copy", "reverse"):
        raise ValueError(f"task must be 'copy' or 'reverse', got {task!r}")
    if vocab_size <= n_special + 1:
        raise ValueError(
            f"vocab_size must exceed the {n_special} special ids, got {vocab_size}"
        )
    lo, hi = (length, length) if isinstance(length, int) else length
    if lo < 1 or hi < lo:
        raise ValueError(f"length must be >= 1 (or a range lo <= hi), got {length!r}")
    lengths = torch.randint(lo, hi + 1, (batch_size,), generator=generator)
    tokens = torch.randint(n_special, vocab_size, (batch_size, hi), generator=generator)
    src = torch.full((batch_size, hi + 1), pad_id, dtype=torch.long)
    tgt = torch.full((batch_size, hi + 2), pad_id, dtype=torch.long)
    tgt[:, 0] = bos_id
    for i, n in enumerate(lengths.tolist()):
        seq = tokens[i, :n]
        answer = seq if task == "copy" else seq.flip(0)
        src[i, :n] = seq
        src[i, n] = eos_id
        tgt[i, 1 : n + 1] = answer
        tgt[i, n + 1] = eos_id
    return src, tgt

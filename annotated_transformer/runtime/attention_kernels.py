"""Which fused attention kernels run where batch shapes vary: on a GPU, every SDPA backend but cuDNN's.

Token-count batches (section 5.1) give almost every step a new (rows, source length, target length),
and so does each decoding step a new key length. Recent PyTorch puts cuDNN's attention first on
Hopper GPUs (reported for torch 2.11 and 2.13 on sm90/sm100 with a recent cuDNN; the
`TORCH_CUDNN_SDPA_DEPRIORITIZED` environment variable is torch's own opt-out), and cuDNN builds an
execution plan for every new shape it meets and caches it. On one H100 a process's first Table 3
row, the `gpu` recipe's first ~150 steps and the parser's first epoch each spent 28-53 s before
training at speed, and a row of another width paid it again (results/gpu/book_calibration/
README.md): consistent with a plan built per shape, as a public report traced the same symptom
(https://github.com/modelscope/FunASR/issues/3704). Not yet measured here with cuDNN left out.

So the training step, validation, translation and parsing run in `for_varying_shapes`, which
switches cuDNN's attention off for the call and leaves every other backend flag as it was (flash,
memory-efficient and math, in torch's order, where each applies). Fixed-shape work (the chapters'
attention timings) keeps torch's choice; the CUDA-graph decoders inside `translate --cuda-graphs`
are fixed within a batch but built for each batch's shape, so they go without it too. A compiled model picks its
attention kernel when it is traced: every compiled call in this package is made inside the
context, so its graphs are traced without cuDNN's attention too.

`AT_CUDNN_ATTENTION=1` in the environment, or `allow_cudnn_attention()` around a call, keeps cuDNN's
attention in the varying-shape paths: what `scripts/gpu/calibrate_book.sh DIR sdpa_backends` and
`benchmarks/bench_step.py` compare. On a CPU nothing changes: cuDNN's attention is a CUDA kernel.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import torch

ENVIRONMENT = "AT_CUDNN_ATTENTION"

# set by allow_cudnn_attention(); None: the environment decides
_allowed_here: bool | None = None


def cudnn_attention_allowed() -> bool:
    """Whether the varying-shape paths may run cuDNN's attention (default: no)."""
    if _allowed_here is not None:
        return _allowed_here
    return os.environ.get(ENVIRONMENT, "") == "1"


@contextlib.contextmanager
def cudnn_attention_off() -> Iterator[None]:
    """cuDNN's attention switched off for the block, every other SDPA flag untouched."""
    before = torch.backends.cuda.cudnn_sdp_enabled()
    torch.backends.cuda.enable_cudnn_sdp(False)
    try:
        yield
    finally:
        torch.backends.cuda.enable_cudnn_sdp(before)


def for_varying_shapes(device: torch.device | str) -> contextlib.AbstractContextManager:
    """The SDPA backends for a call whose shapes change from call to call on `device`."""
    if torch.device(device).type != "cuda" or cudnn_attention_allowed():
        return contextlib.nullcontext()
    return cudnn_attention_off()


def describe(device: torch.device | str) -> str:
    """One line for a run's record: which attention kernels its varying shapes may use."""
    if torch.device(device).type != "cuda":
        return "torch's choice (no cuDNN attention off a GPU)"
    if cudnn_attention_allowed():
        return f"torch's order, cuDNN's attention included ({ENVIRONMENT}=1)"
    return "torch's order without cuDNN's attention, left out for varying shapes"


@contextlib.contextmanager
def allow_cudnn_attention(allowed: bool = True) -> Iterator[None]:
    """Within the block the varying-shape paths do (or, with False, do not) run cuDNN's attention,
    whatever the environment says: for a benchmark that compares the two in one process."""
    global _allowed_here
    before = _allowed_here
    _allowed_here = allowed
    try:
        yield
    finally:
        _allowed_here = before

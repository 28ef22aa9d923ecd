"""Which fused attention kernels run where batch shapes vary: on a GPU, every SDPA backend but cuDNN's.

Token-count batches (section 5.1) give almost every step a new (rows, source length, target length),
and so does each beam-search step a new key length. PyTorch 2.11 and later put cuDNN's attention
first on Hopper GPUs (the `TORCH_CUDNN_SDPA_DEPRIORITIZED` environment variable is its opt-out), and
cuDNN builds an execution plan for every new shape it meets, caching it per process. On one H100 a
process's first Table 3 row, the `gpu` recipe's first ~150 steps and the parser's first epoch each
spent 28-53 s before training at speed, and a row of another width paid it again
(results/gpu/book_calibration/README.md), the pattern of a plan built per shape. So the training
step, validation and beam search run in `for_varying_shapes`, which leaves the other backends
(flash for unmasked and causal calls, memory-efficient for padding masks, math as the fallback) in
torch's order and cuDNN's out. Fixed-shape work (the chapters' attention timings, the CUDA-graph
decoders) keeps torch's choice.

`AT_CUDNN_ATTENTION=1` in the environment, or `cudnn_allowed()` around a call, keeps cuDNN's
attention in the varying-shape paths too: what `scripts/gpu/calibrate_book.sh sdpa_backends` and
`benchmarks/bench_gpu_step.py` compare. On a CPU nothing changes: cuDNN's attention is a CUDA kernel.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

ENVIRONMENT = "AT_CUDNN_ATTENTION"
# Every backend but cuDNN's, in torch's default priority order.
WITHOUT_CUDNN = [
    SDPBackend.FLASH_ATTENTION,
    SDPBackend.EFFICIENT_ATTENTION,
    SDPBackend.MATH,
]

_allowed_here: bool | None = None  # set by cudnn_allowed(); None: the environment decides


def cudnn_attention_allowed() -> bool:
    """Whether the varying-shape paths may run cuDNN's attention (default: no)."""
    if _allowed_here is not None:
        return _allowed_here
    return os.environ.get(ENVIRONMENT, "") == "1"


def for_varying_shapes(device: torch.device | str) -> contextlib.AbstractContextManager:
    """The SDPA backends for a call whose shapes change from call to call on `device`."""
    if torch.device(device).type != "cuda" or cudnn_attention_allowed():
        return contextlib.nullcontext()
    return sdpa_kernel(WITHOUT_CUDNN)


def describe(device: torch.device | str) -> str:
    """One line for a run's record: which attention kernels its varying shapes may use."""
    if torch.device(device).type != "cuda":
        return "torch's choice (no cuDNN attention off a GPU)"
    if cudnn_attention_allowed():
        return f"torch's order, cuDNN's attention included ({ENVIRONMENT}=1)"
    return "flash, memory-efficient, math: cuDNN's attention left out for varying shapes"


@contextlib.contextmanager
def cudnn_allowed(allowed: bool = True) -> Iterator[None]:
    """Within the block the varying-shape paths do (or, with False, do not) run cuDNN's attention,
    whatever the environment says: for a benchmark that compares the two in one process."""
    global _allowed_here
    before = _allowed_here
    _allowed_here = allowed
    try:
        yield
    finally:
        _allowed_here = before

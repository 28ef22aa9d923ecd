"""Shims for PyTorch releases back to 2.2 (the package itself asks for the range its suite passed
with: pyproject.toml)."""

from __future__ import annotations

import sys

import torch


def _is_compiling_fallback() -> bool:
    try:  # torch 2.2: dynamo's own flag
        import torch._dynamo

        return bool(torch._dynamo.is_compiling())
    except (ImportError, AttributeError):  # no dynamo at all: nothing is being compiled
        return False


# True while torch.compile traces the caller; torch.compiler.is_compiling exists from torch 2.3.
is_compiling = (
    getattr(getattr(torch, "compiler", None), "is_compiling", None)
    or _is_compiling_fallback
)


def maybe_mark_dynamic(tensor: torch.Tensor, dims) -> None:
    """Hint to torch.compile that `tensor`'s dimensions `dims` change from call to call (no error
    if the graph needs one fixed). Nothing where Dynamo was never loaded (then nothing is
    compiled, and an eager run does not pay for importing it), inside a graph being traced (the
    mark is for inputs from outside), or on a torch that lacks the hint (Dynamo then finds the
    varying sizes itself, one recompile later)."""
    dynamo = sys.modules.get("torch._dynamo")
    mark = getattr(dynamo, "maybe_mark_dynamic", None)
    if mark is not None and not is_compiling():
        mark(tensor, dims)


# functorch's own test, looked up once (attention asks it on every CPU call); None on a torch
# without it, where nothing can be inside vmap's batching.
_is_batched = getattr(getattr(torch._C, "_functorch", None), "is_batchedtensor", None)


def is_vmapped(tensor: torch.Tensor) -> bool:
    """True for a tensor seen inside `torch.func.vmap` (one model's slice of stacked models): its
    values cannot steer Python control flow there. False on a torch without functorch's hook."""
    return _is_batched is not None and bool(_is_batched(tensor))

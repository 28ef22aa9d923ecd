"""Shims for the oldest PyTorch that requirements.txt allows (2.2)."""

from __future__ import annotations

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


def _mark_nothing(tensor: torch.Tensor, dims) -> None:
    """Before torch._dynamo.maybe_mark_dynamic: Dynamo finds the varying sizes itself, one
    recompile later."""


_mark_dynamic = (
    None  # resolved at the first call: importing Dynamo costs an eager run time
)


def maybe_mark_dynamic(tensor: torch.Tensor, dims) -> None:
    """Hint to torch.compile that `tensor`'s dimensions `dims` change from call to call (no error
    if the graph needs one fixed)."""
    global _mark_dynamic
    if _mark_dynamic is None:
        try:
            import torch._dynamo

            _mark_dynamic = getattr(torch._dynamo, "maybe_mark_dynamic", _mark_nothing)
        except ImportError:
            _mark_dynamic = _mark_nothing
    _mark_dynamic(tensor, dims)

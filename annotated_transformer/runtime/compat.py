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

"""Shims for the oldest PyTorch that requirements.txt allows (2.2)."""
from __future__ import annotations

import torch

# torch.compiler.is_compiling exists from torch 2.3. On 2.2 this answers False, and the eager branch
# it guards is also correct under compile (only slower), so nothing breaks.
is_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", lambda: False)

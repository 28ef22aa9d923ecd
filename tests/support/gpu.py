"""The mark of a test that needs a CUDA device: skipped without one, selected by `-m gpu`, which
`python scripts/gpu/run.py --out DIR tests` runs on a GPU machine before anything is timed."""

import pytest
import torch

NEEDS_GPU = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU (CUDA)"),
]


def on_a_gpu(test):
    """A test function marked `gpu` and skipped where CUDA is missing."""
    for mark in NEEDS_GPU:
        test = mark(test)
    return test

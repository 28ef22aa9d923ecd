import os
import random

import pytest
import torch


@pytest.fixture(autouse=True)
def _seed():
    """Every test starts from the same random state, so failures reproduce."""
    random.seed(0)
    torch.manual_seed(0)
    yield


@pytest.fixture
def data_dir():
    """The staged corpora ($AT_DATA_DIR); tests that need real data skip with a reason without it."""
    path = os.environ.get("AT_DATA_DIR")
    if not path or not os.path.isdir(path):
        pytest.skip("real data needs AT_DATA_DIR: see the README's data section")
    return path

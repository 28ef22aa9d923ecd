"""The Transformer of "Attention Is All You Need" (Vaswani et al., 2017), fast and verified."""

import warnings

from .model.config import PRESET_NAMES, TABLE3_ROWS, TransformerConfig, preset
from .model.decoding import beam_search, greedy_decode
from .model.transformer import (
    Transformer,
    attention_maps,
    count_parameters,
    expected_parameter_count,
)

# In a kernel without ipywidgets (papermill, the built site) tqdm.auto falls back to its text bar, which
# is what those pages should show; its warning about the missing widget would only clutter them.
warnings.filterwarnings("ignore", message="IProgress not found")

__version__ = "0.1.0"
__all__ = [
    "PRESET_NAMES",
    "TABLE3_ROWS",
    "Transformer",
    "TransformerConfig",
    "attention_maps",
    "beam_search",
    "count_parameters",
    "expected_parameter_count",
    "greedy_decode",
    "preset",
]

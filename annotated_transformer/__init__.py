"""The Transformer of "Attention Is All You Need" (Vaswani et al., 2017), fast and verified."""
from .config import PRESET_NAMES, TABLE3_ROWS, TransformerConfig, preset
from .decoding import beam_search, greedy_decode
from .model import Transformer, attention_maps, count_parameters, expected_parameter_count

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

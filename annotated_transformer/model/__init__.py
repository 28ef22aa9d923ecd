"""The paper's model, read first: config -> attention -> layers -> transformer -> decoding.

`flops` counts what the model computes. Nothing here knows about data, training or the book."""

from .config import PRESET_NAMES, TABLE3_ROWS, TransformerConfig, preset
from .decoding import (
    StaticGreedyDecoder,
    beam_search,
    greedy_decode,
    static_greedy_decode,
)
from .transformer import (
    Transformer,
    attention_maps,
    count_parameters,
    expected_parameter_count,
)

__all__ = [
    "PRESET_NAMES",
    "StaticGreedyDecoder",
    "TABLE3_ROWS",
    "Transformer",
    "TransformerConfig",
    "attention_maps",
    "beam_search",
    "count_parameters",
    "expected_parameter_count",
    "greedy_decode",
    "preset",
    "static_greedy_decode",
]

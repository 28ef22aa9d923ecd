"""The paper's model, read first: config -> attention -> layers -> transformer -> decoding
(-> static_decoding, the same searches in fixed shapes for CUDA graphs).

`flops` counts what the model computes. Nothing here knows about data, training or the book."""

from .config import PRESET_NAMES, TABLE3_ROWS, TransformerConfig, preset
from .decoding import beam_search, greedy_decode
from .static_decoding import (
    StaticBeamDecoder,
    StaticGreedyDecoder,
    static_beam_search,
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
    "StaticBeamDecoder",
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
    "static_beam_search",
    "static_greedy_decode",
]

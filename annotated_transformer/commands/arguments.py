"""Argument types that refuse nonsense at parse time, with argparse's one-line usage error.

`--minutes -1` would otherwise train nothing and write a results file with BLEU 0; `--beam 0`
would quietly decode greedily; `--minutes inf` would die mid-run. A number that cannot be meant
is an error naming the flag. The bounds are the settings' own (`runtime.checks.Bounds`, used by
`Profile`, `TrainSettings` and `DecodeSettings`), so a flag accepts exactly what its field does.
"""

from __future__ import annotations

from typing import Callable

from ..profiles import PROFILE_BOUNDS
from ..runtime.checks import COUNT, POSITIVE, PROBABILITY


def setting(field: str) -> Callable[[str], int | float]:
    """The argparse type of the profile field `field`: the very bounds `Profile` checks."""
    return PROFILE_BOUNDS[field].argument()


positive_int = COUNT.argument()
positive_float = POSITIVE.argument()
# a rate such as dropout or label smoothing: 0 <= p < 1
probability = PROBABILITY.argument()


def add_data_and_device(parser) -> None:
    """--data-dir and --device, as `train` and `evaluate` take them."""
    parser.add_argument(
        "--data-dir",
        default=None,
        help="folder holding the corpus folders (multi30k/, wmt14/, ...); default: $AT_DATA_DIR, then a download",
    )
    parser.add_argument(
        "--device",
        default="auto",
        help="auto (a GPU when visible), cpu, cuda, cuda:1 ...",
    )


# The decoding flags `translate` and `evaluate` share, each naming the profile field it overrides
# (None keeps the checkpoint's profile's value, so both commands decode alike by default).
DECODING_FLAGS = {
    "--beam": ("beam_size", "beam width; 1 is greedy decoding"),
    "--alpha": ("length_penalty_alpha", "length penalty alpha"),
    "--max-len-b": (
        "max_len_b",
        "outputs may be source length + this many subwords long",
    ),
    "--batch-tokens": ("eval_batch_tokens", "source tokens x beam per decoding batch"),
}


def add_decoding_arguments(parser) -> None:
    """--beam, --alpha, --max-len-b, --batch-tokens and --average-last, defaulting to the
    checkpoint's profile's values, and --cuda-graphs."""
    for flag, (field, help_text) in DECODING_FLAGS.items():
        parser.add_argument(
            flag,
            type=setting(field),
            default=None,
            help=f"{help_text} (default: the checkpoint's profile's)",
        )
    parser.add_argument(
        "--average-last",
        type=setting("average_last"),
        default=None,
        help="with a run folder: snapshots to average (default: the run's profile's)",
    )
    parser.add_argument(
        "--cuda-graphs",
        action="store_true",
        help="decode each batch with fixed-shape steps replayed as CUDA graphs on a GPU: the "
        "same translations in fp32, the same up to rounding in bf16/fp16 (off by default: not "
        "yet timed end to end on a GPU; on a CPU the fixed-shape steps run eagerly, slower)",
    )


def decoding_overrides(args) -> dict:
    """The profile fields the decoding flags given on the command line set."""
    given = {
        field: getattr(args, flag[2:].replace("-", "_"))
        for flag, (field, _) in DECODING_FLAGS.items()
    }
    return {field: value for field, value in given.items() if value is not None}

"""Chapter 08's sentences change with the numbers they read."""

import pandas as pd

from annotated_transformer.experiments.attention import head_scores as fa


def _heads(entropies: list[float], se: float) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "layer": [1] * len(entropies),
            "head": range(1, len(entropies) + 1),
            "entropy (bits)": entropies,
            "entropy s.e.": [se] * len(entropies),
            "mean distance": [1.0 + h for h in range(len(entropies))],
        }
    )


def test_layers_differ_only_beyond_four_standard_errors():
    apart = fa.describe_layers(_heads([1.0, 2.0, 3.0], se=0.01), 3.5)
    assert "In every layer" in apart and "Figure 5's point." in apart
    close = fa.describe_layers(_heads([1.0, 1.02, 1.03], se=0.01), 3.5)
    assert "In no layer" in close and "do not show" in close


def test_export_sentence_follows_the_choice():
    bleu = {
        "float32": {"bleu": 36.43, "mean": 36.41, "ci95": 1.6},
        "int8": {"bleu": 36.49, "mean": 36.47, "ci95": 1.58},
    }
    sizes = {"float32": 47.5e6, "int8": 12.7e6}
    kept = fa.describe_exports(bleu, 854, 1000, sizes, "int8")
    assert (
        "lies inside the interval" in kept and "serves the int8 export (12.7 MB" in kept
    )
    bleu["int8"]["bleu"] = 30.0
    dropped = fa.describe_exports(bleu, 500, 1000, sizes, "float32")
    assert "lies outside" in dropped and "serves the float32 export (47.5 MB" in dropped

"""Chapter 08's verdicts, by value: each holds the numbers it rests on, and a head is among a
verdict's passing heads only when the per-head table marks it (`head_scores.passing_heads`)."""

import numpy as np
import pandas as pd
import pytest

from annotated_transformer.chapters.attention_visualizations import exports, verdicts
from annotated_transformer.chapters.attention_visualizations import head_scores as fa
from annotated_transformer.chapters.attention_visualizations.phrases import agree


def _scores(rows) -> pd.DataFrame:
    """(layer, head, ratio, low, over-every-word low, high) per head."""
    return pd.DataFrame(
        [
            {"layer": layer, "head": head, "sentences": 475, "pairs": 529,
             "weight": 0.1 * ratio, "from every word": 0.08, "even spread": 0.1,
             "ratio": ratio, "low": low, "high": high, "over every word": 1.2,
             "over every word low": other_low, "shows": low > 1 and other_low > 1}
            for layer, head, ratio, low, other_low, high in rows
        ]
    )  # fmt: skip


# layer 3 head 4 scores best but fails against the caption's other words; layer 3 head 1 passes
BEST_FAILS = _scores(
    [
        (2, 1, 0.5, 0.3, 0.80, 0.7),
        (3, 1, 2.08, 1.70, 1.05, 2.4),
        (3, 4, 2.82, 2.40, 0.92, 3.1),
    ]
)


def test_the_table_verdict_passes_only_the_heads_the_table_marks():
    found = verdicts.head_table(BEST_FAILS)
    assert (found.sentences, found.pairs, found.heads) == (475, 529, 3)
    (head,) = found.passing
    assert (head.layer, head.head, head.ratio) == (3, 1, 2.08)
    assert head.times_any_word == pytest.approx(0.208 / 0.08)
    assert (found.above_even, found.above_other, found.below) == (2, 1, 1)
    none = verdicts.head_table(BEST_FAILS.assign(shows=False))
    assert none.passing == () and none.above_even == 2


def test_the_record_s_finding_names_the_same_heads_as_the_table():
    found = verdicts.heads_found(475, BEST_FAILS.to_dict("records"))
    assert [(h.layer, h.head) for h in found.passing] == [(3, 1)]
    assert (found.heads, found.sentences) == (3, 475)


def test_a_drawn_figure_is_named_by_its_first_passing_head_only():
    case = fa.Example(0, "A man walks his dog.", "walks", "dog", 0.3, 0.2)
    named = verdicts.drawn(fa.DrawnHeads(3, [1, 4], [1]), case)
    assert (named.head, named.others, named.weight) == (1, 1, 0.3)
    unnamed = verdicts.drawn(fa.DrawnHeads(3, [1, 4], []), case)
    assert unnamed.head is None and unnamed.heads == (1, 4) and unnamed.others == 0


def _heads(entropies, layers, se=0.01) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "layer": layers,
            "head": range(1, len(entropies) + 1),
            "entropy (bits)": entropies,
            "entropy s.e.": [se] * len(entropies),
            "mean distance": [1.0 + h for h in range(len(entropies))],
        }
    )


def test_layers_are_apart_only_beyond_four_standard_errors():
    heads = _heads([1.0, 2.0, 1.0, 1.03], [1, 1, 2, 2])
    found = verdicts.layers(heads, 3.5)
    assert found.apart == (1,) and found.layers == 2
    first = found.spreads[0]
    assert (first.sharp_head, first.broad_head) == (1, 2)
    assert first.gap_in_se == pytest.approx(100.0)
    assert (first.near_head, first.far_head) == (1, 2)
    spread = verdicts.spread(heads.to_dict("records"))
    assert (spread.apart, spread.layers, spread.apart_se) == (1, 2, fa.APART_SE)


def test_the_page_serves_int8_only_inside_float32_s_interval():
    bleu = {
        "float32": {"bleu": 36.43, "mean": 36.41, "ci95": 1.6},
        "int8": {"bleu": 36.49, "mean": 36.47, "ci95": 1.58},
    }
    sizes = {"float32": 47_500_000, "int8": 12_700_000}
    found = verdicts.exports(bleu, 854, 1000, sizes, "int8", "v")
    assert found.inside and (found.low, found.high) == pytest.approx((34.81, 38.01))
    assert (found.served_mb, found.float32_mb) == (12.7, 47.5)
    assert not verdicts.exports(bleu, 854, 1000, sizes, "float32", "v").inside


def test_greedy_paths_split_the_differences_into_unfinished_and_near_ties():
    paths = exports.GreedyPaths(1000, 36.06, 36.07, 995, 5, 2)
    found = verdicts.greedy(paths)
    assert (found.unfinished, found.rest) == (2, 3)


def test_the_samples_verdict_counts_captions_and_pairs():
    def samples(n, pairs):
        empty = np.zeros((n, 1, 1))
        return fa.PairSamples("x", empty, empty, np.zeros(n), list(range(n)),
                              [(0, 0, 0)] * pairs, searched=n)  # fmt: skip

    found = verdicts.samples(
        1000, 162, {"anaphora": samples(134, 143), "dependency": samples(475, 529)}
    )
    assert (found.anaphora_sentences, found.anaphora_pairs) == (134, 143)
    assert (found.dependency_sentences, found.dependency_pairs) == (475, 529)


def test_verbs_agree_with_their_number():
    assert [agree("puts", n) for n in (0, 1, 2)] == ["put", "puts", "put"]
    assert agree("lies", 1) == "lies" and agree("lies", 3) == "lie"

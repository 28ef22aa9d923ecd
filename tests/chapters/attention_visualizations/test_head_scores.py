"""The per-head scores of Figures 3 and 4: the heuristics find the intended word pairs, and a
pair's weight and its even-spread baseline come out as computed by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from annotated_transformer.chapters.attention_visualizations import figures as af
from annotated_transformer.chapters.attention_visualizations import head_scores as fa
from annotated_transformer.chapters.attention_visualizations import sentences
from annotated_transformer.cli import main
from annotated_transformer.training.checkpoint import model_from_checkpoint
from tests.support.tiny_checkpoint import SENTENCES, write_tiny_checkpoint


def pairs_as_words(finder, caption: str) -> list[tuple[str, str]]:
    words = caption.split()
    return [(fa.normalise(words[q]), fa.normalise(words[k])) for q, k in finder(words)]


@pytest.mark.parametrize(
    "caption,expected",
    [
        ("A man walks his dog.", [("his", "man")]),
        # agreement skips the nearer "man" for "her"
        (
            "A woman uses a drill while another man takes her picture.",
            [("her", "woman")],
        ),
        ("A brown dog walks in the grass with its tongue out.", [("its", "dog")]),
        (
            "Two girls hold their hands while they dance.",
            [("their", "girls"), ("they", "girls")],
        ),
        ("One man holds another man's head and pushes him.", [("him", "man")]),
        ("A man throws it.", []),  # "it" refers only to animals
        ("Her dog runs.", []),  # nothing precedes
        ("A dog and its puppy play with their toys.", [("its", "dog")]),  # no plural noun
    ],
)
def test_anaphora_heuristic_finds_the_antecedent(caption, expected):
    assert pairs_as_words(fa.anaphora_pairs, caption) == expected


@pytest.mark.parametrize(
    "caption,expected",
    [
        ("A man is playing a blue guitar.", [("playing", "guitar")]),
        ("A dog runs through the deep snow.", [("runs", "snow")]),
        ("A boy kicks a ball.", []),  # two words apart: not distant
        ("A man standing around a woman dressed in red.", [("standing", "woman")]),
        ("A girl is walking along a raised balance beam.", [("walking", "beam")]),
        ("A man is trying to catch a ball.", []),  # "to catch" is no phrase
        ("A painting of a man in the park.", []),  # a noun after a determiner
        (
            "A man sitting on a wooden bench and a boy looking at the old house.",
            [("sitting", "bench"), ("looking", "house")],
        ),
        ("A dog jumps up. A man watches the small red ball.", [("watches", "ball")]),
        ("A man is playing a big old shiny red guitar.", []),  # phrase too long
        ("A man is playing a red and blue guitar.", []),  # "and" may join adjectives
    ],
)
def test_dependency_heuristic_finds_the_distant_head(caption, expected):
    assert pairs_as_words(fa.dependency_pairs, caption) == expected


def test_words_of_groups_pieces_and_drops_punctuation_and_specials():
    pieces = ["▁A", "▁man", "'", "s", "▁do", "g", ".", "</s>"]
    words, spans = fa.words_of(pieces)
    assert words == ["A", "man's", "dog."]
    assert spans == [[0], [1, 3], [4, 5]]


def test_pair_weight_sums_key_pieces_and_averages_query_pieces():
    w = np.full((1, 2, 5, 5), 0.2)
    w[0, 0, 3] = [0.5, 0.1, 0.1, 0.1, 0.2]  # keys 0-1 get 0.6
    w[0, 0, 4] = [0.2, 0.2, 0.2, 0.2, 0.2]  # keys 0-1 get 0.4
    weight, baseline = fa.pair_weight(w, [3, 4], [0, 1])
    np.testing.assert_allclose(weight, [[0.5, 0.4]])
    assert baseline == pytest.approx(2 / 5)


def synthetic_sentence(strength: float) -> fa.EncodedSentence:
    """ "A man walks his dog ." with "▁do" "g" in two pieces, 7 keys with </s>; head 1 of the
    one layer sends `strength` from "his" to "man", head 2 spreads evenly everywhere."""
    pieces = ["▁A", "▁man", "▁walks", "▁his", "▁do", "g", "</s>"]
    n = len(pieces)
    w = np.full((1, 2, n, n), 1 / n)
    w[0, 0, 3] = (1 - strength) / (n - 1)
    w[0, 0, 3, 1] = strength
    return fa.EncodedSentence("A man walks his dog", pieces, w)


def test_scores_and_baseline_of_a_head_set_by_hand():
    strengths = [0.5, 0.6, 0.7, 0.6]
    encoded = [synthetic_sentence(s) for s in strengths]
    encoded.append(
        fa.EncodedSentence(
            "Dogs run", ["▁Dogs", "▁run", "</s>"], np.ones((1, 2, 3, 3)) / 3
        )
    )
    samples = fa.collect_pairs(encoded, "anaphora")
    assert samples.sentences == [0, 1, 2, 3] and samples.searched == 5
    assert samples.pairs == [(s, 3, 1) for s in range(4)]
    scores = fa.head_scores(samples, resamples=2000).set_index("head")
    assert scores.loc[1, "weight"] == pytest.approx(0.6)
    assert scores.loc[1, "even spread"] == pytest.approx(1 / 7)
    assert scores.loc[1, "ratio"] == pytest.approx(0.6 * 7)
    assert (
        scores.loc[1, "low"] >= 0.5 * 7 - 1e-9 and scores.loc[1, "high"] <= 0.7 * 7 + 1e-9
    )
    # "man" gets `strength` from "his" and 1/7 from the other six queries
    assert scores.loc[1, "from every word"] == pytest.approx((0.6 + 6 / 7) / 7)
    assert bool(scores.loc[1, "shows"]) and not bool(scores.loc[2, "shows"])
    assert scores.loc[2, "ratio"] == pytest.approx(1.0)
    assert fa.top_heads(scores.reset_index()) == [(1, 1)]
    text = sentences.describe(scores.reset_index(), "the pronoun", "its antecedent")
    assert "1 of 2 heads puts more weight from the pronoun on its antecedent" in text
    assert "layer 1 head 1 (0.600 against 0.143, ratio 4.20" in text
    assert f"{0.6 / ((0.6 + 6 / 7) / 7):.2f} times" in text
    case = fa.example(samples, encoded, 1, 1)
    assert (case.sentence, case.query, case.key) == (2, "his", "man")
    assert case.weight == pytest.approx(0.7) and case.baseline == pytest.approx(1 / 7)


def test_a_head_that_looks_at_the_noun_from_every_word_is_not_named():
    """Head 1 sends every query, not only the pronoun, to "man": far above an even spread, but
    no more from "his" than from any word, so it does not show anaphora."""
    pieces = ["▁A", "▁man", "▁walks", "▁his", "▁do", "g", "</s>"]
    n = len(pieces)
    encoded = []
    for strength in (0.5, 0.6, 0.7, 0.6, 0.55):
        w = np.full((1, 2, n, n), 1 / n)
        w[0, 0, :] = (1 - strength) / (n - 1)
        w[0, 0, :, 1] = strength
        encoded.append(fa.EncodedSentence("A man walks his dog", pieces, w))
    scores = fa.head_scores(fa.collect_pairs(encoded, "anaphora")).set_index("head")
    assert scores.loc[1, "low"] > 1  # above an even spread ...
    assert scores.loc[1, "over every word"] == pytest.approx(1.0)  # ... as from any word
    assert not scores["shows"].any()


def test_describe_says_plainly_when_no_head_shows_it():
    encoded = [synthetic_sentence(1 / 7) for _ in range(3)]  # head 1 is even there too
    scores = fa.head_scores(fa.collect_pairs(encoded, "anaphora"))
    text = sentences.describe(scores, "the pronoun", "its antecedent")
    assert text.startswith("Over 3 sentences (3 pairs), no head of 2")
    assert len(fa.top_heads(scores)) == 1


def test_no_pair_anywhere_is_an_error():
    encoded = [
        fa.EncodedSentence(
            "Dogs run", ["▁Dogs", "▁run", "</s>"], np.ones((1, 1, 3, 3)) / 3
        )
    ]
    with pytest.raises(ValueError, match="no sentence holds"):
        fa.collect_pairs(encoded, "anaphora")


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    return write_tiny_checkpoint(tmp_path_factory.mktemp("findings") / "tiny.pt")


@pytest.fixture(scope="module")
def loaded(checkpoint):
    return model_from_checkpoint(checkpoint)


def test_batched_encoder_attention_equals_each_sentence_alone(loaded):
    model, tokenizer = loaded
    encoded = fa.encoder_attention(model, tokenizer, SENTENCES, batch_size=2)
    for one, sentence in zip(encoded, SENTENCES):
        alone = af.sentence_attention(model, tokenizer, sentence, "Ein Hund.")
        assert one.pieces == alone.source_tokens
        np.testing.assert_allclose(one.weights, alone.weights["encoder"], atol=1e-5)
        np.testing.assert_allclose(one.weights.sum(-1), 1.0, atol=1e-5)


def test_layer_heads_fills_up_to_the_heads_a_figure_needs():
    scores = pd.DataFrame(
        {
            "layer": [1, 1, 2, 2, 2],
            "head": [1, 2, 1, 2, 3],
            "ratio": [5.0, 1.0, 3.0, 0.5, 2.0],
            "shows": [False, False, True, False, True],
        }
    )
    # the best head that shows it is layer 2 head 1; layer 1 head 1 scores higher but is unsure
    assert fa.layer_heads(scores) == (2, [1, 3])
    assert fa.layer_heads(scores.assign(shows=False), at_least=2) == (1, [1, 2])


def test_query_word_follows_the_sentence_own_pair():
    pieces = ["▁A", "▁man", "▁walks", "▁his", "▁do", "g", ".", "</s>"]
    assert fa.query_word(pieces, "anaphora") == "his"
    assert fa.query_word(pieces, "dependency") is None


CAPTIONS = [
    "A man walks his dog in the park.",
    "A woman is playing a blue guitar on the street.",
    "Two girls hold their hands while they dance on the grass.",
    "A dog runs through the deep snow with its toy.",
]


@pytest.mark.parametrize("figure", ["3", "4"])
def test_attention_command_picks_heads_by_score(
    checkpoint, loaded, tmp_path, capsys, figure
):
    model, tokenizer = loaded
    sentences = tmp_path / "captions.txt"
    sentences.write_text("\n".join(CAPTIONS) + "\n")
    out = tmp_path / f"figure{figure}.svg"
    argv = [
        "attention",
        "--checkpoint",
        str(checkpoint),
        "--sentence",
        CAPTIONS[0],
        "--figure",
        figure,
        "--head",
        "best-anaphora",
        "--score-on",
        str(sentences),
        "--out",
        str(out),
    ]
    assert main(argv) == 0
    assert out.read_bytes().lstrip().startswith(b"<svg")
    scores = fa.head_scores(
        fa.collect_pairs(fa.encoder_attention(model, tokenizer, CAPTIONS), "anaphora")
    )
    layer, heads = fa.layer_heads(scores, at_least=2 if figure == "4" else 1)
    said = capsys.readouterr().out
    assert f"best-anaphora over 3 sentences: layer {layer}, head {heads[0]} " in said
    assert said.count("head ") == (2 if figure == "4" else len(heads))
    assert main([*argv, "--layer", "1"]) == 1
    assert "leave out --layer and --heads" in capsys.readouterr().err

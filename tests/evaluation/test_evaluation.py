"""BLEU the way sacreBLEU and the paper compute it, perplexity per subword, order-preserving decoding."""

import math
import random

import pytest
import torch

from annotated_transformer import Transformer, preset
from annotated_transformer.data import EncodedPairs, collate_pairs, train_tokenizer
from annotated_transformer.evaluation.scoring import (
    sacrebleu_score,
    split_compounds,
    tokenize_for_bleu,
    tokenized_bleu,
    translate,
)
from annotated_transformer.model.flops import (
    mfu,
    peak_flops_by_name,
    training_flops_per_target_token,
)
from annotated_transformer.training.teacher_forcing import batch_loss, teacher_forced_loss
from tests.support.gpu import on_a_gpu


def test_compound_splitting_follows_tensor2tensor():
    assert split_compounds("die Arbeits-Markt") == "die Arbeits ##AT##-##AT## Markt"
    # One non-overlapping pass, like the perl one-liner behind the published scores.
    assert split_compounds("a-b-c d-e") == "a ##AT##-##AT## b-c d ##AT##-##AT## e"
    assert split_compounds("a - b") == "a - b"  # a free-standing dash is not a compound


def test_tokenized_bleu_rewards_compound_parts_and_sacrebleu_has_a_signature():
    refs = [
        "Ein Mann fährt Fahrrad auf der Bundes-Straße.",
        "Zwei Hunde spielen im Schnee.",
    ]
    assert tokenized_bleu(refs, refs)["score"] == pytest.approx(100.0)
    hyps = [
        "Ein Mann fährt Fahrrad auf der Landes-Straße.",
        "Zwei Hunde spielen im Schnee.",
    ]
    split, unsplit = (
        tokenized_bleu(hyps, refs),
        tokenized_bleu(hyps, refs, compound_splitting=False),
    )
    # split from "Landes-Straße", "Straße" matches the reference's word on its own
    assert split["precisions"][0] > unsplit["precisions"][0]
    sacre = sacrebleu_score(refs, refs)
    assert sacre["score"] == pytest.approx(100.0) and "tok:13a" in sacre["signature"]
    assert tokenize_for_bleu("Hallo, Welt!") == "Hallo , Welt !"
    with pytest.raises(ValueError, match="pair line by line"):
        sacrebleu_score(refs, refs[:1])


def test_a_model_that_knows_nothing_has_perplexity_equal_to_the_vocabulary():
    vocab = 40
    model = Transformer(preset("tiny", dropout=0.0), vocab, vocab)
    with torch.no_grad():
        model.src_embed.weight.zero_()  # tied with the output projection: every logit is 0
    pairs = EncodedPairs([[5, 6, 7], [8, 9]], [[10, 11], [12, 13, 14, 15]])
    result = teacher_forced_loss(model, pairs, label_smoothing=0.0)
    assert result["tokens"] == 3 + 5  # subwords + eos per target
    assert result["ppl"] == pytest.approx(vocab, rel=1e-5)
    assert result["nll"] == pytest.approx(math.log(vocab), rel=1e-6)


def test_loss_at_real_rows_equals_the_loss_over_all_logits():
    torch.manual_seed(0)
    model = Transformer(preset("tiny", dropout=0.0), 40, 40).eval()
    src, tgt = collate_pairs([([5, 6, 7], [10, 11]), ([8, 9], [12, 13, 14, 15, 16])])
    with torch.no_grad():
        real = batch_loss(model, src, tgt, smoothing=0.1, pad_id=0, real_rows_only=True)
        full = batch_loss(model, src, tgt, smoothing=0.1, pad_id=0, real_rows_only=False)
    assert int(real.tokens) == int(full.tokens) == 3 + 6  # padding is never scored
    # Same values up to float32 summation order over different row sets.
    torch.testing.assert_close(real.loss, full.loss, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(real.nll, full.nll, rtol=1e-5, atol=1e-5)


@pytest.fixture(scope="module")
def tiny_tokenizer():
    words = "a man dog cat runs sits in on the park house red blue small big".split()
    sentences = [
        " ".join(words[(i * k) % len(words)] for k in range(1, 2 + i % 7))
        for i in range(300)
    ]
    return train_tokenizer(sentences, vocab_size=40)


def test_batched_translation_keeps_the_input_order(tiny_tokenizer):
    torch.manual_seed(0)
    model = Transformer(
        preset("tiny", dropout=0.0), tiny_tokenizer.vocab_size, tiny_tokenizer.vocab_size
    ).eval()
    sentences = [
        "a man runs in the park",
        "dog",
        "the big red house on the small blue park",
        "cat sits",
    ]
    together = translate(
        model, tiny_tokenizer, sentences, beam_size=2, max_len_b=5, batch_tokens=60
    )
    alone = [
        translate(model, tiny_tokenizer, [s], beam_size=2, max_len_b=5)[0]
        for s in sentences
    ]
    assert together == alone


def test_a_source_too_long_for_the_positions_is_cut_with_a_warning_naming_it(
    tiny_tokenizer, caplog
):
    torch.manual_seed(0)
    config = preset("tiny", dropout=0.0, max_len=24)
    model = Transformer(
        config, tiny_tokenizer.vocab_size, tiny_tokenizer.vocab_size
    ).eval()
    long_sentence = " ".join(["a man runs in the park"] * 10)
    with caplog.at_level("WARNING"):
        outputs = translate(
            model, tiny_tokenizer, ["dog", "", long_sentence], beam_size=2, max_len_b=500
        )
    assert "sentence 3 (" in caplog.text and "cut to the first 23 subwords" in caplog.text
    assert outputs[1] == ""  # an empty sentence stays empty
    # max_len_b far beyond the positions: outputs stop where the positions end instead of failing.
    assert all(len(tiny_tokenizer.encode(text)) <= config.max_len for text in outputs)


def test_flops_and_mfu():
    config = preset("base")
    per_token = training_flops_per_target_token(config, 37000, 27.0, 28.0)
    # 6 x (non-embedding parameters + output projection) per token, roughly: 6 * (44M + 19M) ~ 3.8e8.
    assert 3e8 < per_token < 5e8
    assert peak_flops_by_name("NVIDIA H100 80GB HBM3") == 989e12
    assert mfu(1e12, "cpu") is None  # no known peak for CPUs


def test_paired_bootstrap_tells_noise_from_a_real_difference():
    from annotated_transformer.evaluation.scoring import paired_bootstrap, sacrebleu_score

    rng = random.Random(0)
    words = (
        "a the man woman dog cat runs sits on in park street red blue small big".split()
    )
    refs = [
        " ".join(rng.choice(words) for _ in range(rng.randint(5, 12))) for _ in range(300)
    ]

    def damage(sentence: str, rate: float, seed: int) -> str:
        r = random.Random(seed)
        return " ".join(
            w if r.random() > rate else r.choice(words) for w in sentence.split()
        )

    base = [damage(s, 0.3, i) for i, s in enumerate(refs)]
    same_quality = [
        damage(s, 0.3, 10_000 + i) for i, s in enumerate(refs)
    ]  # other errors, same rate
    worse = [damage(s, 0.7, i) for i, s in enumerate(refs)]
    out = paired_bootstrap(
        {"base": base, "same": same_quality, "worse": worse}, refs, n_samples=300
    )
    assert out["base"]["bleu"] == round(sacrebleu_score(base, refs)["score"], 2)
    assert "p_value" not in out["base"] and out["base"]["ci95"] > 0
    assert out["worse"]["exceeds_noise"] and out["worse"]["bleu"] < out["base"]["bleu"]
    assert not out["same"]["exceeds_noise"], out["same"]
    identical = paired_bootstrap({"base": base, "again": list(base)}, refs, n_samples=50)
    assert (
        identical["again"]["p_value"] == 1.0 and not identical["again"]["exceeds_noise"]
    )
    # the interval is the sentences' variation: about mean +- ci95 holds the whole-set score
    for row in out.values():
        assert abs(row["bleu"] - row["mean"]) < row["ci95"]


@pytest.fixture(scope="module")
def tiny_model(tiny_tokenizer):
    torch.manual_seed(0)
    return Transformer(
        preset("tiny", dropout=0.0), tiny_tokenizer.vocab_size, tiny_tokenizer.vocab_size
    ).eval()


def test_sentences_are_read_by_position_from_any_sequence_or_iterable(
    tiny_model, tiny_tokenizer
):
    pd = pytest.importorskip("pandas")
    sentences = ["a man runs", "dog", "the big red house", "cat sits"]
    expected = translate(tiny_model, tiny_tokenizer, sentences, beam_size=1, max_len_b=4)
    # A Series sorted by another column (a permuted index) and one whose index is no permutation
    # of 0..n-1 both come back in the Series' own order.
    frame = pd.DataFrame({"en": sentences, "key": [3, 1, 2, 0]})
    permuted = frame.sort_values("key").en
    assert translate(tiny_model, tiny_tokenizer, permuted, beam_size=1, max_len_b=4) == [
        expected[i] for i in (3, 1, 2, 0)
    ]
    labelled = pd.Series(sentences, index=[10, 20, 30, 40])
    assert (
        translate(tiny_model, tiny_tokenizer, labelled, beam_size=1, max_len_b=4)
        == expected
    )
    # A generator is read once; a tuple is a sequence like any other.
    generated = (s for s in sentences)
    assert (
        translate(tiny_model, tiny_tokenizer, generated, beam_size=1, max_len_b=4)
        == expected
    )
    assert (
        translate(tiny_model, tiny_tokenizer, tuple(sentences), beam_size=1, max_len_b=4)
        == expected
    )


@pytest.mark.parametrize(
    "sentences, words",
    [
        ([None], ["item 0", "NoneType"]),
        (["dog", 1], ["item 1", "int"]),
        (iter(["dog", b"cat"]), ["item 1", "bytes"]),
        ("a man runs", ["one str", "[text]"]),
        ({"dog", "cat"}, ["set", "in order"]),
        (5, ["got int"]),
    ],
)
def test_what_is_not_a_list_of_sentences_is_one_line_naming_the_item(
    tiny_model, tiny_tokenizer, sentences, words
):
    with pytest.raises(ValueError) as caught:
        translate(tiny_model, tiny_tokenizer, sentences)
    message = str(caught.value)
    assert "\n" not in message and all(w in message for w in words), message


def test_scores_read_their_sentences_by_position_too():
    pd = pytest.importorskip("pandas")
    references = ["Ein Hund läuft.", "Zwei Katzen schlafen im Haus."]
    hypotheses = pd.Series(references, index=[7, 3])
    assert sacrebleu_score(hypotheses, references)["score"] == pytest.approx(100.0)
    assert tokenized_bleu(iter(references), references)["score"] == pytest.approx(100.0)
    with pytest.raises(ValueError, match="item 1 is a NoneType"):
        sacrebleu_score(["Ein Hund läuft.", None], references)


@pytest.mark.parametrize("precision", ["bogus", "auto", "FP16"])
def test_translate_refuses_a_precision_it_cannot_decode_in(
    tiny_model, tiny_tokenizer, precision
):
    with pytest.raises(
        ValueError, match=f"precision must be one of fp32, bf16, fp16, got '{precision}'"
    ):
        translate(tiny_model, tiny_tokenizer, ["dog"], precision=precision)


def test_decode_settings_take_every_autocast_and_nothing_else():
    from annotated_transformer.model.decoding import DecodeSettings

    for precision in ("fp32", "bf16", "fp16"):
        assert DecodeSettings(precision=precision).precision == precision
    with pytest.raises(ValueError, match="got 'bogus'"):
        DecodeSettings(precision="bogus")


@pytest.mark.parametrize("beam_size", [1, 3])
def test_the_fixed_shape_decoders_translate_as_the_eager_ones(
    tiny_tokenizer, beam_size, monkeypatch
):
    # cuda_graphs=True: a StaticGreedyDecoder or StaticBeamDecoder per batch shape (its step run
    # eagerly on a CPU); in fp32 the translations are the same, batch by batch. Batches of 30
    # tokens give shapes that repeat (the decoder is reused) and shapes that change.
    from annotated_transformer.evaluation import scoring

    built, batches = [], []
    build, collate = scoring._static_decoder, scoring.collate_sources
    monkeypatch.setattr(
        scoring, "_static_decoder", lambda *a: built.append(a[1]) or build(*a)
    )
    monkeypatch.setattr(
        scoring, "collate_sources", lambda *a: batches.append(1) or collate(*a)
    )
    torch.manual_seed(1)
    model = Transformer(
        preset("tiny", dropout=0.0), tiny_tokenizer.vocab_size, tiny_tokenizer.vocab_size
    ).eval()
    words = "a man dog cat runs sits in on the park house red blue small big".split()
    sentences = [
        " ".join(words[(3 * i + k) % 15] for k in range(1 + i % 6)) for i in range(24)
    ]
    sentences += ["the dog runs"] * 12  # batches of one shape, one after another
    sentences[5] = ""
    settings = dict(beam_size=beam_size, max_len_b=6, batch_tokens=30 * beam_size)
    eager = translate(model, tiny_tokenizer, sentences, **settings)
    batches.clear()
    static = translate(model, tiny_tokenizer, sentences, cuda_graphs=True, **settings)
    assert static == eager and static[5] == ""
    assert len(set(built)) == len(built) > 3 and len(batches) > len(built)  # reused
    assert len(set(eager)) > 5  # not one output for everything


@on_a_gpu
def test_on_a_gpu_translation_with_cuda_graphs_is_the_eager_translation(tiny_tokenizer):
    torch.manual_seed(1)
    model = (
        Transformer(
            preset("tiny", dropout=0.0),
            tiny_tokenizer.vocab_size,
            tiny_tokenizer.vocab_size,
        )
        .cuda()
        .eval()
    )
    sentences = ["a man runs in the park", "dog", "the big red house", "cat sits"] * 3
    for beam_size in (1, 3):
        settings = dict(beam_size=beam_size, max_len_b=6, batch_tokens=40 * beam_size)
        eager = translate(model, tiny_tokenizer, sentences, **settings)
        assert (
            translate(model, tiny_tokenizer, sentences, cuda_graphs=True, **settings)
            == eager
        )


def test_the_search_arguments_are_the_settings_under_the_searches_own_names():
    import inspect

    from annotated_transformer.model.decoding import DecodeSettings, beam_search
    from annotated_transformer.model.static_decoding import StaticBeamDecoder

    settings = DecodeSettings(beam_size=3, alpha=0.7, max_len_a=1.5, max_len_b=9)
    arguments = settings.search_arguments()
    assert arguments == dict(beam_size=3, alpha=0.7, max_len_a=1.5, max_len_b=9)
    for search in (beam_search, StaticBeamDecoder):
        assert set(arguments) <= set(inspect.signature(search).parameters)

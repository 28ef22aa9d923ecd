"""Perplexity on a test set counts the pairs it leaves out: a pair longer than the model's
positions (or wider than one batch) is scored by BLEU but not by perplexity, and the result says
how many ("ppl_pairs_left_out"), in the scores, the results record and the printed line."""

from __future__ import annotations

import json

import pytest
import torch

from annotated_transformer import Transformer, preset
from annotated_transformer.data import EncodedPairs, train_tokenizer
from annotated_transformer.evaluation.scoring import evaluate_translation
from annotated_transformer.model.decoding import DecodeSettings
from annotated_transformer.training.teacher_forcing import teacher_forced_loss

SHORT = ["a man runs", "the dog sits", "a red house"]
SHORT_DE = ["the dog runs", "a man sits", "the blue park"]
LONG = " ".join(["a man runs in the park"] * 10)  # far more subwords than 24 positions


@pytest.fixture(scope="module")
def tokenizer():
    words = "a man dog cat runs sits in on the park house red blue small big".split()
    sentences = [
        " ".join(words[(i * k) % len(words)] for k in range(1, 2 + i % 7))
        for i in range(300)
    ]
    return train_tokenizer(sentences, vocab_size=40)


@pytest.fixture(scope="module")
def model(tokenizer):
    torch.manual_seed(0)
    config = preset("tiny", dropout=0.0, max_len=24)
    return Transformer(config, tokenizer.vocab_size, tokenizer.vocab_size).eval()


SETTINGS = DecodeSettings(beam_size=1, max_len_b=5)


def _scores(model, tokenizer, sources, references, settings=SETTINGS) -> dict:
    return evaluate_translation(
        model, tokenizer, sources, references, settings, target_language="en"
    )


def test_a_test_set_that_fits_is_scored_whole_and_says_it_left_out_none(model, tokenizer):
    scores = _scores(model, tokenizer, SHORT, SHORT_DE)
    assert scores["ppl_pairs_left_out"] == 0
    whole = teacher_forced_loss(
        model, EncodedPairs.from_texts(tokenizer, SHORT, SHORT_DE), label_smoothing=0.0
    )
    assert scores["ppl"] == round(whole["ppl"], 3)


def test_pairs_longer_than_the_positions_are_counted_in_the_result(
    model, tokenizer, caplog
):
    sources, references = [*SHORT, LONG, "dog"], [*SHORT_DE, "dog", LONG]
    with caplog.at_level("WARNING"):
        scores = _scores(model, tokenizer, sources, references)
    assert scores["ppl_pairs_left_out"] == 2
    assert scores["sentences"] == 5  # BLEU still scores every sentence
    kept = _scores(model, tokenizer, SHORT, SHORT_DE)
    assert scores["ppl"] == kept["ppl"]  # over the pairs that fit, as before
    assert "ppl_pairs_left_out" in caplog.text and "2 of 5 pairs" in caplog.text


def test_pairs_wider_than_one_batch_are_counted_too(model, tokenizer):
    widest = max(len(tokenizer.encode(s)) for s in SHORT + SHORT_DE)
    narrow = DecodeSettings(beam_size=1, max_len_b=5, batch_tokens=widest)
    scores = _scores(model, tokenizer, [*SHORT, "dog"], [*SHORT_DE, "dog"], narrow)
    # every pair's target needs its subwords + bos/eos: the widest no longer fits a batch alone
    assert scores["ppl_pairs_left_out"] >= 1


def test_the_results_record_and_the_train_line_carry_the_count(
    tmp_path, monkeypatch, capsys
):
    from annotated_transformer import pipeline
    from annotated_transformer.cli import main
    from annotated_transformer.commands import train
    from annotated_transformer.profiles import get_profile

    test = {
        "sacrebleu": 1.0,
        "sacrebleu_signature": "sig",
        "bleu_tokenized": 2.0,
        "ppl": 30.0,
        "ppl_pairs_left_out": 3,
    }
    summary = {
        "steps": 1,
        "train_time_s": 1.0,
        "stopped_by": "max_steps",
        "test": test,
        "model_config": {},
        "out_dir": str(tmp_path / "run"),
        "results_path": str(tmp_path / "results.json"),
    }
    written = pipeline.write_results(
        summary, get_profile("cpu"), path=tmp_path / "results.json"
    )
    record = json.loads(written.read_text())
    assert record["metrics"]["ppl_pairs_left_out"] == 3  # beside the top-level ppl
    assert record["metrics"]["test"]["ppl_pairs_left_out"] == 3

    monkeypatch.setattr(train.pipeline, "run", lambda *a, **k: summary)
    assert main(["train", "--out", str(tmp_path / "run")]) == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert "perplexity 30.00 leaving out 3 test pairs too long" in line

"""A short real run on Multi30k EN->DE: BPE, token batches, training, averaging, beam search, BLEU, results."""

import json

import pytest

from annotated_transformer import pipeline
from annotated_transformer.profiles import Profile, get_profile

pytestmark = pytest.mark.slow  # a real Multi30k run: BPE, 60 steps, beam search, BLEU


def test_short_multi30k_run_learns_and_is_scored_end_to_end(
    data_dir, tmp_path, monkeypatch
):
    monkeypatch.setenv("AT_RESULTS_DIR", str(tmp_path / "results"))
    # Tiny model, 1,000 BPE pieces, 2,000 pairs, 60 steps: about a minute on 2 cores.
    profile = get_profile(
        "smoke",
        max_train_pairs=2000,
        max_valid_pairs=200,
        max_steps=60,
        eval_every=20,
        save_every_steps=30,
        average_last=2,
        eval_max_sentences=24,
        beam_size=2,
    )
    summary = pipeline.run(
        profile, tmp_path / "run", data_dir=data_dir, show_progress=False
    )

    records = [
        json.loads(line)
        for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
    ]
    valid = [r["loss"] for r in records if r["kind"] == "valid"]
    assert len(valid) == 3
    assert valid[-1] < valid[0] - 0.5, f"validation loss should fall clearly, got {valid}"
    assert summary["stopped_by"] == "max_steps" and summary["steps"] == 60

    test = summary["test"]
    assert test["sentences"] == 24 and test["averaged_checkpoints"] == [
        "step_00000030.pt",
        "step_00000060.pt",
    ]
    assert 0.0 <= test["sacrebleu"] <= 100.0 and "tok:13a" in test["sacrebleu_signature"]
    assert (
        0.0 <= test["bleu_tokenized"] <= 100.0
        and "compound-split" in test["bleu_tokenized_signature"]
    )
    assert (
        test["ppl"] < 1000
    )  # per subword, below the 1,000-piece vocabulary's uniform guess
    assert (
        len((tmp_path / "run" / "test_translations.txt").read_text().splitlines()) == 24
    )

    result = json.loads(
        (tmp_path / "results" / "smoke" / "translation_multi30k_en_de.json").read_text()
    )
    assert result["provenance"]["torch"] and result["config"]["model"]["d_model"] == 64
    assert (
        result["metrics"]["test"]["sacrebleu"]
        == test["sacrebleu"]
        == result["metrics"]["sacrebleu"]
    )
    assert summary["results_path"] == str(
        tmp_path / "results" / "smoke" / "translation_multi30k_en_de.json"
    )
    assert (
        Profile.from_dict(result["config"]["profile"]) == profile
    )  # the record says what ran

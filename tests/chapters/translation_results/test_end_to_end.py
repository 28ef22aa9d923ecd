"""A short real run on Multi30k EN->DE: BPE, token batches, training, averaging, beam search, BLEU, results."""

import collections
import json
import math

import pytest
import sacrebleu

from annotated_transformer import pipeline
from annotated_transformer.data import load_parallel
from annotated_transformer.evaluation.scoring import paired_bootstrap
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
        profile, tmp_path / "run", data_dir=data_dir, show_progress=False, publish=True
    )

    records = [
        json.loads(line)
        for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
    ]
    valid = [r["loss"] for r in records if r["kind"] == "valid"]
    assert len(valid) == 3
    assert valid[-1] < valid[0] - 0.5, f"validation loss should fall clearly, got {valid}"
    # Beating the vocabulary's uniform guess (ppl 1,000) only takes learning which pieces are
    # common; the last validation must beat a unigram model of the training targets (about
    # ppl 300 here; the run reaches about 230), which takes using the source and the prefix.
    last = [r for r in records if r["kind"] == "valid"][-1]
    unigram_nll, tokens = _unigram_nll(profile, data_dir)
    # The same validation targets, end of sentence included.
    assert tokens == last["tokens"]
    assert last["nll"] < unigram_nll - 0.1, (
        f"validation ppl {math.exp(last['nll']):.0f} is no better than the "
        f"unigram model's {math.exp(unigram_nll):.0f}"
    )
    assert summary["stopped_by"] == "max_steps" and summary["steps"] == 60

    test = summary["test"]
    assert test["sentences"] == 24 and test["averaged_checkpoints"] == [
        "step_00000030.pt",
        "step_00000060.pt",
    ]
    # 60 steps of a tiny model translate badly (BLEU near 0, hardly above an untrained model's),
    # so no level is asserted: the score must be sacreBLEU's own of the translations written,
    # against the first 24 references of the test set.
    hypotheses = (tmp_path / "run" / "test_translations.txt").read_text().splitlines()
    references = load_parallel("multi30k", "test", data_dir=data_dir, download=False).tgt
    expected = sacrebleu.corpus_bleu(hypotheses, [references[:24]]).score
    assert test["sacrebleu"] == round(expected, 2)
    # its interval is the bootstrap's over those same sentences
    assert (
        test["sacrebleu_ci95"]
        == paired_bootstrap({"x": hypotheses}, references[:24])["x"]["ci95"]
    )
    assert "tok:13a" in test["sacrebleu_signature"]
    assert "compound-split" in test["bleu_tokenized_signature"]
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
    assert result["metrics"]["sacrebleu_ci95"] == test["sacrebleu_ci95"]
    assert summary["results_path"] == str(
        tmp_path / "results" / "smoke" / "translation_multi30k_en_de.json"
    )
    # The run's own copy, in its folder, is the published one and names that folder.
    own = json.loads((tmp_path / "run" / "results.json").read_text())
    assert own["metrics"] == result["metrics"]
    assert own["run_folder"] == result["run_folder"] == str((tmp_path / "run").resolve())
    assert (
        Profile.from_dict(result["config"]["profile"]) == profile
    )  # the record says what ran


def _unigram_nll(profile: Profile, data_dir) -> tuple[float, int]:
    """Per-token NLL of the validation targets (each with its end of sentence) under the training
    targets' piece frequencies (add-one smoothed over the vocabulary), and how many tokens."""
    data = pipeline.prepare_data(profile, data_dir)
    eos, vocab = data.tokenizer.eos_id, data.tokenizer.vocab_size

    def targets(pairs):
        return [[*map(int, pairs[i][1]), eos] for i in range(len(pairs))]

    counts = collections.Counter(t for row in targets(data.train) for t in row)
    total = sum(counts.values())
    valid = [t for row in targets(data.valid) for t in row]
    nll = -sum(math.log((counts[t] + 1) / (total + vocab)) for t in valid)
    return nll / len(valid), len(valid)

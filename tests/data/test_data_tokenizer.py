"""The shared BPE tokenizer: special ids the model expects, lossless round trips, training on train only,
and a cache that makes the second call cheap and identical."""

from __future__ import annotations

import json
import os
import pickle
import random
import shutil
import time
import unicodedata

import pytest
import sentencepiece as spm
import torch

from annotated_transformer.data import load_parallel
from annotated_transformer.data import tokenizer as tokenizer_module
from annotated_transformer.data.tokenizer import (
    SPECIAL_IDS,
    Tokenizer,
    tokenizer_cache_path,
    tokenizer_for_corpus,
    train_tokenizer,
)
from annotated_transformer.model.config import TransformerConfig

STAGED_DATA_DIR = os.environ.get("AT_DATA_DIR")
needs_staged_data = pytest.mark.skipif(
    not STAGED_DATA_DIR, reason="AT_DATA_DIR is unset: see the README's data section"
)

WORDS = "the a dog cat runs sits on in red blue small big house garden ball water man woman child".split()


def toy_sentences(n: int = 400, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [
        " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 9))).capitalize() + "."
        for _ in range(n)
    ]


@pytest.fixture(scope="module")
def toy_tokenizer() -> Tokenizer:
    return train_tokenizer(toy_sentences(), vocab_size=80, num_threads=1)


@pytest.fixture(scope="module")
def multi30k_tokenizer(tmp_path_factory):
    """Multi30k's 8k tokenizer, trained once for this module, recording which splits training read."""
    if not STAGED_DATA_DIR:
        pytest.skip("AT_DATA_DIR is unset: see the README's data section")
    cache = tmp_path_factory.mktemp("tokenizers")
    splits_read = []
    real_load = tokenizer_module.load_parallel

    def recording_load(corpus, split, *args, **kwargs):
        splits_read.append((corpus, split))
        return real_load(corpus, split, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tokenizer_module, "load_parallel", recording_load)
        started = time.perf_counter()
        trained = tokenizer_for_corpus(
            "multi30k", 8000, data_dir=STAGED_DATA_DIR, cache_dir=cache
        )
        seconds = time.perf_counter() - started
    return {
        "tokenizer": trained,
        "cache": cache,
        "splits_read": splits_read,
        "seconds": seconds,
    }


def test_special_ids_match_the_model_config(toy_tokenizer):
    config = TransformerConfig()
    assert SPECIAL_IDS == {
        "pad": config.pad_id,
        "bos": config.bos_id,
        "eos": config.eos_id,
        "unk": config.unk_id,
    }
    assert (
        toy_tokenizer.pad_id,
        toy_tokenizer.bos_id,
        toy_tokenizer.eos_id,
        toy_tokenizer.unk_id,
    ) == (0, 1, 2, 3)
    assert [toy_tokenizer.id_to_piece(i) for i in range(4)] == [
        "<pad>",
        "<s>",
        "</s>",
        "<unk>",
    ]


def test_encode_adds_no_specials_and_decode_round_trips(toy_tokenizer):
    for sentence in toy_sentences(50, seed=1):
        ids = toy_tokenizer.encode(sentence)
        assert ids and not set(ids) & {0, 1, 2}
        assert toy_tokenizer.decode(ids) == sentence


def test_decode_stops_at_eos_and_skips_pad_and_bos(toy_tokenizer):
    ids = toy_tokenizer.encode("The dog runs.")
    model_output = torch.tensor(
        [1, *ids, 2, *toy_tokenizer.encode("garbage after eos"), 0, 0]
    )
    assert toy_tokenizer.decode(model_output) == "The dog runs."
    assert (
        toy_tokenizer.decode_batch(torch.tensor([[1, *ids, 2], [1, *ids, 0]]))
        == ["The dog runs."] * 2
    )
    with pytest.raises(ValueError, match="outside the vocabulary"):
        toy_tokenizer.decode([toy_tokenizer.vocab_size])


def test_bytes_and_pickle_rebuild_the_same_tokenizer(toy_tokenizer, tmp_path):
    rebuilt = Tokenizer.from_bytes(toy_tokenizer.to_bytes())
    assert rebuilt == toy_tokenizer and rebuilt.encode(
        "A red ball."
    ) == toy_tokenizer.encode("A red ball.")
    assert (
        pickle.loads(pickle.dumps(toy_tokenizer)) == toy_tokenizer
    )  # DataLoader workers pickle it
    assert Tokenizer.load(toy_tokenizer.save(tmp_path / "m.model")) == toy_tokenizer


def test_training_is_reproducible(toy_tokenizer):
    assert train_tokenizer(toy_sentences(), vocab_size=80, num_threads=1) == toy_tokenizer


def test_models_with_other_special_ids_are_rejected():
    import io

    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(toy_sentences()),
        model_writer=model,
        vocab_size=60,
        minloglevel=2,
    )  # sentencepiece's defaults: unk=0, bos=1, eos=2, no pad
    with pytest.raises(ValueError, match="special ids .*retrain it with train_tokenizer"):
        Tokenizer.from_bytes(model.getvalue())


def test_impossible_vocab_size_and_empty_text_are_clear_errors():
    with pytest.raises(ValueError, match="Use a smaller vocab_size"):
        train_tokenizer(toy_sentences(20), vocab_size=5000)
    with pytest.raises(ValueError, match="no sentences"):
        train_tokenizer([], vocab_size=50)
    with pytest.raises(ValueError, match="vocab_size must exceed"):
        train_tokenizer(toy_sentences(), vocab_size=4)


def test_lowercase_option_folds_case():
    lowered = train_tokenizer(
        toy_sentences(), vocab_size=80, lowercase=True, num_threads=1
    )
    assert lowered.decode(lowered.encode("The Dog RUNS.")) == "the dog runs."


def test_train_tokenizer_cache_is_keyed_by_text_and_options(tmp_path):
    first = train_tokenizer(
        toy_sentences(), vocab_size=80, cache_dir=tmp_path, num_threads=1
    )
    assert len(list(tmp_path.glob("*.model"))) == 1
    again = train_tokenizer(
        toy_sentences(), vocab_size=80, cache_dir=tmp_path, num_threads=1
    )
    assert again == first and len(list(tmp_path.glob("*.model"))) == 1
    train_tokenizer(
        toy_sentences(seed=5), vocab_size=80, cache_dir=tmp_path, num_threads=1
    )
    train_tokenizer(toy_sentences(), vocab_size=70, cache_dir=tmp_path, num_threads=1)
    assert len(list(tmp_path.glob("*.model"))) == 3
    assert not list(tmp_path.glob("*.part"))  # atomic writes leave no temp files


def test_corpus_tokenizer_refuses_evaluation_splits(tmp_path):
    with pytest.raises(ValueError, match="not a training split .*leak"):
        tokenizer_for_corpus("multi30k", 1000, split="val", cache_dir=tmp_path)
    with pytest.raises(ValueError, match="not a training split"):
        tokenizer_for_corpus("wmt14", 1000, split="test", cache_dir=tmp_path)


@needs_staged_data
def test_multi30k_tokenizer_reads_only_the_training_split(multi30k_tokenizer):
    assert multi30k_tokenizer["splits_read"] == [("multi30k", "train")]
    assert multi30k_tokenizer["tokenizer"].vocab_size == 8000
    assert (
        multi30k_tokenizer["seconds"] < 30
    )  # about 1 s on two cores; generous for a busy machine


@needs_staged_data
def test_multi30k_tokenizer_round_trips_unseen_text(multi30k_tokenizer):
    tokenizer = multi30k_tokenizer["tokenizer"]
    val = load_parallel("multi30k", "val", data_dir=STAGED_DATA_DIR)
    # NFKC normalization (sentencepiece's default) maps e.g. a no-break space to a space; other text is kept.
    sentences = [s for s in val.src + val.tgt if unicodedata.normalize("NFKC", s) == s]
    assert len(sentences) >= 2000
    ids = tokenizer.encode_batch(sentences)
    assert [tokenizer.decode(row) for row in ids] == sentences
    assert sum(row.count(tokenizer.unk_id) for row in ids) == 0


@needs_staged_data
def test_multi30k_tokenizer_second_call_is_cached_fast_and_identical(
    multi30k_tokenizer, monkeypatch
):
    cache = multi30k_tokenizer["cache"]
    path = tokenizer_cache_path(
        "multi30k", 8000, data_dir=STAGED_DATA_DIR, cache_dir=cache
    )
    assert path.is_file() and path.name.startswith("multi30k-train-bpe8000-")

    def no_training(*args, **kwargs):
        raise AssertionError("a cached tokenizer must not be retrained")

    monkeypatch.setattr(tokenizer_module, "_train_model_bytes", no_training)
    started = time.perf_counter()
    again = tokenizer_for_corpus(
        "multi30k", 8000, data_dir=STAGED_DATA_DIR, cache_dir=cache
    )
    assert time.perf_counter() - started < 2.0  # a sha256 of 1.2 MB and a 370 kB load
    assert again == multi30k_tokenizer["tokenizer"]
    other = tokenizer_cache_path(
        "multi30k", 8000, data_dir=STAGED_DATA_DIR, cache_dir=cache, lowercase=True
    )
    assert other != path  # every option that changes the model changes the key


# ------------------------------------------------------------------ the cache checks what it loads
def tiny_multi30k(root) -> str:
    """A Multi30k-shaped training split of toy sentences (both sides), for a corpus tokenizer."""
    folder = root / "multi30k"
    folder.mkdir(parents=True)
    (folder / "train.en").write_text("\n".join(toy_sentences(300, seed=1)) + "\n")
    (folder / "train.de").write_text("\n".join(toy_sentences(300, seed=2)) + "\n")
    return str(root)


def cached_files(folder) -> list[str]:
    return sorted(path.name for path in folder.glob("*.model"))


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[: len(data) // 2],  # a copy cut short
        lambda data: data[:10],
        lambda data: b"",  # an empty file
        lambda data: b"not a model at all\n" * 40,
    ],
)
def test_a_damaged_cached_tokenizer_is_one_line_naming_the_file_and_the_fix(
    tmp_path, damage
):
    train_tokenizer(toy_sentences(), vocab_size=80, cache_dir=tmp_path, num_threads=1)
    (path,) = tmp_path.glob("*.model")
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(ValueError) as caught:
        train_tokenizer(toy_sentences(), vocab_size=80, cache_dir=tmp_path, num_threads=1)
    message = str(caught.value)
    assert message.startswith(f"cached tokenizer {path}: not a sentencepiece model")
    assert "delete it and the tokenizer is trained again" in message
    assert "\n" not in message and "INTERNAL" not in message
    assert caught.value.__cause__ is None  # no sentencepiece traceback beneath it
    assert path.is_file()  # left for a look at what broke it
    path.unlink()
    again = train_tokenizer(
        toy_sentences(), vocab_size=80, cache_dir=tmp_path, num_threads=1
    )
    assert again.vocab_size == 80


def test_a_damaged_model_file_names_itself_when_loaded(tmp_path):
    path = tmp_path / "broken.model"
    path.write_bytes(b"\x0a\x05abc")
    with pytest.raises(ValueError, match=f"^{path}: not a sentencepiece model"):
        Tokenizer.load(path)
    with pytest.raises(ValueError, match="not a sentencepiece model"):
        Tokenizer.from_bytes(b"")


@pytest.mark.parametrize(
    ("other", "holds"),
    [
        (dict(vocab_size=50), "holds-50-bpe"),
        (dict(vocab_size=60, model_type="unigram"), "holds-60-unigram"),
    ],
)
def test_a_cached_tokenizer_unlike_the_one_asked_for_is_moved_aside_and_the_asked_one_trained(
    tmp_path, other, holds
):
    asked = train_tokenizer(
        toy_sentences(), vocab_size=60, cache_dir=tmp_path, num_threads=1
    )
    (path,) = tmp_path.glob("*.model")
    stranger = train_tokenizer(toy_sentences(), num_threads=1, **other)
    stranger.save(path)  # another tokenizer under the name of the one asked for
    got = train_tokenizer(
        toy_sentences(), vocab_size=60, cache_dir=tmp_path, num_threads=1
    )
    assert got == asked and got.vocab_size == 60
    assert Tokenizer.load(path) == asked  # the key holds what it names
    (aside,) = tmp_path.glob(f"*.{holds}.model")
    assert Tokenizer.load(aside) == stranger  # nothing lost
    assert len(cached_files(tmp_path)) == 2


def test_a_lowercasing_tokenizer_is_not_taken_for_a_cased_one(tmp_path):
    train_tokenizer(toy_sentences(), vocab_size=80, cache_dir=tmp_path, num_threads=1)
    (path,) = tmp_path.glob("*.model")
    train_tokenizer(toy_sentences(), vocab_size=80, lowercase=True, num_threads=1).save(
        path
    )
    got = train_tokenizer(
        toy_sentences(), vocab_size=80, cache_dir=tmp_path, num_threads=1
    )
    assert got.decode(got.encode("The Dog.")) == "The Dog."


def test_a_cached_char_tokenizer_of_fewer_pieces_than_asked_is_reused(
    tmp_path, monkeypatch
):
    """A char model has one piece per character seen, fewer than vocab_size allows."""
    first = train_tokenizer(
        toy_sentences(), vocab_size=80, model_type="char", cache_dir=tmp_path
    )
    assert first.vocab_size < 80
    monkeypatch.setattr(
        tokenizer_module,
        "_train_model_bytes",
        lambda *a, **k: pytest.fail("a matching cached tokenizer was retrained"),
    )
    again = train_tokenizer(
        toy_sentences(), vocab_size=80, model_type="char", cache_dir=tmp_path
    )
    assert again == first and len(cached_files(tmp_path)) == 1


def test_a_corpus_tokenizer_of_60_pieces_is_not_used_for_a_profile_asking_for_80(
    tmp_path,
):
    """The profile's model is built with the tokenizer's vocabulary size, so a cached tokenizer
    of another size under the asked key would build another model than the profile asks for."""
    data, cache = tiny_multi30k(tmp_path / "data"), tmp_path / "cache"
    small = tokenizer_for_corpus(
        "multi30k", 60, data_dir=data, cache_dir=cache, download=False
    )
    asked_path = tokenizer_cache_path(
        "multi30k", 80, data_dir=data, cache_dir=cache, download=False
    )
    small.save(asked_path)
    got = tokenizer_for_corpus(
        "multi30k", 80, data_dir=data, cache_dir=cache, download=False
    )
    assert got.vocab_size == 80 and Tokenizer.load(asked_path) == got
    assert (
        Tokenizer.load(asked_path.with_name(asked_path.stem + ".holds-60-bpe.model"))
        == small
    )
    asked_path.write_bytes(asked_path.read_bytes()[:100])
    with pytest.raises(ValueError) as caught:
        tokenizer_for_corpus(
            "multi30k", 80, data_dir=data, cache_dir=cache, download=False
        )
    assert str(caught.value).startswith(f"cached tokenizer {asked_path}: ")
    assert "delete it" in str(caught.value) and "\n" not in str(caught.value)


# ------------------------------------------------------- a cached tokenizer knows its text
def test_a_cached_tokenizer_of_other_text_of_the_same_size_is_moved_aside_not_used(
    tmp_path,
):
    """Same size, same type, same normalization: only the text differs, which the model file
    cannot tell. Its record (the text's and the model's sha256) can, whether the other model
    came alone or with its own record."""
    asked = train_tokenizer(
        toy_sentences(), vocab_size=60, cache_dir=tmp_path, num_threads=1
    )
    (path,) = tmp_path.glob("*.model")
    record = path.with_suffix(".json")
    assert json.loads(record.read_text())["model_sha256"]
    reversed_text = [sentence[::-1] for sentence in toy_sentences()]
    other_dir = tmp_path / "other"
    other = train_tokenizer(
        reversed_text, vocab_size=60, cache_dir=other_dir, num_threads=1
    )
    assert other != asked and other.vocab_size == asked.vocab_size
    (other_path,) = other_dir.glob("*.model")
    for with_record in (False, True):
        shutil.copy(other_path, path)
        if with_record:
            shutil.copy(other_path.with_suffix(".json"), record)
        got = train_tokenizer(
            toy_sentences(), vocab_size=60, cache_dir=tmp_path, num_threads=1
        )
        assert got == asked and Tokenizer.load(path) == asked
    asides = sorted(tmp_path.glob("*.other-text-*.model"))
    assert len(asides) == 1 and Tokenizer.load(asides[0]) == other  # nothing lost
    # the one asked for, with its record, is reused without training
    again = train_tokenizer(
        toy_sentences(), vocab_size=60, cache_dir=tmp_path, num_threads=1
    )
    assert again == asked and len(list(tmp_path.glob("*.model"))) == 2


def test_a_cached_tokenizer_without_a_record_is_trained_again(tmp_path, caplog):
    """A cache written before models had records: nothing says what text it learned."""
    asked = train_tokenizer(
        toy_sentences(), vocab_size=60, cache_dir=tmp_path, num_threads=1
    )
    (path,) = tmp_path.glob("*.model")
    path.with_suffix(".json").unlink()
    got = train_tokenizer(
        toy_sentences(), vocab_size=60, cache_dir=tmp_path, num_threads=1
    )
    assert got == asked and path.with_suffix(".json").is_file()
    assert "no record of the text it was trained on" in caplog.text


def test_a_corpus_tokenizer_of_another_corpus_of_the_same_size_is_not_used(tmp_path):
    data, cache = tiny_multi30k(tmp_path / "data"), tmp_path / "cache"
    mine = tokenizer_for_corpus(
        "multi30k", 60, data_dir=data, cache_dir=cache, download=False
    )
    path = tokenizer_cache_path(
        "multi30k", 60, data_dir=data, cache_dir=cache, download=False
    )
    trained_on = json.loads(path.with_suffix(".json").read_text())
    assert trained_on["corpus"] == "multi30k" and set(trained_on["files"]) == {
        "train.en",
        "train.de",
    }
    elsewhere = tmp_path / "elsewhere" / "multi30k"
    elsewhere.mkdir(parents=True)
    for side in ("en", "de"):
        lines = (tmp_path / "data" / "multi30k" / f"train.{side}").read_text()
        (elsewhere / f"train.{side}").write_text(lines[::-1].strip() + "\n")
    other_cache = tmp_path / "other-cache"
    theirs = tokenizer_for_corpus(
        "multi30k", 60, data_dir=elsewhere.parent, cache_dir=other_cache, download=False
    )
    assert theirs != mine
    (their_path,) = other_cache.glob("*.model")
    shutil.copy(their_path, path)
    shutil.copy(their_path.with_suffix(".json"), path.with_suffix(".json"))
    got = tokenizer_for_corpus(
        "multi30k", 60, data_dir=data, cache_dir=cache, download=False
    )
    assert got == mine and Tokenizer.load(path) == mine

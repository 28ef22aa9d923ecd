"""Subword tokenizer: sentencepiece BPE with one vocabulary shared by source and target (paper, section 5.1).

A shared vocabulary is what lets the model tie its embedding matrices (section 3.4). The tokenizer of a
corpus is trained on its training split only, so no dev or test sentence shapes the vocabulary, and is
cached under a key of everything that changes the result (the files' sha256, vocabulary size, model type,
lowercasing, trainer options), so the second call only loads a few hundred kilobytes. What the cache
holds is checked against the settings that asked for it when loaded (`_load_cached`): a damaged file is
one line naming it, another tokenizer under the key's name is moved aside and the asked one trained.
Beside each cached model, a record (`<name>.json`) says what text it was trained on (the text's
sha256) and which model file it describes (the model's sha256): a model of another corpus of the same
size, copied under the key's name, with or without its record, is never used for this one.
The serialized model is small enough to travel inside every checkpoint (`to_bytes` / `from_bytes`).
"""

from __future__ import annotations

import hashlib
import io
import itertools
import json
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import sentencepiece as spm

from ..runtime.files import atomic_write_bytes, atomic_write_text, cache_dir, move_aside
from ..runtime.records import read_json
from .corpora import corpus_info, sha256_of, split_files
from .reading import load_parallel

logger = logging.getLogger(__name__)

# Must equal TransformerConfig's pad_id, bos_id, eos_id, unk_id: the model pads and starts with these ids.
SPECIAL_IDS = {"pad": 0, "bos": 1, "eos": 2, "unk": 3}
# bump when the training recipe changes, so old cached models are not reused
_CACHE_FORMAT = 1


class Tokenizer:
    """A trained sentencepiece model with the project's special ids (pad 0, bos 1, eos 2, unk 3)."""

    def __init__(self, processor: spm.SentencePieceProcessor):
        found = {
            "pad": processor.pad_id(),
            "bos": processor.bos_id(),
            "eos": processor.eos_id(),
            "unk": processor.unk_id(),
        }
        if found != SPECIAL_IDS:
            raise ValueError(
                f"sentencepiece model has special ids {found}, the model expects {SPECIAL_IDS}: retrain it with "
                "train_tokenizer (which sets pad_id=0, bos_id=1, eos_id=2, unk_id=3)"
            )
        self._processor = processor

    # -- construction and serialization ------------------------------------------------------------
    @classmethod
    def from_bytes(cls, model_proto: bytes) -> "Tokenizer":
        """Rebuild from `to_bytes()` output (the copy a checkpoint stores); ValueError for bytes
        that are no whole sentencepiece model (empty, cut short, another file) or other ids."""
        processor = spm.SentencePieceProcessor()
        try:
            processor.LoadFromSerializedProto(bytes(model_proto))
        except RuntimeError as error:
            # sentencepiece's C++ parser says only "INTERNAL: ... ParseFromArray"
            raise ValueError(
                f"not a sentencepiece model ({len(model_proto)} bytes that do not parse: "
                "truncated, damaged or another kind of file)"
            ) from error
        if processor.get_piece_size() == 0:
            raise ValueError("not a sentencepiece model (no pieces: an empty file?)")
        return cls(processor)

    def to_bytes(self) -> bytes:
        """The serialized model proto: all that is needed to rebuild this exact tokenizer."""
        return self._processor.serialized_model_proto()

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Tokenizer":
        """The tokenizer in a .model file; a ValueError naming the file when it is not one."""
        try:
            return cls.from_bytes(Path(path).read_bytes())
        except ValueError as error:
            raise ValueError(f"{path}: {error}") from None

    def save(self, path: str | os.PathLike) -> Path:
        """Write the model file atomically (a reader never sees half a file)."""
        return atomic_write_bytes(path, self.to_bytes())

    def __reduce__(self):
        # DataLoader workers and multiprocessing pickle the tokenizer; the C++ object itself cannot be.
        return (Tokenizer.from_bytes, (self.to_bytes(),))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Tokenizer) and self.to_bytes() == other.to_bytes()

    def __hash__(self) -> int:
        return hash(self.to_bytes())

    # -- vocabulary --------------------------------------------------------------------------------
    @property
    def vocab_size(self) -> int:
        return self._processor.get_piece_size()

    def __len__(self) -> int:
        return self.vocab_size

    pad_id = property(lambda self: SPECIAL_IDS["pad"])
    bos_id = property(lambda self: SPECIAL_IDS["bos"])
    eos_id = property(lambda self: SPECIAL_IDS["eos"])
    unk_id = property(lambda self: SPECIAL_IDS["unk"])

    def id_to_piece(self, token_id: int) -> str:
        return self._processor.id_to_piece(int(token_id))

    def piece_to_id(self, piece: str) -> int:
        return self._processor.piece_to_id(piece)

    # -- text <-> ids ------------------------------------------------------------------------------
    def encode(self, text: str) -> list[int]:
        """Subword ids of text, without bos/eos (the collate function adds them where the model needs them)."""
        return self._processor.encode(text, out_type=int)

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        """encode() for many sentences at once, in sentencepiece's C++ threads (much faster than a loop)."""
        return self._processor.encode(list(texts), out_type=int, num_threads=-1)

    def pieces(self, text: str) -> list[str]:
        """The subword strings of text, to show how BPE splits words."""
        return self._processor.encode(text, out_type=str)

    def decode(self, ids: Iterable[int]) -> str:
        """Text of ids, stopping at the first eos and ignoring pad and bos (so a model's output row, padded
        after its eos, decodes to just the sentence). Accepts lists, tuples, numpy arrays and 1-D tensors."""
        if hasattr(ids, "tolist"):
            ids = ids.tolist()
        kept = []
        for token_id in ids:
            token_id = int(token_id)
            if token_id == self.eos_id:
                break
            if token_id in (self.pad_id, self.bos_id):
                continue
            if not 0 <= token_id < self.vocab_size:
                raise ValueError(
                    f"token id {token_id} is outside the vocabulary [0, {self.vocab_size})"
                )
            kept.append(token_id)
        return self._processor.decode(kept)

    def decode_batch(self, rows: Iterable[Iterable[int]]) -> list[str]:
        """decode() of each row of a (batch, length) tensor or list of lists."""
        if hasattr(rows, "tolist"):
            rows = rows.tolist()
        return [self.decode(row) for row in rows]

    def __repr__(self) -> str:
        return f"Tokenizer(vocab_size={self.vocab_size})"


def _trainer_options(
    vocab_size: int,
    model_type: str,
    lowercase: bool,
    character_coverage: float,
    input_sentence_size: int,
) -> dict:
    """Everything that changes the trained model; also the tokenizer's cache key."""
    if model_type not in ("bpe", "unigram", "char", "word"):
        raise ValueError(
            f"model_type must be 'bpe', 'unigram', 'char' or 'word', got {model_type!r}"
        )
    if vocab_size <= len(SPECIAL_IDS):
        raise ValueError(
            f"vocab_size must exceed the {len(SPECIAL_IDS)} special ids, got {vocab_size}"
        )
    return {
        "model_type": model_type,
        "vocab_size": int(vocab_size),
        # nmt_nfkc_cf = NFKC plus case folding; the corpora are NFC already, NFKC also unifies look-alikes.
        "normalization_rule_name": "nmt_nfkc_cf" if lowercase else "nmt_nfkc",
        "character_coverage": float(character_coverage),
        # Sample at most this many sentences (WMT14 has 9M): BPE on 2M sentences is already stable.
        "input_sentence_size": int(input_sentence_size),
        "shuffle_input_sentence": True,
        "pad_id": SPECIAL_IDS["pad"],
        "bos_id": SPECIAL_IDS["bos"],
        "eos_id": SPECIAL_IDS["eos"],
        "unk_id": SPECIAL_IDS["unk"],
    }


def _train_model_bytes(
    sentences: Iterable[str], options: dict, seed: int, num_threads: int | None
) -> bytes:
    # The seed drives the sampling of input_sentence_size sentences; BPE merges themselves are deterministic.
    spm.set_random_generator_seed(seed)
    model = io.BytesIO()
    threads = num_threads or min(os.cpu_count() or 1, 8)
    try:
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(sentences),
            model_writer=model,
            num_threads=threads,
            minloglevel=2,
            **options,
        )
    except RuntimeError as error:
        raise ValueError(
            f"sentencepiece could not train a {options['model_type']} model of {options['vocab_size']} pieces: "
            f"{error}. Use a smaller vocab_size or more text."
        ) from error
    return model.getvalue()


def train_tokenizer(
    sentences: Iterable[str],
    vocab_size: int = 8000,
    *,
    model_type: str = "bpe",
    lowercase: bool = False,
    character_coverage: float = 1.0,
    input_sentence_size: int = 2_000_000,
    seed: int = 0,
    num_threads: int | None = None,
    cache_dir: str | os.PathLike | None = None,
    cache_name: str = "tokenizer",
) -> Tokenizer:
    """Train a sentencepiece model on sentences (pass source and target sentences together for a shared
    vocabulary). With cache_dir, the model is stored under a key of the text and the options and reused.

    character_coverage=1.0 keeps every character seen (fine for Latin scripts); num_threads=None uses up
    to 8 cores.
    """
    options = _trainer_options(
        vocab_size, model_type, lowercase, character_coverage, input_sentence_size
    )
    if cache_dir is None:
        return Tokenizer.from_bytes(
            _train_model_bytes(_non_empty(sentences), options, seed, num_threads)
        )

    sentences = list(sentences)
    key = hashlib.sha256(
        json.dumps(
            {"format": _CACHE_FORMAT, "seed": seed, **options}, sort_keys=True
        ).encode()
    )
    text = hashlib.sha256()
    for sentence in sentences:
        key.update(sentence.encode("utf-8") + b"\n")
        text.update(sentence.encode("utf-8") + b"\n")
    path = (
        Path(cache_dir)
        / f"{cache_name}-{model_type}{vocab_size}-{key.hexdigest()[:16]}.model"
    )
    trained_on = {"text_sha256": text.hexdigest(), "sentences": len(sentences)}
    cached = _load_cached(path, options, trained_on)
    if cached is not None:
        return cached
    tokenizer = Tokenizer.from_bytes(
        _train_model_bytes(_non_empty(sentences), options, seed, num_threads)
    )
    _save_cached(path, tokenizer, trained_on)
    return tokenizer


def _record_path(path: Path) -> Path:
    """The record beside a cached model: what text it was trained on, and which model it is."""
    return path.with_suffix(".json")


def _save_cached(path: Path, tokenizer: Tokenizer, trained_on: dict) -> None:
    """Cache `tokenizer` at `path` with its record (the model first: a record names its model's
    sha256, so a model without its record, or a record of another model, is never trusted)."""
    model = tokenizer.to_bytes()
    atomic_write_bytes(path, model)
    record = {**trained_on, "model_sha256": hashlib.sha256(model).hexdigest()}
    atomic_write_text(
        _record_path(path), json.dumps(record, indent=1, sort_keys=True) + "\n"
    )


def _other_text(path: Path, model: bytes, trained_on: dict) -> str | None:
    """Why the model at `path` (its bytes `model`) is not known to be trained on the text
    `trained_on` names; None when its record says it is."""
    try:
        record = read_json(_record_path(path))
    except FileNotFoundError:
        return "no record of the text it was trained on"
    except (OSError, ValueError):
        return f"an unreadable record {_record_path(path).name}"
    if not isinstance(record, dict):
        return f"an unreadable record {_record_path(path).name}"
    if record.get("model_sha256") != hashlib.sha256(model).hexdigest():
        return "a record of another model file (the model was replaced)"
    if record.get("text_sha256") != trained_on["text_sha256"]:
        return "a record of other text (text_sha256 {}..., not {}...)".format(
            str(record.get("text_sha256"))[:12], trained_on["text_sha256"][:12]
        )
    return None


def _load_cached(path: Path, options: dict, trained_on: dict) -> Tokenizer | None:
    """The tokenizer cached at `path` when it is the one `options` (the key's settings) ask for,
    trained on the text `trained_on` names (its record says so); None sends the caller to train it.

    Another tokenizer under that name (copied in by hand, or an older recipe's) is moved aside to
    a name saying what it holds (`<name>.holds-<pieces>-<type>.model`), not refused: retraining
    gives what the user asked for, and moving it aside loses nothing. A file that does not load
    is refused in one line naming it: why it broke (a full disk, a copy cut short) is worth a look.
    """
    if not path.is_file():
        return None
    try:
        tokenizer = Tokenizer.load(path)
    except ValueError as error:
        raise ValueError(
            f"cached tokenizer {error}; delete it and the tokenizer is trained again"
        ) from None
    holds = _held_settings(tokenizer)
    mismatch = _mismatch(holds, options)
    if mismatch is None:
        model = tokenizer.to_bytes()
        why = _other_text(path, model, trained_on)
        if why is None:
            return tokenizer
        _set_aside(path, f"other-text-{hashlib.sha256(model).hexdigest()[:8]}", why)
        return None
    aside = path.with_name(
        f"{path.stem}.holds-{holds['pieces']}-{holds.get('model_type', 'unknown')}.model"
    )
    move_aside(path, aside)
    logger.warning(
        "%s holds %s, not the %s asked for: moved to %s; training the tokenizer asked for",
        path,
        mismatch[0],
        mismatch[1],
        aside.name,
    )
    return None


def _set_aside(path: Path, label: str, why: str) -> None:
    """Move a cached model whose text is not known to be the asked one (and its record, if any)
    to `<name>.<label>.model`, so nothing is lost and the key is free for the asked one."""
    aside = path.with_name(f"{path.stem}.{label}.model")
    move_aside(path, aside)
    if _record_path(path).is_file():
        move_aside(_record_path(path), _record_path(aside))
    logger.warning(
        "%s has %s: moved to %s; training the tokenizer asked for", path, why, aside.name
    )


def _held_settings(tokenizer: Tokenizer) -> dict:
    """What a loaded model is: its piece count and, where protobuf can read the model's own
    record of its training, its model type and normalization rule."""
    held = {"pieces": tokenizer.vocab_size}
    try:
        from sentencepiece import sentencepiece_model_pb2 as model_pb2
    except ImportError:  # protobuf is not installed: the piece count alone is checked
        return held
    proto = model_pb2.ModelProto()
    proto.ParseFromString(tokenizer.to_bytes())
    held["model_type"] = model_pb2.TrainerSpec.ModelType.Name(
        proto.trainer_spec.model_type
    ).lower()
    held["normalization_rule_name"] = proto.normalizer_spec.name
    return held


def _mismatch(held: dict, options: dict) -> tuple[str, str] | None:
    """(what the model holds, what was asked) for the first setting that differs; None if none.
    A char model has one piece per character seen, fewer than vocab_size allows."""
    asked = options["vocab_size"]
    pieces = held["pieces"]
    if (pieces > asked) if options["model_type"] == "char" else (pieces != asked):
        return f"a tokenizer of {pieces} pieces", f"{asked}"
    for name in ("model_type", "normalization_rule_name"):
        if name in held and held[name] != options[name]:
            return f"{name} {held[name]!r}", f"{options[name]!r}"
    return None


def _non_empty(sentences: Iterable[str]) -> Iterable[str]:
    """The same sentences, after checking there is at least one (sentencepiece's own error is cryptic)."""
    iterator = iter(sentences)
    first = next(iterator, None)
    if first is None:
        raise ValueError(
            "no sentences to train a tokenizer on: pass a non-empty list of sentences"
        )
    return itertools.chain([first], iterator)


@dataclass(frozen=True)
class CorpusTokenizer:
    """The recipe of a corpus's shared tokenizer: trained on both sides of one training split with
    these options, once, then loaded from the cache, under a name that hashes the training files'
    sha256 and the options (a changed file or option never reuses a stale model)."""

    corpus: str
    vocab_size: int = 8000
    # a training split only (WMT14: "train" or "train_sample"); None: the first
    split: str | None = None
    model_type: str = "bpe"
    lowercase: bool = False

    def cache_path(self, data_dir=None, cache_dir=None, download: bool = True) -> Path:
        """Where this tokenizer is (or will be) cached: `cache_dir`, default $AT_CACHE_DIR/tokenizers
        or ~/.cache/annotated_transformer/tokenizers."""
        return self._keyed(data_dir, cache_dir, download)[0]

    def _keyed(self, data_dir, cache_dir, download: bool):
        """(cache path, corpus info, split, trainer options, what text it trains on): the key and
        what it is made of."""
        info = corpus_info(self.corpus)
        split = info.canonical_split(self.split or info.training_splits[0])
        if split not in info.training_splits:
            raise ValueError(
                f"{split!r} is not a training split of {info.title} ({', '.join(info.training_splits)}): a "
                "tokenizer learned on dev or test text would leak them into the model's vocabulary"
            )
        src, tgt = info.languages
        files = split_files(info.name, split, src, tgt, data_dir, download=download)
        options = _trainer_options(
            self.vocab_size, self.model_type, self.lowercase, 1.0, 2_000_000
        )
        files_sha256 = [sha256_of(path) for path in files]
        key = {
            "format": _CACHE_FORMAT,
            "corpus": info.name,
            "split": split,
            "files_sha256": files_sha256,
            "seed": 0,
            **options,
        }
        trained_on = {
            "text_sha256": hashlib.sha256("\n".join(files_sha256).encode()).hexdigest(),
            "corpus": info.name,
            "split": split,
            "files": {Path(f).name: digest for f, digest in zip(files, files_sha256)},
        }
        digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
        folder = Path(cache_dir) if cache_dir is not None else _default_tokenizer_dir()
        lower = "-lc" if self.lowercase else ""
        name = f"{info.name}-{split}-{self.model_type}{self.vocab_size}{lower}-{digest}.model"
        return folder / name, info, split, options, trained_on

    def load_or_train(
        self, data_dir=None, cache_dir=None, download: bool = True
    ) -> Tokenizer:
        """The cached tokenizer, trained first when the cache does not hold it."""
        path, info, split, options, trained_on = self._keyed(
            data_dir, cache_dir, download
        )
        cached = _load_cached(path, options, trained_on)
        if cached is not None:
            return cached
        started = time.perf_counter()
        pairs = load_parallel(
            info.name,
            split,
            info.languages[0],
            info.languages[1],
            data_dir,
            download=download,
            drop_empty=True,
        )
        if not len(pairs):
            raise ValueError(
                f"{pairs.src_path} and {pairs.tgt_path} hold no usable sentence pair "
                f"(skipped: {pairs.skipped}): a tokenizer needs the training text; fix or "
                "replace these files"
            )
        tokenizer = Tokenizer.from_bytes(
            _train_model_bytes(pairs.src + pairs.tgt, options, seed=0, num_threads=None)
        )
        _save_cached(path, tokenizer, trained_on)
        logger.info(
            "trained a %d-piece %s tokenizer on %s (%d sentences) in %.1f s -> %s",
            self.vocab_size,
            self.model_type,
            pairs.name,
            2 * len(pairs),
            time.perf_counter() - started,
            path,
        )
        return tokenizer


def _default_tokenizer_dir() -> Path:
    return cache_dir() / "tokenizers"


def tokenizer_cache_path(
    corpus: str,
    vocab_size: int = 8000,
    *,
    data_dir=None,
    cache_dir=None,
    download: bool = True,
    **recipe,
) -> Path:
    """`CorpusTokenizer(corpus, vocab_size, **recipe).cache_path(...)`: where the tokenizer is kept."""
    return CorpusTokenizer(corpus, vocab_size, **recipe).cache_path(
        data_dir, cache_dir, download
    )


def tokenizer_for_corpus(
    corpus: str,
    vocab_size: int = 8000,
    *,
    data_dir=None,
    cache_dir=None,
    download: bool = True,
    **recipe,
) -> Tokenizer:
    """The shared-vocabulary tokenizer of a corpus (`CorpusTokenizer`): trained on both sides of its
    training split once, then loaded from the cache. `recipe`: split, model_type, lowercase."""
    return CorpusTokenizer(corpus, vocab_size, **recipe).load_or_train(
        data_dir, cache_dir, download
    )

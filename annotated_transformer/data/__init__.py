"""Data for the Transformer: parallel corpora, the shared BPE tokenizer, token-count batches, synthetic tasks.

Typical use (English -> German Multi30k, as the `cpu` profile trains)::

    from annotated_transformer.data import load_parallel, tokenizer_for_corpus, EncodedPairs
    from annotated_transformer.data import TokenBatcher, collate_pairs

    train = load_parallel("multi30k", "train")
    tokenizer = tokenizer_for_corpus("multi30k", vocab_size=8000)
    pairs = EncodedPairs.from_corpus(tokenizer, train)
    batcher = TokenBatcher(pairs.src_lengths, pairs.tgt_lengths, max_tokens=4000, seed=0)
    for indices in batcher.epoch_batches(epoch=0):
        src, tgt = collate_pairs([pairs[i] for i in indices])
"""

from .batching import (
    EncodedPairs,
    LengthBuckets,
    TokenBatcher,
    collate_pairs,
    collate_sources,
    pack_by_tokens,
    padding_fraction,
    pair_fits,
)
from .corpora import (
    CORPORA,
    ChecksumError,
    CorpusInfo,
    DataNotFoundError,
    cache_dir,
    corpus_info,
    corpus_path,
    download_file,
    split_files,
    treebank_zip_path,
    verify_checksums,
)
from .reading import ParallelCorpus, load_parallel, read_parallel_files
from .synthetic import synthetic_batch
from .tokenizer import (
    SPECIAL_IDS,
    CorpusTokenizer,
    Tokenizer,
    tokenizer_cache_path,
    tokenizer_for_corpus,
    train_tokenizer,
)

__all__ = [
    "CORPORA",
    "ChecksumError",
    "CorpusInfo",
    "DataNotFoundError",
    "EncodedPairs",
    "LengthBuckets",
    "ParallelCorpus",
    "SPECIAL_IDS",
    "TokenBatcher",
    "Tokenizer",
    "cache_dir",
    "collate_pairs",
    "collate_sources",
    "corpus_info",
    "corpus_path",
    "download_file",
    "load_parallel",
    "pack_by_tokens",
    "padding_fraction",
    "pair_fits",
    "read_parallel_files",
    "split_files",
    "synthetic_batch",
    "CorpusTokenizer",
    "tokenizer_cache_path",
    "tokenizer_for_corpus",
    "train_tokenizer",
    "treebank_zip_path",
    "verify_checksums",
]

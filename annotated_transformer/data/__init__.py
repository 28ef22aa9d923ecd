"""Data for the Transformer: parallel corpora, the shared BPE tokenizer, token-count batches, synthetic tasks.

Typical use (English -> German Multi30k, as the `cpu` profile trains)::

    from annotated_transformer.data import load_parallel, tokenizer_for_corpus, EncodedPairs
    from annotated_transformer.data import TokenBatchSampler, collate_pairs

    train = load_parallel("multi30k", "train")
    tokenizer = tokenizer_for_corpus("multi30k", vocab_size=8000)
    pairs = EncodedPairs.from_corpus(tokenizer, train)
    sampler = TokenBatchSampler(pairs.src_lengths, pairs.tgt_lengths, max_tokens=4000, seed=0)
    loader = torch.utils.data.DataLoader(pairs, batch_sampler=sampler, collate_fn=collate_pairs)
"""
from .batching import EncodedPairs, TokenBatchSampler, collate_pairs, padding_fraction
from .fetch import ChecksumError, download_file, verify_checksums
from .locate import DataNotFoundError, cache_dir, corpus_path, split_files, treebank_zip_path
from .reading import ParallelCorpus, load_parallel, read_parallel_files
from .registry import CORPORA, CorpusInfo, corpus_info
from .synthetic import synthetic_batch
from .tokenizer import SPECIAL_IDS, Tokenizer, tokenizer_cache_path, tokenizer_for_corpus, train_tokenizer

__all__ = [
    "CORPORA",
    "ChecksumError",
    "CorpusInfo",
    "DataNotFoundError",
    "EncodedPairs",
    "ParallelCorpus",
    "SPECIAL_IDS",
    "TokenBatchSampler",
    "Tokenizer",
    "cache_dir",
    "collate_pairs",
    "corpus_info",
    "corpus_path",
    "download_file",
    "load_parallel",
    "padding_fraction",
    "read_parallel_files",
    "split_files",
    "synthetic_batch",
    "tokenizer_cache_path",
    "tokenizer_for_corpus",
    "train_tokenizer",
    "treebank_zip_path",
    "verify_checksums",
]

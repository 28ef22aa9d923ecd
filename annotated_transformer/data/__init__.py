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
)
from .corpora import DataNotFoundError, treebank_zip_path
from .reading import load_parallel
from .synthetic import synthetic_batch
from .tokenizer import Tokenizer, tokenizer_for_corpus, train_tokenizer

__all__ = [
    "DataNotFoundError",
    "EncodedPairs",
    "LengthBuckets",
    "TokenBatcher",
    "Tokenizer",
    "collate_pairs",
    "collate_sources",
    "load_parallel",
    "synthetic_batch",
    "tokenizer_for_corpus",
    "train_tokenizer",
    "treebank_zip_path",
]

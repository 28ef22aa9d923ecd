"""How good is a translation model: perplexity, sacreBLEU and the paper's tokenized BLEU (section 6.1).

Two BLEUs, because they are not the same number:

- **sacreBLEU** scores detokenized output against raw references with its own fixed tokenizer and prints
  a signature (`nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.x`) so anyone can reproduce it.
  This is the number to compare across papers today.
- **tokenized BLEU** is what the Transformer paper and its contemporaries reported: hypothesis and
  reference are tokenized (here with sacreBLEU's 13a or intl tokenizer, close to the Moses tokenizer they
  used), hyphenated compounds are split as tensor2tensor's `get_ende_bleu.sh` does ("Arbeits-Markt" ->
  "Arbeits ##AT##-##AT## Markt", so each part can match), and BLEU is computed on the tokens. It is
  usually higher than sacreBLEU, more so for German.

Perplexity is per subword (teacher forcing, no label smoothing), like the paper's Table 3.
"""
from __future__ import annotations

import math
import re
from typing import Sequence

import numpy as np
import torch
import torch.nn as nn

from .data.batching import EncodedPairs, TokenBatchSampler, collate_pairs
from .decoding import beam_search, greedy_decode
from .model import logits_at_real_targets

_COMPOUND = re.compile(r"(\S)-(\S)")


# ------------------------------------------------------------------------------------------ perplexity
@torch.no_grad()
def teacher_forced_loss(
    model: nn.Module,
    data: EncodedPairs,
    *,
    batch_tokens: int = 4000,
    precision: str = "fp32",
    context=None,
    label_smoothing: float | None = None,
) -> dict:
    """Mean label-smoothed loss, NLL and perplexity per target subword (eos included) over `data`.

    With a DistributedContext the batches are shared out over ranks and the sums added up, so every rank
    returns the same numbers. `label_smoothing` defaults to the model's own, for the `loss` entry; `nll`
    and `ppl` never smooth.
    """
    from .training.distributed import all_reduce_sum
    from .training.loss import label_smoothed_cross_entropy
    from .training.trainer import autocast_context

    config = model.config
    device = next(model.parameters()).device
    smoothing = config.label_smoothing if label_smoothing is None else label_smoothing
    sampler = TokenBatchSampler(data.src_lengths, data.tgt_lengths, batch_tokens, shuffle=False, skip_too_long=True)
    batches = sampler.global_batches(0)
    rank, world = (context.rank, context.world_size) if context is not None else (0, 1)
    was_training = model.training
    model.eval()
    sums = torch.zeros(3, dtype=torch.float64, device=device)
    try:
        for indices in batches[rank::world]:
            src, tgt = collate_pairs([data[i] for i in indices], config.pad_id, config.bos_id, config.eos_id)
            src, tgt = src.to(device), tgt.to(device)
            with autocast_context(device, precision):  # no logits for padding
                logits, target = logits_at_real_targets(model, src, tgt[:, :-1], tgt[:, 1:], config.pad_id)
            parts = label_smoothed_cross_entropy(logits, target, smoothing, config.pad_id)
            sums += torch.stack([parts.loss.double(), parts.nll.double(), parts.tokens.double()])
    finally:
        model.train(was_training)
    if context is not None:
        all_reduce_sum(sums, context)
    loss_sum, nll_sum, tokens = sums.tolist()
    tokens = max(tokens, 1.0)
    return {"loss": loss_sum / tokens, "nll": nll_sum / tokens, "ppl": math.exp(min(nll_sum / tokens, 50.0)),
            "tokens": int(tokens)}


def perplexity(model: nn.Module, data: EncodedPairs, batch_tokens: int = 4000, precision: str = "fp32") -> float:
    """Per-subword perplexity exp(NLL / tokens) under teacher forcing."""
    return teacher_forced_loss(model, data, batch_tokens=batch_tokens, precision=precision)["ppl"]


# ------------------------------------------------------------------------------------------ decoding
@torch.no_grad()
def translate(
    model: nn.Module,
    tokenizer,
    sentences: Sequence[str],
    *,
    beam_size: int = 4,
    length_penalty: float = 0.6,
    max_len_a: float = 1.0,
    max_len_b: int = 50,
    batch_tokens: int = 4000,
    precision: str = "fp32",
    progress: bool = False,
) -> list[str]:
    """Detokenized translations of `sentences`, in their order.

    Sentences are sorted by length and decoded in batches of about `batch_tokens` source tokens (counting
    each beam), so short sentences are not padded to long ones; beam_size=1 is greedy decoding. Each output
    may be up to max_len_a * source length + max_len_b subwords long (section 6.1: a=1, b=50).
    """
    from .training.trainer import autocast_context

    if not sentences:
        return []
    config = model.config
    device = next(model.parameters()).device
    # Positions beyond max_len do not exist: keep source + output inside the model's range.
    longest_source = max(1, int((config.max_len - 2 - max_len_b) / max(max_len_a, 1e-9)))
    encoded = [ids[: longest_source - 1] + [config.eos_id] for ids in tokenizer.encode_batch(list(sentences))]
    order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]))
    outputs: list[str] = [""] * len(encoded)
    batches, current, width = [], [], 0
    for index in order:
        new_width = max(width, len(encoded[index]))
        if current and new_width * (len(current) + 1) * beam_size > batch_tokens:
            batches.append(current)
            current, new_width = [], len(encoded[index])
        current.append(index)
        width = new_width
    if current:
        batches.append(current)
    iterator = batches
    if progress:
        from tqdm.auto import tqdm

        iterator = tqdm(batches, desc=f"beam {beam_size}" if beam_size > 1 else "greedy", unit="batch")
    was_training = model.training
    model.eval()
    try:
        for batch in iterator:
            width = max(len(encoded[i]) for i in batch)
            src = torch.full((len(batch), width), config.pad_id, dtype=torch.long)
            for row, i in enumerate(batch):
                src[row, : len(encoded[i])] = torch.tensor(encoded[i])
            src = src.to(device)
            with autocast_context(device, precision):
                if beam_size > 1:
                    out = beam_search(model, src, beam_size=beam_size, alpha=length_penalty,
                                      max_len_a=max_len_a, max_len_b=max_len_b)
                else:
                    out = greedy_decode(model, src, max_len=int(max_len_a * width + max_len_b))
            for row, text in zip(batch, tokenizer.decode_batch(out.cpu())):
                outputs[row] = text
    finally:
        model.train(was_training)
    return outputs


# ------------------------------------------------------------------------------------------ BLEU
def sacrebleu_score(hypotheses: Sequence[str], references: Sequence[str], tokenize: str = "13a") -> dict:
    """sacreBLEU on detokenized text: {"score", "signature", "precisions", "bp", "sys_len", "ref_len"}."""
    import sacrebleu

    _check_lengths(hypotheses, references)
    metric = sacrebleu.metrics.BLEU(tokenize=tokenize)
    result = metric.corpus_score(list(hypotheses), [list(references)])
    return {"score": result.score, "signature": str(metric.get_signature()), "precisions": list(result.precisions),
            "bp": result.bp, "sys_len": result.sys_len, "ref_len": result.ref_len}


def split_compounds(tokenized: str) -> str:
    r"""tensor2tensor's compound splitting: "a-b" -> "a ##AT##-##AT## b" (applied to tokenized text).

    One left-to-right pass, exactly as its `perl -ple 's{(\S)-(\S)}{$1 ##AT##-##AT## $2}g'`: matches do not
    overlap, so "a-b-c" becomes "a ##AT##-##AT## b-c", as in the published scores.
    """
    return _COMPOUND.sub(r"\1 ##AT##-##AT## \2", tokenized)


def tokenize_for_bleu(text: str, tokenizer: str = "13a") -> str:
    """Text tokenized like the paper's references (Moses-like: punctuation split off, words kept)."""
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a
    from sacrebleu.tokenizers.tokenizer_intl import TokenizerV14International

    tok = {"13a": Tokenizer13a, "intl": TokenizerV14International}.get(tokenizer)
    if tok is None:
        raise ValueError(f"tokenizer must be '13a' or 'intl', got {tokenizer!r}")
    return tok()(text.strip())


def tokenized_bleu(
    hypotheses: Sequence[str], references: Sequence[str], *, compound_splitting: bool = True, tokenizer: str = "13a"
) -> dict:
    """The paper's kind of BLEU: tokenize both sides, split compounds (German), then BLEU on the tokens."""
    import sacrebleu

    _check_lengths(hypotheses, references)

    def prepare(text: str) -> str:
        tokens = tokenize_for_bleu(text, tokenizer)
        return split_compounds(tokens) if compound_splitting else tokens

    metric = sacrebleu.metrics.BLEU(tokenize="none", force=True)
    result = metric.corpus_score([prepare(h) for h in hypotheses], [[prepare(r) for r in references]])
    how = f"tok:{tokenizer}+{'compound-split' if compound_splitting else 'no-split'}|{metric.get_signature()}"
    return {"score": result.score, "signature": how, "precisions": list(result.precisions), "bp": result.bp}


def _check_lengths(hypotheses: Sequence[str], references: Sequence[str]) -> None:
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} references: they must pair line by line")
    if not hypotheses:
        raise ValueError("no sentences to score")


# ------------------------------------------------------------------------------------------ everything
def evaluate_translation(
    model: nn.Module,
    tokenizer,
    sources: Sequence[str],
    references: Sequence[str],
    *,
    beam_size: int = 4,
    length_penalty: float = 0.6,
    max_len_a: float = 1.0,
    max_len_b: int = 50,
    batch_tokens: int = 4000,
    precision: str = "fp32",
    target_language: str = "de",
    progress: bool = False,
) -> dict:
    """Translate `sources`, then score against `references`: sacreBLEU, tokenized BLEU, perplexity.

    Returns {"sacrebleu", "sacrebleu_signature", "bleu_tokenized", "bleu_tokenized_signature", "ppl",
    "sentences", "hypotheses"}; compound splitting applies when the target language is German.
    """
    import time

    _check_lengths(sources, references)
    started = time.perf_counter()
    hypotheses = translate(model, tokenizer, sources, beam_size=beam_size, length_penalty=length_penalty,
                           max_len_a=max_len_a, max_len_b=max_len_b, batch_tokens=batch_tokens,
                           precision=precision, progress=progress)
    decode_s = time.perf_counter() - started
    sacre = sacrebleu_score(hypotheses, references)
    tokenized = tokenized_bleu(hypotheses, references, compound_splitting=target_language == "de")
    pairs = EncodedPairs.from_texts(tokenizer, list(sources), list(references))
    keep = [i for i in range(len(pairs)) if len(pairs[i][0]) + 2 <= model.config.max_len and len(pairs[i][1]) + 2 <= model.config.max_len]
    if len(keep) < len(pairs):
        pairs = EncodedPairs([pairs[i][0] for i in keep], [pairs[i][1] for i in keep])
    loss = teacher_forced_loss(model, pairs, batch_tokens=batch_tokens, precision=precision)
    return {
        "sacrebleu": round(sacre["score"], 2),
        "sacrebleu_signature": sacre["signature"],
        "bleu_tokenized": round(tokenized["score"], 2),
        "bleu_tokenized_signature": tokenized["signature"],
        "ppl": round(loss["ppl"], 3),
        "nll_per_subword": round(loss["nll"], 4),
        "sentences": len(hypotheses),
        "beam_size": beam_size,
        "length_penalty": length_penalty,
        "decode_seconds": round(decode_s, 1),
        "hypotheses": hypotheses,
    }


def mean_length_ratio(hypotheses: Sequence[str], references: Sequence[str]) -> float:
    """Words of output per word of reference: a quick check that decoding does not stop short."""
    hyp = np.sum([len(h.split()) for h in hypotheses])
    ref = np.sum([len(r.split()) for r in references])
    return float(hyp / max(ref, 1))

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

Perplexity is per subword (teacher forcing, no label smoothing, `training/teacher_forcing.py`), like the paper's Table 3.
"""

from __future__ import annotations

import logging
import re
import time
from typing import Mapping, Sequence

import numpy as np
import sacrebleu
import torch
import torch.nn as nn
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a
from sacrebleu.tokenizers.tokenizer_intl import TokenizerV14International

from ..data.batching import (
    SRC_SPECIALS,
    TGT_SPECIALS,
    EncodedPairs,
    collate_sources,
    pack_by_tokens,
)
from ..model.decoding import DecodeSettings, beam_search, greedy_decode
from ..model.static_decoding import StaticBeamDecoder, StaticGreedyDecoder
from ..runtime import attention_kernels
from ..runtime.precision import autocast_context
from ..runtime.progress import progress_bar
from ..training.teacher_forcing import teacher_forced_loss

logger = logging.getLogger(__name__)

_COMPOUND = re.compile(r"(\S)-(\S)")


# ------------------------------------------------------------------------------------------ decoding
def sentence_list(sentences, what: str = "sentences") -> list[str]:
    """The one door for a list of sentences: any sequence or iterable (a list, a tuple, a pandas
    Series, a generator), read once and by position, as a new list of str. One ValueError, naming
    `what`, for a single string (which would be translated character by character), a mapping, a
    set or a data frame (no order or no sentences), something not iterable, or an item that is not
    a str (named by its position and type)."""
    if isinstance(sentences, (str, bytes)):
        raise ValueError(
            f"{what} must be a list of sentences, got one {type(sentences).__name__} "
            f"({sentences[:40]!r}): pass [text]"
        )
    kind = type(sentences).__name__
    if kind == "DataFrame":
        raise ValueError(
            f"{what} must be a list of sentences, got a DataFrame: pass one of its columns (df['en'])"
        )
    if isinstance(sentences, (Mapping, set, frozenset)):
        raise ValueError(
            f"{what} must be a list of sentences in order, got a {kind}: pass a list"
        )
    try:
        # list() reads a pandas Series by position (its values), and a generator exactly once.
        items = list(sentences)
    except TypeError:
        raise ValueError(f"{what} must be a list of sentences, got {kind}") from None
    for position, item in enumerate(items):
        if not isinstance(item, str):
            raise ValueError(
                f"{what} must be a list of strings, but item {position} is a "
                f"{type(item).__name__}: {item!r:.60}"
            )
    return [str(item) for item in items]


@torch.no_grad()
def translate(
    model: nn.Module,
    tokenizer,
    sentences: Sequence[str],
    settings: DecodeSettings | None = None,
    *,
    progress: bool = False,
    cuda_graphs: bool = False,
    **changes,
) -> list[str]:
    """Detokenized translations of `sentences`, in their order; an empty sentence gets "".

    `settings` (default `DecodeSettings()`) says how; keyword `changes` replace single fields of it
    (`translate(model, tok, lines, beam_size=1)`). Sentences are sorted by length and decoded in
    batches of about `batch_tokens` source tokens (counting each beam), so short sentences are not
    padded to long ones. Each output may be up to max_len_a * source length + max_len_b subwords long
    (section 6.1: a=1, b=50), clamped to what the model's positions hold. A source longer than the
    positions is cut, with a warning naming it.

    `cuda_graphs` decodes each batch with the fixed-shape decoders (`model.static_decoding`), built
    for the batch's shape (reused while the shape repeats) with their step captured as a CUDA graph
    on a GPU: the same translations in fp32, the same up to bf16/fp16 rounding in autocast. On a
    CPU the fixed-shape step runs eagerly and is no faster. Not yet the default: it has not been
    timed on a GPU inside `translate` (`benchmarks/bench_step.py --decode` times the decoders alone).
    """
    sentences = sentence_list(sentences)
    settings = (settings or DecodeSettings()).replace(**changes)
    beam_size, precision = settings.beam_size, settings.precision
    outputs: list[str] = [""] * len(sentences)
    wanted = [i for i, text in enumerate(sentences) if text.strip()]
    if not wanted:
        return outputs
    config = model.config
    device = next(model.parameters()).device
    if cuda_graphs and device.type != "cuda":
        logger.warning(
            "cuda_graphs on %s: no CUDA graphs there, so the fixed-shape decoders run eagerly "
            "(the same translations, more slowly than the eager decoders)",
            device.type,
        )
    longest = config.max_len - SRC_SPECIALS
    encoded = tokenizer.encode_batch([sentences[i].strip() for i in wanted])
    cut = [(wanted[j], len(ids)) for j, ids in enumerate(encoded) if len(ids) > longest]
    if cut:
        named = ", ".join(f"{i + 1} ({n} subwords)" for i, n in cut[:10]) + (
            " ..." if len(cut) > 10 else ""
        )
        logger.warning(
            "sentence %s: longer than the model's %d positions hold; cut to the first %d subwords",
            named,
            config.max_len,
            longest,
        )
        encoded = [ids[:longest] for ids in encoded]
    order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]))
    widths = [(len(ids) + SRC_SPECIALS) * beam_size for ids in encoded]
    batches = pack_by_tokens(order, [widths], settings.batch_tokens)
    was_training = model.training
    model.eval()
    static = None  # with cuda_graphs: the decoder built for the last batch's shape
    try:
        for batch in progress_bar(
            batches,
            desc=f"beam {beam_size}" if beam_size > 1 else "greedy",
            unit="batch",
            disable=not progress,
        ):
            src = collate_sources(
                [encoded[i] for i in batch], config.pad_id, config.eos_id
            ).to(device)
            # every batch may have a shape of its own: no cuDNN attention (its plan is per shape)
            with attention_kernels.for_varying_shapes(device):
                if cuda_graphs:
                    if static is None or (static.batch_size, static.src_len) != src.shape:
                        static = None  # its buffers and graph go before the next is built
                        static = _static_decoder(model, tuple(src.shape), settings)
                    out = static(src)
                else:
                    with autocast_context(device, precision):
                        out = _eager_decode(model, src, settings)
            for row, text in zip(batch, tokenizer.decode_batch(out.cpu())):
                outputs[wanted[row]] = text
    finally:
        model.train(was_training)
    return outputs


def _eager_decode(model: nn.Module, src: torch.Tensor, settings: DecodeSettings):
    """One batch through beam_search (beam > 1) or greedy_decode, in the caller's autocast."""
    if settings.beam_size > 1:
        return beam_search(model, src, **settings.search_arguments())
    # each sentence's allowance from its own length, as beam search's
    return greedy_decode(
        model, src, max_len_a=settings.max_len_a, max_len_b=settings.max_len_b
    )


def _static_decoder(model: nn.Module, shape: tuple[int, int], settings: DecodeSettings):
    """The fixed-shape decoder for batches of `shape` (rows, source width) that decodes as
    `_eager_decode` does: the same search, allowance and precision."""
    rows, width = shape
    if settings.beam_size > 1:
        return StaticBeamDecoder(
            model,
            rows,
            width,
            **settings.search_arguments(),
            precision=settings.precision,
        )
    return StaticGreedyDecoder(
        model,
        rows,
        width,
        max_len_a=settings.max_len_a,
        max_len_b=settings.max_len_b,
        precision=settings.precision,
    )


# ------------------------------------------------------------------------------------------ BLEU
def sacrebleu_score(
    hypotheses: Sequence[str], references: Sequence[str], tokenize: str = "13a"
) -> dict:
    """sacreBLEU on detokenized text: {"score", "signature", "precisions", "bp", "sys_len", "ref_len"}."""
    hypotheses = sentence_list(hypotheses, "hypotheses")
    references = sentence_list(references, "references")
    _check_lengths(hypotheses, references)
    metric = sacrebleu.metrics.BLEU(tokenize=tokenize)
    result = metric.corpus_score(list(hypotheses), [list(references)])
    return {
        "score": result.score,
        "signature": str(metric.get_signature()),
        "precisions": list(result.precisions),
        "bp": result.bp,
        "sys_len": result.sys_len,
        "ref_len": result.ref_len,
    }


def paired_bootstrap(
    systems: dict[str, Sequence[str]],
    references: Sequence[str],
    *,
    n_samples: int = 1000,
    tokenize: str = "13a",
) -> dict[str, dict]:
    """sacreBLEU's paired bootstrap resampling (Koehn, 2004) of every system against the first.

    The same resampled sets of sentences score every system, so a difference is judged against the
    sentences' own variation. Returns, per system: "bleu" (on the whole set), "mean" and
    "ci95" (the bootstrap mean and the half-width of its 95% interval: bleu is "about mean +- ci95")
    and, for every system but the first, "p_value" of its difference from the first and
    "exceeds_noise" (p < 0.05). sacreBLEU fixes the resampling seed (SACREBLEU_SEED, default 12345),
    so the numbers repeat. A system that scores exactly the baseline's BLEU on the whole set (the
    same translations, or two systems both at zero) differs from it by nothing: p-value 1, where
    sacreBLEU's test gives a difference of zero on every resample its smallest p-value.
    """
    from sacrebleu.significance import PairedTest

    if len(systems) < 1:
        raise ValueError("paired_bootstrap needs at least one system")
    references = sentence_list(references, "references")
    systems = {
        name: sentence_list(hyps, f"system {name!r}") for name, hyps in systems.items()
    }
    for hypotheses in systems.values():
        _check_lengths(hypotheses, references)
    metric = sacrebleu.metrics.BLEU(tokenize=tokenize)
    named = [(name, list(hyps)) for name, hyps in systems.items()]
    test = PairedTest(
        named, {"BLEU": metric}, [list(references)], test_type="bs", n_samples=n_samples
    )
    _, scores = test()
    out = {}
    baseline = scores["BLEU"][0].score
    for (name, _), result in zip(named, scores["BLEU"]):
        row = {
            "bleu": round(float(result.score), 2),
            "mean": round(float(result.mean), 2),
            "ci95": round(float(result.ci), 2),
        }
        if result.p_value is not None:
            p_value = 1.0 if result.score == baseline else float(result.p_value)
            row["p_value"] = round(p_value, 4)
            row["exceeds_noise"] = bool(p_value < 0.05)
        out[name] = row
    return out


def split_compounds(tokenized: str) -> str:
    r"""tensor2tensor's compound splitting: "a-b" -> "a ##AT##-##AT## b" (applied to tokenized text).

    One left-to-right pass, exactly as its `perl -ple 's{(\S)-(\S)}{$1 ##AT##-##AT## $2}g'`: matches do not
    overlap, so "a-b-c" becomes "a ##AT##-##AT## b-c", as in the published scores.
    """
    return _COMPOUND.sub(r"\1 ##AT##-##AT## \2", tokenized)


def tokenize_for_bleu(text: str, tokenizer: str = "13a") -> str:
    """Text tokenized like the paper's references (Moses-like: punctuation split off, words kept)."""
    tok = {"13a": Tokenizer13a, "intl": TokenizerV14International}.get(tokenizer)
    if tok is None:
        raise ValueError(f"tokenizer must be '13a' or 'intl', got {tokenizer!r}")
    return tok()(text.strip())


def tokenized_bleu(
    hypotheses: Sequence[str],
    references: Sequence[str],
    *,
    compound_splitting: bool = True,
    tokenizer: str = "13a",
) -> dict:
    """The paper's kind of BLEU: tokenize both sides, split compounds (German), then BLEU on the tokens."""
    hypotheses = sentence_list(hypotheses, "hypotheses")
    references = sentence_list(references, "references")
    _check_lengths(hypotheses, references)

    def prepare(text: str) -> str:
        tokens = tokenize_for_bleu(text, tokenizer)
        return split_compounds(tokens) if compound_splitting else tokens

    metric = sacrebleu.metrics.BLEU(tokenize="none", force=True)
    result = metric.corpus_score(
        [prepare(h) for h in hypotheses], [[prepare(r) for r in references]]
    )
    how = f"tok:{tokenizer}+{'compound-split' if compound_splitting else 'no-split'}|{metric.get_signature()}"
    return {
        "score": result.score,
        "signature": how,
        "precisions": list(result.precisions),
        "bp": result.bp,
    }


def translations_text(hypotheses: Sequence[str]) -> str:
    """The text of a translations file: line i is the translation of source line i, whatever the
    characters (a translation's own line breaks, U+2028 or NEL included, become spaces)."""
    return "".join(" ".join(line.splitlines()) + "\n" for line in hypotheses)


def _check_lengths(hypotheses: Sequence[str], references: Sequence[str]) -> None:
    if len(hypotheses) != len(references):
        raise ValueError(
            f"{len(hypotheses)} hypotheses but {len(references)} references: they must pair line by line"
        )
    if not hypotheses:
        raise ValueError("no sentences to score")


# ------------------------------------------------------------------------------------------ everything
def perplexity_pairs(
    pairs: EncodedPairs, max_positions: int, batch_tokens: int
) -> tuple[EncodedPairs, int]:
    """(the pairs perplexity is measured on, how many of `pairs` it leaves out): those longer than
    the model's `max_positions` (`EncodedPairs.fitting`), and those wider than one batch of
    `batch_tokens` alone, which `teacher_forced_loss` would skip."""
    fitting, over_positions = pairs.fitting(max_positions)
    src, tgt = fitting.src_lengths + SRC_SPECIALS, fitting.tgt_lengths + TGT_SPECIALS
    keep = np.flatnonzero((src <= batch_tokens) & (tgt <= batch_tokens)).tolist()
    over_batch = len(fitting) - len(keep)
    if over_batch:
        fitting = fitting.subset(keep)
    left_out = over_positions + over_batch
    if left_out:
        logger.warning(
            "perplexity leaves out %d of %d pairs (%d longer than the model's %d positions, "
            "%d wider than a batch of %d tokens); the result counts them in ppl_pairs_left_out",
            left_out,
            len(pairs),
            over_positions,
            max_positions,
            over_batch,
            batch_tokens,
        )
    return fitting, left_out


def evaluate_translation(
    model: nn.Module,
    tokenizer,
    sources: Sequence[str],
    references: Sequence[str],
    settings: DecodeSettings | None = None,
    *,
    target_language: str = "de",
    progress: bool = False,
    cuda_graphs: bool = False,
) -> dict:
    """Translate `sources` (`cuda_graphs` as `translate`), then score against `references`:
    sacreBLEU, tokenized BLEU, perplexity.

    Returns {"sacrebleu", "sacrebleu_signature", "bleu_tokenized", "bleu_tokenized_signature", "ppl",
    "ppl_pairs_left_out", "sentences", "hypotheses"}; compound splitting applies when the target
    language is German. Both BLEUs score every sentence; perplexity leaves out the pairs that do
    not fit the model's positions (nor, with a `batch_tokens` below them, one batch), and
    "ppl_pairs_left_out" counts them (0: "ppl" is over every pair).
    """
    sources = sentence_list(sources, "sources")
    references = sentence_list(references, "references")
    _check_lengths(sources, references)
    started = time.perf_counter()
    settings = settings or DecodeSettings()
    hypotheses = translate(
        model, tokenizer, sources, settings, progress=progress, cuda_graphs=cuda_graphs
    )
    decode_s = time.perf_counter() - started
    sacre = sacrebleu_score(hypotheses, references)
    tokenized = tokenized_bleu(
        hypotheses, references, compound_splitting=target_language == "de"
    )
    pairs, left_out = perplexity_pairs(
        EncodedPairs.from_texts(tokenizer, list(sources), list(references)),
        model.config.max_len,
        settings.batch_tokens,
    )
    loss = teacher_forced_loss(
        model, pairs, batch_tokens=settings.batch_tokens, precision=settings.precision
    )
    return {
        "sacrebleu": round(sacre["score"], 2),
        "sacrebleu_signature": sacre["signature"],
        "bleu_tokenized": round(tokenized["score"], 2),
        "bleu_tokenized_signature": tokenized["signature"],
        "ppl": round(loss["ppl"], 3),
        "ppl_pairs_left_out": left_out,
        "nll_per_subword": round(loss["nll"], 4),
        "sentences": len(hypotheses),
        "beam_size": settings.beam_size,
        "length_penalty_alpha": settings.alpha,
        "decode_seconds": round(decode_s, 1),
        "cuda_graphs": cuda_graphs,
        "hypotheses": hypotheses,
    }

"""Beam search: the package's decoder against the way it reordered beams before, in one process.

    python benchmarks/bench_beam.py                  # ~15 minutes on 2 quiet cores -> results/benchmarks/cpu_beam.json
    python benchmarks/bench_beam.py --quick --out x.json

The reference is the package's own `beam_search` with the earlier bookkeeping patched back in:
every source encoded once per beam, and at every step the whole reserved KV cache (every position
up to the length limit, filled or not) plus the encoder's keys, values and mask copied into the
parents' order. The candidate reorders only the filled prefix of the self-attention caches; the
encoder's keys and values stay put, since a beam's parent always decodes the same source. Both
decode the same sources with the same weights and must return the same tokens (checked), so the
ratio measures the bookkeeping alone. Two settings: translation's beam 4 with outputs up to the
source length + 50, and the parser's beam 21 with + 300 (chapter 07).

A model with random weights rarely emits end-of-sentence, so an `eos_bias` on its output makes
hypotheses end after about `mean_length` tokens, as a trained model's do; without it every beam
runs to the length limit, the case where copying only the filled prefix saves least (also timed).
"""

from __future__ import annotations

import argparse
import contextlib

import torch
from common import REPO, interleaved, provenance, write_json

from annotated_transformer import Transformer, beam_search, preset
from annotated_transformer.model.attention import KVCache
from annotated_transformer.model.transformer import DecoderState


@contextlib.contextmanager
def earlier_bookkeeping():
    """Patch back the reordering that copied whole buffers and the k-fold encoding."""
    saved = KVCache.reorder, DecoderState.reorder, Transformer.start_decoding

    def reorder_whole_cache(self, index):
        self.k = self.k.index_select(0, index)
        self.v = self.v.index_select(0, index)

    def reorder_everything(self, index, *, same_source=False):
        for cache in self.caches:
            cache.reorder(index)
        self.src_mask = self.src_mask.index_select(0, index)
        self.memory_kv = [
            (k.index_select(0, index), v.index_select(0, index))
            for k, v in self.memory_kv
        ]

    def encode_every_beam(self, src, cache_size, beams=1):
        return saved[2](self, src.repeat_interleave(beams, dim=0), cache_size)

    KVCache.reorder, DecoderState.reorder, Transformer.start_decoding = (
        reorder_whole_cache,
        reorder_everything,
        encode_every_beam,
    )
    try:
        yield
    finally:
        KVCache.reorder, DecoderState.reorder, Transformer.start_decoding = saved


def cpu_profile_model(vocab: int, eos_bias: float | None, seed: int = 0) -> Transformer:
    """The `cpu` profile's shape (3+3 layers, d_model 256, 4 heads) with random weights."""
    torch.manual_seed(seed)
    config = preset(
        "base", n_layers=3, d_model=256, d_ff=1024, n_heads=4, dropout=0.0, max_len=512
    )
    return eos_biased(Transformer(config, vocab, vocab).eval(), eos_bias)


def eos_biased(model: Transformer, eos_bias: float | None) -> Transformer:
    """`model` with `eos_bias` added to end-of-sentence's logit (None: as it was): random weights
    then end their outputs at about caption length, as a trained model's do."""
    if eos_bias is not None:
        eos = model.config.eos_id

        def push_eos(module, inputs, output):
            output[..., eos] += eos_bias
            return output

        model.generator.register_forward_hook(push_eos)
    return model


def sources(batch: int, length: int, vocab: int, seed: int = 1) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, vocab, (batch, length), generator=g)
    src[:, -1] = 2  # eos
    return src


def run_setting(
    name: str,
    *,
    beam: int,
    batch: int,
    src_len: int,
    max_len_b: int,
    alpha: float,
    eos_bias: float | None,
    vocab: int,
    repeats: int,
    warmup: int,
) -> dict:
    model = cpu_profile_model(vocab, eos_bias)
    src = sources(batch, src_len, vocab)

    def decode():
        return beam_search(
            model, src, beam_size=beam, alpha=alpha, max_len_a=1.0, max_len_b=max_len_b
        )

    ours = decode()
    with earlier_bookkeeping():
        theirs = decode()
    same = ours.shape == theirs.shape and bool(torch.equal(ours, theirs))

    def reference():
        with earlier_bookkeeping():
            decode()

    times = interleaved(
        {"reference": reference, "package": decode}, repeats, warmup, torch.device("cpu")
    )
    lengths = (ours != model.config.pad_id).sum(1).float()
    result = {
        "setting": name,
        "beam": beam,
        "batch": batch,
        "source_length": src_len,
        "max_len_b": max_len_b,
        "alpha": alpha,
        "eos_bias": eos_bias,
        "mean_output_length": round(float(lengths.mean()), 1),
        "same_tokens": same,
        "times": times,
        "speedup": times["reference"]["median_s"] / times["package"]["median_s"],
    }
    print(
        f"{name}: reference {times['reference']['median_s']:.3f} s, package "
        f"{times['package']['median_s']:.3f} s, {result['speedup']:.2f}x, outputs "
        f"{result['mean_output_length']} tokens, same tokens: {same}",
        flush=True,
    )
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="tiny sizes, one repeat: seconds"
    )
    parser.add_argument(
        "--out", default=str(REPO / "results" / "benchmarks" / "cpu_beam.json")
    )
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    vocab = 8000
    repeats, warmup = (1, 0) if args.quick else (3, 1)
    scale = 4 if args.quick else 1
    # Translation (section 6.1): beam 4, alpha 0.6, outputs up to the source + 50; a test batch of
    # 32 captions of about 14 pieces. Parsing (chapter 07): beam 21, alpha 0.3, outputs up to the
    # source + 300; a parser's outputs are about 100 symbols (+300 is only the limit), the case
    # where copying the whole reserved cache at every step cost most. Each with outputs that end
    # (an eos bias), then run to the limit, which bounds the saving.
    searches = (
        dict(beam=4, batch=32 // scale, src_len=14, max_len_b=50, alpha=0.6),
        dict(
            beam=21,
            batch=max(1, 2 // scale),
            src_len=25,
            max_len_b=300 // scale,
            alpha=0.3,
        ),
    )
    rows = [
        run_setting(
            f"beam {search['beam']}, +{limit}, {'outputs end' if bias else 'to the limit'}",
            **search,
            eos_bias=bias,
            vocab=vocab,
            repeats=repeats,
            warmup=warmup,
        )
        for search, limit, ends in zip(searches, (50, 300), (3.2, 2.8))
        for bias in (ends, None)
    ]
    record = {
        "benchmark": "beam search bookkeeping",
        "provenance": provenance(torch.device("cpu")),
        "threads": torch.get_num_threads(),
        "rows": rows,
    }
    write_json(args.out, record)
    print(f"wrote {args.out}")
    return 0 if all(r["same_tokens"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())

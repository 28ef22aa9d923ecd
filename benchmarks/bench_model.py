"""Throughput and latency of our Transformer against a classic reference, in one process.

    python benchmarks/bench_model.py                      # CPU, writes results/benchmarks/cpu.json
    python benchmarks/bench_model.py --quick --out x.json # seconds: what the smoke test runs
    python benchmarks/bench_model.py --device cuda        # also bf16 +/- torch.compile and MFU

Why it is built this way: the machines are shared and noisy, so every measurement interleaves
the implementations within each repeat (load hits all of them alike), rotates their order, warms
up first and reports the median with the min and max beside it. Both models get the same inputs
and, for decoding, the same weights (`load_from_ours`), so they compute the same function and the
ratio measures the implementation alone. Every number goes to one JSON file with its provenance.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import reference_transformer as ref_lib
import torch
from common import REPO, interleaved, load_average, provenance, sync, write_json

from annotated_transformer import Transformer, greedy_decode, preset
from annotated_transformer.model.flops import peak_flops_entry
from annotated_transformer.model.transformer import (
    count_parameters,
    layer_weights,
    logits_at_real_targets,
)
from annotated_transformer.training.loss import (
    STRATEGIES,
    composite_smoothed_cross_entropy,
    default_strategy,
    label_smoothed_cross_entropy,
)


# ---------------------------------------------------------------------------------- inputs
@dataclass
class Batch:
    src: torch.Tensor
    tgt_in: torch.Tensor
    tgt_out: torch.Tensor
    target_tokens: int
    source_tokens: int
    padding_fraction: float  # of the target tensor


def make_batch(
    n_seqs: int,
    min_len: int,
    max_len: int,
    vocab: int,
    device,
    seed: int = 0,
) -> Batch:
    """Random sentences of uniformly drawn lengths, padded to the longest, like a bucketed batch
    (padding 0, begin 1, end 2: the presets' ids)."""
    pad_id, bos_id, eos_id = 0, 1, 2
    g = torch.Generator().manual_seed(seed)

    def rows(extra: int) -> tuple[torch.Tensor, torch.Tensor]:
        lengths = torch.randint(min_len, max_len + 1, (n_seqs,), generator=g)
        out = torch.full((n_seqs, max_len + extra), pad_id, dtype=torch.long)
        for i, n in enumerate(lengths.tolist()):
            body = torch.randint(4, vocab, (n,), generator=g)
            out[i, : n + extra] = (
                torch.cat([torch.tensor([bos_id]), body, torch.tensor([eos_id])])
                if extra
                else body
            )
        return out[:, : int(lengths.max()) + extra], lengths

    src, _ = rows(0)
    tgt, _ = rows(2)  # bos + sentence + eos
    tgt_in, tgt_out = tgt[:, :-1], tgt[:, 1:]
    real = int((tgt_out != pad_id).sum())
    return Batch(
        src.to(device),
        tgt_in.contiguous().to(device),
        tgt_out.contiguous().to(device),
        real,
        int((src != pad_id).sum()),
        1.0 - real / tgt_out.numel(),
    )


# ---------------------------------------------------------------------------------- training steps
class OursStep:
    """One training step of our package: forward, label-smoothed loss, backward, Adam, zero_grad.

    The GPU benchmark swaps in a compiled model and loss. When `phases` is a list, each call appends its seconds per phase (forward, loss,
    backward, optimizer); on a CPU that costs nothing, on a GPU it adds synchronisations.
    """

    def __init__(
        self,
        model: Transformer,
        optimizer,
        batch: Batch,
        amp_dtype=None,
        real_rows: bool = True,
    ):
        self.model, self.opt, self.batch = model, optimizer, batch
        self.amp_dtype, self.real_rows = amp_dtype, real_rows
        # the trainer's loss, its gradient written over the logits
        self.loss_fn = functools.partial(
            label_smoothed_cross_entropy, inplace_backward=True
        )
        self.device = batch.src.device
        self.phases: list[dict[str, float]] | None = None

    def _mark(self, record: dict | None, name: str, t0: float) -> float:
        if record is None:
            return t0
        sync(self.device)
        t1 = time.perf_counter()
        record[name] = t1 - t0
        return t1

    def __call__(self) -> None:
        b, m = self.batch, self.model
        rec = {} if self.phases is not None else None
        m.train()
        t = time.perf_counter()
        amp = self.amp_dtype
        with torch.autocast(self.device.type, dtype=amp, enabled=amp is not None):
            if self.real_rows:
                logits, target = logits_at_real_targets(
                    m, b.src, b.tgt_in, b.tgt_out, m.config.pad_id
                )
            else:
                logits, target = m(b.src, b.tgt_in), b.tgt_out
            t = self._mark(rec, "forward", t)
            loss = self.loss_fn(logits, target, 0.1, m.config.pad_id)[0] / b.target_tokens
        t = self._mark(rec, "loss_forward", t)
        loss.backward()
        t = self._mark(rec, "backward", t)
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        self._mark(rec, "optimizer", t)
        if rec is not None:
            self.phases.append(rec)


class ReferenceStep:
    """The classic step: log-probabilities from the generator, explicit smoothed target, Adam."""

    def __init__(self, model, optimizer, batch: Batch, vocab: int):
        self.model, self.opt, self.batch = model, optimizer, batch
        self.criterion = ref_lib.LabelSmoothing(vocab, 0, 0.1)

    def __call__(self) -> None:
        b = self.batch
        self.model.train()
        loss = (
            self.criterion(self.model.log_probs(b.src, b.tgt_in), b.tgt_out)
            / b.target_tokens
        )
        loss.backward()
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)


def adam(params, kind: str = "default"):
    """The paper's Adam (beta2 0.98, eps 1e-9); kind picks PyTorch's for-loop, foreach or fused kernel.

    "default" is what `torch.optim.Adam` picks by itself: on a CPU that is the per-tensor for-loop.
    """
    extra = {
        "default": {},
        "foreach": {"foreach": True},
        "fused": {"fused": True},
        "forloop": {"foreach": False},
    }[kind]
    return torch.optim.Adam(params, lr=1e-4, betas=(0.9, 0.98), eps=1e-9, **extra)


def fair_pair(config, vocab: int, device, seed: int = 0):
    """Our model and the reference with identical weights (the reference copies ours)."""
    torch.manual_seed(seed)
    ours = Transformer(config, vocab, vocab).to(device)
    reference = ref_lib.make_model_like(config, vocab).to(device)
    ref_lib.load_from_ours(reference, ours)
    return ours, reference


# (autocast dtype, logits for real target rows only); each with the trainer's loss and fused Adam.
# ours_fp32 is what the trainer runs eagerly (real rows on the CPU only); all_rows computes logits
# for padded positions too, as a compiled step does.
OUR_VARIANTS = {
    "ours_fp32": (None, True),
    "ours_fp32_all_rows": (None, False),
    "ours_bf16": (torch.bfloat16, True),
}


def bench_training(
    size: str,
    vocab: int,
    batch_shape: tuple[int, int, int],
    device,
    repeats: int,
    warmup: int,
    variants: list[str],
) -> dict:
    """Tokens/s of the reference and of our step's variants, interleaved on one batch."""
    config = preset(size)
    cpu = device.type == "cpu"
    ours, reference = fair_pair(config, vocab, device)
    batch = make_batch(*batch_shape, vocab=vocab, device=device)
    steps: dict[str, Callable[[], None]] = {
        "reference_fp32": ReferenceStep(
            reference, adam(reference.parameters()), batch, vocab
        )
    }
    # Variants share our model (each with its own optimizer state), so they cost no second copy of weights.
    for name in variants:
        amp, real_rows = OUR_VARIANTS[name]
        # the trainer selects real rows on the CPU only
        steps[name] = step = OursStep(
            ours,
            adam(ours.parameters(), "fused"),
            batch,
            amp,
            real_rows=real_rows and cpu,
        )
        step.phases = [] if cpu else None
    times = interleaved(steps, repeats, warmup, device)
    result = {
        "config": size,
        "vocab": vocab,
        "parameters": count_parameters(ours),
        "batch": {
            "sequences": batch_shape[0],
            "min_len": batch_shape[1],
            "max_len": batch_shape[2],
            "target_tokens": batch.target_tokens,
            "source_tokens": batch.source_tokens,
            "target_shape": list(batch.tgt_out.shape),
            "padding_fraction": round(batch.padding_fraction, 4),
        },
        "repeats": repeats,
        "warmup": warmup,
        "steps": {},
    }
    for name, t in times.items():
        result["steps"][name] = {
            **t,
            "tokens_per_s": batch.target_tokens / t["median_s"],
            "tokens_per_s_min": batch.target_tokens / t["max_s"],
            "tokens_per_s_max": batch.target_tokens / t["min_s"],
        }
    # Paired ratios: within one round every variant ran back to back under the same load, so the
    # median of per-round ratios is steadier than a ratio of medians when the load comes and goes.
    result["paired_ratios"] = {
        f"{name}_vs_reference_fp32": statistics.median(
            r / o for r, o in zip(times["reference_fp32"]["samples_s"], t["samples_s"])
        )
        for name, t in times.items()
        if name != "reference_fp32"
    }
    result["min_ratios"] = {
        f"{name}_vs_reference_fp32": times["reference_fp32"]["min_s"] / t["min_s"]
        for name, t in times.items()
        if name != "reference_fp32"
    }
    ref_t = times["reference_fp32"]["median_s"]
    ours_t = times["ours_fp32"]["median_s"]
    result["ratios"] = {
        f"{name}_vs_reference_fp32": ref_t / t["median_s"]
        for name, t in times.items()
        if name != "reference_fp32"
    }
    result["ratios"].update(
        {
            f"{name}_vs_ours_fp32": ours_t / t["median_s"]
            for name, t in times.items()
            if name.startswith("ours_") and name != "ours_fp32"
        }
    )
    result["phases_median_s"] = {
        name: {
            k: statistics.median(p[k] for p in step.phases[warmup:])
            for k in step.phases[-1]
        }
        for name, step in steps.items()
        if isinstance(step, OursStep) and step.phases
    }
    return result


# ---------------------------------------------------------------------------------- the loss alone


def _strategy_loss(logits, target, strategy: str) -> torch.Tensor:
    return label_smoothed_cross_entropy(logits, target, 0.1, 0, strategy=strategy).loss


def bench_loss(
    n_tokens: int,
    vocab: int,
    device,
    repeats: int,
    warmup: int,
    dtype: torch.dtype = torch.float32,
) -> dict:
    """Forward + backward of the loss alone on (n_tokens, vocab) logits of `dtype`: ours (the
    device's default strategy, as the trainer runs it) beside our other strategy, PyTorch's
    cross-entropy and the reference."""
    torch.manual_seed(0)
    logits = torch.randn(n_tokens, vocab, device=device, dtype=dtype, requires_grad=True)
    target = torch.randint(4, vocab, (n_tokens,), device=device)
    target[::10] = 0  # some padding
    classic = ref_lib.LabelSmoothing(vocab, 0, 0.1)
    ours = default_strategy(torch.device(device))
    fns = {
        "reference_classic": lambda: classic(torch.log_softmax(logits, -1), target),
        "ours": lambda: label_smoothed_cross_entropy(logits, target, 0.1, 0).loss,
        **{
            f"ours_{other}": functools.partial(_strategy_loss, logits, target, other)
            for other in STRATEGIES
            if other != ours
        },
        "torch_cross_entropy": lambda: torch.nn.functional.cross_entropy(
            logits, target, ignore_index=0, label_smoothing=0.1, reduction="sum"
        ),
        "ours_composite_autograd": lambda: (
            composite_smoothed_cross_entropy(logits, target, 0.1, 0).loss
        ),
    }
    # The candidates must agree with ours before their times mean anything.
    base_loss = fns["ours"]()
    base_grad = torch.autograd.grad(base_loss, logits)[0]
    agreement = {}
    for name, fn in fns.items():
        value = fn()
        grad = torch.autograd.grad(value, logits)[0]
        agreement[name] = {
            "loss_rel_diff": abs(float(value.detach() - base_loss.detach()))
            / abs(float(base_loss.detach())),
            "grad_max_abs_diff": float((grad - base_grad).abs().max()),
        }
    del base_grad

    def fwd_bwd(fn):
        def call():
            fn().backward()
            logits.grad = None

        return call

    times = interleaved(
        {name: fwd_bwd(fn) for name, fn in fns.items()}, repeats, warmup, device
    )
    return {
        "tokens": n_tokens,
        "vocab": vocab,
        "dtype": str(dtype).removeprefix("torch."),
        "ours_strategy": ours,
        "agreement_with_ours": agreement,
        "times": times,
        "speedup_vs_ours": {
            k: times["ours"]["median_s"] / v["median_s"] for k, v in times.items()
        },
    }


def bench_adam(size: str, vocab: int, device, repeats: int, warmup: int) -> dict:
    """Adam's step alone on the parameters of a model: PyTorch's for-loop, foreach and fused kernels."""
    torch.manual_seed(0)
    model = Transformer(preset(size), vocab, vocab).to(device)
    groups = {}
    for kind in ("forloop", "foreach", "fused"):
        params = [p.detach().clone().requires_grad_() for p in model.parameters()]
        for p in params:
            p.grad = torch.randn_like(p) * 1e-3
        groups[kind] = adam(params, kind)
    times = interleaved(
        {k: opt.step for k, opt in groups.items()}, repeats, warmup, device
    )
    return {
        "config": size,
        "vocab": vocab,
        "parameters": count_parameters(model),
        "tensors": len(list(model.parameters())),
        "times": times,
        "speedup_vs_forloop": {
            k: times["forloop"]["median_s"] / v["median_s"] for k, v in times.items()
        },
    }


def bench_bf16_matmul(device, repeats: int) -> dict:
    """One (2048 x 512) @ (512 x 512) linear in float32 and bfloat16: does this CPU have fast bf16?"""
    torch.manual_seed(0)
    x, w = torch.randn(2048, 512, device=device), torch.randn(512, 512, device=device)
    xb, wb = x.bfloat16(), w.bfloat16()
    times = interleaved(
        {
            "fp32": lambda: torch.nn.functional.linear(x, w),
            "bf16": lambda: torch.nn.functional.linear(xb, wb),
        },
        repeats,
        1,
        device,
    )
    flops = 2 * 2048 * 512 * 512
    return {
        "shape": [2048, 512, 512],
        "times": times,
        "gflops": {k: flops / v["median_s"] / 1e9 for k, v in times.items()},
        "bf16_speedup": times["fp32"]["median_s"] / times["bf16"]["median_s"],
    }


# ---------------------------------------------------------------------------------- decoding
def bench_decoding(
    size: str,
    vocab: int,
    src_len: int,
    batch_size: int,
    new_tokens: int,
    device,
    repeats: int,
    variants: list[str],
) -> dict:
    """Greedy decoding of exactly `new_tokens` tokens per row, every implementation on the same weights.

    Variants: the reference (prefix recomputation), ours with the KV cache, and ours without it
    (`use_cache=False`, the package's path).
    """
    config = preset(size)
    torch.manual_seed(1)
    ours = Transformer(config, vocab, vocab).to(device)
    with torch.no_grad():
        # A zero eos embedding gives eos a logit of exactly 0 through the tied generator, below the
        # maximum of the other (random) logits, so every row runs to the length limit.
        ours.src_embed.weight[config.eos_id].zero_()
    reference = ref_lib.make_model_like(config, vocab).to(device)
    ref_lib.load_from_ours(reference, ours)
    ours.eval(), reference.eval()
    src = make_batch(batch_size, src_len, src_len, vocab, device, seed=3).src
    banned = (config.pad_id, config.bos_id)
    decoders = {
        "reference_prefix_recompute": lambda n: ref_lib.greedy_decode(
            reference, src, n, config.bos_id, config.eos_id, banned
        ),
        "ours_kv_cache": lambda n: greedy_decode(ours, src, n, use_cache=True),
        "ours_no_cache": lambda n: greedy_decode(ours, src, n, use_cache=False),
    }
    decoders = {k: v for k, v in decoders.items() if k in variants}
    for fn in decoders.values():  # warm-up: a short run of each
        fn(4)
    outputs = {}

    def timed(name):
        def call():
            outputs[name] = decoders[name](new_tokens)

        return call

    times = interleaved({name: timed(name) for name in decoders}, repeats, 0, device)
    lengths = {k: v.size(1) - 1 for k, v in outputs.items()}
    if any(n != new_tokens for n in lengths.values()):
        raise RuntimeError(
            f"decoding stopped early: generated {lengths}, wanted {new_tokens}"
        )
    r = times["reference_prefix_recompute"]["median_s"]
    kv = times["ours_kv_cache"]["median_s"]
    ratios = {"kv_cache_vs_reference": r / kv}
    if "ours_no_cache" in times:
        ratios["kv_cache_vs_ours_no_cache"] = times["ours_no_cache"]["median_s"] / kv
        ratios["ours_no_cache_vs_reference"] = r / times["ours_no_cache"]["median_s"]
    return {
        "config": size,
        "vocab": vocab,
        "batch_size": batch_size,
        "source_len": src_len,
        "new_tokens": new_tokens,
        "same_tokens_all": all(
            torch.equal(outputs["ours_kv_cache"], v) for v in outputs.values()
        ),
        "times": times,
        "ms_per_step": {k: 1e3 * v["median_s"] / new_tokens for k, v in times.items()},
        "ratios": ratios,
    }


# ---------------------------------------------------------------------------------- GPU: compile and MFU
def model_flops_per_step(config, vocab: int, batch: Batch) -> dict:
    """Training FLOPs (forward + backward = 3x forward) of one step, counting real tokens only.

    Weights: 6 * params * tokens, where encoder weights and the cross-attention K/V projections see
    source tokens, the rest of the decoder sees target tokens, and embeddings, biases and norms are
    left out. Attention: 12 * d_attn * (S^2 + T^2 + T*S) per layer and sequence (Q K^T and
    weights x V, full squares even where causal). `with_logits` adds the tied output projection,
    6 * d_model * V per target token.
    """
    d, h, dk = config.d_model, config.n_heads, config.head_dim_k
    w = layer_weights(config)
    enc_w = config.encoder_layers * w.encoder_matrices
    dec_target_w = config.decoder_layers * w.decoder_target_matrices
    dec_source_w = config.decoder_layers * w.decoder_source_matrices
    s_len = (batch.src != config.pad_id).sum(1).double()
    t_len = (batch.tgt_out != config.pad_id).sum(1).double()
    weights = 6 * (
        enc_w * batch.source_tokens
        + dec_source_w * batch.source_tokens
        + dec_target_w * batch.target_tokens
    )
    attn = 12 * (
        config.encoder_layers * h * dk * float((s_len**2).sum())
        + config.decoder_layers
        * (h * dk * float((t_len**2).sum()) + h * dk * float((t_len * s_len).sum()))
    )
    logits = 6 * d * vocab * batch.target_tokens
    return {
        "weights": float(weights),
        "attention": attn,
        "logits": float(logits),
        "total": float(weights) + attn,
        "total_with_logits": float(weights) + attn + logits,
    }


def bench_gpu_compile(
    size: str, vocab: int, batch_shape, device, repeats: int, warmup: int
) -> dict:
    """Training step in bf16 autocast with fused Adam, eager and under torch.compile, interleaved; tokens/s, MFU.

    Variants: eager; the model compiled; the model and the loss compiled as two graphs (as the trainer's
    `--compile`: the loss's log-softmax, gather and mean fuse into a few kernels instead of several float32
    passes over the (tokens x vocabulary) logits). MFU is against
    `flops.PEAK_FLOPS`, the table the package's own MFU uses.
    """
    config = preset(size)
    batch = make_batch(*batch_shape, vocab=vocab, device=device)
    flops = model_flops_per_step(config, vocab, batch)
    peak = peak_flops_entry(torch.cuda.get_device_name(device))
    out = {
        "config": size,
        "vocab": vocab,
        "target_tokens": batch.target_tokens,
        "source_tokens": batch.source_tokens,
        "flops_per_step": flops,
        "peak": {"name": peak[0], "bf16_dense_flops": peak[1]} if peak else None,
        "steps": {},
    }
    compiled_loss = torch.compile(label_smoothed_cross_entropy)
    steps, first = {}, {}
    for name in (
        "bf16_eager",
        "bf16_compile",
        "bf16_compile_model_and_loss",
    ):
        torch.manual_seed(0)
        model = Transformer(config, vocab, vocab).to(device)
        # As the trainer on a GPU: logits for every row (padding included), eager or compiled.
        step = OursStep(
            model,
            adam(model.parameters(), "fused"),
            batch,
            torch.bfloat16,
            real_rows=False,
        )
        if name == "bf16_compile":
            step.model = torch.compile(model)
        elif name == "bf16_compile_model_and_loss":
            step.model, step.loss_fn = torch.compile(model), compiled_loss
        sync(device)
        t0 = time.perf_counter()
        step()
        sync(device)
        first[name] = time.perf_counter() - t0  # includes compilation when compiled
        steps[name] = step
    torch.cuda.reset_peak_memory_stats(device)
    times = interleaved(steps, repeats, warmup, device)
    for name, t in times.items():
        entry = {
            **t,
            "first_step_s": first[name],
            "tokens_per_s": batch.target_tokens / t["median_s"],
        }
        if peak:
            entry["mfu"] = flops["total"] / t["median_s"] / peak[1]
            entry["mfu_with_logits"] = (
                flops["total_with_logits"] / t["median_s"] / peak[1]
            )
        out["steps"][name] = entry
    out["peak_memory_gib_all_models"] = torch.cuda.max_memory_allocated(device) / 2**30
    out["compile_speedup"] = {
        name: times["bf16_eager"]["median_s"] / t["median_s"] for name, t in times.items()
    }
    return out


# ---------------------------------------------------------------------------------- main
def fast_bf16(device: torch.device) -> bool:
    """bf16 matmuls are fast on GPUs with bf16 and on CPUs whose oneDNN has bf16 (AVX512-BF16 or AMX)."""
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())


ALL_DECODERS = ["reference_prefix_recompute", "ours_kv_cache", "ours_no_cache"]


def plan(args, device: torch.device) -> dict:
    """Sizes of every measurement; --quick shrinks them to seconds for the smoke test.

    On a CPU without fast bf16 a `base` bf16 step takes many minutes (measured: over 10), so bf16
    is then measured at `tiny` only, unless --bf16-base insists.
    """
    bf16_base = fast_bf16(device) or args.bf16_base
    variants = list(OUR_VARIANTS)
    if args.quick:
        return dict(
            train=[("tiny", 64, (8, 5, 8), variants, 2)],
            warmup=1,
            loss=(256, 64),
            adam=("tiny", 64),
            matmul=3,
            decode=[("tiny", 64, 6, 1, 8, ALL_DECODERS, 2)],
            gpu=("tiny", 64, (8, 5, 8)),
        )
    base_variants = variants if bf16_base else variants[:-1]
    if device.type == "cuda":
        return dict(
            train=[
                ("tiny", 8000, (256, 20, 30), variants, 10),
                ("base", 37000, (400, 25, 30), base_variants, 10),
            ],
            warmup=3,
            loss=(12000, 37000),
            adam=("base", 37000),
            matmul=10,
            decode=[
                ("base", 37000, 25, 1, 100, ALL_DECODERS, 5),
                ("base", 37000, 25, 64, 100, ALL_DECODERS, 3),
            ],
            # ~23k target tokens: about the paper's 25k-token batch (section 5.1), enough to fill an H100.
            gpu=("base", 37000, (768, 25, 30)),
        )
    return dict(
        train=[
            ("tiny", 8000, (100, 20, 30), variants, 5),
            ("base", 37000, (80, 20, 30), base_variants, 5),
        ],
        warmup=1,
        loss=(2000, 37000),
        adam=("base", 37000),
        matmul=3,
        decode=[
            (
                "base",
                37000,
                25,
                b,
                100,
                ALL_DECODERS if b == 1 else ALL_DECODERS[:2],
                3 if b == 1 else 2,
            )
            for b in args.decode_batches
        ],
        gpu=None,
    )


def headline(m: dict) -> dict:
    """The numbers the README cites, with the targets it holds them to."""
    out: dict = {}
    for size, r in m.get("training", {}).items():
        ratios = r["ratios"]
        out[f"train_{size}_fp32_ours_vs_reference"] = ratios[
            "ours_fp32_vs_reference_fp32"
        ]
        out[f"train_{size}_paired_ratios_vs_reference"] = r["paired_ratios"]
        for key in (
            "ours_fp32_all_rows_vs_reference_fp32",
            "ours_fp32_all_rows_vs_ours_fp32",
            "ours_bf16_vs_ours_fp32",
        ):
            if key in ratios:
                out[f"train_{size}_{key}"] = ratios[key]
        out[f"train_{size}_tokens_per_s"] = {
            k: v["tokens_per_s"] for k, v in r["steps"].items()
        }
    for key, d in m.get("decoding", {}).items():
        for name, value in d["ratios"].items():
            out[f"decode_{key}_{name}"] = value
        out[f"decode_{key}_seconds"] = {k: v["median_s"] for k, v in d["times"].items()}
    targets = {}
    for size in ("tiny", "base"):
        key = f"train_{size}_fp32_ours_vs_reference"
        if key in out:
            targets[f"train_{size}_fp32_at_least_1.3x"] = out[key] >= 1.3
    for key in m.get("decoding", {}):
        targets[f"decode_{key}_kv_cache_at_least_8x"] = (
            out[f"decode_{key}_kv_cache_vs_reference"] >= 8.0
        )
    out["targets_met"] = targets
    return out


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument(
        "--quick", action="store_true", help="tiny sizes, seconds: for the smoke test"
    )
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="JSON path (default results/benchmarks/<device>.json)",
    )
    p.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch.set_num_threads (default: torch's choice)",
    )
    p.add_argument(
        "--bf16-base",
        action="store_true",
        help="measure bf16 at base even on a CPU without fast bf16",
    )
    p.add_argument(
        "--decode-batches",
        type=lambda text: [int(x) for x in text.split(",")],
        default=[1, 8],
        help="batch sizes for greedy decoding on the CPU, comma-separated (default 1,8)",
    )
    p.add_argument(
        "--only",
        choices=["train", "components", "decode", "gpu"],
        action="append",
        help="run only these parts (repeatable); default all",
    )
    p.add_argument(
        "--gpu-sequences",
        type=int,
        default=None,
        help="sequences in the GPU compile/MFU batch (default 768, about 22k target tokens)",
    )
    args = p.parse_args(argv)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        p.error("--device cuda but torch.cuda.is_available() is False")
    if args.threads or args.quick:
        # One thread in --quick: on a busy 2-core machine two OpenMP threads stall at every
        # barrier, and the smoke test measures nothing anyway.
        torch.set_num_threads(args.threads or 1)
    cfg = plan(args, device)
    parts = set(args.only or ["train", "components", "decode", "gpu"])
    out_path = args.out or REPO / "results" / "benchmarks" / f"{device.type}.json"
    t_start = time.perf_counter()
    result: dict = {
        "schema": 1,
        "name": "bench_model",
        "quick": args.quick,
        "command": " ".join(
            ["benchmarks/bench_model.py", *(argv if argv is not None else sys.argv[1:])]
        ),
        "provenance": {**provenance(device), "fast_bf16": fast_bf16(device)},
        "measurements": {},
    }
    m = result["measurements"]

    loads: list = result["provenance"].setdefault("load_average_log", [])

    def log(msg: str) -> None:
        """Progress on stdout; the 1-minute load average beside it goes to the JSON (the noise's cause)."""
        elapsed = time.perf_counter() - t_start
        if not msg.startswith("  "):
            loads.append([round(elapsed, 1), msg[:60], round(load_average(), 2)])
        print(f"[{elapsed:7.1f}s] {msg}", flush=True)

    def log_each(values: dict, fmt: str) -> None:
        log("  " + ", ".join(f"{k}={fmt.format(v)}" for k, v in values.items()))

    if "train" in parts:
        m["training"] = {}
        for size, vocab, shape, variants, repeats in cfg["train"]:
            log(f"training {size} V={vocab} batch={shape} variants={variants}")
            r = bench_training(
                size, vocab, shape, device, repeats, cfg["warmup"], variants
            )
            m["training"][size] = r
            log_each(
                {k: v["tokens_per_s"] for k, v in r["steps"].items()}, "{:.0f} tok/s"
            )
            log_each(r["ratios"], "{:.2f}x")
    if "components" in parts:
        n, vocab = cfg["loss"]
        # bf16 logits too where the step runs in bf16 (a GPU's eager step gives the loss those)
        dtypes = {"loss": torch.float32}
        if fast_bf16(device):
            dtypes["loss_bf16"] = torch.bfloat16
        for key, dtype in dtypes.items():
            log(f"loss alone N={n} V={vocab} {dtype}")
            m[key] = bench_loss(n, vocab, device, 5, cfg["warmup"], dtype)
            log_each(m[key]["speedup_vs_ours"], "{:.2f}x")
        log(f"Adam step alone on {cfg['adam'][0]}")
        m["adam"] = bench_adam(*cfg["adam"], device, 5, cfg["warmup"])
        log_each(m["adam"]["speedup_vs_forloop"], "{:.2f}x")
        m["bf16_matmul"] = bench_bf16_matmul(device, cfg["matmul"])
        log(f"  bf16 linear vs fp32: {m['bf16_matmul']['bf16_speedup']:.3f}x")
    if "decode" in parts:
        m["decoding"] = {}
        for size, vocab, src_len, bsz, new, variants, reps in cfg["decode"]:
            log(f"greedy decoding {size} V={vocab} batch={bsz} {new} tokens")
            m["decoding"][f"batch{bsz}"] = d = bench_decoding(
                size, vocab, src_len, bsz, new, device, reps, variants
            )
            log_each({k: v["median_s"] for k, v in d["times"].items()}, "{:.2f}s")
            log_each(d["ratios"], "{:.2f}x")
    if "gpu" in parts and device.type == "cuda":
        size, vocab, shape = cfg["gpu"]
        if args.gpu_sequences:
            shape = (args.gpu_sequences, *shape[1:])
        log(f"GPU {size} bf16 eager vs torch.compile")
        m["gpu_bf16_compile"] = bench_gpu_compile(
            size, vocab, shape, device, 10 if not args.quick else 2, cfg["warmup"]
        )
    log("done")
    result["headline"] = headline(m)
    result["wall_time_s"] = time.perf_counter() - t_start
    write_json(out_path, result, indent=1)
    log(f"wrote {out_path}")
    return result


if __name__ == "__main__":
    main()

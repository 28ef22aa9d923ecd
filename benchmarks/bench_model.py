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
import contextlib
import datetime as dt
import functools
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(
    0, str(HERE)
)  # the reference lives beside this script, not in the package
sys.path.insert(0, str(REPO))

import reference_transformer as ref_lib  # noqa: E402

from annotated_transformer import Transformer, greedy_decode, preset  # noqa: E402
from annotated_transformer.model.flops import peak_flops_entry  # noqa: E402
from annotated_transformer.model.transformer import (  # noqa: E402
    count_parameters,
    layer_weights,
    logits_at_real_targets,
)
from annotated_transformer.runtime.devices import cpu_flags, cpu_name  # noqa: E402
from annotated_transformer.training.loss import (  # noqa: E402
    STRATEGIES,
    composite_smoothed_cross_entropy,
    default_strategy,
    label_smoothed_cross_entropy,
)


# ---------------------------------------------------------------------------------- provenance
def _cpu_info() -> dict:
    """CPU model and the instruction-set flags that decide whether bf16 can be fast."""
    flags = cpu_flags()
    wanted = ("avx2", "avx512f", "avx512bw", "avx512_bf16", "amx_bf16", "amx_tile")
    return {
        "cpu_model": cpu_name(),
        "cpu_flags": {name: name in flags for name in wanted},
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "onednn_bf16_supported": bool(torch.ops.mkldnn._is_mkldnn_bf16_supported()),
        "logical_cpus": os.cpu_count(),
    }


def _git(*args: str) -> str | None:
    try:
        return subprocess.run(
            ["git", *args], cwd=REPO, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def provenance(device: torch.device) -> dict:
    info = {
        "git_commit": _git("rev-parse", "HEAD"),
        # Uncommitted changes to the code that ran (documentation edits do not count).
        "git_dirty": bool(
            _git(
                "status",
                "--porcelain",
                "--",
                "annotated_transformer/*.py",
                "benchmarks/*.py",
            )
        ),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "device": device.type,
        "threads": torch.get_num_threads(),
        "load_average_at_start": os.getloadavg() if hasattr(os, "getloadavg") else None,
        **_cpu_info(),
    }
    if device.type == "cuda":
        info["gpu_name"] = torch.cuda.get_device_name(device)
        info["cuda"] = torch.version.cuda
    return info


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
    pad_id=0,
    bos_id=1,
    eos_id=2,
) -> Batch:
    """Random sentences of uniformly drawn lengths, padded to the longest, like a bucketed batch."""
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


# ---------------------------------------------------------------------------------- timing
def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def interleaved(
    fns: dict[str, Callable[[], None]], repeats: int, warmup: int, device, inner: int = 1
) -> dict:
    """Seconds per call of each function: warm-ups, then `repeats` rounds that run each once, in rotating order."""
    names = list(fns)
    for _ in range(warmup):
        for name in names:
            fns[name]()
    _sync(device)
    samples: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    for r in range(repeats):
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            _sync(device)
            t0, c0 = time.perf_counter(), time.process_time()
            for _ in range(inner):
                fns[name]()
            _sync(device)
            samples[name].append((time.perf_counter() - t0) / inner)
            cpu[name].append((time.process_time() - c0) / inner)
    return {name: summarize(s, cpu[name]) for name, s in samples.items()}


def summarize(samples: list[float], cpu: list[float] | None = None) -> dict:
    """Median wall time with its spread; process CPU time beside it (less sensitive to other load)."""
    out = {
        "median_s": statistics.median(samples),
        "min_s": min(samples),
        "max_s": max(samples),
        "samples_s": [round(s, 6) for s in samples],
    }
    if cpu:
        out["median_process_cpu_s"] = statistics.median(cpu)
    return out


# ---------------------------------------------------------------------------------- training steps
def autocast(device: torch.device, dtype: torch.dtype | None):
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=dtype)


class OursStep:
    """One training step of our package: forward, label-smoothed loss, backward, Adam, zero_grad.

    `loss_fn` defaults to the trainer's loss (the package's, gradient written over the logits); benchmarks swap in
    candidates. When `phases` is a list, each call appends its seconds per phase (forward, loss,
    backward, optimizer); on a CPU that costs nothing, on a GPU it adds synchronisations.
    """

    def __init__(
        self,
        model: Transformer,
        optimizer,
        batch: Batch,
        amp_dtype=None,
        smoothing=0.1,
        loss_fn=None,
        real_rows: bool = True,
    ):
        self.model, self.opt, self.batch, self.amp_dtype, self.smoothing = (
            model,
            optimizer,
            batch,
            amp_dtype,
            smoothing,
        )
        self.loss_fn = loss_fn or functools.partial(
            label_smoothed_cross_entropy, inplace_backward=True
        )  # as the trainer
        self.real_rows = real_rows
        self.device = batch.src.device
        self.phases: list[dict[str, float]] | None = None

    def _mark(self, record: dict | None, name: str, t0: float) -> float:
        if record is None:
            return t0
        _sync(self.device)
        t1 = time.perf_counter()
        record[name] = t1 - t0
        return t1

    def __call__(self) -> None:
        b, m = self.batch, self.model
        rec = {} if self.phases is not None else None
        m.train()
        t = time.perf_counter()
        with autocast(self.device, self.amp_dtype):
            if self.real_rows:
                logits, target = logits_at_real_targets(
                    m, b.src, b.tgt_in, b.tgt_out, m.config.pad_id
                )
            else:
                logits, target = m(b.src, b.tgt_in), b.tgt_out
            t = self._mark(rec, "forward", t)
            loss = (
                self.loss_fn(logits, target, self.smoothing, m.config.pad_id)[0]
                / b.target_tokens
            )
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

    def __init__(
        self, model, optimizer, batch: Batch, vocab: int, smoothing=0.1, pad_id=0
    ):
        self.model, self.opt, self.batch = model, optimizer, batch
        self.criterion = ref_lib.LabelSmoothing(vocab, pad_id, smoothing)

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


OUR_VARIANTS = {
    # (autocast, Adam kernel, logits for real target rows only); every variant uses the trainer's loss
    "ours_fp32": (
        None,
        "fused",
        True,
    ),  # what the trainer runs (eagerly; real rows on the CPU only)
    "ours_fp32_default_adam": (
        None,
        "default",
        True,
    ),  # torch.optim.Adam's own choice (for-loop on CPU)
    "ours_fp32_all_rows": (
        None,
        "fused",
        False,
    ),  # logits for padded positions too, as a compiled step has
    "ours_bf16": ("bf16", "fused", True),
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
    ours, reference = fair_pair(config, vocab, device)
    batch = make_batch(*batch_shape, vocab=vocab, device=device)
    steps: dict[str, Callable[[], None]] = {
        "reference_fp32": ReferenceStep(
            reference, adam(reference.parameters()), batch, vocab
        )
    }
    # Variants share our model (each with its own optimizer state), so they cost no second copy of weights.
    for name in variants:
        amp, opt_kind, real_rows = OUR_VARIANTS[name]
        real_rows = (
            real_rows and device.type == "cpu"
        )  # the trainer selects real rows on the CPU only
        steps[name] = OursStep(
            ours,
            adam(ours.parameters(), opt_kind),
            batch,
            torch.bfloat16 if amp else None,
            real_rows=real_rows,
        )
    for name, step in steps.items():
        if isinstance(step, OursStep) and device.type == "cpu":
            step.phases = []
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
@torch.no_grad()
def greedy_no_cache_last_only(
    model: Transformer, src: torch.Tensor, max_len: int
) -> torch.Tensor:
    """The package's no-cache greedy loop, but projecting only the last position to the vocabulary.

    A candidate fix measured here: `greedy_decode(use_cache=False)` runs the tied generator over
    every prefix position at every step, then keeps the last row.
    """
    c = model.config
    model.eval()
    src_mask = model.source_mask(src)
    memory = model.encode(src, src_mask)
    tokens = torch.full((src.size(0), 1), c.bos_id, dtype=torch.long, device=src.device)
    finished = torch.zeros(src.size(0), dtype=torch.bool, device=src.device)
    for _ in range(max_len):
        x = model.embed(tokens, model.tgt_embed, model.tgt_positions)
        for layer in model.decoder_layers:
            x = layer(x, memory, src_mask)
        logits = model.generator(x[:, -1]).float()
        logits[:, [c.pad_id, c.bos_id]] = float("-inf")
        next_token = logits.argmax(dim=-1).masked_fill(finished, c.pad_id)
        tokens = torch.cat([tokens, next_token[:, None]], dim=1)
        finished |= next_token == c.eos_id
        if bool(finished.all()):
            break
    return tokens


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

    Variants: the reference (prefix recomputation), ours with the KV cache, ours without it
    (`use_cache=False`, the package's path), and ours without it projecting only the last position.
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
        "ours_no_cache_last_only": lambda n: greedy_no_cache_last_only(ours, src, n),
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
    for name in ("ours_no_cache", "ours_no_cache_last_only"):
        if name in times:
            ratios[f"kv_cache_vs_{name}"] = times[name]["median_s"] / kv
            ratios[f"{name}_vs_reference"] = r / times[name]["median_s"]
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


# ---------------------------------------------------------------------------------- profile
# The ops of the package's eager loss (row max, exp, subtract, log, the target's scatter), matched by
# exact name: a prefix such as "aten::exp" would also take aten::expand.
LOSS_OPS = frozenset(
    {
        "aten::amax",
        "aten::exp",
        "aten::exp_",
        "aten::sub",
        "aten::sub_",
        "aten::log",
        "aten::log_",
        "aten::scatter_add_",
        "aten::scatter_add",
    }
)


def profile_step(
    size: str, vocab: int, batch_shape, device, amp_dtype, steps: int = 2, top: int = 15
) -> dict:
    """Top operators by self time in our training step (torch.profiler), plus a coarse grouping."""
    from torch.profiler import ProfilerActivity, profile

    config = preset(size)
    torch.manual_seed(0)
    model = Transformer(config, vocab, vocab).to(device)
    batch = make_batch(*batch_shape, vocab=vocab, device=device)
    step = OursStep(model, adam(model.parameters(), "fused"), batch, amp_dtype)
    step()  # warm-up: allocates Adam state
    activities = [ProfilerActivity.CPU] + (
        [ProfilerActivity.CUDA] if device.type == "cuda" else []
    )
    with profile(activities=activities) as prof:
        for _ in range(steps):
            step()
        _sync(device)
    # On a GPU the time that matters is the kernels' (device) time; on a CPU, self CPU time.
    metric = "self_device_time_total" if device.type == "cuda" else "self_cpu_time_total"
    averages = prof.key_averages()
    adam_total = sum(
        getattr(e, metric.replace("self_", ""))
        for e in averages
        if e.key.startswith("Optimizer.step#")
    )
    events = [e for e in averages if not e.key.startswith(("ProfilerStep", "Optimizer"))]
    total = sum(getattr(e, metric) for e in events)
    rows = sorted(events, key=lambda e: getattr(e, metric), reverse=True)
    groups = {
        "matmul (mm/addmm/bmm/linear)": (
            "aten::mm",
            "aten::addmm",
            "aten::bmm",
            "aten::linear",
            "aten::matmul",
            "aten::_addmm_activation",
            "mkldnn",
        ),
        "attention kernel (sdpa)": (
            "aten::_scaled_dot_product",
            "aten::scaled_dot_product",
        ),
        "softmax / log_softmax (+backward)": (
            "aten::_log_softmax",
            "aten::_softmax",
            "aten::log_softmax",
            "aten::softmax",
        ),
        # the package's loss, eagerly (exact op names; see LOSS_OPS)
        "loss (amax / exp / sub / log / scatter)": (),
        "embedding backward": (
            "aten::embedding_dense_backward",
            "aten::embedding_backward",
            "aten::index_add",
            "aten::sort",
        ),
        "casts and copies": (
            "aten::copy_",
            "aten::to",
            "aten::_to_copy",
            "aten::clone",
            "aten::contiguous",
        ),
        "Adam and other in-place elementwise": (
            "aten::_fused_adam",
            "aten::_foreach",
            "aten::addcmul_",
            "aten::addcdiv_",
            "aten::lerp_",
            "aten::sqrt",
            "aten::div_",
            "aten::mul_",
            "aten::add_",
        ),
        "layer norm": ("aten::native_layer_norm",),
        "dropout (bernoulli masks)": (
            "aten::native_dropout",
            "aten::bernoulli",
            "aten::dropout",
        ),
    }
    grouped = {g: 0.0 for g in groups}
    grouped["other"] = 0.0
    loss_group = "loss (amax / exp / sub / log / scatter)"
    for e in events:
        if e.key in LOSS_OPS:
            grouped[loss_group] += getattr(e, metric)
            continue
        for g, prefixes in groups.items():
            if prefixes and e.key.startswith(prefixes):
                grouped[g] += getattr(e, metric)
                break
        else:
            grouped["other"] += getattr(e, metric)
    return {
        "config": size,
        "vocab": vocab,
        "dtype": "bf16" if amp_dtype else "fp32",
        "profiled_steps": steps,
        "metric": metric,
        "step_self_ms": total / 1e3 / steps,
        "optimizer_step_ms": adam_total / 1e3 / steps,
        "top_ops": [
            {
                "op": e.key,
                "self_ms_per_step": getattr(e, metric) / 1e3 / steps,
                "percent": 100 * getattr(e, metric) / total,
                "calls_per_step": e.count / steps,
            }
            for e in rows[:top]
        ],
        "grouped_percent": {
            g: round(100 * v / total, 2)
            for g, v in sorted(grouped.items(), key=lambda kv: -kv[1])
        },
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
    passes over the (tokens x vocabulary) logits); model and loss in one compiled function. MFU is against
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
        "bf16_compile_one_graph",
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
        elif name == "bf16_compile_one_graph":
            step = OneGraphStep(model, adam(model.parameters(), "fused"), batch)
        _sync(device)
        t0 = time.perf_counter()
        step()
        _sync(device)
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


class OneGraphStep:
    """bf16 forward and loss in one torch.compile'd function, then backward and fused Adam."""

    def __init__(self, model: Transformer, optimizer, batch: Batch, smoothing=0.1):
        self.model, self.opt, self.batch = model, optimizer, batch
        pad = model.config.pad_id

        def forward_loss(src, tgt_in, tgt_out):
            with torch.autocast("cuda", dtype=torch.bfloat16):
                logits = model(src, tgt_in)
            return label_smoothed_cross_entropy(logits, tgt_out, smoothing, pad)[0]

        self.forward_loss = torch.compile(forward_loss)

    def __call__(self) -> None:
        b = self.batch
        self.model.train()
        loss = self.forward_loss(b.src, b.tgt_in, b.tgt_out) / b.target_tokens
        loss.backward()
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)


# ---------------------------------------------------------------------------------- allocator (separate processes)
def retain_freed_memory() -> bool:
    """Make glibc malloc keep freed memory instead of returning big blocks to the OS.

    By default glibc serves every block above 32 MB with a fresh mmap and unmaps it on free, so
    each (tokens x vocab) tensor of a step is page-faulted in again, every step. With mmap off
    and a high trim threshold, freed blocks are reused. Process-wide and glibc-only; returns
    False where it could not be applied.
    """
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        m_trim_threshold, m_mmap_max = -1, -4
        return bool(libc.mallopt(m_mmap_max, 0)) and bool(
            libc.mallopt(m_trim_threshold, 2**31 - 1)
        )
    except (OSError, AttributeError):
        return False


ALLOCATOR_VARIANTS = ["ours_fp32", "ours_fp32_all_rows"]


def child_training(spec: dict) -> dict:
    """Run in a fresh process: `bench_training` under one allocator mode (the reference included)."""
    applied = retain_freed_memory() if spec["mode"] == "retain" else None
    r = bench_training(
        spec["size"],
        spec["vocab"],
        tuple(spec["shape"]),
        torch.device("cpu"),
        spec["repeats"],
        1,
        ALLOCATOR_VARIANTS,
    )
    return {
        "mode": spec["mode"],
        "applied": applied,
        "samples": {k: v["samples_s"] for k, v in r["steps"].items()},
        "target_tokens": r["batch"]["target_tokens"],
    }


def bench_allocator(
    size: str, vocab: int, shape, rounds: int, repeats: int, threads: int
) -> dict:
    """Training steps with glibc's default allocator vs freed memory retained, in alternating fresh processes.

    Heap state cannot be switched back within one process (a retained heap keeps serving big
    blocks), so each mode runs in its own process; modes alternate to share the machine's load.
    Inside each process the reference and our variants are interleaved as in `bench_training`.
    """
    samples: dict[str, dict[str, list[float]]] = {"default": {}, "retain": {}}
    applied, tokens = None, None
    for _ in range(rounds):
        for mode in samples:
            spec = {
                "size": size,
                "vocab": vocab,
                "shape": list(shape),
                "mode": mode,
                "repeats": repeats,
            }
            cmd = [
                sys.executable,
                str(Path(__file__).resolve()),
                "--threads",
                str(threads),
                "--child-training",
                json.dumps(spec),
            ]
            proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            for name, values in r["samples"].items():
                samples[mode].setdefault(name, []).extend(values)
            applied = r["applied"] if mode == "retain" else applied
            tokens = r["target_tokens"]
    times = {
        mode: {name: summarize(v) for name, v in by_name.items()}
        for mode, by_name in samples.items()
    }
    med = {
        mode: {name: t["median_s"] for name, t in by_name.items()}
        for mode, by_name in times.items()
    }
    ratios = {
        f"retain_vs_default_{name}": med["default"][name] / med["retain"][name]
        for name in med["default"]
    }
    for mode in med:
        for name in ALLOCATOR_VARIANTS:
            ratios[f"{mode}_{name}_vs_reference_fp32"] = (
                med[mode]["reference_fp32"] / med[mode][name]
            )
    ratios["retain_ours_fp32_vs_default_reference_fp32"] = (
        med["default"]["reference_fp32"] / med["retain"]["ours_fp32"]
    )
    return {
        "config": size,
        "vocab": vocab,
        "batch": list(shape),
        "target_tokens": tokens,
        "rounds": rounds,
        "repeats_per_process": repeats,
        "threads": threads,
        "mallopt_applied": applied,
        "times": times,
        "tokens_per_s": {
            mode: {n: tokens / v for n, v in by_name.items()}
            for mode, by_name in med.items()
        },
        "ratios": ratios,
    }


# ---------------------------------------------------------------------------------- main
def fast_bf16(device: torch.device) -> bool:
    """bf16 matmuls are fast on GPUs with bf16 and on CPUs whose oneDNN has bf16 (AVX512-BF16 or AMX)."""
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())


ALL_DECODERS = [
    "reference_prefix_recompute",
    "ours_kv_cache",
    "ours_no_cache",
    "ours_no_cache_last_only",
]


def plan(args, device: torch.device) -> dict:
    """Sizes of every measurement; --quick shrinks them to seconds for the smoke test.

    On a CPU without fast bf16 a `base` bf16 step takes many minutes (measured: over 10), so bf16
    is then measured at `tiny` only, unless --bf16-base insists.
    """
    bf16_base = fast_bf16(device) or args.bf16_base
    if args.quick:
        return dict(
            train=[
                (
                    "tiny",
                    64,
                    (8, 5, 8),
                    [
                        "ours_fp32",
                        "ours_fp32_default_adam",
                        "ours_fp32_all_rows",
                        "ours_bf16",
                    ],
                    2,
                )
            ],
            warmup=1,
            loss=(256, 64),
            adam=("tiny", 64),
            matmul=3,
            decode=[("tiny", 64, 6, 1, 8, ALL_DECODERS, 2)],
            profile=[("tiny", 64, (8, 5, 8), None)],
            gpu=("tiny", 64, (8, 5, 8)),
            allocator=[("tiny", 64, (8, 5, 8), 1, 1)],
        )
    tiny_variants = [
        "ours_fp32",
        "ours_fp32_default_adam",
        "ours_fp32_all_rows",
        "ours_bf16",
    ]
    base_variants = ["ours_fp32", "ours_fp32_default_adam", "ours_fp32_all_rows"] + (
        ["ours_bf16"] if bf16_base else []
    )
    if device.type == "cuda":
        return dict(
            train=[
                ("tiny", 8000, (256, 20, 30), tiny_variants, 10),
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
            profile=[
                ("base", 37000, (400, 25, 30), None),
                ("base", 37000, (400, 25, 30), torch.bfloat16),
            ],
            # ~23k target tokens: about the paper's 25k-token batch (section 5.1), enough to fill an H100.
            gpu=("base", 37000, (768, 25, 30)),
            allocator=None,
        )
    profile = [
        ("tiny", 8000, (100, 20, 30), None),
        ("tiny", 8000, (100, 20, 30), torch.bfloat16),
        ("base", 37000, (80, 20, 30), None),
    ] + ([("base", 37000, (80, 20, 30), torch.bfloat16)] if bf16_base else [])
    return dict(
        train=[
            ("tiny", 8000, (100, 20, 30), tiny_variants, 5),
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
        profile=profile,
        gpu=None,
        allocator=[
            ("tiny", 8000, (100, 20, 30), 2, 3),
            ("base", 37000, (80, 20, 30), 2, 2),
        ],
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
            "ours_fp32_default_adam_vs_reference_fp32",
            "ours_fp32_all_rows_vs_reference_fp32",
            "ours_fp32_all_rows_vs_ours_fp32",
            "ours_bf16_vs_ours_fp32",
            "ours_fp32_default_adam_vs_ours_fp32",
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
        choices=["train", "components", "decode", "profile", "gpu", "allocator"],
        action="append",
        help="run only these parts (repeatable); default all but allocator",
    )
    p.add_argument(
        "--gpu-sequences",
        type=int,
        default=None,
        help="sequences in the GPU compile/MFU batch (default 768, about 22k target tokens)",
    )
    p.add_argument(
        "--child-training", help=argparse.SUPPRESS
    )  # internal: one allocator-mode process
    args = p.parse_args(argv)
    if args.child_training:
        if args.threads:
            torch.set_num_threads(args.threads)
        print(json.dumps(child_training(json.loads(args.child_training))))
        return {}
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        p.error("--device cuda but torch.cuda.is_available() is False")
    if args.threads or args.quick:
        # One thread in --quick: on a busy 2-core machine two OpenMP threads stall at every
        # barrier, and the smoke test measures nothing anyway.
        torch.set_num_threads(args.threads or 1)
    cfg = plan(args, device)
    parts = set(args.only or ["train", "components", "decode", "profile", "gpu"])
    if "allocator" in parts and cfg["allocator"] is None:
        parts.discard("allocator")
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
        if hasattr(os, "getloadavg") and not msg.startswith("  "):
            loads.append([round(elapsed, 1), msg[:60], round(os.getloadavg()[0], 2)])
        print(f"[{elapsed:7.1f}s] {msg}", flush=True)

    if "train" in parts:
        m["training"] = {}
        for size, vocab, shape, variants, repeats in cfg["train"]:
            log(f"training {size} V={vocab} batch={shape} variants={variants}")
            r = bench_training(
                size, vocab, shape, device, repeats, cfg["warmup"], variants
            )
            m["training"][size] = r
            log(
                "  "
                + ", ".join(
                    f"{k}={v['tokens_per_s']:.0f} tok/s" for k, v in r["steps"].items()
                )
            )
            log("  " + ", ".join(f"{k}={v:.2f}x" for k, v in r["ratios"].items()))
    if "components" in parts:
        n, vocab = cfg["loss"]
        # bf16 logits too where the step runs in bf16 (a GPU's eager step gives the loss those)
        dtypes = {"loss": torch.float32}
        if fast_bf16(device):
            dtypes["loss_bf16"] = torch.bfloat16
        for key, dtype in dtypes.items():
            log(f"loss alone N={n} V={vocab} {dtype}")
            m[key] = bench_loss(n, vocab, device, 5, cfg["warmup"], dtype)
            log(
                "  "
                + ", ".join(f"{k}={v:.2f}x" for k, v in m[key]["speedup_vs_ours"].items())
            )
        log(f"Adam step alone on {cfg['adam'][0]}")
        m["adam"] = bench_adam(*cfg["adam"], device, 5, cfg["warmup"])
        log(
            "  "
            + ", ".join(
                f"{k}={v:.2f}x" for k, v in m["adam"]["speedup_vs_forloop"].items()
            )
        )
        m["bf16_matmul"] = bench_bf16_matmul(device, cfg["matmul"])
        log(f"  bf16 linear vs fp32: {m['bf16_matmul']['bf16_speedup']:.3f}x")
    if "decode" in parts:
        m["decoding"] = {}
        for size, vocab, src_len, bsz, new, variants, reps in cfg["decode"]:
            log(f"greedy decoding {size} V={vocab} batch={bsz} {new} tokens")
            m["decoding"][f"batch{bsz}"] = d = bench_decoding(
                size, vocab, src_len, bsz, new, device, reps, variants
            )
            log(
                "  "
                + ", ".join(f"{k}={v['median_s']:.2f}s" for k, v in d["times"].items())
            )
            log("  " + ", ".join(f"{k}={v:.2f}x" for k, v in d["ratios"].items()))
    if "profile" in parts:
        m["profile"] = {}
        for size, vocab, shape, dtype in cfg["profile"]:
            key = f"{size}_{'bf16' if dtype else 'fp32'}"
            log(f"profiling {key}")
            m["profile"][key] = prof = profile_step(
                size, vocab, shape, device, dtype, steps=1 if size == "base" else 3
            )
            log("  " + ", ".join(f"{k} {v}%" for k, v in prof["grouped_percent"].items()))
    if "allocator" in parts and device.type == "cpu":
        m["allocator"] = {}
        for size, vocab, shape, rounds, reps in cfg["allocator"]:
            log(f"allocator: default vs retained heap, {size}, alternating processes")
            m["allocator"][size] = a = bench_allocator(
                size, vocab, shape, rounds, reps, torch.get_num_threads()
            )
            log("  " + ", ".join(f"{k}={v:.2f}x" for k, v in a["ratios"].items()))
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
    out_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(result, indent=1, default=float) + "\n")
    tmp.replace(out_path)
    log(f"wrote {out_path}")
    return result


if __name__ == "__main__":
    main()

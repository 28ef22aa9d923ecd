"""The trainer's training step and decoding, variant against variant, in one process.

    python benchmarks/bench_step.py --quick --out /tmp/s.json                    # the plumbing, seconds
    python benchmarks/bench_step.py --variants eager eager_all_rows compiled compiled_model \\
        --decode greedy beam --decoders eager_cache compiled_step --thread-settings  # torch.compile on a CPU
    python benchmarks/bench_step.py --precision fp32 bf16 --profiler --out p.json   # where the step's time goes
    python benchmarks/bench_step.py --device cuda --profile paper --precision bf16 \\
        --batch-tokens 24576 --variants eager compiled --out results/gpu/speed_step.json  # a GPU

The step is `Trainer.train_step` (forward, label-smoothed loss, backward, fused Adam, schedule) on the
profile's model with seeded weights, over synthetic pairs of Multi30k's lengths (`synthetic_pairs`;
`--real-data`: the profile's own training pairs through its BPE, as `train` reads them), the first
`--batches` global batches of one micro-batch each, the same every round (learning rate 0
keeps the weights, so every round computes the same step). Each variant (`VARIANTS`) in each
`--precision` is a trainer of its own on the same weights; all of them are interleaved in rotating
order within every round (`common.interleaved`, medians with min and max and process CPU time),
so load on the machine hits all alike. A variant's warm-up is its first round (compiling included)
and `compile_s` that minus a steady round. Per precision, `speed_over_eager` and, with `compiled`
timed, what `--compile auto` would choose (`runtime.compiling.effective_speed`); with both fp32 and
bf16 timed, what `--precision auto` would choose (`runtime.precision.choose_precision`). Target
tokens/s, the step's FLOPs (`model.flops`) and MFU against the data sheet's peak (None on a CPU).

`--profiler` then runs every timed trainer under torch.profiler and splits its step by kind
(`KINDS`, `time_by_kind`), beside the same process's plain matmul peak at the model's shapes
(`matmul_peak`); on a GPU also the host's launch calls, the kernels' busy share and `host_syncs`.
The markdown table goes beside `--out` (.md).

`--decode greedy beam` times decoding of `--decode-batch` sources with the profile's model (random
weights, an end-of-sentence bias so outputs end at caption lengths) by each of `--decoders`
(`DECODERS`), same tokens checked (in bf16 or fp16 the share of rows alike). Decoding runs before
training and the record is written after each part, so a run cut short keeps what it finished.

`--thread-settings` runs the eager fp32 step and greedy decoding again in one fresh process per
thread setting (`THREAD_SETTINGS`: OpenMP's pool is set up once per process), default first and last.

--quick: the smoke profile, two rounds, torch.compile with Dynamo's "eager" backend (no code
generation: the plumbing, numbers that mean nothing), small decoding batches.
"""

from __future__ import annotations

import os
import tempfile

# A cold Inductor cache unless the caller chose one: compile seconds as a first run pays them.
os.environ.setdefault(
    "TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp(prefix="bench_step_inductor_")
)

import argparse  # noqa: E402
import contextlib  # noqa: E402
import copy  # noqa: E402
import dataclasses  # noqa: E402
import functools  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
import warnings  # noqa: E402
from collections import Counter  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
from bench_beam import eos_biased, sources  # noqa: E402
from common import REPO, interleaved, log, provenance, run_fresh, sync, write_json  # noqa: E402

from annotated_transformer import Transformer, beam_search, greedy_decode  # noqa: E402
from annotated_transformer.data import EncodedPairs  # noqa: E402
from annotated_transformer.data.batching import LengthBuckets, TokenBatcher  # noqa: E402
from annotated_transformer.model import attention  # noqa: E402
from annotated_transformer.model.flops import forward_flops, mfu  # noqa: E402
from annotated_transformer.model.layers import Dropout  # noqa: E402
from annotated_transformer.model.static_decoding import (  # noqa: E402
    StaticBeamDecoder,
    StaticGreedyDecoder,
)
from annotated_transformer.pipeline import prepare_data  # noqa: E402
from annotated_transformer.profiles import Profile, get_profile  # noqa: E402
from annotated_transformer.runtime import attention_kernels  # noqa: E402
from annotated_transformer.runtime.compiling import MARGIN, effective_speed  # noqa: E402
from annotated_transformer.runtime.devices import (  # noqa: E402
    cpu_flags,
    cpu_has_bf16_instructions,
    cpu_name,
    cpu_supports_bf16,
)
from annotated_transformer.runtime.distributed import DistributedContext  # noqa: E402
from annotated_transformer.runtime.files import atomic_write_text  # noqa: E402
from annotated_transformer.runtime.precision import (  # noqa: E402
    autocast_context,
    choose_precision,
)
from annotated_transformer.training.compile_probe import compiled_step_parts  # noqa: E402
from annotated_transformer.training.execution import StepExecution  # noqa: E402
from annotated_transformer.training.fit import build_model  # noqa: E402
from annotated_transformer.training.loss import (  # noqa: E402
    default_strategy,
    label_smoothed_cross_entropy,
)
from annotated_transformer.training.trainer import Trainer  # noqa: E402


# ---------------------------------------------------------------------------------- variants
@dataclasses.dataclass(frozen=True)
class Variant:
    """One change to the trainer's step; `eager` is none, the reference of every other."""

    compile: str | None = None  # "model_and_loss" (train --compile) or "model"
    mode: str | None = None  # torch.compile's mode
    buckets: bool = False  # lengths padded to LengthBuckets.doubling(max_len + 1)
    cuda_graphs: bool = False  # forward and backward graphed per shape (--cuda-graphs)
    cudnn_attention: bool = False  # cuDNN's attention allowed (left out elsewhere)
    all_rows: bool = False  # logits for padded target rows too, as a compiled graph has
    # the eager loss's way through the logits; None: the device's
    loss_strategy: str | None = None
    # on a CPU, attention in the autocast dtype (bf16) rather than float32 (model.attention)
    half_attention: bool = False
    # on a CPU, each dropout mask drawn a float per element (rand_like), not from 16-bit lanes
    float_dropout_mask: bool = False


VARIANTS = {
    "eager": Variant(),
    "eager_all_rows": Variant(all_rows=True),
    "eager_cudnn_attention": Variant(cudnn_attention=True),
    "eager_row_blocks_loss": Variant(loss_strategy="row_blocks"),
    "eager_half_attention": Variant(half_attention=True),
    "eager_float_dropout_mask": Variant(float_dropout_mask=True),
    "eager_bucketed": Variant(buckets=True),
    "eager_bucketed_cudnn_attention": Variant(buckets=True, cudnn_attention=True),
    "eager_bucketed_graphed": Variant(buckets=True, cuda_graphs=True),
    "compiled": Variant(compile="model_and_loss"),
    "compiled_model": Variant(compile="model"),
    "compiled_bucketed": Variant(compile="model_and_loss", buckets=True),
    "compiled_bucketed_reduce_overhead": Variant(
        compile="model_and_loss", buckets=True, mode="reduce-overhead"
    ),
}


def _draw_dropout_masks_a_float_each(model: torch.nn.Module) -> None:
    """The model's CPU dropout as one float per element: rand_like, a comparison and a scale
    (elsewhere the package's own: nn.Dropout)."""

    def forward(self, x):
        if not self.training or self.p == 0.0 or x.device.type != "cpu":
            return torch.nn.Dropout.forward(self, x)
        return x * torch.rand_like(x).ge_(self.p).mul_(1.0 / (1.0 - self.p))

    for module in model.modules():
        if isinstance(module, Dropout):
            module.forward = forward.__get__(module)


class _NoTokenizer:
    def to_bytes(self) -> bytes:
        return b""


def synthetic_pairs(n: int, vocab: int, seed: int = 0) -> EncodedPairs:
    """Pairs with Multi30k's lengths in pieces (about 15 source and 17 target, +-5)."""
    rng = np.random.default_rng(seed)
    src = [
        rng.integers(4, vocab, size=int(rng.integers(10, 21))).tolist() for _ in range(n)
    ]
    tgt = [
        rng.integers(4, vocab, size=int(rng.integers(12, 23))).tolist() for _ in range(n)
    ]
    return EncodedPairs(src, tgt)


def make_trainer(
    profile: Profile,
    device: torch.device,
    precision: str,
    variant: Variant = VARIANTS["eager"],
    *,
    batch_tokens: int | None = None,
    quick: bool = False,
    seed: int = 0,
    data: EncodedPairs | None = None,
) -> Trainer:
    """A trainer of `profile`'s model (seeded weights) on `data` (default: synthetic pairs), its
    step changed as `variant` says (with --quick, torch.compile's "eager" backend and no mode)."""
    model = build_model(profile.model_config(), profile.vocab_size, seed=seed).to(device)
    if variant.float_dropout_mask:
        _draw_dropout_masks_a_float_each(model)
    data = data if data is not None else synthetic_pairs(2000, profile.vocab_size)
    settings = profile.train_settings().replace(precision=precision, compile=False)
    if batch_tokens:
        settings = settings.replace(batch_tokens=batch_tokens)
    if variant.cuda_graphs:
        settings = settings.replace(length_buckets=True, cuda_graphs=True)
    execution = StepExecution(
        precision=precision,
        precision_reason="asked (benchmark)",
        compiled=False,
        compile_reason="asked (benchmark)",
        real_rows_only=device.type == "cpu" and not (variant.compile or variant.all_rows),
    )
    trainer = Trainer(
        model,
        _NoTokenizer(),
        data,
        None,
        settings,
        tempfile.mkdtemp(prefix="bench_step_run_"),
        DistributedContext(device=device),
        execution=execution,
        show_progress=False,
    )
    if variant.buckets:
        trainer.batcher = TokenBatcher(
            data.src_lengths,
            data.tgt_lengths,
            settings.batch_tokens,
            seed=settings.seed,
            skip_too_long=True,
            buckets=LengthBuckets.doubling(profile.model_config().max_len + 1),
        )
    options = (
        {"backend": "eager"} if quick else {"mode": variant.mode} if variant.mode else {}
    )
    # "model_and_loss" is exactly what the trainer does with compile=True
    if variant.compile == "model_and_loss":
        trainer.forward_model, trainer.loss_fn = compiled_step_parts(
            trainer.model, **options
        )
    elif variant.compile == "model":
        trainer.forward_model = torch.compile(trainer.model, **options)
    elif variant.loss_strategy:
        trainer.loss_fn = functools.partial(
            label_smoothed_cross_entropy,
            inplace_backward=True,
            strategy=variant.loss_strategy,
        )
    # Learning rate 0 keeps the weights, so every round computes the same step.
    for group in trainer.optimizer.param_groups:
        group["lr"] = 0.0
    return trainer


def first_batches(trainer: Trainer, n: int = 1) -> list[list[list[int]]]:
    """The run's first `n` global batches (one micro-batch each) of the unbucketed plan, so every
    variant steps through the same pairs."""
    batcher = TokenBatcher(
        trainer.train_data.src_lengths,
        trainer.train_data.tgt_lengths,
        trainer.settings.batch_tokens,
        seed=trainer.settings.seed,
        skip_too_long=True,
    )
    return [[b] for b in batcher.epoch_batches(0)[:n]]


def step_fn(name: str, trainer: Trainer, batches):
    """A round of `name`'s step over `batches`: cuDNN's attention allowed for the variants that ask
    for it only, left out for every other whatever the environment says (runtime.attention_kernels)."""
    allowed = VARIANTS[name].cudnn_attention
    in_float32 = not VARIANTS[name].half_attention

    def run():
        attention.CPU_ATTENTION_IN_FLOAT32 = in_float32
        try:
            with attention_kernels.allow_cudnn_attention(allowed):
                for batch in batches:
                    trainer.train_step(batch)
        finally:
            attention.CPU_ATTENTION_IN_FLOAT32 = True

    return run


def _error(error: BaseException) -> str:
    return f"{type(error).__name__}: {str(error).splitlines()[0][:300] if str(error) else ''}"


# ---------------------------------------------------------------------------------- training
def batch_facts(profile: Profile, trainer: Trainer, batches) -> dict:
    """The batches' target tokens (eos included), training FLOPs and (rows, longest target)."""
    data, config = trainer.train_data, profile.model_config()
    tokens = flops = 0
    shapes = []
    for (b,) in batches:
        src = sum(int(data.src_lengths[j]) + 1 for j in b)
        tgt = sum(int(data.tgt_lengths[j]) + 1 for j in b)
        tokens += tgt
        flops += 3 * forward_flops(
            config, profile.vocab_size, src, tgt, src / len(b), tgt / len(b)
        )
        shapes.append([len(b), max(int(data.tgt_lengths[j]) for j in b) + 1])
    return {
        "target_tokens_per_round": tokens,
        "flops_per_round": flops,
        "batch_shapes_rows_by_target_length": shapes,
    }


def bench_training(
    trainers: dict, batches, facts: dict, rounds: int, warmup: int, device
) -> dict:
    """Every trainer warmed up one by one (`warmup` rounds, the first timed: it compiles), then
    all interleaved; by precision and variant."""
    steps, first, errors = {}, {}, {}
    for key, trainer in trainers.items():
        precision, name = key
        steps[key] = step_fn(name, trainer, batches)
        sync(device)
        started = time.perf_counter()
        try:
            steps[key]()
            sync(device)
            first[key] = time.perf_counter() - started
            for _ in range(warmup - 1):
                steps[key]()
        except Exception as error:  # noqa: BLE001 (a compiler failure is a result here)
            errors[key] = _error(error)
            log(f"training {precision} {name}: failed: {errors[key]}")
            continue
        log(f"training {precision} {name}: first round {first[key]:.1f} s")
    fns = {key: fn for key, fn in steps.items() if key not in errors}
    times = interleaved(fns, rounds, 0, device)
    tokens, flops = facts["target_tokens_per_round"], facts["flops_per_round"]
    out: dict = {}
    for (precision, name), trainer in trainers.items():
        row = out.setdefault(precision, {"variants": {}})["variants"]
        if (precision, name) in errors:
            row[name] = {"error": errors[precision, name]}
            continue
        t = times[precision, name]
        eager = times.get((precision, "eager"))
        variant = VARIANTS[name]
        row[name] = {
            **t,
            "per_step_s": t["median_s"] / len(batches),
            "target_tokens_per_s": tokens / t["median_s"],
            "gflops_per_s": flops / t["median_s"] / 1e9,
            "mfu": mfu(flops / t["median_s"], device, precision),
            "host_cpu_over_wall": t["median_process_cpu_s"] / t["median_s"],
            "speed_over_eager": eager["median_s"] / t["median_s"] if eager else None,
            "first_round_s": first[precision, name],
            "compile_s": max(0.0, first[precision, name] - t["median_s"]),
            "padded_shape": trainer.batcher.padded_shape(batches[0][0]),
            "cuda_graphs": trainer.settings.cuda_graphs,
            "captured_shapes": len(trainer.graphed.shapes) if trainer.graphed else None,
            "loss_strategy": "compiled"
            if variant.compile == "model_and_loss"
            else variant.loss_strategy or default_strategy(device),
        }
    for precision, part in out.items():
        variants = part["variants"]
        if "error" not in variants.get("compiled", {"error": 1}) and "eager" in variants:
            seconds = {
                "eager": variants["eager"]["per_step_s"],
                "compiled": variants["compiled"]["per_step_s"],
                "compile": variants["compiled"]["compile_s"],
            }
            run_s = facts["time_budget_s"]
            speed = effective_speed(seconds, run_s)
            part["auto_compile"] = {
                "seconds": seconds,
                "run_seconds": run_s,
                "effective_speed": speed,
                "margin": MARGIN,
                "compiles": speed >= MARGIN,
            }
        log(
            f"training {precision}: "
            + ", ".join(
                f"{n} {v['target_tokens_per_s']:,.0f} tok/s ({v['speed_over_eager'] or 0:.2f}x)"
                for n, v in variants.items()
                if "error" not in v
            )
        )
    return out


def precision_choice(
    training: dict, device: torch.device, profile: Profile
) -> dict | None:
    """fp32 against bf16 for the eager step, and what `--precision auto` picks from those seconds
    (on a CPU without bf16 instructions it takes fp32 without timing)."""
    try:
        seconds = {
            p: training[p]["variants"]["eager"]["per_step_s"] for p in ("fp32", "bf16")
        }
    except KeyError:
        return None
    auto = choose_precision(
        "auto", device, probe=lambda: seconds, shape={"benchmark": profile.name}
    )
    return {
        "seconds_per_step": seconds,
        "bf16_speed_over_fp32": seconds["fp32"] / seconds["bf16"],
        "auto_chooses": auto.precision,
        "auto_reason": auto.reason,
    }


# ---------------------------------------------------------------------------------- profiler
KINDS = (
    "matmul",
    "attention",
    "softmax",
    "norms and dropout",
    "loss over the vocabulary",
    "optimizer",
    "other elementwise",
    "batching and host",
)
RANGE = "bench_step::"  # the ranges `labelled` opens: loss, batching, dropout, norm

_MATMUL = re.compile(
    r"gemm|cublas|cutlass|xmma|nvjet|mkldnn_matmul|onednn|triton_tem_fused_(mm|addmm|bmm)"
    r"|^aten::(mm|addmm|bmm|matmul|linear|_addmm_activation|baddbmm)$"
)
_ATTENTION = re.compile(r"scaled_dot_product|flash|fmha|efficient_attention|sdpa|_attn")
_SOFTMAX = re.compile(r"softmax")
_NORM_DROPOUT = re.compile(
    r"bench_step::(dropout|norm)|layer_norm|layernorm|dropout|bernoulli"
)
# What an operator or kernel may run inside (its own name or an enclosing one's), first wins.
_RANGES = (
    ("optimizer", re.compile(r"optimizer\.|adam|_foreach_|multi_tensor_apply")),
    (
        "loss over the vocabulary",
        re.compile(r"bench_step::loss|smoothedcrossentropy|log_softmax|nll_loss"),
    ),
    ("batching and host", re.compile(r"bench_step::batching")),
)


def classify(name: str, enclosing: tuple[str, ...] = ()) -> str:
    """The kind of an operator or kernel `name` run inside the operators and ranges `enclosing`
    (innermost first; for a backward operator, the forward operator it differentiates and what
    enclosed that). Attention kernels and matrix products by their own name wherever they run;
    then the optimizer, the loss over the vocabulary and batching by what encloses them; then
    softmax by name; then layer norm and dropout (the trainer's CPU dropout is `random_`, `ge` and `mul`:
    known by the range around the module); everything else (residual adds, embeddings, casts,
    copies, zero fills) is other elementwise work."""
    own = name.lower()
    chain = (own, *(e.lower() for e in enclosing))
    if _ATTENTION.search(own):
        return "attention"
    if _MATMUL.search(own):
        return "matmul"
    for kind, pattern in _RANGES:
        if any(pattern.search(n) for n in chain):
            return kind
    if _SOFTMAX.search(own):
        return "softmax"
    if any(_NORM_DROPOUT.search(n) for n in chain):
        return "norms and dropout"
    return "other elementwise"


def _ancestors(event) -> list:
    out, parent = [], event.cpu_parent
    while parent is not None:
        out.append(parent)
        parent = parent.cpu_parent
    return out


_BACKWARD = "autograd::engine::evaluate_function"


def enclosing_names(events) -> dict[int, tuple[str, ...]]:
    """For each event (by `id()`), the names enclosing it, innermost first. A backward operator
    runs inside autograd's node, which carries the sequence number of the forward operator that
    made it: that operator and what enclosed it follow, so the backward of the loss counts as the
    loss and the backward of a dropout as dropout."""
    forward: dict[tuple[int, int], tuple[str, ...]] = {}
    out = {}
    for e in sorted(events, key=lambda e: e.time_range.start):
        parents = _ancestors(e)
        names = [p.name for p in parents]
        for p in parents:
            if p.name.startswith(_BACKWARD) and p.sequence_nr >= 0:
                names += forward.get((p.fwd_thread, p.sequence_nr), ())
        out[id(e)] = tuple(names)
        if e.sequence_nr >= 0 and not any(n.startswith(_BACKWARD) for n in names):
            # the last operator to carry a number is the one that made the node
            forward[e.thread, e.sequence_nr] = (e.name, *names)
    return out


def time_by_kind(events, cuda: bool, steps: int, wall_s: float, top: int = 15) -> dict:
    """The profiler's events (`prof.events()`) as time by kind per step.

    On a GPU the device's own events alone (kernels, copies, memsets: not the device-side copies of
    `record_function` ranges, which span the kernels inside them), each once, classified by its own
    name and the operator that launched it (the profiler links the two by correlation id) with
    what enclosed that; on a CPU each operator's self CPU time, which excludes its children (a
    range's own time is the Python inside it: Adam's step, the loss's glue). Summing operators and
    kernels together would count every kernel twice (a first H100 trace summed 128.6 ms of device
    time in a 70.7 ms step). What the kinds leave of the profiled wall time `wall_s` goes to
    batching and the host (Python between operators, and on a GPU the device waiting for the
    host), so the kinds add up to the profiled step."""
    from torch.autograd import DeviceType

    by_kind = {kind: 0.0 for kind in KINDS}
    rows: dict[tuple[str, str], list[float]] = {}
    host = [e for e in events if e.device_type == DeviceType.CPU]
    enclosing = enclosing_names(host)
    if cuda:
        launcher = {e.id: e for e in host}
        items = []
        for e in events:
            if e.device_type != DeviceType.CUDA or e.is_user_annotation:
                continue
            op = launcher.get(e.linked_correlation_id)
            chain = (op.name, *enclosing[id(op)]) if op is not None else ()
            items.append((e.name, e.time_range.end - e.time_range.start, chain))
    else:
        items = [(e.name, e.self_cpu_time_total, enclosing[id(e)]) for e in host]
    counted = 0
    for name, us, chain in items:
        if us <= 0:
            continue
        counted += 1
        kind = classify(name, chain)
        by_kind[kind] += us
        row = rows.setdefault((name, kind), [0.0, 0])
        row[0] += us
        row[1] += 1
    if cuda and not counted:  # a profiler that saw no kernels would report a step of 0 ms
        raise SystemExit(
            "bench_step: the profiler recorded no GPU kernel (is CUPTI available to "
            "torch.profiler here?); no time by kind to report"
        )
    measured = sum(by_kind.values())
    wall_us = 1e6 * wall_s
    by_kind["batching and host"] += max(0.0, wall_us - measured)
    total = sum(by_kind.values())
    ranked = sorted(rows.items(), key=lambda item: -item[1][0])[:top]
    return {
        "metric": "device time of each kernel" if cuda else "self CPU time",
        "profiled_steps": steps,
        "total_ms_per_step": total / 1e3 / steps,
        "profiled_wall_ms_per_step": wall_us / 1e3 / steps,
        "by_kind_ms_per_step": {k: v / 1e3 / steps for k, v in by_kind.items()},
        "by_kind_percent": {
            k: 100 * v / total if total else 0.0 for k, v in by_kind.items()
        },
        "top_ops": [
            {
                "name": name,
                "kind": kind,
                "ms_per_step": us / 1e3 / steps,
                "percent": 100 * us / total,
                "calls_per_step": count / steps,
            }
            for (name, kind), (us, count) in ranked
        ],
    }


LAUNCH_CALLS = (
    "cudaLaunchKernel",
    "cuLaunchKernel",
    "cudaGraphLaunch",
    "cudaMemcpyAsync",
)


def _in_range(name: str, fn):
    def run(*args, **kwargs):
        with torch.profiler.record_function(RANGE + name):
            return fn(*args, **kwargs)

    return run


@contextlib.contextmanager
def labelled(trainer: Trainer):
    """The trainer's loss and batching, and in an eager model its dropout and layer norms, inside
    ranges the profiler records by name (a compiled model is left as it was traced)."""
    patched = [(trainer, "loss_fn", "loss"), (trainer, "_micro_batch", "batching")]
    if trainer.forward_model is trainer.model:
        for module in trainer.model.modules():
            if isinstance(module, torch.nn.Dropout):
                patched.append((module, "forward", "dropout"))
            elif isinstance(module, torch.nn.LayerNorm):
                patched.append((module, "forward", "norm"))
    saved = [(owner, attr, owner.__dict__.get(attr)) for owner, attr, _ in patched]
    for owner, attr, name in patched:
        setattr(owner, attr, _in_range(name, getattr(owner, attr)))
    try:
        yield
    finally:
        for owner, attr, before in saved:
            if before is None:
                delattr(owner, attr)  # the class's method again
            else:
                setattr(owner, attr, before)


def profiled(name: str, trainer: Trainer, batches, steps: int) -> dict:
    """`steps` rounds of the variant under torch.profiler, time by kind per step."""
    from torch.profiler import ProfilerActivity, profile

    device = trainer.device
    cuda = device.type == "cuda"
    run = step_fn(name, trainer, batches)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with labelled(trainer):
        run()  # the wrapped loss may be traced once more by a compiler: outside the profile
        sync(device)
        with profile(activities=activities) as prof:
            started = time.perf_counter()
            for _ in range(steps):
                run()
            sync(device)
            wall_s = time.perf_counter() - started
    events = prof.events()
    out = time_by_kind(events, cuda, steps * len(batches), wall_s)
    if cuda:
        launches = [e for e in events if e.name in LAUNCH_CALLS]
        out["host_launch_ms_per_step"] = (
            sum(e.self_cpu_time_total for e in launches) / 1e3 / (steps * len(batches))
        )
        out["launches_per_step"] = len(launches) / (steps * len(batches))
    return out


def host_syncs(trainer: Trainer, batch) -> dict | None:
    """Where one step makes the host wait for the GPU (none should). CUDA's sync debug mode warns
    at the synchronising calls it knows (a value read back, a blocking copy; PyTorch says not every
    sync is covered), and each is counted at the innermost line of this repository's code on the
    stack: the trainer's line that called into torch, not torch's own. None on a CPU."""
    if trainer.device.type != "cuda":
        return None
    sync(trainer.device)
    where: Counter = Counter()

    def count(message, category, filename, lineno, file=None, line=None):
        if "synchroniz" in str(message):
            where[_repository_line(filename, lineno)] += 1

    before = torch.cuda.get_sync_debug_mode()
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = count
        torch.cuda.set_sync_debug_mode("warn")
        try:
            trainer.train_step(batch)
        finally:
            torch.cuda.set_sync_debug_mode(before)
    sync(trainer.device)
    return {"per_step": sum(where.values()), "where": dict(where.most_common())}


def _repository_line(filename: str, lineno: int) -> str:
    """`path:line` of the innermost frame in this repository (the warning hook's own frame left
    out), else the frame the warning names."""
    for frame in reversed(traceback.extract_stack()[:-2]):
        path = Path(frame.filename).resolve()
        if REPO in path.parents:
            return f"{path.relative_to(REPO)}:{frame.lineno}"
    return f"{Path(filename).parent.name}/{Path(filename).name}:{lineno}"


def matmul_shapes(profile: Profile, rows: int) -> dict[str, tuple[int, int, int]]:
    """(m, k, n) of the model's matrix products for `rows` positions: the fused QKV projection, the
    attention's output projection, the feed-forward's two and the vocabulary projection."""
    c = profile.model_config()
    return {
        "qkv": (rows, c.d_model, 3 * c.d_model),
        "attention output": (rows, c.d_model, c.d_model),
        "feed-forward in": (rows, c.d_model, c.d_ff),
        "feed-forward out": (rows, c.d_ff, c.d_model),
        "vocabulary": (rows, c.d_model, profile.vocab_size),
    }


def matmul_peak(shapes: dict, device: torch.device, precision: str, repeats: int) -> dict:
    """GFLOP/s of a plain `F.linear` at each shape, its operands in `precision`'s dtype (fp32, or
    bf16/fp16 tensors: what autocast hands the kernels), in this process on its threads; the best
    of them is the peak the step is measured against."""
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[
        precision
    ]
    g = torch.Generator().manual_seed(0)
    fns = {}
    for name, (m, k, n) in shapes.items():
        x = torch.randn(m, k, generator=g).to(device, dtype)
        w = torch.randn(n, k, generator=g).to(device, dtype)
        fns[name] = functools.partial(torch.nn.functional.linear, x, w)
    times = interleaved(fns, repeats, 1, device)
    gflops = {
        name: 2 * m * k * n / times[name]["median_s"] / 1e9
        for name, (m, k, n) in shapes.items()
    }
    return {
        "shapes": {name: list(s) for name, s in shapes.items()},
        "gflops_per_s": gflops,
        "peak_gflops_per_s": max(gflops.values()),
    }


def profile_all(
    profile, trainers: dict, batches, facts, training, steps: int, device
) -> dict:
    """Time by kind of every timed trainer, the matmul peak of each precision beside it."""
    rows = max(r * width for r, width in facts["batch_shapes_rows_by_target_length"])
    shapes = matmul_shapes(profile, rows)
    peaks = {p: matmul_peak(shapes, device, p, 5) for p in {p for p, _ in trainers}}
    out = {"matmul_peak": peaks, "runs": {}}
    for (precision, name), trainer in trainers.items():
        timed = training[precision]["variants"][name]
        if "error" in timed:
            continue
        record = profiled(name, trainer, batches, steps)
        peak = peaks[precision]["peak_gflops_per_s"]
        record["gflops_per_s"] = timed["gflops_per_s"]
        record["share_of_matmul_peak"] = timed["gflops_per_s"] / peak
        matmul_ms = record["by_kind_ms_per_step"]["matmul"]
        per_step = facts["flops_per_round"] / len(batches)
        record["matmul_gflops_per_s"] = per_step / matmul_ms / 1e6 if matmul_ms else None
        if device.type == "cuda":
            record["device_busy_share"] = (
                1
                - record["by_kind_ms_per_step"]["batching and host"]
                / record["profiled_wall_ms_per_step"]
            )
            record["host_syncs"] = host_syncs(trainer, batches[0])
        out["runs"][f"{precision} {name}"] = record
        log(
            f"profiled {precision} {name}: {record['profiled_wall_ms_per_step']:.1f} ms a step, "
            f"{record['share_of_matmul_peak']:.0%} of the matmul peak"
        )
    return out


def markdown(record: dict) -> str:
    """The profile as one table: time by kind per profiled run, then FLOPs against the peak."""
    prof, training = record["profiler"], record["training"]
    runs = prof["runs"]
    heads = list(runs)
    n = len(training["batch_shapes_rows_by_target_length"])  # steps a round
    metric = next(iter(runs.values()))["metric"]
    lines = [
        f"# Where the training step's time goes: {record['profile']}, "
        f"{record['device']['name']}, threads {record['threads']}",
        "",
        f"Target tokens a step: {training['target_tokens_per_round'] // n:,}; "
        f"{training['flops_per_round'] / n / 1e9:,.2f} GFLOP a step (`model.flops`, matrix "
        f"products only). Time per step under the profiler ({metric}), ms and share:",
        "",
        "| kind | " + " | ".join(heads) + " |",
        "|---|" + "---:|" * len(heads),
    ]
    for kind in KINDS:
        cells = [
            f"{r['by_kind_ms_per_step'][kind]:.3f} ({r['by_kind_percent'][kind]:.1f}%)"
            for r in runs.values()
        ]
        lines.append(f"| {kind} | " + " | ".join(cells) + " |")
    lines.append(
        "| total (profiled wall) | "
        + " | ".join(f"{r['total_ms_per_step']:.3f}" for r in runs.values())
        + " |"
    )
    lines += [
        "",
        "| against the peak | " + " | ".join(heads) + " |",
        "|---|" + "---:|" * len(heads),
    ]
    for label, cell in (
        (
            "wall per step, unprofiled (ms)",
            lambda p, n, r: f"{1e3 * training[p]['variants'][n]['per_step_s']:.3f}",
        ),
        ("step GFLOP/s", lambda p, n, r: f"{r['gflops_per_s']:,.1f}"),
        (
            "plain matmul peak GFLOP/s",
            lambda p, n, r: f"{prof['matmul_peak'][p]['peak_gflops_per_s']:,.1f}",
        ),
        ("step's share of the peak", lambda p, n, r: f"{r['share_of_matmul_peak']:.1%}"),
        (
            "step GFLOP over the matmul time, per s",
            lambda p, n, r: (
                ""
                if r["matmul_gflops_per_s"] is None
                else f"{r['matmul_gflops_per_s']:,.1f}"
            ),
        ),
    ):
        cells = [cell(*key.split(" ", 1), r) for key, r in runs.items()]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    for key, r in runs.items():
        if "device_busy_share" in r:
            syncs = r["host_syncs"]
            lines.append(
                f"\n{key}: kernels busy {r['device_busy_share']:.0%} of a profiled step; "
                f"{r['host_launch_ms_per_step']:.3f} ms in {r['launches_per_step']:.0f} launch "
                f"calls; host synchronisations {syncs['per_step']} "
                f"({', '.join(f'{w} ({n})' for w, n in syncs['where'].items()) or 'none'})"
            )
    for key, r in runs.items():
        lines += [
            "",
            f"| top op, {key} | kind | ms per step | share | calls |",
            "|---|---|---:|---:|---:|",
        ]
        for row in r["top_ops"][:10]:
            name = row["name"] if len(row["name"]) <= 60 else row["name"][:57] + "..."
            lines.append(
                f"| `{name}` | {row['kind']} | {row['ms_per_step']:.3f} | {row['percent']:.1f}% "
                f"| {row['calls_per_step']:g} |"
            )
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------- decoding
DECODERS = (
    "recompute",
    "eager_cache",
    "eager_cache_checked_every_step",
    "static_cache",
    "compiled_step",
)


def decoding_model(profile: Profile, eos_bias: float, seed: int = 0) -> Transformer:
    """The profile's model with random weights and a bias on end-of-sentence, so outputs end at about
    caption length as a trained model's do (bench_beam.py: 3.2 gives ~15 tokens at the cpu shape)."""
    torch.manual_seed(seed)
    config = profile.model_config().replace(dropout=0.0)
    return eos_biased(
        Transformer(config, profile.vocab_size, profile.vocab_size).eval(), eos_bias
    )


@contextlib.contextmanager
def counting_decoder_rows(model: Transformer):
    """Count the decoder's steps and the rows it computes while the block runs."""
    work = {"steps": 0, "rows": 0}
    method = model.decode

    def decode(tgt_in, *args, **kwargs):
        work["steps"] += 1
        work["rows"] += tgt_in.size(0)
        return method(tgt_in, *args, **kwargs)

    model.decode = decode
    try:
        yield work
    finally:
        del model.decode


def _as_translate_runs(device, precision: str, fn):
    """`fn` as the package's translation runs it: the eager decoders meet a new key length every
    step (and a static decoder is built per batch shape), so on a GPU without cuDNN's attention
    (runtime.attention_kernels), in the decoding's autocast."""
    with attention_kernels.allow_cudnn_attention(False):
        with attention_kernels.for_varying_shapes(device):
            with autocast_context(device, precision):
                return fn()


def _rows_alike(a: torch.Tensor, b: torch.Tensor, pad_id: int) -> float:
    """The share of rows whose tokens are the same in `a` and `b` (padded to one width)."""
    width = max(a.size(1), b.size(1))
    a = torch.nn.functional.pad(a, (0, width - a.size(1)), value=pad_id)
    b = torch.nn.functional.pad(b, (0, width - b.size(1)), value=pad_id)
    return float((a == b).all(dim=1).float().mean())


def bench_decoding(
    profile: Profile,
    device: torch.device,
    *,
    search: str,
    batch: int,
    src_len: int,
    max_new: int,
    rounds: int,
    decoders=DECODERS,
    precision: str = "fp32",
    quick: bool = False,
    eos_bias: float = 3.2,
) -> dict:
    """One search ("greedy", or beam search of the profile's beam and alpha with an allowance of
    `max_new`) by each of `decoders` on the same sources, in `precision`: recomputation
    (`use_cache=False`), the eager KV cache (greedy also asking every step whether all rows have
    finished), the static cache (its step a CUDA graph on a GPU), and the eager cache with the
    per-step decoder (`Transformer.decode`) compiled. The eager cache is the reference (always run);
    in fp32 all must give its tokens, in bf16 or fp16 the share of rows alike is recorded."""
    model = decoding_model(profile, eos_bias).to(device)
    src = sources(batch, src_len, profile.vocab_size).to(device)
    if search == "greedy":
        decode = functools.partial(greedy_decode, src=src, max_new_tokens=max_new)
        beam = {}
    else:
        beam = dict(
            beam_size=profile.beam_size,
            alpha=profile.length_penalty_alpha,
            max_len_a=0.0,
            max_len_b=max_new,
        )
        decode = functools.partial(beam_search, src=src, **beam)
    wanted = [d for d in DECODERS if d in {"eager_cache", *decoders}]
    if search == "beam" and "eager_cache_checked_every_step" in wanted:
        wanted.remove("eager_cache_checked_every_step")  # greedy's alone
    runs, built, first = {}, {}, {}
    for name in wanted:
        started = time.perf_counter()
        if name == "recompute":
            runs[name] = lambda: decode(model, use_cache=False)
        elif name == "eager_cache":
            runs[name] = lambda: decode(model)
        elif name == "eager_cache_checked_every_step":
            runs[name] = lambda: decode(model, check_every=1)
        elif name == "static_cache":
            static = _as_translate_runs(
                device,
                "fp32",
                lambda: (StaticGreedyDecoder(model, batch, src_len, max_new, precision=precision)
                         if search == "greedy"
                         else StaticBeamDecoder(model, batch, src_len, **beam, precision=precision)),
            )  # fmt: skip
            built["static_graphed"] = static.graphed
            runs[name] = functools.partial(static, src)
        else:  # compiled_step: an instance attribute shadows the method the searches call
            torch._dynamo.reset()
            compiled = copy.deepcopy(model)
            options = {"backend": "eager"} if quick else {}
            compiled.decode = torch.compile(compiled.decode, **options)
            runs[name] = lambda: decode(compiled)
        built[f"{name}_build_s"] = time.perf_counter() - started
    outputs, errors = {}, {}
    for name, run in runs.items():
        started = time.perf_counter()
        try:
            if name == "eager_cache":
                with counting_decoder_rows(model) as work:
                    outputs[name] = _as_translate_runs(device, precision, run)
            else:
                outputs[name] = _as_translate_runs(device, precision, run)
        except Exception as error:  # noqa: BLE001 (a compiler failure is a result here)
            errors[name] = _error(error)
            log(f"  {search} {name}: failed: {errors[name]}")
        first[name] = time.perf_counter() - started
    runs = {n: functools.partial(_as_translate_runs, device, precision, r)
            for n, r in runs.items() if n not in errors}  # fmt: skip
    reference = outputs["eager_cache"]
    pad = model.config.pad_id
    generated = int((reference[:, 1:] != pad).sum())
    times = interleaved(runs, rounds, 1, device)
    recompute_s = times["recompute"]["median_s"] if "recompute" in times else None
    eager_s = times["eager_cache"]["median_s"]
    row_sources = batch
    out = {
        "search": search,
        "precision": precision,
        "beam_size": profile.beam_size if search == "beam" else 1,
        "batch": batch,
        "src_len": src_len,
        "max_new_tokens": max_new,
        "output_width": int(reference.size(1)),
        "generated_tokens": generated,
        # what the eager cache's decoder computed: steps, and rows (hypotheses) summed over steps
        "decoder_steps": work["steps"],
        "decoder_rows": work["rows"],
        "same_tokens": all(torch.equal(reference, o) for o in outputs.values()),
        "rows_alike_eager_cache": {
            n: _rows_alike(reference, o, pad) for n, o in outputs.items()
        },
        **built,
        "decoders": {
            name: {
                **t,
                "tokens_per_s": generated / t["median_s"],
                "sentences_per_s": row_sources / t["median_s"],
                "decoder_rows_per_s": work["rows"] / t["median_s"],
                "speed_over_recompute": recompute_s / t["median_s"]
                if recompute_s
                else None,
                "speed_over_eager_cache": eager_s / t["median_s"],
                "host_cpu_over_wall": t["median_process_cpu_s"] / t["median_s"],
                "first_call_s": first[name],
                "compile_s": max(0.0, first[name] - t["median_s"])
                if name == "compiled_step"
                else None,
            }
            for name, t in times.items()
        },
        "errors": errors,
    }
    log(
        f"{search} decoding, batch {batch}: "
        + ", ".join(
            f"{n} {v['speed_over_eager_cache']:.2f}x" for n, v in out["decoders"].items()
        )
        + f" the eager cache; same tokens: {out['same_tokens']}"
    )
    return out


# ---------------------------------------------------------------------------------- threads
# Each a fresh process. KMP_* are read by Intel's OpenMP runtime only: with GNU libgomp (what the
# PyPI CPU wheels load; `openmp_runtime` in the record) they should change nothing, which the run shows.
THREAD_SETTINGS = [
    {"name": "default"},
    {"name": "set_num_threads(1)", "threads": 1},
    {"name": "set_num_threads(2), interop 1", "threads": 2, "interop": 1},
    {"name": "OMP_WAIT_POLICY=PASSIVE", "env": {"OMP_WAIT_POLICY": "PASSIVE"}},
    {
        "name": "KMP_BLOCKTIME=0 KMP_AFFINITY=granularity=fine,compact,1,0",
        "env": {"KMP_BLOCKTIME": "0", "KMP_AFFINITY": "granularity=fine,compact,1,0"},
    },
    {"name": "default (again)"},
]
QUICK_THREAD_SETTINGS = THREAD_SETTINGS[:2]


def openmp_runtime() -> str:
    """Which OpenMP runtime this process loaded (libgomp, libiomp5, libomp), from its memory map."""
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return "unknown"
    found = sorted(
        {name for name in ("libgomp", "libiomp5", "libomp.so") if name in maps}
    )
    return ", ".join(found) or "none found"


def bench_threads(args, settings: list[dict]) -> dict:
    """The eager fp32 step and greedy decoding (the eager cache), this script in a fresh process
    per setting, one after another."""
    rows = []
    for setting in settings:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "child.json"
            command = [sys.executable, str(Path(__file__).resolve()), "--profile", args.profile, "--precision",
                       "fp32", "--variants", "eager", "--rounds", str(args.thread_rounds),
                       "--batches", str(args.batches), "--decode", "greedy", "--decoders",
                       "eager_cache", "--decode-batch", str(args.thread_decode_batch),
                       "--decode-src-len", str(args.decode_src_len), "--out", str(out)]  # fmt: skip
            for flag in ("threads", "interop"):
                if setting.get(flag):
                    command += [f"--{flag}", str(setting[flag])]
            command += ["--quick"] if args.quick else []
            command += ["--real-data"] if args.real_data else []
            started = time.perf_counter()
            log_path = Path(tmp) / "child.log"
            returncode, _ = run_fresh(command, setting.get("env", {}), log_path)
            if returncode != 0:
                rows.append(
                    {"name": setting["name"], "error": log_path.read_text()[-600:]}
                )
                log(f"threads {setting['name']}: failed")
                continue
            child = json.loads(out.read_text())
        [greedy] = child["decoding"]
        row = {
            "name": setting["name"],
            "env": setting.get("env", {}),
            "threads": child["threads"],
            "interop_threads": child["interop_threads"],
            "openmp_runtime": child["openmp_runtime"],
            "training": {"fp32": child["training"]["fp32"]["variants"]["eager"]},
            "greedy": greedy["decoders"]["eager_cache"],
            "wall_s": time.perf_counter() - started,
        }
        rows.append(row)
        log(
            f"threads {setting['name']}: {row['threads']} threads, {row['interop_threads']} "
            f"interop: train {row['training']['fp32']['target_tokens_per_s']:,.0f} tok/s; "
            f"greedy {row['greedy']['tokens_per_s']:,.0f} tok/s"
        )
    default = next((r for r in rows if r["name"] == "default" and "error" not in r), None)
    for row in rows:
        if default is not None and "error" not in row:
            row["training_speed_over_default"] = {
                "fp32": default["training"]["fp32"]["median_s"]
                / row["training"]["fp32"]["median_s"]
            }
            row["greedy_speed_over_default"] = (
                default["greedy"]["median_s"] / row["greedy"]["median_s"]
            )
    return {
        "note": "one fresh process per setting, run one after another (not interleaved): "
        "compare a setting with the default runs that bracket it",
        "settings": rows,
    }


# ---------------------------------------------------------------------------------- main
def default_precisions(device: torch.device) -> list[str]:
    """fp32, and bf16 where it runs natively: a GPU, or a CPU with AVX512-BF16 or AMX."""
    native = device.type == "cuda" or cpu_has_bf16_instructions()
    return ["fp32", "bf16"] if native else ["fp32"]


def machine(device: torch.device) -> dict:
    """The device, the CPU and the threading this process runs with."""
    return {
        "device": {
            "type": device.type,
            "name": torch.cuda.get_device_name(device)
            if device.type == "cuda"
            else "cpu",
        },
        "cpu": {
            "name": cpu_name(),
            "flags": sorted(cpu_flags()),
            "has_bf16_instructions": cpu_has_bf16_instructions(),
            "bf16_native_here": cpu_supports_bf16(),
            "capability": str(torch.backends.cpu.get_cpu_capability()),
            "logical_cpus": os.cpu_count(),
        },
        "threads": torch.get_num_threads(),
        "interop_threads": torch.get_num_interop_threads(),
        "openmp_runtime": openmp_runtime(),
        "env": {
            k: os.environ.get(k)
            for k in (
                "OMP_NUM_THREADS",
                "MKL_NUM_THREADS",
                "KMP_AFFINITY",
                "OMP_PROC_BIND",
                # the kernel paths, when a run pins them below what the CPU has
                "ATEN_CPU_CAPABILITY",
                "ONEDNN_MAX_CPU_ISA",
                "MKL_ENABLE_INSTRUCTIONS",
            )
        },
    }


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add = parser.add_argument
    # fmt: off
    add("--profile", default=None, help="default: smoke with --quick, else cpu")
    add("--device", default="cpu", choices=["cpu", "cuda"])
    add("--precision", nargs="+", choices=["fp32", "bf16", "fp16"], default=None,
        help="default: fp32, and bf16 where it is native (a GPU, AVX512-BF16 or AMX)")
    add("--variants", nargs="*", choices=list(VARIANTS), default=["eager"],
        help="training variants to time (eager, the reference, always); none: no training")
    add("--batch-tokens", type=int, default=None)
    add("--batches", type=int, default=1, help="global batches of distinct shapes a round")
    add("--real-data", action="store_true",
        help="the profile's own training pairs (its corpus and BPE, AT_DATA_DIR), not synthetic")
    add("--rounds", type=int, default=None, help="timed rounds (default 10; --quick 2)")
    add("--warmup", type=int, default=1, help="rounds before timing (the first compiles)")
    add("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's)")
    add("--interop", type=int, default=None, help="torch.set_num_interop_threads")
    add("--profiler", action="store_true",
        help="each timed trainer under torch.profiler: time by kind, the matmul peak")
    add("--profiler-steps", type=int, default=5)
    add("--decode", nargs="*", choices=["greedy", "beam"], default=[])
    add("--decoders", nargs="+", choices=DECODERS, default=list(DECODERS[:4]))
    add("--decode-batch", type=int, nargs="+", default=None,
        help="sources per decoding batch, one timing each (default: 1 and 64; --quick: 4)")
    add("--decode-src-len", type=int, default=None, help="default 25; --quick 8")
    add("--decode-max-new", type=int, default=None, help="default 100; --quick 12")
    add("--decode-precision", default="fp32", choices=["fp32", "bf16", "fp16"],
        help="the autocast decoding runs in (translate's on a GPU: bf16)")
    add("--thread-settings", action="store_true",
        help="the eager step and greedy decoding in a fresh process per thread setting")
    add("--thread-rounds", type=int, default=2)
    add("--thread-decode-batch", type=int, default=8)
    add("--quick", action="store_true")
    add("--out", required=True)
    # fmt: on
    args = parser.parse_args(argv)
    args.profile = args.profile or ("smoke" if args.quick else "cpu")
    args.rounds = args.rounds or (2 if args.quick else 10)
    args.decode_src_len = args.decode_src_len or (8 if args.quick else 25)
    args.decode_max_new = args.decode_max_new or (12 if args.quick else 100)
    if args.variants and "eager" not in args.variants:
        args.variants.insert(0, "eager")
    if args.profiler and not args.variants:
        parser.error("--profiler profiles the timed variants: name at least eager")
    if args.quick:
        args.thread_rounds, args.thread_decode_batch = 1, 1
    return args


def main(argv: list[str] | None = None) -> dict:
    args = parse(argv)
    if args.interop:
        torch.set_num_interop_threads(args.interop)  # before any parallel work
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    profile = get_profile(args.profile)
    config = profile.model_config()
    started = time.perf_counter()
    record: dict = {
        "benchmark": "the trainer's step and decoding, variant against variant",
        "quick": args.quick,
        "profile": profile.name,
        "arguments": sys.argv[1:] if argv is None else list(argv),
        "model": {
            "d_model": config.d_model,
            "d_ff": config.d_ff,
            "layers": config.n_layers,
            "heads": config.n_heads,
            "vocab": profile.vocab_size,
            "dropout": config.dropout,
        },
        **machine(device),
        "compile_backend": "eager" if args.quick else "inductor",
        "inductor_cache_dir": os.environ["TORCHINDUCTOR_CACHE_DIR"],
        "provenance": provenance(device),
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)

    def save() -> None:
        """The record as it stands, written whole: a run cut short keeps the parts it finished."""
        record["total_s"] = time.perf_counter() - started
        write_json(out, record)

    # decoding first: it compiles least, so it is done before the compiles can use up the time
    if args.decode:
        record["decoding"] = []
        for search in args.decode:
            for batch in args.decode_batch or ([4] if args.quick else [1, 64]):
                record["decoding"].append(
                    bench_decoding(
                        profile,
                        device,
                        search=search,
                        batch=batch,
                        src_len=args.decode_src_len,
                        max_new=args.decode_max_new,
                        rounds=args.rounds,
                        decoders=args.decoders,
                        precision=args.decode_precision,
                        quick=args.quick,
                    )
                )
                save()
    if args.variants:
        torch._dynamo.reset()
        precisions = args.precision or default_precisions(device)
        data = prepare_data(profile).train if args.real_data else None
        real = data is not None
        record["data"] = f"{profile.corpus} training pairs" if real else "synthetic pairs"
        trainers = {
            (p, name): make_trainer(
                profile, device, p, VARIANTS[name], batch_tokens=args.batch_tokens,
                quick=args.quick, data=data,
            )
            for p in precisions
            for name in args.variants
        }  # fmt: skip
        reference = trainers[precisions[0], "eager"]
        batches = first_batches(reference, args.batches)
        facts = batch_facts(profile, reference, batches)
        facts["time_budget_s"] = 60.0 * (profile.time_budget_minutes or 0) or None
        log(f"training: {profile.name}, {len(trainers)} trainers, {args.rounds} rounds")
        by_precision = bench_training(
            trainers, batches, facts, args.rounds, args.warmup, device
        )
        record["training"] = {
            **facts,
            "batch_tokens": reference.settings.batch_tokens,
            "buckets": list(LengthBuckets.doubling(config.max_len + 1).sizes),
            "rounds": args.rounds,
            "warmup_rounds": args.warmup,
            **by_precision,
            "precision_choice": precision_choice(by_precision, device, profile),
        }
        save()
        if args.profiler:
            record["profiler"] = profile_all(
                profile,
                trainers,
                batches,
                facts,
                by_precision,
                args.profiler_steps,
                device,
            )
            save()
            atomic_write_text(out.with_suffix(".md"), markdown(record))
            print(markdown(record))
    if args.thread_settings:
        settings = QUICK_THREAD_SETTINGS if args.quick else THREAD_SETTINGS
        record["threads_settings"] = bench_threads(args, settings)
    save()
    log(f"wrote {out} after {record['total_s']:.0f} s")
    return record


if __name__ == "__main__":
    main()

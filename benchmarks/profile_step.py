"""Where a training step's time goes: the trainer's own step under torch.profiler.

    python benchmarks/profile_step.py --profile smoke --steps 2 --out /tmp/p.json          # CPU, seconds
    python benchmarks/profile_step.py --device cuda --profile paper --precision bf16 --compile \\
        --batch-tokens 24576 --out results/gpu/profile_step_compiled.json                   # the GPU run

The step is `Trainer.train_step` (forward, label-smoothed loss, backward, fused Adam, schedule) on one
global batch of synthetic pairs with Multi30k's lengths (`bench_precision.synthetic_pairs`, as
bench_compile.py builds them), the same batch every step. First `--warmup` steps (compiling, Adam's
state), then `--steps` timed steps without the profiler (wall and process CPU time per step: on a CPU,
when the host's CPU time equals the wall time, the host sets the pace; on a GPU it cannot tell, since
waiting for the device spins a core and counts as CPU time), then the same steps under the profiler.
On a GPU the record's `device_busy_share` says who sets the pace instead: the kernels' time per
step over an unprofiled step's wall time, near 1 when the GPU is never idle. One more step runs
under CUDA's sync debug mode: `host_syncs` counts the calls that made the host wait for the GPU,
each at the line of this repository's code that led to it.

What the profiler sees is sorted into kinds by `classify` (matmul, attention, softmax/cross-entropy,
optimizer, elementwise/other): on a GPU the device's own events alone (kernels, copies, memsets), each
once (`time_by_kind`), on a CPU the operators' self CPU time. The kinds add up to the profiled total; the record also holds
the top operators, and on a GPU the host time spent in kernel-launch calls. Writes the JSON (`--out`)
and a markdown table beside it (same name, .md).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
import traceback
import warnings
from collections import Counter
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO))

from bench_model import provenance  # noqa: E402
from bench_precision import _NoTokenizer, synthetic_pairs  # noqa: E402

from annotated_transformer.data.batching import LengthBuckets, TokenBatcher  # noqa: E402
from annotated_transformer.profiles import Profile, get_profile  # noqa: E402
from annotated_transformer.runtime.distributed import DistributedContext  # noqa: E402
from annotated_transformer.runtime.files import atomic_write_text  # noqa: E402
from annotated_transformer.training.compile_probe import compiled_step_parts  # noqa: E402
from annotated_transformer.training.execution import StepExecution  # noqa: E402
from annotated_transformer.training.fit import build_model  # noqa: E402
from annotated_transformer.training.trainer import Trainer  # noqa: E402

KINDS = ("matmul", "attention", "softmax/cross-entropy", "optimizer", "elementwise/other")

_OPTIMIZER = re.compile(r"adam|optimizer\.step|multi_tensor_apply|_foreach_|fused_adam")
_ATTENTION = re.compile(
    r"scaled_dot_product|flash|fmha|efficient_attention|attention|sdpa|_attn"
)
# The loss's exp and log passes over the logits: aten's operators on a CPU, their kernels on a GPU
# (`exp_kernel_cuda`, `log_kernel_cuda`); the max and sum reductions stay elementwise/other there
# (a reduction kernel's name does not say whose it is).
_SOFTMAX = re.compile(
    r"softmax|logsumexp|cross_entropy|nll_loss|label_smooth|^aten::(amax|exp_?|log_?)$"
    r"|\b(exp|log)_kernel_cuda"
)
_MATMUL = re.compile(
    r"gemm|cublas|cutlass|xmma|nvjet|mkldnn|onednn|triton_tem_fused_(mm|addmm|bmm)"
    r"|^aten::(mm|addmm|bmm|matmul|linear|_addmm_activation|baddbmm)$"
)


def classify(name: str) -> str:
    """The kind of an operator or kernel name (CPU aten ops, CUDA kernels, Triton kernels alike).

    Checked in this order, the first match wins: optimizer (Adam, foreach / multi-tensor kernels),
    attention (SDPA and its flash / memory-efficient kernels), softmax/cross-entropy (softmax,
    log-softmax, logsumexp, the loss's exp/log/amax), matmul (GEMM kernels and aten's products);
    everything else, from layer norm and dropout to casts and copies, is elementwise/other.
    """
    n = name.lower()
    if _OPTIMIZER.search(n):
        return "optimizer"
    if _ATTENTION.search(n):
        return "attention"
    if _SOFTMAX.search(n):
        return "softmax/cross-entropy"
    if _MATMUL.search(n):
        return "matmul"
    return "elementwise/other"


def make_trainer(
    profile: Profile,
    device: torch.device,
    precision: str,
    *,
    compile: bool = False,
    compile_options: dict | None = None,
    buckets: LengthBuckets | None = None,
    cuda_graphs: bool = False,
    batch_tokens: int | None = None,
    n_pairs: int = 2000,
    seed: int = 0,
) -> Trainer:
    """A trainer of `profile`'s model (seeded weights) on synthetic pairs, its step as `train --compile`
    runs it when `compile` (the model and the loss compiled, `compile_options` to torch.compile), with
    length `buckets` when given (collated to the batcher's padded shapes), and with `cuda_graphs`
    (buckets needed) its forward and backward graphed per shape as `train --cuda-graphs` runs it."""
    config = profile.model_config()
    model = build_model(config, profile.vocab_size, seed=seed).to(device)
    data = synthetic_pairs(n_pairs, profile.vocab_size)
    settings = profile.train_settings().replace(precision=precision, compile=False)
    if batch_tokens:
        settings = settings.replace(batch_tokens=batch_tokens)
    if cuda_graphs:
        if buckets is None:
            raise ValueError("cuda_graphs needs length buckets")
        settings = settings.replace(length_buckets=True, cuda_graphs=True)
    execution = StepExecution(
        precision=precision,
        precision_reason="asked (benchmark)",
        compiled=False,
        compile_reason="asked (benchmark)",
        real_rows_only=device.type == "cpu" and not compile,
    )
    trainer = Trainer(
        model,
        _NoTokenizer(),
        data,
        None,
        settings,
        tempfile.mkdtemp(prefix="profile_step_"),
        DistributedContext(device=device),
        execution=execution,
        show_progress=False,
    )
    if buckets is not None:
        trainer.batcher = TokenBatcher(
            data.src_lengths,
            data.tgt_lengths,
            settings.batch_tokens,
            seed=settings.seed,
            skip_too_long=True,
            buckets=buckets,
        )
    if compile:
        trainer.forward_model, trainer.loss_fn = compiled_step_parts(
            trainer.model, **(compile_options or {})
        )
    return trainer


def first_global_batch(trainer: Trainer) -> tuple[list[list[int]], int]:
    """The run's first global batch (from the unbucketed plan) and its target tokens (eos included)."""
    batcher = TokenBatcher(
        trainer.train_data.src_lengths,
        trainer.train_data.tgt_lengths,
        trainer.settings.batch_tokens,
        seed=trainer.settings.seed,
        skip_too_long=True,
    )
    batch = [batcher.epoch_batches(0)[0]]
    tokens = sum(int(trainer.train_data.tgt_lengths[j]) + 1 for b in batch for j in b)
    return batch, tokens


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed_steps(trainer: Trainer, batch, steps: int) -> dict:
    """Wall and process CPU seconds per step over `steps` steps, the device drained at both ends."""
    sync(trainer.device)
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(steps):
        trainer.train_step(batch)
    sync(trainer.device)
    return {
        "wall_s_per_step": (time.perf_counter() - wall) / steps,
        "host_cpu_s_per_step": (time.process_time() - cpu) / steps,
    }


def host_syncs(trainer: Trainer, batch) -> dict | None:
    """Where one step makes the host wait for the GPU (none should). CUDA's sync debug
    mode warns at the synchronising calls it knows (a value read back, a blocking copy; PyTorch
    says not every sync is covered), and each is counted at the innermost line of this repository's
    code on the stack: the trainer's line that called into torch, not torch's own. None on a CPU."""
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


LAUNCH_CALLS = (
    "cudaLaunchKernel",
    "cuLaunchKernel",
    "cudaGraphLaunch",
    "cudaMemcpyAsync",
)


def profiled(trainer: Trainer, batch, steps: int, top: int = 15) -> dict:
    """Time by kind per step under torch.profiler: device (kernel) time on a GPU, self CPU time on a CPU."""
    from torch.profiler import ProfilerActivity, profile

    device = trainer.device
    cuda = device.type == "cuda"
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=activities) as prof:
        for _ in range(steps):
            trainer.train_step(batch)
        sync(device)
    events = [e for e in prof.key_averages() if not e.key.startswith("ProfilerStep")]
    out = time_by_kind(events, cuda, steps, top)
    if cuda:
        launches = [e for e in events if e.key in LAUNCH_CALLS]
        out["host_launch_ms_per_step"] = (
            sum(e.self_cpu_time_total for e in launches) / 1e3 / steps
        )
        out["launches_per_step"] = sum(e.count for e in launches) / steps
    return out


def time_by_kind(events, cuda: bool, steps: int, top: int = 15) -> dict:
    """The profiler's averaged events (`key_averages()`) as time by kind per step.

    On a GPU only the device's own events count (`device_type` CUDA: kernels, memcpy, memset),
    by their device time; not the device-side copies of `record_function` ranges
    (`is_user_annotation`, such as `Optimizer.step#Adam.step`), whose time spans the kernels
    inside them. A CPU operator such as `aten::mm` also carries, as its self device
    time, the time of the kernels it launched, so summing operators and kernels together would
    count every kernel twice (a first H100 trace summed 128.6 ms of "device time" in a 70.7 ms
    step). On a CPU the operators' self CPU time, which excludes their children, adds up."""
    if cuda:
        from torch.autograd import DeviceType

        metric = "self_device_time_total"
        events = [
            e
            for e in events
            if e.device_type == DeviceType.CUDA
            and not getattr(e, "is_user_annotation", False)
        ]
        if not events:  # a profiler that saw no kernels would report a step of 0 ms
            raise SystemExit(
                "profile_step: the profiler recorded no GPU kernel (is CUPTI available to "
                "torch.profiler here?); no time by kind to report"
            )
    else:
        metric = "self_cpu_time_total"
    by_kind = {kind: 0.0 for kind in KINDS}
    rows = []
    for e in events:
        us = float(getattr(e, metric))
        if us <= 0:
            continue
        kind = classify(e.key)
        by_kind[kind] += us
        rows.append((us, e.key, kind, e.count))
    total = sum(by_kind.values())
    rows.sort(reverse=True)
    return {
        "metric": metric,
        "profiled_steps": steps,
        "total_ms_per_step": total / 1e3 / steps,
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
            for us, name, kind, count in rows[:top]
        ],
    }


def markdown(record: dict) -> str:
    """The short table the issue asks for: totals, then time by kind, then the top operators."""
    p, t = record["profile"], record["timing"]
    s = record["setting"]
    where = (
        "device (kernel) time"
        if p["metric"].startswith("self_device")
        else "self CPU time"
    )
    lines = [
        f"# Training step profile: {s['profile']}, {s['precision']}, "
        f"{'compiled' if s['compile'] else 'eager'}{', bucketed' if s['buckets'] else ''}"
        f"{', CUDA graphs' if s.get('cuda_graphs') else ''}, "
        f"{record['device']['name']}",
        "",
        f"- target tokens per step: {record['target_tokens']:,}",
        f"- wall per step: {1e3 * t['wall_s_per_step']:.3f} ms; host CPU per step: "
        f"{1e3 * t['host_cpu_s_per_step']:.3f} ms (unprofiled, {t['steps']} steps)",
        f"- profiled {where} per step: {p['total_ms_per_step']:.3f} ms",
    ]
    if "device_busy_share" in p:
        lines.append(
            f"- kernels busy {p['device_busy_share']:.0%} of an unprofiled step's wall time"
        )
    if "host_launch_ms_per_step" in p:
        lines.append(
            f"- host time in launch calls per step: {p['host_launch_ms_per_step']:.3f} ms "
            f"({p['launches_per_step']:.0f} calls)"
        )
    syncs = record.get("host_syncs")
    if syncs is not None:
        where = ", ".join(f"{line} ({n})" for line, n in syncs["where"].items()) or "none"
        lines.append(f"- host synchronisations in a step: {syncs['per_step']} ({where})")
    lines += ["", "| kind | ms per step | share |", "|---|---:|---:|"]
    for kind in KINDS:
        lines.append(
            f"| {kind} | {p['by_kind_ms_per_step'][kind]:.3f} | {p['by_kind_percent'][kind]:.1f}% |"
        )
    lines.append(f"| total | {p['total_ms_per_step']:.3f} | 100.0% |")
    lines += [
        "",
        "| top op | kind | ms per step | share | calls |",
        "|---|---|---:|---:|---:|",
    ]
    for row in p["top_ops"][:10]:
        name = row["name"] if len(row["name"]) <= 60 else row["name"][:57] + "..."
        lines.append(
            f"| `{name}` | {row['kind']} | {row['ms_per_step']:.3f} | {row['percent']:.1f}% "
            f"| {row['calls_per_step']:g} |"
        )
    return "\n".join(lines) + "\n"


def say(line: str) -> None:
    """A progress line at once: a run cut short by its time limit still says where it stopped."""
    print(f"[profile_step] {line}", flush=True)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="smoke")
    parser.add_argument("--precision", default="fp32", choices=["fp32", "bf16", "fp16"])
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--compile", action="store_true", help="model and loss compiled")
    parser.add_argument(
        "--mode",
        default=None,
        help="torch.compile mode, e.g. reduce-overhead (with --compile)",
    )
    parser.add_argument(
        "--buckets",
        action="store_true",
        help="pad lengths to LengthBuckets.doubling(max_len)",
    )
    parser.add_argument(
        "--cuda-graphs",
        action="store_true",
        help="the eager step's forward and backward as CUDA graphs (train --cuda-graphs; "
        "with --buckets, without --compile)",
    )
    parser.add_argument("--batch-tokens", type=int, default=None)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    if args.cuda_graphs and (args.compile or not args.buckets):
        parser.error("--cuda-graphs needs --buckets and no --compile")
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    profile = get_profile(args.profile)
    options = {"mode": args.mode} if args.mode else {}
    buckets = (
        LengthBuckets.doubling(profile.model_config().max_len + 1)
        if args.buckets
        else None
    )
    trainer = make_trainer(
        profile,
        device,
        args.precision,
        compile=args.compile,
        compile_options=options,
        buckets=buckets,
        cuda_graphs=args.cuda_graphs,
        batch_tokens=args.batch_tokens,
    )
    batch, tokens = first_global_batch(trainer)
    say(
        f"{args.profile} on {device}, {args.precision}, compile {args.compile}: warming up"
    )
    started = time.perf_counter()
    for _ in range(args.warmup):
        trainer.train_step(batch)
    sync(device)
    warmup_s = time.perf_counter() - started
    say(
        f"{args.warmup} warm-up steps in {warmup_s:.1f} s ({tokens:,} target tokens a step)"
    )
    timing = {**timed_steps(trainer, batch, args.steps), "steps": args.steps}
    timing["target_tokens_per_s"] = tokens / timing["wall_s_per_step"]
    say(f"{args.steps} timed steps: {1e3 * timing['wall_s_per_step']:.2f} ms a step")
    profile_record = profiled(trainer, batch, args.steps)
    syncs = host_syncs(trainer, batch)
    if syncs is not None:
        say(f"host synchronisations in a step: {syncs['per_step']} {syncs['where']}")
    if device.type == "cuda":
        wall_ms = 1e3 * timing["wall_s_per_step"]
        profile_record["device_busy_share"] = (
            profile_record["total_ms_per_step"] / wall_ms
        )
    record = {
        "setting": {
            "profile": args.profile,
            "precision": args.precision,
            "compile": args.compile,
            "compile_mode": args.mode,
            "buckets": list(buckets.sizes) if buckets else None,
            "cuda_graphs": args.cuda_graphs,
            "batch_tokens": trainer.settings.batch_tokens,
            "warmup_steps": args.warmup,
        },
        "device": {
            "type": device.type,
            "name": torch.cuda.get_device_name(device)
            if device.type == "cuda"
            else "cpu",
        },
        "target_tokens": tokens,
        "warmup_s": warmup_s,
        "timing": timing,
        "host_syncs": syncs,
        "profile": profile_record,
        "provenance": provenance(device),
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    # each file whole or not at all: a run killed mid-write leaves the previous record
    atomic_write_text(out, json.dumps(record, indent=2) + "\n")
    atomic_write_text(out.with_suffix(".md"), markdown(record))
    print(markdown(record))
    return record


if __name__ == "__main__":
    main()

"""The training step and decoding at the hardware's pace: each change alone.

    python benchmarks/bench_gpu_step.py --device cuda --profile paper --precision bf16 \\
        --batch-tokens 24576 --out results/gpu/speed_step.json      # on a GPU (speed.sh runs it in parts)
    python benchmarks/bench_gpu_step.py --quick --out /tmp/s.json    # CPU, the plumbing: what the test runs

Training: the trainer's own step (`Trainer.train_step`, built as profile_step.make_trainer builds it) on
one global batch of synthetic pairs, the same batch for every variant, each variant a trainer with the
same initial weights, all in one process, interleaved within every repeat:

- eager: the trainer's step as a run without --compile takes it (cuDNN's attention left out, as
  `runtime.attention_kernels` does for varying shapes);
- eager_cudnn_attention: the same with cuDNN's attention allowed, in torch's order: what leaving it
  out costs or saves once the plan for this batch's shape is built (the warm-up builds it);
- eager_row_blocks_loss: the eager step with the loss walking the logits as it does on a CPU
  (`training.loss`'s "row_blocks": the arithmetic of the eager GPU step's loss before
  "softmax_kernels", now in blocks of 2^28 logits as theirs): what the strategy is worth in the step;
- eager_bucketed, eager_bucketed_cudnn_attention: the eager step with lengths padded to the buckets
  below (`train --length-buckets` without --compile), without and with cuDNN's attention: with a
  few fixed shapes cuDNN builds its plans once per bucket, so whether it pays there is a question of
  its own;
- eager_bucketed_graphed: the bucketed eager step with its forward and backward captured as CUDA
  graphs for the batch's shape and replayed (`train --length-buckets --cuda-graphs`), no compiler;
- compiled: the model and the loss compiled, as `train --compile` (default mode);
- compiled_bucketed: the same with lengths padded to `LengthBuckets.doubling(max_len + 1)` (the
  change alone: a few more padded positions, a fixed shape);
- compiled_bucketed_reduce_overhead: and torch.compile(mode="reduce-overhead"), which captures the
  compiled graphs as CUDA graphs on a GPU (on a CPU the mode changes nothing).

Target tokens per second and MFU (`model.flops`: training FLOPs per real target token, the
vocabulary projection counted, against the device's dense peak; None on a CPU) for each, with the
process's CPU time per step beside the wall time (on a GPU the two are equal whoever sets the pace:
waiting on the device spins a core; `profile_step.py`'s `device_busy_share` tells instead).

Decoding: greedy decoding and beam search (beam 4, alpha 0.6) of `--decode-batch` sources with the
profile's model (random weights, an end-of-sentence bias so outputs end at caption lengths, as
bench_compile.py), in fp32 or `--decode-precision` (translate's bf16 on a GPU): recomputation
(`use_cache=False`) and the eager KV cache (`greedy_decode`, `beam_search`; greedy also asking after
every step whether all rows have finished, `eager_cache_checked_every_step`), both without cuDNN's
attention on a GPU as `translate` runs them, and the static cache (`StaticGreedyDecoder`,
`StaticBeamDecoder`, their steps CUDA graphs on a GPU, as `translate --cuda-graphs` runs them),
same tokens checked (in bf16 or fp16: the share of rows alike, rounding may part them).

--quick: the smoke profile, two rounds, and torch.compile with the "eager" backend (Dynamo without code
generation: the plumbing, not the speed; no mode then). `--variants` times some of the training
variants (eager always among them); decoding runs before training, and the record is written after
each decoding and after training, so a call cut short keeps what it finished; training is timed
only once every variant has warmed up, so scripts/gpu/speed.sh gives each compiled variant a call of
its own beside eager.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO))

from bench_beam import sources  # noqa: E402
from bench_compile import decoding_model  # noqa: E402
from bench_model import interleaved, provenance  # noqa: E402
from profile_step import first_global_batch, make_trainer, sync  # noqa: E402

from annotated_transformer import beam_search, greedy_decode  # noqa: E402
from annotated_transformer.data.batching import LengthBuckets  # noqa: E402
from annotated_transformer.model.flops import mfu, training_flops_per_target_token  # noqa: E402
from annotated_transformer.model.static_decoding import (  # noqa: E402
    StaticBeamDecoder,
    StaticGreedyDecoder,
)
from annotated_transformer.profiles import Profile, get_profile  # noqa: E402
from annotated_transformer.runtime import attention_kernels  # noqa: E402
from annotated_transformer.runtime.files import atomic_write_text  # noqa: E402
from annotated_transformer.runtime.precision import autocast_context  # noqa: E402
from annotated_transformer.training.loss import (  # noqa: E402
    default_strategy,
    label_smoothed_cross_entropy,
)

TRAINING_VARIANTS = (
    "eager",
    "eager_cudnn_attention",
    "eager_row_blocks_loss",
    "eager_bucketed",
    "eager_bucketed_cudnn_attention",
    "eager_bucketed_graphed",
    "compiled",
    "compiled_bucketed",
    "compiled_bucketed_reduce_overhead",
)
DECODERS = ("recompute", "eager_cache", "static_cache")


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def bench_training(
    profile: Profile,
    device: torch.device,
    precision: str,
    *,
    batch_tokens: int | None,
    rounds: int,
    warmup: int,
    quick: bool,
    variants: tuple[str, ...] = TRAINING_VARIANTS,
) -> dict:
    """The training step of each of `variants` (eager always among them: it is the reference
    every other is measured against, in this process, on the same batch)."""
    torch._dynamo.reset()
    buckets = LengthBuckets.doubling(profile.model_config().max_len + 1)
    base = {"backend": "eager"} if quick else {}
    settings = {
        "eager": dict(compile=False),
        "eager_cudnn_attention": dict(compile=False),
        "eager_row_blocks_loss": dict(compile=False),
        "eager_bucketed": dict(compile=False, buckets=buckets),
        "eager_bucketed_cudnn_attention": dict(compile=False, buckets=buckets),
        "eager_bucketed_graphed": dict(compile=False, buckets=buckets, cuda_graphs=True),
        "compiled": dict(compile=True, compile_options=base),
        "compiled_bucketed": dict(compile=True, compile_options=base, buckets=buckets),
        "compiled_bucketed_reduce_overhead": dict(
            compile=True,
            compile_options=base if quick else {"mode": "reduce-overhead"},
            buckets=buckets,
        ),
    }
    wanted = {"eager", *variants}
    trainers = {
        name: make_trainer(profile, device, precision, batch_tokens=batch_tokens, **kw)
        for name, kw in settings.items()
        if name in wanted
    }
    if "eager_row_blocks_loss" in trainers:
        trainers["eager_row_blocks_loss"].loss_fn = functools.partial(
            label_smoothed_cross_entropy, inplace_backward=True, strategy="row_blocks"
        )
    batch, tokens = first_global_batch(trainers["eager"])
    # (rows, source width, target width) of the bucketed variants' batch; None: padded to its longest
    shapes = {name: t.batcher.padded_shape(batch[0]) for name, t in trainers.items()}
    # Learning rate 0 keeps every trainer's weights, so each round computes the same step.
    for t in trainers.values():
        for group in t.optimizer.param_groups:
            group["lr"] = 0.0
    first, errors = {}, {}
    steps = {name: _step(name, t, batch) for name, t in trainers.items()}
    for name, trainer in trainers.items():
        sync(device)
        started = time.perf_counter()
        try:
            for _ in range(max(1, warmup)):
                steps[name]()
            sync(device)
        except Exception as error:  # noqa: BLE001 (a compiler failure is a result here)
            errors[name] = f"{type(error).__name__}: {str(error).splitlines()[0][:300]}"
            log(f"training {name}: failed: {errors[name]}")
            continue
        first[name] = time.perf_counter() - started
        log(f"training {name}: warm-up {first[name]:.1f} s")
    fns = {name: step for name, step in steps.items() if name not in errors}
    times = interleaved(fns, rounds, 0, device)
    config = profile.model_config()
    data = trainers["eager"].train_data
    chosen = [j for b in batch for j in b]
    mean_src = float(sum(int(data.src_lengths[j]) + 1 for j in chosen)) / len(chosen)
    mean_tgt = float(tokens) / len(chosen)
    flops_per_token = training_flops_per_target_token(
        config, profile.vocab_size, mean_src, mean_tgt
    )
    eager_s = times["eager"]["median_s"] if "eager" in times else None
    variants = {}
    for name, t in times.items():
        rate = tokens / t["median_s"]
        variants[name] = {
            **t,
            "warmup_s": first[name],
            "target_tokens_per_s": rate,
            "host_cpu_over_wall": t["median_process_cpu_s"] / t["median_s"],
            "mfu": mfu(rate * flops_per_token, device, precision),
            "speed_over_eager": eager_s / t["median_s"] if eager_s else None,
            "padded_shape": shapes[name],
            "cuda_graphs": trainers[name].settings.cuda_graphs,
            # the shapes a graphed variant captured (none on a CPU, where it runs eagerly)
            "captured_shapes": (
                len(trainers[name].graphed.shapes) if trainers[name].graphed else None
            ),
            "loss_strategy": (
                "compiled"
                if settings[name]["compile"]
                else _eager_loss_strategy(trainers[name], device)
            ),
        }
    for name, message in errors.items():
        variants[name] = {"error": message}
    log(
        "training: "
        + ", ".join(
            f"{n} {v['target_tokens_per_s']:,.0f} tok/s"
            for n, v in variants.items()
            if "error" not in v
        )
    )
    return {
        "precision": precision,
        "target_tokens": tokens,
        "pairs": len(chosen),
        "flops_per_target_token": flops_per_token,
        "buckets": list(buckets.sizes),
        "rounds": rounds,
        "warmup_steps": max(1, warmup),
        "quick_compile_backend": base.get("backend"),
        "variants": variants,
    }


def _eager_loss_strategy(trainer, device: torch.device) -> str:
    """How an eager variant's loss walks the logits (a `training.loss` strategy)."""
    keywords = getattr(trainer.loss_fn, "keywords", {})
    return keywords.get("strategy") or default_strategy(device)


def _step(name: str, trainer, batch):
    """The variant's step: the trainer's, with cuDNN's attention allowed for the variants named
    after it only and left out for every other variant, whatever the environment says
    (runtime.attention_kernels)."""
    allowed = name.endswith("cudnn_attention")

    def step():
        with attention_kernels.allow_cudnn_attention(allowed):
            return trainer.train_step(batch)

    return step


def _varying(device, decode, precision: str = "fp32"):
    """`decode` as the package's translation runs it: the eager decoders meet a new key length every
    step, so on a GPU they run without cuDNN's attention (runtime.attention_kernels), in the
    decoding's autocast."""

    def run():
        with attention_kernels.allow_cudnn_attention(False):
            with attention_kernels.for_varying_shapes(device):
                with autocast_context(device, precision):
                    return decode()

    return run


def _as_translate_builds(device, build):
    """A static decoder built (and its step captured) as `translate --cuda-graphs` builds one:
    without cuDNN's attention, since translate builds one for each batch shape."""
    with attention_kernels.allow_cudnn_attention(False):
        with attention_kernels.for_varying_shapes(device):
            return build()


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
    batch: int,
    src_len: int,
    max_new: int,
    rounds: int,
    search: str = "greedy",
    beam_size: int = 4,
    eos_bias: float = 3.2,
    precision: str = "fp32",
) -> dict:
    """One search ("greedy", or "beam" of `beam_size` with alpha 0.6 and every source's allowance
    `max_new`) by recomputation, the eager cache and the static cache, on the same sources, in
    `precision` (the static step captured in that autocast). In fp32 all three must give the same
    tokens; in bf16 or fp16 rounding may part them, so the share of rows alike is recorded."""
    model = decoding_model(profile, eos_bias).to(device)
    src = sources(batch, src_len, profile.vocab_size).to(device)
    started = time.perf_counter()
    if search == "greedy":
        static = _as_translate_builds(
            device,
            lambda: StaticGreedyDecoder(
                model, batch, src_len, max_new, precision=precision
            ),
        )
        runs = {
            "recompute": _varying(
                device,
                lambda: greedy_decode(model, src, max_new, use_cache=False),
                precision,
            ),
            "eager_cache": _varying(
                device, lambda: greedy_decode(model, src, max_new), precision
            ),
            # the eager cache asking after every step whether all rows have finished, as it did
            # before it asked every few steps on a GPU (on a CPU the same as eager_cache)
            "eager_cache_checked_every_step": _varying(
                device,
                lambda: greedy_decode(model, src, max_new, check_every=1),
                precision,
            ),
            "static_cache": _varying(device, lambda: static(src)),
        }
    else:
        beam = dict(beam_size=beam_size, alpha=0.6, max_len_a=0.0, max_len_b=max_new)
        static = _as_translate_builds(
            device,
            lambda: StaticBeamDecoder(model, batch, src_len, **beam, precision=precision),
        )
        runs = {
            "recompute": _varying(
                device,
                lambda: beam_search(model, src, **beam, use_cache=False),
                precision,
            ),
            "eager_cache": _varying(
                device, lambda: beam_search(model, src, **beam), precision
            ),
            "static_cache": _varying(device, lambda: static(src)),
        }
    build_s = time.perf_counter() - started
    outputs = {name: run() for name, run in runs.items()}
    same = all(torch.equal(outputs["eager_cache"], o) for o in outputs.values())
    rows_alike = {
        name: _rows_alike(outputs["eager_cache"], o, model.config.pad_id)
        for name, o in outputs.items()
    }
    generated = int((outputs["eager_cache"][:, 1:] != model.config.pad_id).sum())
    times = interleaved(runs, rounds, 1, device)
    recompute_s = times["recompute"]["median_s"]
    out = {
        "search": search,
        "precision": precision,
        "beam_size": beam_size if search == "beam" else 1,
        "batch": batch,
        "src_len": src_len,
        "max_new_tokens": max_new,
        "output_width": int(outputs["eager_cache"].size(1)),
        "generated_tokens": generated,
        "same_tokens": same,
        "rows_alike_eager_cache": rows_alike,
        "static_graphed": static.graphed,
        "static_build_s": build_s,
        "decoders": {
            name: {
                **t,
                "tokens_per_s": generated / t["median_s"],
                "speed_over_recompute": recompute_s / t["median_s"],
                "host_cpu_over_wall": t["median_process_cpu_s"] / t["median_s"],
            }
            for name, t in times.items()
        },
    }
    log(
        f"{search} decoding, batch {batch}: "
        + ", ".join(
            f"{n} {v['speed_over_recompute']:.2f}x" for n, v in out["decoders"].items()
        )
        + f", same tokens: {same}"
    )
    return out


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--profile", default=None, help="default: smoke with --quick, else paper"
    )
    parser.add_argument("--precision", default=None, choices=["fp32", "bf16", "fp16"])
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--batch-tokens", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--warmup", type=int, default=None)
    parser.add_argument(
        "--decode-batch",
        type=int,
        nargs="+",
        default=None,
        help="sources per decoding batch, one timing each (default: 1 and 64; --quick: 4)",
    )
    parser.add_argument("--decode-src-len", type=int, default=25)
    parser.add_argument("--decode-max-new", type=int, default=None)
    parser.add_argument(
        "--decode-precision",
        default="fp32",
        choices=["fp32", "bf16", "fp16"],
        help="the autocast decoding runs in (translate's on a GPU: bf16)",
    )
    parser.add_argument("--only", action="append", choices=["train", "decode"])
    parser.add_argument(
        "--variants",
        nargs="+",
        choices=TRAINING_VARIANTS,
        default=list(TRAINING_VARIANTS),
        help="training variants to time (eager, the reference, is always one of them)",
    )
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    profile = get_profile(args.profile or ("smoke" if args.quick else "paper"))
    precision = args.precision or ("bf16" if device.type == "cuda" else "fp32")
    rounds = args.rounds or (2 if args.quick else 10)
    warmup = args.warmup if args.warmup is not None else (1 if args.quick else 3)
    parts = set(args.only or ["train", "decode"])
    record: dict = {
        "quick": args.quick,
        "profile": profile.name,
        "device": {
            "type": device.type,
            "name": torch.cuda.get_device_name(device)
            if device.type == "cuda"
            else "cpu",
        },
        "provenance": provenance(device),
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)

    def save() -> None:
        """The record as it stands, written whole (never half a file), after each decoding and
        after training: a call cut short keeps the parts it finished."""
        atomic_write_text(out, json.dumps(record, indent=2) + "\n")

    # decoding first: it compiles nothing, so it is done before the compiles can use up the time
    if "decode" in parts:
        batches = args.decode_batch or ([4] if args.quick else [1, 64])
        record["decoding"] = []
        for search in ("greedy", "beam"):
            for b in batches:
                record["decoding"].append(
                    bench_decoding(
                        profile,
                        device,
                        batch=b,
                        src_len=8 if args.quick else args.decode_src_len,
                        max_new=args.decode_max_new or (12 if args.quick else 100),
                        rounds=rounds,
                        search=search,
                        precision=args.decode_precision,
                    )
                )
                save()
    if "train" in parts:
        record["training"] = bench_training(
            profile,
            device,
            precision,
            batch_tokens=args.batch_tokens,
            rounds=rounds,
            warmup=warmup,
            quick=args.quick,
            variants=tuple(args.variants),
        )
        save()
    return record


if __name__ == "__main__":
    main()

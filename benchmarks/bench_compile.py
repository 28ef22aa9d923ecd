"""torch.compile against eager on this CPU: the `cpu` profile's training step and decoding, and threads.

    python benchmarks/bench_compile.py                        # ~11 minutes on 2 busy cores -> results/benchmarks/cpu_compile.json
    python benchmarks/bench_compile.py --quick --out x.json   # the smoke model, no code generation: the plumbing

Training: the trainer's own step (`Trainer.train_step`: forward, label-smoothed loss, backward, fused
Adam, schedule) on the profile's model and batch size, over synthetic sentence pairs of Multi30k's
lengths (`bench_precision.synthetic_pairs`), stepping through a few batches of distinct shapes as a
run does. Variants, each on its own copy of the same initial weights:

- eager: what the trainer runs on a CPU (logits for real target rows only, the hand-written loss
  backward writing its gradient over the logits);
- eager_all_rows: the same with logits for padded rows too, what a compiled graph must compute;
- compiled_model_and_loss: what `train --compile` runs (`compile_probe.compiled_step_parts`);
- compiled_model: the model compiled, the loss eager.

in fp32 and, where the CPU has AVX512-BF16 or AMX, in bf16 autocast. Decoding: greedy and beam search
with the package's KV cache on the profile's model (random weights, a bias on end-of-sentence so
outputs end at caption lengths, as in bench_beam.py), eager against the same search with the
per-step decoder (`Transformer.decode`) compiled: the search loops themselves are Python with
data-dependent stopping and host-side beam bookkeeping, nothing a graph can hold. Encoding, once
per batch, stays eager.

Every comparison runs in one process, variants interleaved within each repeat in rotating order
(load on the machine hits all alike), medians with min and max. The compile seconds of a variant
are its first round (compiling included, a recompile for the second shape too) minus a steady one.
Inductor writes into a fresh cache directory, so they are what a first run on a machine pays; the
variant compiled second in a process reuses kernels the first built (noted in the record).

Threads cannot change inside one process (OpenMP's pool is set up once), so each thread setting
runs the eager training step and greedy decoding in a fresh subprocess, one after another, the
default setting first and last to show the drift.
"""

from __future__ import annotations

import os
import tempfile

# A cold Inductor cache unless the caller chose one: compile seconds as a first run pays them.
os.environ.setdefault(
    "TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp(prefix="bench_compile_inductor_")
)

import argparse  # noqa: E402
import contextlib  # noqa: E402
import copy  # noqa: E402
import dataclasses  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO))

from bench_beam import sources  # noqa: E402
from bench_model import interleaved, provenance  # noqa: E402
from bench_precision import _NoTokenizer, synthetic_pairs  # noqa: E402

from annotated_transformer import Transformer, beam_search, greedy_decode  # noqa: E402
from annotated_transformer.profiles import Profile, get_profile  # noqa: E402
from annotated_transformer.runtime.compiling import MARGIN, effective_speed  # noqa: E402
from annotated_transformer.runtime.devices import (  # noqa: E402
    cpu_flags,
    cpu_has_bf16_instructions,
    cpu_name,
    cpu_supports_bf16,
)
from annotated_transformer.runtime.distributed import DistributedContext  # noqa: E402
from annotated_transformer.training.compile_probe import compiled_step_parts  # noqa: E402
from annotated_transformer.training.execution import choose_execution  # noqa: E402
from annotated_transformer.training.fit import build_model  # noqa: E402
from annotated_transformer.training.trainer import Trainer  # noqa: E402

CPU = torch.device("cpu")
TRAINING_VARIANTS = (
    "eager",
    "eager_all_rows",
    "compiled_model_and_loss",
    "compiled_model",
)
# Each a fresh process. KMP_* are read by Intel's OpenMP runtime only: with GNU libgomp (what the
# PyPI CPU wheels load; `openmp_runtime` in the record) they should change nothing, which the run shows.
THREAD_SETTINGS = [
    {"name": "default", "env": {}},
    {"name": "set_num_threads(1)", "threads": 1},
    {"name": "set_num_threads(2), interop 1", "threads": 2, "interop": 1},
    {"name": "OMP_WAIT_POLICY=PASSIVE", "env": {"OMP_WAIT_POLICY": "PASSIVE"}},
    {
        "name": "KMP_BLOCKTIME=0 KMP_AFFINITY=granularity=fine,compact,1,0",
        "env": {"KMP_BLOCKTIME": "0", "KMP_AFFINITY": "granularity=fine,compact,1,0"},
    },
    {"name": "default (again)", "env": {}},
]
QUICK_THREAD_SETTINGS = [
    {"name": "default", "env": {}},
    {"name": "set_num_threads(1)", "threads": 1},
]


def log(message: str) -> None:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"[{time.strftime('%H:%M:%S')} load {load:.2f}] {message}", flush=True)


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


# ---------------------------------------------------------------------------------- training
def training_setup(
    profile: Profile,
    precision: str,
    n_batches: int,
    variants=TRAINING_VARIANTS,
    seed: int = 0,
):
    """One eager trainer per variant (copies of the same initial weights), the batches (each a
    global batch of one micro-batch), their target tokens and their shapes."""
    config = profile.model_config()
    model = build_model(config, profile.vocab_size, seed=seed)
    data = synthetic_pairs(2000, profile.vocab_size)
    out = tempfile.mkdtemp(prefix="bench_compile_run_")
    settings = profile.train_settings().replace(precision=precision, compile=False)
    trainers = {}
    # explicit settings: choosing measures nothing
    execution = choose_execution(model, settings, data, DistributedContext())
    for name in variants:
        trainers[name] = Trainer(
            copy.deepcopy(model),
            _NoTokenizer(),
            data,
            None,
            settings,
            out,
            execution=execution,
            show_progress=False,
        )
    first = trainers["eager"]
    batches = [[b] for b in first.batcher.epoch_batches(0)[:n_batches]]
    tokens = sum(int(first.train_data.tgt_lengths[j]) + 1 for (b,) in batches for j in b)
    shapes = []
    for (b,) in batches:
        longest = max(int(first.train_data.tgt_lengths[j]) for j in b) + 1
        shapes.append([len(b), longest])
    return trainers, batches, tokens, shapes


def make_variant(trainer: Trainer, name: str, compile_options: dict) -> None:
    """Turn an eager trainer into `name`'s step."""
    if name == "eager":
        return
    trainer.execution = dataclasses.replace(trainer.execution, real_rows_only=False)
    if (
        name == "compiled_model_and_loss"
    ):  # exactly what the trainer does with compile=True
        trainer.forward_model, trainer.loss_fn = compiled_step_parts(
            trainer.model, **compile_options
        )
    elif name == "compiled_model":
        trainer.forward_model = torch.compile(trainer.model, **compile_options)


def bench_training(
    profile: Profile, precision: str, n_batches: int, rounds: int, compile_options: dict
) -> dict:
    torch._dynamo.reset()
    trainers, batches, tokens, shapes = training_setup(profile, precision, n_batches)
    for name, trainer in trainers.items():
        make_variant(trainer, name, compile_options)

    def one_round(trainer: Trainer):
        return lambda: [trainer.train_step(batch) for batch in batches]

    fns = {name: one_round(t) for name, t in trainers.items()}
    first, errors = {}, {}
    for name in TRAINING_VARIANTS:  # eager first, then the trainer's compiled step (cold)
        started = time.perf_counter()
        try:
            fns[name]()
        except Exception as error:  # noqa: BLE001 (a compiler failure is a result here)
            errors[name] = f"{type(error).__name__}: {str(error).splitlines()[0][:300]}"
            log(f"  {precision} {name}: failed: {errors[name]}")
            continue
        first[name] = time.perf_counter() - started
        log(f"  {precision} {name}: first round {first[name]:.1f} s")
    fns = {name: fn for name, fn in fns.items() if name not in errors}
    times = interleaved(fns, rounds, 0, CPU)
    eager_s = times["eager"]["median_s"]
    variants = {}
    for name, t in times.items():
        variants[name] = {
            **t,
            "per_step_s": t["median_s"] / len(batches),
            "target_tokens_per_s": tokens / t["median_s"],
            "speed_over_eager": eager_s / t["median_s"],
            "first_round_s": first[name],
            "compile_s": max(0.0, first[name] - t["median_s"]),
        }
    for name, message in errors.items():
        variants[name] = {"error": message}
    result = {
        "precision": precision,
        "batches": len(batches),
        "batch_shapes_rows_by_target_length": shapes,
        "target_tokens_per_round": tokens,
        "rounds": rounds,
        "variants": variants,
    }
    if "compiled_model_and_loss" in times:
        compiled = variants["compiled_model_and_loss"]
        seconds = {
            "eager": variants["eager"]["per_step_s"],
            "compiled": compiled["per_step_s"],
            "compile": compiled["compile_s"],
        }
        run_s = 60.0 * (profile.time_budget_minutes or 0) or None
        speed = effective_speed(seconds, run_s)
        result["auto"] = {
            "seconds": seconds,
            "run_seconds": run_s,
            "effective_speed": speed,
            "margin": MARGIN,
            "compiles": speed >= MARGIN,
        }
    rates = ", ".join(
        f"{n} {v['target_tokens_per_s']:,.0f} tok/s ({v['speed_over_eager']:.2f}x)"
        for n, v in variants.items()
        if "error" not in v
    )
    log(f"training {precision}: {rates}")
    return result


# ---------------------------------------------------------------------------------- decoding
def decoding_model(profile: Profile, eos_bias: float, seed: int = 0) -> Transformer:
    """The profile's model with random weights and a bias on end-of-sentence, so outputs end at about
    caption length as a trained model's do (bench_beam.py: 3.2 gives ~15 tokens at the cpu shape)."""
    torch.manual_seed(seed)
    config = profile.model_config().replace(dropout=0.0)
    model = Transformer(config, profile.vocab_size, profile.vocab_size).eval()
    eos = config.eos_id

    def push_eos(module, inputs, output):
        output[..., eos] += eos_bias
        return output

    model.generator.register_forward_hook(push_eos)
    return model


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


def bench_decoding(
    profile: Profile,
    *,
    batch: int,
    beam_batch: int,
    src_len: int,
    rounds: int,
    compile_options: dict,
    eos_bias: float = 3.2,
) -> dict:
    """Greedy and beam search, eager against the per-step decoder compiled; same tokens checked."""
    model = decoding_model(profile, eos_bias)
    src = sources(batch, src_len, profile.vocab_size)
    beam_src = src[:beam_batch]
    max_new = int(profile.max_len_a * src_len + profile.max_len_b)
    searches = {
        "greedy": lambda m: greedy_decode(m, src, max_new),
        "beam": lambda m: beam_search(
            m,
            beam_src,
            beam_size=profile.beam_size,
            alpha=profile.length_penalty_alpha,
            max_len_a=profile.max_len_a,
            max_len_b=profile.max_len_b,
        ),
    }
    out = {}
    for search, run in searches.items():
        torch._dynamo.reset()
        compiled = copy.deepcopy(model)
        # An instance attribute shadows the method: the searches call model.decode once per step.
        compiled.decode = torch.compile(compiled.decode, **compile_options)
        started = time.perf_counter()
        with counting_decoder_rows(model) as work:
            reference = run(model)
        eager_first = time.perf_counter() - started
        started = time.perf_counter()
        try:
            tokens = run(compiled)
        except Exception as error:  # noqa: BLE001
            message = f"{type(error).__name__}: {str(error).splitlines()[0][:300]}"
            log(f"  {search}: compiling failed: {message}")
            out[search] = {"error": message}
            continue
        compiled_first = time.perf_counter() - started
        generated = int((reference[:, 1:] != model.config.pad_id).sum())
        times = interleaved(
            {"eager": lambda: run(model), "compiled": lambda: run(compiled)},
            rounds,
            0,
            CPU,
        )
        row_sources = batch if search == "greedy" else beam_batch
        row = {
            "sources": row_sources,
            "source_length": src_len,
            "beam": 1 if search == "greedy" else profile.beam_size,
            # tokens of the outputs (the best hypothesis per source) ...
            "generated_tokens": generated,
            # ... and what the decoder computed: steps, and rows (hypotheses) summed over steps
            "decoder_steps": work["steps"],
            "decoder_rows": work["rows"],
            "same_tokens": tokens.shape == reference.shape
            and bool(torch.equal(tokens, reference)),
            "eager": {
                **times["eager"],
                "tokens_per_s": generated / times["eager"]["median_s"],
                "sentences_per_s": row_sources / times["eager"]["median_s"],
                "decoder_rows_per_s": work["rows"] / times["eager"]["median_s"],
                "first_call_s": eager_first,
            },
            "compiled": {
                **times["compiled"],
                "tokens_per_s": generated / times["compiled"]["median_s"],
                "sentences_per_s": row_sources / times["compiled"]["median_s"],
                "decoder_rows_per_s": work["rows"] / times["compiled"]["median_s"],
                "first_call_s": compiled_first,
                "compile_s": max(0.0, compiled_first - times["compiled"]["median_s"]),
            },
        }
        row["speed_over_eager"] = (
            times["eager"]["median_s"] / times["compiled"]["median_s"]
        )
        out[search] = row
        log(
            f"decoding {search}: eager {row['eager']['decoder_rows_per_s']:,.0f} decoder rows/s, "
            f"compiled {row['compiled']['decoder_rows_per_s']:,.0f} "
            f"({row['speed_over_eager']:.2f}x) after "
            f"{row['compiled']['compile_s']:.0f} s compiling; same tokens {row['same_tokens']}"
        )
    return out


# ---------------------------------------------------------------------------------- threads
def child(spec: dict) -> dict:
    """In a fresh process: the eager training step and greedy decoding under one thread setting."""
    if spec.get("interop"):
        torch.set_num_interop_threads(spec["interop"])  # before any parallel work
    if spec.get("threads"):
        torch.set_num_threads(spec["threads"])
    profile = get_profile(spec["profile"])
    result = {
        "threads": torch.get_num_threads(),
        "interop_threads": torch.get_num_interop_threads(),
        "openmp_runtime": openmp_runtime(),
        "training": {},
    }
    for precision in spec["precisions"]:
        trainers, batches, tokens, _ = training_setup(
            profile, precision, spec["batches"], variants=("eager",)
        )
        trainer = trainers["eager"]
        fn = lambda: [trainer.train_step(b) for b in batches]  # noqa: E731
        t = interleaved({"eager": fn}, spec["rounds"], 1, CPU)["eager"]
        result["training"][precision] = {
            **t,
            "target_tokens_per_s": tokens / t["median_s"],
        }
    model = decoding_model(profile, 3.2)
    src = sources(spec["decode_batch"], spec["src_len"], profile.vocab_size)
    max_new = int(profile.max_len_a * spec["src_len"] + profile.max_len_b)
    generated = int(
        (greedy_decode(model, src, max_new)[:, 1:] != model.config.pad_id).sum()
    )
    t = interleaved(
        {"greedy": lambda: greedy_decode(model, src, max_new)}, spec["rounds"], 0, CPU
    )["greedy"]
    result["greedy"] = {**t, "tokens_per_s": generated / t["median_s"]}
    return result


def bench_threads(base_spec: dict, settings: list[dict]) -> dict:
    rows = []
    for setting in settings:
        spec = {**base_spec, **{k: setting.get(k) for k in ("threads", "interop")}}
        env = {**os.environ, **setting.get("env", {})}
        started = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, __file__, "--child", json.dumps(spec)],
            env=env,
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            rows.append({"name": setting["name"], "error": proc.stderr[-600:]})
            log(f"threads {setting['name']}: failed")
            continue
        measured = json.loads(proc.stdout.strip().splitlines()[-1])
        row = {
            "name": setting["name"],
            "env": setting.get("env", {}),
            **measured,
            "wall_s": time.perf_counter() - started,
        }
        rows.append(row)
        rates = ", ".join(
            f"{p} {v['target_tokens_per_s']:,.0f} tok/s"
            for p, v in row["training"].items()
        )
        log(
            f"threads {setting['name']}: {row['threads']} threads, {row['interop_threads']} "
            f"interop: train {rates}; greedy {row['greedy']['tokens_per_s']:,.0f} tok/s"
        )
    default = next((r for r in rows if r["name"] == "default" and "error" not in r), None)
    if default is not None:
        for row in rows:
            if "error" in row:
                continue
            row["training_speed_over_default"] = {
                p: default["training"][p]["median_s"] / v["median_s"]
                for p, v in row["training"].items()
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
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="cpu")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="the smoke model, fp32, one round, Dynamo's eager backend (no code generation): "
        "the plumbing in seconds, numbers that mean nothing",
    )
    parser.add_argument(
        "--rounds", type=int, default=3, help="timed rounds per comparison"
    )
    parser.add_argument(
        "--batches", type=int, default=2, help="batches of distinct shapes per round"
    )
    parser.add_argument(
        "--only",
        nargs="+",
        choices=("training", "decoding", "threads"),
        default=("training", "decoding", "threads"),
    )
    parser.add_argument(
        "--out", default=str(REPO / "results" / "benchmarks" / "cpu_compile.json")
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch.set_num_threads for the training and decoding comparisons (default: torch's)",
    )
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        print(json.dumps(child(json.loads(args.child))))
        return 0
    if args.threads:
        torch.set_num_threads(args.threads)

    started = time.perf_counter()
    profile = get_profile("smoke" if args.quick else args.profile)
    rounds = 1 if args.quick else args.rounds
    n_batches = 2 if args.quick else args.batches
    compile_options = {"backend": "eager"} if args.quick else {}
    # bf16 wherever the CPU has the instructions, also where oneDNN is held below them (there it
    # measures the emulation an AVX2-only CPU would run).
    bf16 = cpu_has_bf16_instructions() and not args.quick
    precisions = ["fp32"] + (["bf16"] if bf16 else [])
    # Greedy: a test batch of 32 captions of about 14 pieces; beam 4: 8 of them (32 rows), which
    # keeps the benchmark within minutes (beam 4 over 16 took about 10 s a call on 2 busy cores).
    decode = (
        dict(batch=4, beam_batch=2, src_len=8)
        if args.quick
        else dict(batch=32, beam_batch=8, src_len=14)
    )
    config = profile.model_config()
    record = {
        "benchmark": "torch.compile against eager on a CPU: training step, decoding, threads",
        "profile": profile.name,
        "quick": args.quick,
        "compile_backend": compile_options.get("backend", "inductor"),
        "inductor_cache_dir": os.environ["TORCHINDUCTOR_CACHE_DIR"],
        "model": {
            "d_model": config.d_model,
            "d_ff": config.d_ff,
            "layers": config.n_layers,
            "heads": config.n_heads,
            "vocab": profile.vocab_size,
            "dropout": config.dropout,
            "batch_tokens": profile.batch_tokens,
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
        "provenance": provenance(CPU),
        "compile_s_note": "first round minus a steady round; a variant compiled later in the "
        "process reuses kernels an earlier one built (compiled_model after "
        "compiled_model_and_loss, bf16 after fp32, beam after greedy)",
    }
    if "training" in args.only:
        log(
            f"training: {profile.name} model, {n_batches} batches a round, {rounds} rounds"
        )
        record["training"] = {
            p: bench_training(profile, p, n_batches, rounds, compile_options)
            for p in precisions
        }
    if "decoding" in args.only:
        log(f"decoding: {decode['batch']} sources of {decode['src_len']} tokens")
        record["decoding"] = bench_decoding(
            profile,
            rounds=rounds,
            compile_options=compile_options,
            **decode,
        )
    if "threads" in args.only:
        # fp32 only, 8 sources to decode: a fresh process per setting is the costly part
        spec = {
            "profile": profile.name,
            "precisions": ["fp32"],
            "batches": n_batches,
            "rounds": 1 if args.quick else 2,
            "decode_batch": decode["batch"] // 4,
            "src_len": decode["src_len"],
        }
        settings = QUICK_THREAD_SETTINGS if args.quick else THREAD_SETTINGS
        record["threads_settings"] = bench_threads(spec, settings)
    record["total_s"] = time.perf_counter() - started
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(record, indent=2) + "\n")
    log(f"wrote {args.out} after {record['total_s']:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

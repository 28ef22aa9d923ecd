"""oneDNN's kernel cache: the `cpu` recipe's real training steps with the package's cache size
against oneDNN's default, each in fresh processes, alternated.

    python benchmarks/bench_kernel_cache.py --out results/benchmarks/cpu_primitive_cache.json
    python benchmarks/bench_kernel_cache.py --quick --out /tmp/k.json        # the plumbing, seconds

oneDNN reads `ONEDNN_PRIMITIVE_CACHE_CAPACITY` once, at its first kernel, so the two sizes cannot
share a process: each round runs `train --precision bf16 --max-steps N --no-eval` once per size, in
alternating order, and reads the run's own training seconds (`train_time_s` of its metrics.jsonl,
set-up excluded), its validation loss after the last step (the same kernels compute the same
numbers, so the two must agree to the bit), the process's peak resident memory, and from oneDNN's
verbose log the kernels it built and the seconds that took (the log costs both sizes alike).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

import torch
from common import REPO, log, provenance, run_fresh, write_json

from annotated_transformer import ONEDNN_KERNEL_CACHE
from annotated_transformer.runtime.devices import cpu_supports_bf16

ONEDNN_DEFAULT = 1024


def train_once(
    capacity: int, profile: str, steps: int, precision: str, out: Path
) -> dict:
    """One training run in a fresh process with the cache at `capacity`: seconds, loss, memory,
    and the kernels oneDNN built (its verbose log: one line a kernel built, with milliseconds)."""
    env = {
        "ONEDNN_PRIMITIVE_CACHE_CAPACITY": str(capacity),
        "ONEDNN_VERBOSE": "profile_create",
    }
    command = [sys.executable, "-m", "annotated_transformer", "train", "--profile", profile,
               "--precision", precision, "--max-steps", str(steps), "--minutes", "600",
               "--eval-every", str(steps), "--no-eval", "--out", str(out)]  # fmt: skip
    log_path = out.with_suffix(".log")
    returncode, max_rss_mb = run_fresh(command, env, log_path, cwd=REPO)
    if returncode != 0:
        tail = log_path.read_text()[-800:]
        raise SystemExit(f"train failed with the cache at {capacity}:\n{tail}")
    built = [
        float(line.rsplit(",", 1)[1])
        for line in log_path.read_text().splitlines()
        if ",create:cache_miss," in line  # (a progress bar's text may precede it)
    ]
    lines = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    stop = next(x for x in lines if x["kind"] == "stop")
    if stop["step"] != steps:  # the two sizes must time the same work
        raise SystemExit(
            f"train stopped at step {stop['step']} of {steps} with the cache at {capacity} "
            f"({stop.get('stopped_by')}): the sizes would be compared on unequal work"
        )
    if precision == "bf16" and cpu_supports_bf16() and not built:
        # where oneDNN runs the bf16 products every run builds some: none logged is no count
        raise SystemExit(
            f"oneDNN's verbose log names no kernel built in a bf16 run with the cache at "
            f"{capacity}: this torch's oneDNN did not log them (ONEDNN_VERBOSE), so the kernels "
            f"cannot be counted here"
        )
    valid = [x for x in lines if x["kind"] == "valid"][-1]
    return {
        "train_time_s": stop["train_time_s"],
        "steps": stop["step"],
        "valid_loss": valid["loss"],
        "max_rss_mb": max_rss_mb,
        "kernels_built": len(built),
        "kernel_build_s": sum(built) / 1000,
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--profile", default=None, help="default: cpu (smoke with --quick)"
    )
    parser.add_argument("--precision", default="bf16", choices=["bf16", "fp32"])
    parser.add_argument(
        "--steps", type=int, default=None, help="default 300 (--quick 10)"
    )
    parser.add_argument("--rounds", type=int, default=None, help="default 3 (--quick 1)")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    profile = args.profile or ("smoke" if args.quick else "cpu")
    steps = args.steps or (10 if args.quick else 300)
    rounds = args.rounds or (1 if args.quick else 3)
    sizes = {"onednn_default": ONEDNN_DEFAULT, "package": ONEDNN_KERNEL_CACHE}
    runs: dict[str, list[dict]] = {name: [] for name in sizes}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(rounds):
            order = list(sizes) if r % 2 == 0 else list(sizes)[::-1]
            for name in order:
                run = train_once(
                    sizes[name], profile, steps, args.precision, Path(tmp) / f"{name}{r}"
                )
                runs[name].append(run)
                log(
                    f"round {r + 1}: cache {sizes[name]:,}: {run['train_time_s']:.1f} s for {steps} steps"
                )
    median = {
        name: statistics.median(x["train_time_s"] for x in rs)
        for name, rs in runs.items()
    }
    record = {
        "benchmark": "oneDNN's kernel cache on the recipe's real training steps, fresh processes alternated",
        "profile": profile,
        "precision": args.precision,
        "steps": steps,
        "rounds": rounds,
        "cache_sizes": sizes,
        "runs": runs,
        "median_train_time_s": median,
        "speed_over_default": median["onednn_default"] / median["package"],
        "paired_speed_over_default": [
            a["train_time_s"] / b["train_time_s"]
            for a, b in zip(runs["onednn_default"], runs["package"])
        ],
        "same_valid_loss": len({x["valid_loss"] for rs in runs.values() for x in rs})
        == 1,
        "quick": args.quick,
        "provenance": provenance(torch.device("cpu")),
    }
    write_json(Path(args.out), record)
    log(f"{record['speed_over_default']:.2f}x with the package's cache; wrote {args.out}")
    return record


if __name__ == "__main__":
    main()

"""fp32 against bf16 for the `cpu` profile's training step on this machine, and what "auto" picks.

    python benchmarks/bench_precision.py            # ~1 minute on 2 cores -> results/benchmarks/cpu_precision.json
    python benchmarks/bench_precision.py --quick --out x.json

The step is the trainer's own (forward, label-smoothed loss, backward) on the profile's model and
batch size, over synthetic sentence pairs of Multi30k's lengths; both precisions alternate within
every round, as the trainer's measurement does (`precision_probe.time_both_precisions`, which this
calls), so load on the machine hits both alike. "auto" measures only on a CPU with AVX512-BF16 or AMX; elsewhere bf16 is
emulated and it takes fp32 without timing anything: this benchmark times both paths everywhere.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO))

from bench_model import provenance  # noqa: E402

from annotated_transformer.data import EncodedPairs  # noqa: E402
from annotated_transformer.profiles import get_profile  # noqa: E402
from annotated_transformer.runtime.devices import cpu_supports_bf16  # noqa: E402
from annotated_transformer.runtime.distributed import DistributedContext  # noqa: E402
from annotated_transformer.runtime.precision import choose_precision  # noqa: E402
from annotated_transformer.training.execution import choose_execution  # noqa: E402
from annotated_transformer.training.fit import build_model  # noqa: E402
from annotated_transformer.training.precision_probe import (  # noqa: E402
    time_both_precisions,
)
from annotated_transformer.training.trainer import Trainer  # noqa: E402


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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="cpu")
    parser.add_argument("--steps", type=int, default=10, help="timed steps per precision")
    parser.add_argument(
        "--quick", action="store_true", help="the smoke profile's model, 2 steps"
    )
    parser.add_argument(
        "--out", default=str(REPO / "results" / "benchmarks" / "cpu_precision.json")
    )
    args = parser.parse_args(argv)
    profile = get_profile("smoke" if args.quick else args.profile)
    steps = 2 if args.quick else args.steps
    config = profile.model_config()
    model = build_model(config, profile.vocab_size, seed=0)
    settings = profile.train_settings().replace(precision="fp32")
    with tempfile.TemporaryDirectory() as out:
        data = synthetic_pairs(2000, profile.vocab_size)
        trainer = Trainer(
            model,
            _NoTokenizer(),
            data,
            None,
            settings,
            out,
            execution=choose_execution(model, settings, data, DistributedContext()),
            show_progress=False,
        )
        seconds = time_both_precisions(
            trainer.model,
            trainer.train_data,
            trainer.batcher.epoch_batches(0)[0],
            trainer.device,
            real_rows_only=trainer.execution.real_rows_only,
            steps=steps,
        )
        tokens = sum(
            int(trainer.train_data.tgt_lengths[j]) + 1
            for j in trainer.batcher.epoch_batches(0)[0]
        )
    auto = choose_precision(
        "auto", "cpu", probe=lambda: seconds, shape={"benchmark": profile.name}
    )
    record = {
        "benchmark": "training step, fp32 against bf16 autocast",
        "profile": profile.name,
        "model": {
            "d_model": config.d_model,
            "d_ff": config.d_ff,
            "layers": config.n_layers,
            "heads": config.n_heads,
            "vocab": profile.vocab_size,
        },
        "batch_target_tokens": tokens,
        "timed_steps": steps,
        "seconds_per_step": seconds,
        "target_tokens_per_s": {p: tokens / s for p, s in seconds.items()},
        "bf16_speed_over_fp32": seconds["fp32"] / seconds["bf16"],
        "cpu_has_bf16_instructions": cpu_supports_bf16(),
        "auto_chooses": auto.precision,
        "auto_reason": auto.reason,
        "threads": torch.get_num_threads(),
        "provenance": provenance(torch.device("cpu")),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(record, indent=2) + "\n")
    rate = record["target_tokens_per_s"]
    print(
        f"{profile.name}: fp32 {rate['fp32']:,.0f} target tokens/s, bf16 {rate['bf16']:,.0f} "
        f"({record['bf16_speed_over_fp32']:.2f}x); auto -> {auto.precision} ({auto.reason}); "
        f"wrote {args.out}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

#!/usr/bin/env bash
# GPU figures of the model benchmark: base training step in bf16, eager vs torch.compile (tokens/s, MFU),
# then training and greedy decoding against the reference. Each part writes its own JSON under results/gpu/.
set -uo pipefail
python=${PYTHON:-python3}
export PYTHONUNBUFFERED=1
$python benchmarks/bench_model.py --device cuda --only gpu --out results/benchmarks/gpu_compile.json
$python benchmarks/bench_model.py --device cuda --only train --only decode --out results/benchmarks/gpu_train_decode.json

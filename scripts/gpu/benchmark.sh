#!/usr/bin/env bash
# GPU figures of the model benchmark: the base training step in bf16, eager against torch.compile
# (tokens/s, MFU), then training and greedy decoding against the reference, each part in its own
# JSON (committed as results/benchmarks/gpu_compile.json and gpu_train_decode.json):
#
#   bash scripts/gpu/benchmark.sh OUT
set -uo pipefail
[ $# -eq 1 ] || { echo "usage: benchmark.sh OUT (the output folder)" >&2; exit 2; }
out=$1
mkdir -p "$out"
python=${PYTHON:-python3}
export PYTHONUNBUFFERED=1
status=0
$python benchmarks/bench_model.py --device cuda --only gpu --out "$out/gpu_compile.json" || status=1
$python benchmarks/bench_model.py --device cuda --only train --only decode \
  --out "$out/gpu_train_decode.json" || status=1
exit $status

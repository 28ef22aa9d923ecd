#!/usr/bin/env bash
# GPU figures of the model benchmark: the base training step in bf16, eager against torch.compile
# (tokens/s, MFU), then training and greedy decoding against the reference, each part in its own
# JSON (committed as results/benchmarks/gpu_compile.json and gpu_train_decode.json):
#
#   bash scripts/gpu/benchmark.sh OUT
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
[ $# -eq 1 ] || usage "OUT (the output folder)"
out=$1
mkdir -p "$out"
status=0
$python benchmarks/bench_model.py --device cuda --only gpu --out "$out/gpu_compile.json" || status=1
$python benchmarks/bench_model.py --device cuda --only train --only decode \
  --out "$out/gpu_train_decode.json" || status=1
exit $status

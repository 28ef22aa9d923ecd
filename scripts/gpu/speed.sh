#!/usr/bin/env bash
# Issue 54 on one GPU: where the `base` training step's time goes and what each change buys, in one
# command (about 6 minutes on an H100; nothing to install: the benchmarks put the checkout on
# sys.path and the machine's torch is used, see device_packages.txt):
#
#   bash scripts/gpu/speed.sh                      # on the GPU machine; everything lands in $OUT
#   DEVICE=cpu QUICK=1 OUT=/tmp/s bash scripts/gpu/speed.sh   # the same commands on a CPU (the test)
#
# 1. profile_step.py: the trainer's compiled bf16 step (model and loss compiled, as `train --compile`)
#    under torch.profiler, then the eager step: wall and host CPU per step, kernel time by kind,
#    the top kernels, the host's launch calls -> $OUT/profile_step_{compiled,eager}.{json,md}
# 2. bench_gpu_step.py: eager, compiled, compiled + length buckets, compiled + buckets +
#    reduce-overhead (CUDA graphs), interleaved on the same batch (tokens/s, MFU); greedy decoding
#    and beam search (4) by recomputation, the eager KV cache and the static cache as a CUDA graph, batch 1 and 64,
#    same tokens checked -> $OUT/speed_step.json
# Each part stops after PART_LIMIT_S seconds (default 300). Each command's log goes to $OUT/*.log; a failing part does not stop the others, and the script
# exits non-zero if any failed. Copy $OUT/* to results/gpu/ to commit them.
set -uo pipefail
export PYTHONUNBUFFERED=1
python=${PYTHON:-python3}
device=${DEVICE:-cuda}
out=${OUT:-_build/speed}
mkdir -p "$out"
if [ -n "${QUICK:-}" ]; then
  profile=(--profile smoke --precision fp32 --warmup 1 --steps 2)
  bench=(--quick)
else
  # The step: the paper's base model, bf16, about 22k target tokens per step.
  profile=(--profile paper --precision bf16 --batch-tokens 24576 --warmup 5 --steps 10)
  bench=(--profile paper --precision bf16 --batch-tokens 24576)
fi
status=0
run() {  # name, command...
  local name=$1
  shift
  echo "[speed] $name: $*"
  timeout --kill-after=20 "${PART_LIMIT_S:-300}" "$@" >"$out/$name.log" 2>&1 || { echo "[speed] $name failed (exit $?), see $out/$name.log"; status=1; }
  tail -n 25 "$out/$name.log"
}
run profile_step_compiled $python benchmarks/profile_step.py --device "$device" "${profile[@]}" \
  --compile --out "$out/profile_step_compiled.json"
run profile_step_eager $python benchmarks/profile_step.py --device "$device" "${profile[@]}" \
  --out "$out/profile_step_eager.json"
run speed_step $python benchmarks/bench_gpu_step.py --device "$device" "${bench[@]}" \
  --out "$out/speed_step.json"
echo "[speed] done, exit $status; files in $out"
exit $status

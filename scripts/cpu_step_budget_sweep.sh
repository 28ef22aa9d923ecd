#!/bin/bash
# The `cpu` recipe's validation sweep at another CPU's step budget: candidates trained for the
# steps that CPU affords them in the profile's 15 minutes, not for 15 minutes of this machine, so that a
# sweep for the slowest CPU kind can run on any machine, one thread, beside other work.
#
# The budget: on the AVX2-only AMD EPYC the recipe made 2,074 steps in 15 minutes (fp32, 2 threads, from a
# fresh clone). A candidate gets 2,074 x (the recipe's step time / its own), both timed here by
# `probe` (150 steps, fp32, one thread, PyTorch's and oneDNN's kernels held to AVX2, MKL too); snapshots
# every fifteenth of its steps stand for the profile's one a minute. Each candidate is scored on the
# validation split only (the test set is scored once, for the candidate chosen):
#
#   bash scripts/cpu_step_budget_sweep.sh probe A "" D "--batch-tokens 768"   # step times
#   bash scripts/cpu_step_budget_sweep.sh train A 2074 "" D 2917 "--batch-tokens 768"
#
# PRECISION=bf16 KERNELS=native sweeps for a CPU whose `auto` trains in bf16 on its own kernels (then
# time the probes with PROBE_THREADS=2 on a quiet machine, as the profile trains).
#
# Then `python scripts/record_cpu_candidate.py --folder tuning_multi30k_avx2 runs/budget/A "..."`.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-.venv/bin/python}
out=${SWEEP_DIR:-runs/budget}
mkdir -p "$out"
if [ "${KERNELS:-avx2}" = avx2 ]; then
  export ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2
fi
common=(--profile cpu --no-eval --overwrite --precision "${PRECISION:-fp32}" --minutes 1000)
mode=$1
shift
if [ "$mode" = probe ]; then
  while [ $# -ge 2 ]; do
    name=$1 flags=$2
    shift 2
    log="$out/probe_$name.log"
    # shellcheck disable=SC2086  # the flags are words on purpose
    if ! "$python" -m annotated_transformer train "${common[@]}" --threads "${PROBE_THREADS:-1}" --out "$out/probe_$name" \
      --max-steps 150 --eval-every 0 $flags >"$log" 2>&1; then
      echo "$name: the probe failed, see $log" >&2
      exit 1
    fi
    grep -a '^done' "$log" | sed "s/^/$name: /"
  done
elif [ "$mode" = train ]; then
  while [ $# -ge 3 ]; do
    name=$1 steps=$2 flags=$3
    shift 3
    echo "=== $name: $steps steps ($flags) $(date -u +%H:%M:%S), load $(cut -d' ' -f1 /proc/loadavg)"
    # shellcheck disable=SC2086
    "$python" -m annotated_transformer train "${common[@]}" --threads 1 --out "$out/$name" --max-steps "$steps" \
      --save-every-steps $((steps / 15)) --save-every-minutes 1000 $flags
    "$python" -m annotated_transformer evaluate --checkpoint "$out/$name" --split val \
      --hypotheses "$out/$name.val.de"
  done
else
  echo "usage: $0 probe NAME FLAGS ... | train NAME STEPS FLAGS ..." >&2
  exit 2
fi

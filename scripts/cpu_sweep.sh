#!/bin/bash
# The `cpu` recipe's validation sweep: each candidate trains 15 minutes on the 2 cores with
# `train --profile cpu --no-eval` plus its flags, then is scored on the validation split only (the test
# set is scored once, for the candidate chosen, by `evaluate` on its run folder). Run on a quiet machine,
# one candidate at a time:
#
#   bash scripts/cpu_sweep.sh A "" B "--lr 3e-3" C "--vocab-size 5000"
#
# Then `python scripts/record_cpu_candidate.py runs/sweep/A "the profile's recipe"` files each
# candidate as results/tuning_multi30k_cpu/valid_A.json (+ valid_A.de, its translations).
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-.venv/bin/python}
out=${SWEEP_DIR:-runs/sweep}
mkdir -p "$out"
while [ $# -ge 2 ]; do
  name=$1 flags=$2
  shift 2
  echo "=== $name ($flags) $(date -u +%H:%M:%S), load $(cut -d' ' -f1 /proc/loadavg)"
  # shellcheck disable=SC2086  # the flags are words on purpose
  "$python" -m annotated_transformer train --profile cpu --no-eval --overwrite --out "$out/$name" $flags
  "$python" -m annotated_transformer evaluate --checkpoint "$out/$name" --split val \
    --hypotheses "$out/$name.val.de"
done

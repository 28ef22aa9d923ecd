#!/usr/bin/env bash
# Table 3 at the gpu scale past chapter 06's budget, in one call on one GPU (issue 49): all 20
# rows x 3 seeds (dropout's base, D1 and D2 also on their small corpus), one epoch a round, several
# processes sharing the GPU, until the minutes end or every job reaches its epochs. `table3
# --minutes` starts no epoch after MINUTES, so what comes back is whole epochs: every finished round
# is a whole Table 3 at that budget, and chapter 06 reads the verdicts of each.
#
#   AT_DATA_DIR=/path/to/data bash scripts/gpu/table3_extended.sh
#   DEVICE=cpu QUICK=1 OUT=/tmp/t bash scripts/gpu/table3_extended.sh   # the same on a CPU (the test)
#
# Writes results/table3_extended_<profile>/runs.json (what chapter 06 reads), the command's log and
# the GPU's utilisation every 5 seconds (nvidia-smi, where there is one: how busy the processes kept
# it) in BUILD_DIR/table3_extended_<profile>/ (default _build), and, when $OUT is set,
# $OUT/table3_extended_<profile>.tgz holding those three. The run folder's checkpoints (about
# 100 MB a job) stay on the machine: a second call on a warm machine continues the run, a fresh
# machine starts afresh, so size MINUTES to the call. WORKERS (default 8; the calibration measured
# 4), EPOCHS (12, the cpu extended run's), SMALL_EPOCHS (60) and MINUTES (8) change it.
set -uo pipefail
export AT_OFFLINE=${AT_OFFLINE:-1} PYTHONUNBUFFERED=1
python=${PYTHON:-python3}
profile=${PROFILE:-gpu}
device=${DEVICE:-cuda}
workers=${WORKERS:-8}
epochs=${EPOCHS:-12}
small=${SMALL_EPOCHS:-60}
minutes=${MINUTES:-8}
rows=(base A1 A2 A3 A4 B1 B2 C1 C2 C3 C4 C5 C6 C7 D1 D2 D3 D4 E big)
seeds=(1 2 3)
if [ -n "${QUICK:-}" ]; then
  profile=smoke rows=(base C1 D1) seeds=(1) epochs=1 small=1 workers=2 minutes=${MINUTES:-5}
fi
name=table3_extended_$profile
side=${BUILD_DIR:-_build}/$name
rm -rf "$side" && mkdir -p "$side"
export_to=results/$name/runs.json
run_dir=${RUN_DIR:-runs/table3-$profile-extended}  # on a warm machine a second call continues it
# the quick check keeps to its own folder, never near the smoke profile's committed run
[ -n "${QUICK:-}" ] && export_to=$side/runs.json run_dir=$side/run
log=$side/log.txt
sampler=
if command -v nvidia-smi > /dev/null && [ "$device" != cpu ]; then
  nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv -l 5 \
    > "$side/gpu_utilisation.csv" 2>&1 &
  sampler=$!
fi
started=$(date -u +%H:%M:%S)
# --minutes stops the run cleanly; the timeout only if an epoch hangs (SIGINT: each job saves)
timeout --signal=INT --kill-after=30 $(( ${minutes%.*} * 60 + 180 )) \
  $python -m annotated_transformer table3 --profile "$profile" --device "$device" \
  --rows "${rows[@]}" --seeds "${seeds[@]}" --epochs "$epochs" --small-epochs "$small" \
  --workers "$workers" --minutes "$minutes" --out "$run_dir" \
  --export "$export_to" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
if [ "$status" -ne 0 ]; then
  # cut short: what finished is still worth its verdicts
  $python -m annotated_transformer table3 --profile "$profile" \
    --out "$run_dir" --export-only --export "$export_to" 2>&1 | tee -a "$log"
fi
[ -n "$sampler" ] && kill "$sampler" 2> /dev/null
echo "[table3_extended] $started to $(date -u +%H:%M:%S) UTC, $workers processes, exit $status" | tee -a "$log"
if [ -n "${OUT:-}" ]; then
  packed=()
  for path in "$log" "$side/gpu_utilisation.csv" "$export_to"; do
    [ -f "$path" ] && packed+=("$path")
  done
  tar -czf "$OUT/$name.tgz" "${packed[@]}" && echo "[table3_extended] packed into \$OUT/$name.tgz"
fi
exit "$status"

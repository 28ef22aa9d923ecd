#!/usr/bin/env bash
# Table 3 at the gpu scale past chapter 06's budget on one GPU: all 20 rows x 3 seeds (dropout's
# base, D1 and D2 also on their small corpus), one epoch a round, several processes sharing the GPU,
# until MINUTES have passed or every job reaches its epochs. `table3 --minutes` starts no epoch after
# MINUTES, so what it exports is whole epochs: every finished round is a whole Table 3 at that
# budget, and chapter 06 reads the verdicts of each.
#
#   AT_DATA_DIR=/path/to/data bash scripts/gpu/table3_extended.sh OUT
#   GROUP=findings AT_DATA_DIR=/path/to/data bash scripts/gpu/table3_extended.sh OUT   # one part
#   DEVICE=cpu QUICK=1 bash scripts/gpu/table3_extended.sh OUT   # a smoke run on a CPU
#
# GROUP trains one part of the rows, where one run cannot train all 69 jobs: findings (base A1 A4
# B1 D1 D2 E, with dropout's small corpus: five of the six findings), size (C1-C7: bigger is
# better) or rest (A2 A3 B2 D3 D4 big: the rank correlation's other rows); the default, all, trains
# all 20 rows. Parts run on different machines are joined with `table3 --merge`.
#
# Writes the export (OUT/runs.json), the command's log (OUT/log.txt) and the GPU's utilisation every
# 5 seconds (OUT/gpu_utilisation.csv, from nvidia-smi where there is one: how busy the processes
# kept it). The export is never written into results/: merge it into
# results/table3_extended_<profile>/runs.json, which chapter 06 reads, with `python -m
# annotated_transformer table3 --merge OUT/runs.json --export results/table3_extended_<profile>/runs.json`
# (a job the file holds keeps the longer curve). The run folder (runs/table3-<profile>[-<group>];
# about 100 MB of checkpoints a job) stays in the clone, and the same command run again there
# continues it.
#
# MINUTES (default 8) bounds the training, WORKERS (default 8; the calibration measured 4) the
# processes; EPOCHS (12, the cpu extended run's) and SMALL_EPOCHS (60) are the targets.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
profile=${PROFILE:-gpu}
workers=${WORKERS:-8}
epochs=${EPOCHS:-12}
small=${SMALL_EPOCHS:-60}
minutes=${MINUTES:-8}
group=${GROUP:-all}
case $group in
  all) rows=(base A1 A2 A3 A4 B1 B2 C1 C2 C3 C4 C5 C6 C7 D1 D2 D3 D4 E big) ;;
  findings) rows=(base A1 A4 B1 D1 D2 E) ;;
  size) rows=(C1 C2 C3 C4 C5 C6 C7) ;;
  rest) rows=(A2 A3 B2 D3 D4 big) ;;
  *) echo "table3_extended.sh: GROUP=$group is not a part; choose all, findings, size or rest" >&2
     exit 2 ;;
esac
seeds=(1 2 3)
if [ -n "${QUICK:-}" ]; then
  profile=smoke seeds=(1) epochs=1 small=1 workers=2 minutes=${MINUTES:-5}
  [ "$group" = all ] && rows=(base C1 D1) || rows=("${rows[@]:0:2}")
fi
if ! awk -v m="$minutes" 'BEGIN { exit !(m ~ /^[0-9]*\.?[0-9]+$/ && m + 0 > 0) }'; then
  echo "table3_extended.sh: MINUTES=$minutes is not a positive number of minutes" >&2
  exit 2
fi
[ $# -eq 1 ] || usage "OUT (the output folder)"
side=$1
export_to=$side/runs.json
if [ -e "$export_to" ]; then
  echo "table3_extended.sh: $export_to exists; give a new output folder" >&2
  exit 2
fi
mkdir -p "$side"
run_dir=runs/table3-$profile
[ "$group" = all ] || run_dir=${run_dir}-$group  # a part's jobs, and only those, in its folder
[ -n "${QUICK:-}" ] && run_dir=$side/run  # the smoke check keeps to its own folder
log=$side/log.txt
sampler=
trap '[ -n "$sampler" ] && kill "$sampler" 2> /dev/null' EXIT
if command -v nvidia-smi > /dev/null && [ "$device" != cpu ]; then
  nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv -l 5 \
    > "$side/gpu_utilisation.csv" 2>&1 &
  sampler=$!
fi
started=$(date -u +%H:%M:%S)
$python -m annotated_transformer table3 --profile "$profile" --device "$device" \
  --rows "${rows[@]}" --seeds "${seeds[@]}" --epochs "$epochs" --small-epochs "$small" \
  --workers "$workers" --minutes "$minutes" --out "$run_dir" \
  --export "$export_to" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
if [ "$status" -ne 0 ]; then
  # stopped or failed: the epochs that finished are still worth their verdicts
  $python -m annotated_transformer table3 --profile "$profile" \
    --out "$run_dir" --export-only --export "$export_to" 2>&1 | tee -a "$log"
fi
echo "[table3_extended] $started to $(date -u +%H:%M:%S) UTC, $workers processes, exit $status" | tee -a "$log"
exit "$status"

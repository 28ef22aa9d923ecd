#!/usr/bin/env bash
# Table 3 at the gpu scale past chapter 06's budget, in one call on one GPU: all 20
# rows x 3 seeds (dropout's base, D1 and D2 also on their small corpus), one epoch a round, several
# processes sharing the GPU, until the minutes end or every job reaches its epochs. `table3
# --minutes` starts no epoch after MINUTES, so what comes back is whole epochs: every finished round
# is a whole Table 3 at that budget, and chapter 06 reads the verdicts of each.
#
#   AT_DATA_DIR=/path/to/data bash scripts/gpu/table3_extended.sh
#   GROUP=findings AT_DATA_DIR=/path/to/data bash scripts/gpu/table3_extended.sh   # one part
#   DEVICE=cpu QUICK=1 OUT=/tmp/t bash scripts/gpu/table3_extended.sh   # a smoke run on a CPU
#
# GROUP trains one part of the run, for a call too short for all 69 jobs (each call is a fresh
# machine: what one part trained cannot be continued by the next, only merged with it, `table3
# --merge`): findings (base A1 A4 B1 D1 D2 E, with dropout's small corpus: five of the six
# findings), size (C1-C7: bigger is better) or rest (A2 A3 B2 D3 D4 big: the rank correlation's
# other rows); the default, all, trains all 20 rows. A part's files are named after it
# (table3_extended_<profile>_<group>).
#
# Writes the export (runs.json), the command's log and the GPU's utilisation every 5 seconds
# (nvidia-smi, where there is one: how busy the processes kept it) to
# BUILD_DIR/table3_extended_<profile>/ (default _build), and, when $OUT is set,
# $OUT/table3_extended_<profile>.tgz holding those three. The export is never written into
# results/: merge it into results/table3_extended_<profile>/runs.json, which chapter 06 reads,
# with `python -m annotated_transformer table3 --merge runs.json --export
# results/table3_extended_<profile>/runs.json` (a job the file holds keeps the longer curve). The
# run folder (runs/table3-<profile>[-<group>]; about 100 MB of checkpoints a job) stays on the
# machine: a second call on a warm machine continues it, a fresh machine starts afresh.
#
# LIMIT_S (default 570) bounds the whole script, under the device's 10 minutes a call; MINUTES
# (default 8) must leave 90 s of it (a minute for the epochs still running, then the export and
# the packing), or the script refuses before any work. WORKERS (default 8; the calibration measured 4), EPOCHS (12,
# the cpu extended run's) and SMALL_EPOCHS (60) change the run.
set -uo pipefail
export AT_OFFLINE=${AT_OFFLINE:-1} PYTHONUNBUFFERED=1
python=${PYTHON:-python3}
profile=${PROFILE:-gpu}
device=${DEVICE:-cuda}
workers=${WORKERS:-8}
epochs=${EPOCHS:-12}
small=${SMALL_EPOCHS:-60}
minutes=${MINUTES:-8}
limit=${LIMIT_S:-570}
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
seconds=$(awk -v m="$minutes" 'BEGIN { if (m + 0 > 0) printf "%d", m * 60; else print "bad" }')
if [ "$seconds" = bad ] || [ $(( seconds + 90 )) -gt "$limit" ]; then
  echo "table3_extended.sh: MINUTES=$minutes does not fit LIMIT_S=$limit (it needs a positive" \
    "number of minutes with 90 s of the limit to spare); lower MINUTES or raise LIMIT_S" >&2
  exit 2
fi
name=table3_extended_$profile
[ "$group" = all ] || name=${name}_$group
side=${BUILD_DIR:-_build}/$name
mkdir -p "$side"
export_to=$side/runs.json
# an earlier call's export is kept beside, never removed; its utilisation file was this script's
[ -f "$export_to" ] && mv "$export_to" "$side/runs.$(date -u +%Y%m%dT%H%M%S).json"
rm -f "$side/gpu_utilisation.csv"
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
# --minutes stops the run cleanly; the timeout only if an epoch hangs (SIGINT: each job saves),
# 30 s before the limit, which leaves the export of what finished and the packing their time
timeout --signal=INT --kill-after=10 $(( limit - 30 )) \
  $python -m annotated_transformer table3 --profile "$profile" --device "$device" \
  --rows "${rows[@]}" --seeds "${seeds[@]}" --epochs "$epochs" --small-epochs "$small" \
  --workers "$workers" --minutes "$minutes" --out "$run_dir" \
  --export "$export_to" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
if [ "$status" -ne 0 ]; then
  # cut short or failed: the epochs that finished are still worth their verdicts
  $python -m annotated_transformer table3 --profile "$profile" \
    --out "$run_dir" --export-only --export "$export_to" 2>&1 | tee -a "$log"
fi
echo "[table3_extended] $started to $(date -u +%H:%M:%S) UTC, $workers processes, exit $status" | tee -a "$log"
if [ -n "${OUT:-}" ]; then
  packed=()
  for path in "$log" "$side/gpu_utilisation.csv" "$export_to"; do
    [ -f "$path" ] && packed+=("$path")
  done
  tar -czf "$OUT/$name.tgz" "${packed[@]}" && echo "[table3_extended] packed into \$OUT/$name.tgz"
fi
exit "$status"

#!/usr/bin/env bash
# What sizes the `gpu` book's chapters 06 and 07, and fp16 against bf16, measured on one GPU. Each
# step writes its own folder in OUT (committed as results/gpu/book_calibration/ and, for the
# calibration of Table 3's schedule, results/tuning_table3_gpu/), with its log and wall time, so a
# run stopped early keeps every step it finished:
#
#   1. table3_costs: Table 3's row-epoch at the gpu scale, the same five jobs (base, C1, C3 and big
#      on the whole corpus, base on dropout's small one) in one process, then in four that share
#      the GPU: seconds per row-epoch and the throughput of processes side by side.
#   2. table3_calibration: warm-up and peak chosen on base's validation perplexity at the gpu scale
#      after two epochs (scripts/table3_calibration.py, rule in its docstring), four processes
#      sharing the GPU.
#   3. fp16: the gpu recipe's first 1,000 steps in fp16 with a gradient scaler (seed 1) beside bf16
#      (seeds 1 and 2: the seed-to-seed spread is the noise fp16 is judged against), eager, three
#      processes sharing the GPU.
#   4. parser_epochs: three epochs of the gpu profile's parser recipe on all the training trees,
#      seconds per epoch and dev F1 (parser-curve --device).
#   5. sdpa_backends: the start-up of step 1 (45-55 s before a process's first row runs at speed,
#      again for a row of another width and for new batch shapes) has the pattern of cuDNN's
#      attention building an execution plan for every new (batch, length) shape. The package now
#      leaves cuDNN's attention out where shapes vary (runtime/attention_kernels.py); the same rows
#      in fresh processes as the package runs them (cudnn_out) and with cuDNN's attention allowed
#      in torch's order (cudnn_in, AT_CUDNN_ATTENTION=1), seconds per job.
#   6. table3_all_rows: one epoch of all 20 rows, one seed, dropout's rows one small-corpus epoch,
#      four processes (SDPA_ENV=AT_CUDNN_ATTENTION=1 to run it with cuDNN's attention, should step
#      5 find it faster): what an epoch of chapter 06's table costs per seed.
#
#   AT_DATA_DIR=/path/to/data bash scripts/gpu/calibrate_book.sh OUT [STEP ...]
#
# The default steps are the first four. PROFILE (default gpu), DEVICE (default cuda) and QUICK=1 (a
# few steps of each, to check the script on a CPU first) change what it runs.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
profile=${PROFILE:-gpu}
quick=${QUICK:-0}
[ $# -ge 1 ] || usage "OUT [STEP ...]"
root=$1
shift
mkdir -p "$root"
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(table3_costs table3_calibration fp16 parser_epochs)
rows_all=(base A1 A2 A3 A4 B1 B2 C1 C2 C3 C4 C5 C6 C7 D1 D2 D3 D4 E big)

timed() {  # step, command...: run it with its log and wall time in the step's folder
  local step=$1
  shift
  local started=$(date +%s%N)
  "$@" > "$root/$step/log.txt" 2>&1
  local status=$? ms=$(( ($(date +%s%N) - started) / 1000000 ))
  echo "{\"step\": \"$step\", \"command\": \"$*\", \"status\": $status, \"wall_ms\": $ms}" \
    >> "$root/$step/walls.jsonl"
  tail -3 "$root/$step/log.txt"
  return $status
}

table3_costs() {
  local d=$root/table3_costs epochs=1
  mkdir -p "$d"
  local rows=(base C1 C3 big)
  [ "$quick" = 1 ] && rows=(base C1)
  for workers in 1 4; do
    # the same jobs, so the two walls compare the processes, not the rows
    timed table3_costs $python -m annotated_transformer table3 --profile "$profile" \
      --device "$device" --epochs $epochs --small-epochs 1 --seeds 1 --rows "${rows[@]}" \
      --workers $workers --out "$d/workers_$workers" || return 1
    mv "$d/log.txt" "$d/log_workers_$workers.txt"
    # the checkpoints are not needed to read the costs
    find "$d/workers_$workers" -name "*.pt" -delete
  done
}

table3_calibration() {
  local d=$root/table3_calibration epochs=2
  mkdir -p "$d"
  [ "$quick" = 1 ] && epochs=1
  # around the cpu profile's choice (warm-up 200, peak 4e-3 at d_model 64), its peak moved to
  # d_model 256 by the paper's d_model^-0.5 (2e-3), warm-ups under the ~270 steps of two epochs
  timed table3_calibration $python scripts/table3_calibration.py --profile "$profile" \
    --device "$device" --workers 4 --epochs $epochs \
    --candidate 100:2e-3 --candidate 200:2e-3 --candidate 100:4e-3 --candidate 100:1e-3 \
    --out "$d/calibration.json"
}

fp16() {
  local d=$root/fp16 steps=1000
  mkdir -p "$d"
  [ "$quick" = 1 ] && steps=20
  shared_tokenizer || return 1
  local pids=()
  for run in fp16:1 bf16:1 bf16:2; do
    local precision=${run%:*} seed=${run#*:}
    OMP_NUM_THREADS=4 $python -m annotated_transformer train --profile "$profile" \
      --device "$device" --precision "$precision" --seed "$seed" --max-steps $steps \
      --minutes 30 --no-compile --no-eval --log-every 25 --eval-every 250 \
      --save-every-steps $steps --out "$d/${precision}_seed$seed" \
      > "$d/log_${precision}_seed$seed.txt" 2>&1 &
    pids+=($!)
  done
  local status=0
  wait_all "${pids[@]}" || status=1
  find "$d" -name "*.pt" -delete
  tail -n 2 "$d"/log_*.txt
  return $status
}

parser_epochs() {
  local d=$root/parser_epochs epochs=3
  mkdir -p "$d"
  # the gpu profile's parser recipe (profiles.py, chapter 07's sizes): 3 layers at d_model 256,
  # dropout 0.2, 4,096-token batches, warm-up 800
  local recipe=(--shares 1 --layers 3 --d-model 256 --heads 4 --dropout 0.2 --batch-tokens 4096)
  if [ "$quick" = 1 ]; then
    epochs=1 recipe=(--shares 0.05 --layers 1 --d-model 32 --heads 2 --dropout 0.2 --batch-tokens 1024)
  fi
  timed parser_epochs $python -m annotated_transformer parser-curve --device "$device" \
    "${recipe[@]}" --warmup 800 --min-epochs $epochs --max-epochs $epochs --out "$d/run"
  find "$d" -name "*.pt" -delete
}

sdpa_backends() {
  local d=$root/sdpa_backends
  mkdir -p "$d"
  local rows=(base C1 big)
  [ "$quick" = 1 ] && rows=(base C1)
  # cudnn_out (the package's default) first: whatever a first process pays once on a fresh machine
  # (file and page caches) then counts against the default, not for it. cuDNN's plans are cached
  # per process, so each order starts from none.
  for order in cudnn_out cudnn_in; do
    local env=(AT_CUDNN_ATTENTION=0)
    [ $order = cudnn_in ] && env=(AT_CUDNN_ATTENTION=1)
    timed sdpa_backends env "${env[@]}" $python -m annotated_transformer table3 \
      --profile "$profile" --device "$device" --epochs 1 --small-epochs 1 --seeds 1 \
      --rows "${rows[@]}" --workers 1 --out "$d/$order" || return 1
    mv "$d/log.txt" "$d/log_$order.txt"
    find "$d/$order" -name "*.pt" -delete
  done
}

table3_all_rows() {
  local d=$root/table3_all_rows
  mkdir -p "$d"
  local rows=("${rows_all[@]}")
  [ "$quick" = 1 ] && rows=(base C1 D1)
  timed table3_all_rows env ${SDPA_ENV:-} $python -m annotated_transformer table3 \
    --profile "$profile" --device "$device" --epochs 1 --small-epochs 1 --seeds 1 \
    --rows "${rows[@]}" --workers 4 --out "$d/run"
  find "$d/run" -name "*.pt" -delete
}

known=" table3_costs table3_calibration fp16 parser_epochs sdpa_backends table3_all_rows "
for step in "${steps[@]}"; do  # every name checked before any step runs
  [[ "$known" == *" $step "* ]] || { echo "calibrate_book.sh: no step '$step'; choose from$known" >&2; exit 2; }
done
status=0
for step in "${steps[@]}"; do
  echo "[$step] $(date -u +%H:%M:%S)"
  "$step" || { echo "[$step] failed"; status=1; }
done
exit $status

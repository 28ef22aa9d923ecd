#!/usr/bin/env bash
# Chapter 07's parser on one GPU: candidates for the `gpu` profile's recipe, chosen on the 273
# development trees only ("the parser at a larger model, chosen on validation"). Each
# candidate is `scripts/parser_sweep.py` (tags in the slots, as chapter 07 trains): trained on all
# the training files for whole epochs, every snapshot scored on dev greedily, then the average of
# the last ones greedy and with beam 21. Four candidates at a time share the GPU (measured on an
# H100: four processes each train as fast as one alone, results/gpu/book_calibration/).
#
#   AT_DATA_DIR=/path/to/data bash scripts/gpu/parser_sweep.sh OUT
#
# Writes OUT/<name>/dev_curve.json (with the candidate's checkpoints beside it) and OUT/<name>.log;
# run by hand again into the same OUT, it skips the candidates that finished. EPOCHS (default 50) and
# DEVICE (default cuda) change what it runs; QUICK=1 runs two epochs of tiny candidates, to check the
# script on a CPU first.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
epochs=${EPOCHS:-50}
[ $# -eq 1 ] || usage "OUT (the output folder)"
root=$1
mkdir -p "$root"
# name: flags. Around the profile's unmeasured guess (3+3 layers at d_model 256, dropout 0.2,
# 4,096-token batches, warm-up 800): depth, width, dropout and batch size, one at a time.
candidates=(
  "l3_d256_p2:--layers 3 --d-model 256 --dropout 0.2 --batch-tokens 4096 --warmup 800"
  "l4_d256_p3:--layers 4 --d-model 256 --dropout 0.3 --batch-tokens 4096 --warmup 800"
  "l3_d384_p3:--layers 3 --d-model 384 --heads 6 --dropout 0.3 --batch-tokens 4096 --warmup 800"
  "l3_d256_p2_b2k:--layers 3 --d-model 256 --dropout 0.2 --batch-tokens 2048 --warmup 1600"
)
snapshots=(--snapshot-epochs 5 --average 5)
if [ "${QUICK:-0}" = 1 ]; then
  epochs=2 snapshots=(--snapshot-epochs 1 --average 2 --train-share 0.05)
  candidates=("tiny_a:--layers 1 --d-model 32 --heads 2 --batch-tokens 1024 --warmup 20"
              "tiny_b:--layers 1 --d-model 32 --heads 2 --batch-tokens 2048 --warmup 20")
fi
pids=()
for candidate in "${candidates[@]}"; do
  name=${candidate%%:*} flags=${candidate#*:}
  if [ -f "$root/$name/dev_curve.json" ]; then echo "$name: done before, skipped"; continue; fi
  rm -rf "${root:?}/$name"  # a candidate cut short starts again (its folder holds no result)
  OMP_NUM_THREADS=2 $python scripts/parser_sweep.py "$root/$name" --tags --device "$device" \
    --epochs "$epochs" "${snapshots[@]}" $flags > "$root/$name.log" 2>&1 &
  pids+=($!)
done
status=0
wait_all "${pids[@]}" || status=1
for candidate in "${candidates[@]}"; do
  name=${candidate%%:*}
  [ -f "$root/$name/dev_curve.json" ] && echo "$name: $(tail -n 2 "$root/$name.log" | tr '\n' ' ')"
done
exit $status

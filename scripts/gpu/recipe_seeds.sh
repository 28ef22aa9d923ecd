#!/usr/bin/env bash
# The `gpu` recipe as the profile commits it, seed 1 alone so that its speed is the recipe's own,
# then seeds 2 and 3 side by side on the same GPU for an interval over seeds. Their results do not
# depend on speed as long as each stops at the recipe's 41 epochs, not at a time cap: --minutes
# lifts the profile's 10-minute cap, and a run stopped otherwise fails the script.
#
#   AT_DATA_DIR=/path/to/data bash scripts/gpu/recipe_seeds.sh OUT [EXTRA TRAIN FLAGS...]
#   SEEDS="2 3" AT_DATA_DIR=/path/to/data bash scripts/gpu/recipe_seeds.sh OUT   # those seeds only
#
# OUT mirrors the repository's results: run folders OUT/results/gpu/recipe/seed_N/ (with their logs;
# the checkpoints, *.pt, are not committed) and the published records
# OUT/results/gpu/recipe_d256x4_seedN.json, names of their own so that a reader's
# `train --profile gpu --publish` is never refused over them; copy them into results/gpu/ to commit
# them. A seed whose record OUT already holds is skipped. Seed 1 took 352 s on an H100; seeds 2 and
# 3 together were estimated to take about as long.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
seeds=(${SEEDS:-1 2 3})
for seed in "${seeds[@]}"; do
  [[ "$seed" =~ ^[1-9][0-9]*$ ]] || { echo "recipe_seeds.sh: SEEDS holds '$seed', not a seed" >&2; exit 2; }
done
[ $# -ge 1 ] || usage "OUT [EXTRA TRAIN FLAGS...]"
export AT_RESULTS_DIR=$1/results  # where --publish files the records
shift
published=$AT_RESULTS_DIR/gpu
root=$published/recipe
mkdir -p "$root"
shared_tokenizer || exit 1
run() {  # seed, threads, extra flags...
  local seed=$1 threads=$2
  if [ -f "$published/recipe_d256x4_seed$seed.json" ]; then
    echo "seed $seed: already published, skipped"
    return 0
  fi
  OMP_NUM_THREADS=$threads $python -m annotated_transformer train --profile gpu --seed "$seed" \
    --minutes 30 --out "$root/seed_$seed" --publish --results-name "recipe_d256x4_seed$seed" \
    "${@:3}" > "$root/seed_$seed.log" 2>&1 || { echo "seed $seed: failed, see $root/seed_$seed.log"; return 1; }
  grep -q "(max_epochs)" "$root/seed_$seed.log" \
    || { echo "seed $seed: stopped before the recipe's 41 epochs"; return 1; }
  grep "^done:" "$root/seed_$seed.log"
}
status=0
rest=()
for seed in "${seeds[@]}"; do
  if [ "$seed" = 1 ]; then run 1 "$(nproc)" "$@" || status=1; else rest+=("$seed"); fi
done
# seed 1 alone, so that its speed is the recipe's own; the others side by side
threads=$(threads_each ${#rest[@]})
pids=()
for seed in "${rest[@]}"; do
  run "$seed" "$threads" "$@" &
  pids+=($!)
done
wait_all "${pids[@]}" || status=1
exit $status

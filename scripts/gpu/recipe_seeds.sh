#!/usr/bin/env bash
# The `gpu` recipe as the profile commits it (`train --profile gpu --publish`), seed 1 alone so
# that its speed is the recipe's own, then seeds 2 and 3 side by side on the same GPU (their
# results do not depend on speed: the recipe stops at 41 epochs) for an interval over seeds.
#
#   AT_DATA_DIR=/path/to/data bash scripts/gpu/recipe_seeds.sh [EXTRA TRAIN FLAGS...]
#
# Writes run folders results/gpu/recipe/seed_N/ (checkpoints are not committed: *.pt is ignored)
# and publishes results/gpu/translation_multi30k_en_de.json (seed 1) and
# results/gpu/translation_multi30k_en_de_seed{2,3}.json.
set -uo pipefail
export AT_OFFLINE=${AT_OFFLINE:-1} PYTHONUNBUFFERED=1
python=${PYTHON:-python3}
root=results/gpu/recipe
mkdir -p "$root"
# The shared tokenizer once, before two runs race for its cache.
$python -c "from annotated_transformer.data import tokenizer_for_corpus as t; t('multi30k', 8000)" || exit 1
run() {  # seed, results name, threads
  OMP_NUM_THREADS=$3 $python -m annotated_transformer train --profile gpu --seed "$1" \
    --out "$root/seed_$1" --publish --results-name "$2" "${@:4}" > "$root/seed_$1.log" 2>&1
}
extra=("$@")
status=0
run 1 translation_multi30k_en_de "$(nproc)" "${extra[@]}" || status=1
tail -3 "$root/seed_1.log"
half=$(( $(nproc) / 2 ))
run 2 translation_multi30k_en_de_seed2 "$half" "${extra[@]}" & p2=$!
run 3 translation_multi30k_en_de_seed3 "$half" "${extra[@]}" & p3=$!
wait $p2 || status=1
wait $p3 || status=1
for s in 2 3; do tail -3 "$root/seed_$s.log"; done
exit $status

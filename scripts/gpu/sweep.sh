#!/usr/bin/env bash
# Several `train --profile gpu` variants at once on one GPU (small models leave an H100 mostly idle),
# then each one's averaged checkpoint scored on Multi30k test2016. Used to pick the gpu recipe;
# the runs share the GPU, so their speeds are lower bounds of a run alone.
#
#   AT_DATA_DIR=/path/to/data bash scripts/gpu/sweep.sh OUT MINUTES NAME "FLAGS" [NAME "FLAGS" ...]
#
# Writes the run folders OUT/sweep_<NAME>/, their logs OUT/logs/<NAME>.log and the published
# records OUT/results/gpu/sweep_<NAME>.json (committed in results/gpu/).
set -uo pipefail
[ $# -ge 4 ] && [ $(( ($# - 2) % 2 )) -eq 0 ] \
  || { echo "usage: sweep.sh OUT MINUTES NAME \"FLAGS\" [NAME \"FLAGS\" ...]" >&2; exit 2; }
out=$1 minutes=$2
shift 2
export AT_OFFLINE=${AT_OFFLINE:-1} PYTHONUNBUFFERED=1 AT_RESULTS_DIR=$out/results
log_dir=$out/logs
mkdir -p "$log_dir"
python=${PYTHON:-python3}
# Train the shared tokenizer once, before the runs race for its cache.
$python -c "from annotated_transformer.data import tokenizer_for_corpus as t; t('multi30k', 8000)" || exit 1
n=$(( $# / 2 ))
threads=$(( $(nproc) / n ))
[ "$threads" -gt 0 ] || threads=1
pids=()
while [ $# -ge 2 ]; do
  name=$1 flags=$2; shift 2
  # shellcheck disable=SC2086
  OMP_NUM_THREADS=$threads $python -m annotated_transformer train --profile gpu --minutes "$minutes" \
      --out "$out/sweep_$name" --publish --results-name "sweep_$name" $flags > "$log_dir/$name.log" 2>&1 &
  pids+=($!)
  echo "started $name: $flags"
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
for f in "$log_dir"/*.log; do echo "== $f"; grep -E "^(training|done|results)|Error|error" "$f" | tail -5; done
exit $status

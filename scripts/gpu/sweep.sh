#!/usr/bin/env bash
# Several `train --profile gpu` variants at once on one GPU (small models leave an H100 mostly idle),
# then each one's averaged checkpoint scored on Multi30k test2016. Used to pick the gpu recipe;
# the runs share the GPU, so their speeds are lower bounds of a run alone.
#
#   AT_DATA_DIR=/path/to/data bash scripts/gpu/sweep.sh OUT MINUTES NAME "FLAGS" [NAME "FLAGS" ...]
#
# Writes the run folders OUT/sweep_<NAME>/, their logs OUT/logs/<NAME>.log and the published
# records OUT/results/gpu/sweep_<NAME>.json (committed in results/gpu/).
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
[ $# -ge 4 ] && [ $(( ($# - 2) % 2 )) -eq 0 ] || usage 'OUT MINUTES NAME "FLAGS" [NAME "FLAGS" ...]'
out=$1 minutes=$2
shift 2
export AT_RESULTS_DIR=$out/results
log_dir=$out/logs
mkdir -p "$log_dir"
shared_tokenizer || exit 1
threads=$(threads_each $(( $# / 2 )))
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
wait_all "${pids[@]}" || status=1
for f in "$log_dir"/*.log; do echo "== $f"; grep -E "^(training|done|results)|Error|error" "$f" | tail -5; done
exit $status

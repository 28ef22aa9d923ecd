#!/usr/bin/env bash
# Chapters of the `gpu` book on a GPU machine, executed as a reader runs them (papermill, no site:
# the site is built where jupyter-book is installed), with everything they wrote packed into one
# file for the trip back:
#
#   AT_DATA_DIR=/path/to/data bash scripts/gpu/run_chapters.sh 01 02 03
#
# Writes $OUT/chapters_<NN-NN>.tgz (when $OUT is set, as on the device machine) holding the executed
# notebooks (_build/executed/gpu/; a chapter that failed or was cut short: _build/failed/gpu/), the
# profile's results folder (results/gpu/, with book_run.json:
# each chapter's time, device and commit) and the run's log. `results/book_gpu/` is made from it.
# PROFILE (default gpu) and DEVICE (default auto) change what it runs; LIMIT_S stops the run after
# that many seconds (the chapter then running is recorded as interrupted), so that a fixed call
# still returns what finished.
set -uo pipefail
export AT_OFFLINE=${AT_OFFLINE:-1} PYTHONUNBUFFERED=1
python=${PYTHON:-python3}
profile=${PROFILE:-gpu}
device=${DEVICE:-auto}
[ $# -eq 0 ] && { echo "usage: run_chapters.sh NN [NN ...]" >&2; exit 2; }
name="chapters_$1"
[ $# -gt 1 ] && name="chapters_$1-${!#}"
log=_build/$name.log
mkdir -p _build "results/$profile"
# The committed run's records (results/book_<profile>/) into the profile's results folder first,
# where missing, so that a chapter reading another's results (the introduction, 05 and 08 after
# 04) sees the whole run, not just this call's. `book --import-run` takes back only the chapters
# that ran here. (Run in a clone of your own, these copies show up as untracked files.)
if [ -d "results/book_$profile" ]; then
  for f in "results/book_$profile"/*.json; do
    [ -e "results/$profile/$(basename "$f")" ] || cp "$f" "results/$profile/"
  done
fi
started=$(date -u +%H:%M:%S)
# SIGINT, as Ctrl-C: the book records the chapter it cuts short and keeps every one published
timeout --signal=INT --kill-after=15 "${LIMIT_S:-100000}" \
  $python -m annotated_transformer book --profile "$profile" --device "$device" --no-build \
  --chapters "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
echo "[chapters] $started to $(date -u +%H:%M:%S) UTC, exit $status" | tee -a "$log"
if [ -n "${OUT:-}" ]; then
  # what exists of: the executed notebooks, the notebook of a chapter that failed or was cut
  # short (its cells carry their durations: where the time went), the results and the log
  packed=()
  for path in "_build/executed/$profile" "_build/failed/$profile" "results/$profile" "$log"; do
    [ -e "$path" ] && packed+=("$path")
  done
  tar -czf "$OUT/$name.tgz" --exclude="*.pt" "${packed[@]}" && echo "[chapters] packed into \$OUT/$name.tgz"
fi
exit $status

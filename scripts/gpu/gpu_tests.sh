#!/usr/bin/env bash
# The tests that need a CUDA device (marked `gpu`, skipped elsewhere: tests/support/gpu.py), run at
# the start of a GPU run, before its timings mean anything: CUDA-graph capture and replay of the
# decoders, translate with graphs, the loss's softmax kernels against the CPU's row blocks, the
# KV caches kept in bf16 (about a minute with the imports):
#
#   bash scripts/gpu/gpu_tests.sh                  # on the GPU machine; the record lands in $OUT
#   OUT=/tmp/g bash scripts/gpu/gpu_tests.sh       # on a CPU: every selected test is skipped
#
# Only the test files that import the mark are collected, so a test module needing a package the
# GPU machine lacks (the site's builder, a browser) is never imported there. Writes
# $OUT/gpu_tests.xml (JUnit: each test's outcome and time) and $OUT/gpu_tests.log; exits as pytest
# does. Runs from the repository root wherever it is called from.
set -uo pipefail
python=${PYTHON:-python3}
out=${OUT:-_build/gpu_tests}
mkdir -p "$out" && out=$(cd "$out" && pwd)
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 2
mapfile -t files < <(grep -rlE "from tests\.support\.gpu import" tests --include="test_*.py" | sort)
[ ${#files[@]} -gt 0 ] || { echo "gpu_tests.sh: no test file uses tests/support/gpu.py" >&2; exit 2; }
echo "gpu_tests.sh: collecting ${files[*]}"
$python -m pytest "${files[@]}" -m gpu -q -p no:cacheprovider -rs \
  --junitxml "$out/gpu_tests.xml" 2>&1 | tee "$out/gpu_tests.log"
status=${PIPESTATUS[0]}
# pytest exits 5 when every test was deselected: not one marked test in those files
[ "$status" -eq 5 ] && echo "gpu_tests.sh: the files name the mark but no test is marked gpu" >&2
exit "$status"

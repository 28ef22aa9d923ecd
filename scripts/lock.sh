#!/usr/bin/env bash
# Refresh requirements.lock, the exact versions scripts/setup.sh installs by default, from
# requirements.txt (the lower bounds). Run it after scripts/setup.sh, since it reads the
# requirements of the torch installed in .venv, then run the test suite before committing the lock.
#
#   bash scripts/lock.sh                          # re-resolve, keeping every pin that still fits
#   bash scripts/lock.sh --upgrade                # move everything to the newest allowed versions
#   bash scripts/lock.sh --upgrade-package numpy  # move one package
#
# Extra arguments go to `uv pip compile`. uv (not needed to install the lock, which takes only pip)
# is installed on first use into .cache/uv-tool, or taken from $UV.
#
# torch is left out of the lock: setup.sh installs the build for your hardware first, and the lock
# installs on top of it. The lock pins torch's own requirements as the installed torch states them
# (filelock, sympy, networkx, ...), but never its CUDA libraries (nvidia-*, cuda-*, triton).
# The resolution is universal (Linux, macOS, Windows) for Python >= LOCK_PYTHON.
set -euo pipefail
cd "$(dirname "$0")/.."

UV_VERSION=0.13.9
LOCK_PYTHON=3.11.5 # soupsieve (via the book's Sphinx theme) needs 3.11.5
LOCK=requirements.lock
PY=.venv/bin/python

if [ ! -x "$PY" ] || ! "$PY" -c "import torch" 2>/dev/null; then
  echo "[lock] no torch in .venv: run scripts/setup.sh first" >&2
  exit 1
fi
TORCH_VERSION=$("$PY" -c "import torch; print(torch.__version__)")

UV=${UV:-}
if [ -z "$UV" ]; then
  UV=.cache/uv-tool/bin/uv
  if [ ! -x "$UV" ] || [ "$("$UV" --version | cut -d' ' -f2)" != "$UV_VERSION" ]; then
    echo "[lock] installing uv $UV_VERSION into .cache/uv-tool"
    "$PY" -m venv .cache/uv-tool
    .cache/uv-tool/bin/python -m pip install --quiet "uv==$UV_VERSION"
  fi
fi

# torch's requirements without extras and without its CUDA libraries.
torch_requires() {
  "$PY" - <<'EOF'
import re
from importlib.metadata import requires

for req in requires("torch") or []:
    name = re.match(r"[A-Za-z0-9._-]+", req).group(0).lower()
    if "extra ==" in req or re.match(r"(nvidia|cuda|triton|pytorch-triton)", name):
        continue
    print(req)
EOF
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo torch >"$work/excludes.txt"

echo "[lock] resolving requirements.txt without torch, against torch $TORCH_VERSION's requirements"
# Existing pins in the lock are kept where they still fit (uv prefers them) unless --upgrade.
[ -f "$LOCK" ] && cp "$LOCK" "$work/lock.txt"
torch_requires | UV_PYTHON_DOWNLOADS=never "$UV" pip compile requirements.txt - \
  --excludes "$work/excludes.txt" \
  --universal --python-version "$LOCK_PYTHON" --python "$PY" \
  --generate-hashes --no-header --quiet \
  -o "$work/lock.txt" "$@"

if grep -qiE '^(torch|nvidia|cuda|triton|pytorch-triton)[a-z0-9._-]*==' "$work/lock.txt"; then
  echo "[lock] torch or a CUDA library slipped into the lock; not writing it" >&2
  exit 1
fi

{
  echo "# Exact versions the test suite passed with; scripts/setup.sh installs them by default"
  echo "# (AT_UNLOCKED=1 bash scripts/setup.sh takes requirements.txt's lower bounds instead)."
  echo "# Written by: bash scripts/lock.sh (uv $("$UV" --version | cut -d' ' -f2)); do not edit by hand."
  echo "# torch is not here: it is installed first, for your hardware. Pins without a 'via' line"
  echo "# are torch's own requirements."
  echo "# torch: $TORCH_VERSION"
  echo "# Python >= $LOCK_PYTHON"
  cat "$work/lock.txt"
} >"$LOCK"
echo "[lock] wrote $LOCK: $(grep -cE '^[A-Za-z0-9._-]+==' "$LOCK") packages; run the test suite before committing it"

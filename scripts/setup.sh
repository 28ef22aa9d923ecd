#!/usr/bin/env bash
# Set up everything the project needs in ./.venv: torch (if absent), the package, the book's
# tools, and (where apt is available as root) Debian's Chromium for the browser test.
# Safe to run again: each step is skipped when already done.
#
# Everything but torch comes at the exact versions of requirements.lock, the ones the test suite
# passed with (installing it needs only pip; scripts/lock.sh refreshes it). AT_UNLOCKED=1 takes
# requirements.txt's lower bounds instead, as does a Python older than the lock is made for.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
# Install the torch build for your hardware first to keep it (or set TORCH_SPEC); otherwise a Linux
# machine without an NVIDIA driver gets PyTorch's CPU-only wheel (a few hundred MB instead of several GB
# of CUDA libraries), and every other machine the default build of this spec.
TORCH_SPEC=${TORCH_SPEC:-}
TORCH_DEFAULT_SPEC="torch>=2.2"
CPU_WHEELS=https://download.pytorch.org/whl/cpu
LOCK=requirements.lock

if [ ! -x .venv/bin/python ]; then
  echo "[setup] creating .venv with $($PYTHON --version)"
  "$PYTHON" -m venv .venv
fi
PY=.venv/bin/python
"$PY" -m pip install --quiet --upgrade pip >/dev/null

# Locked (the default) or unlocked. The lock's header names the Python it needs and the torch it was
# made against, which becomes the default torch here.
LOCKED=1
LOCK_TORCH=""
if [ "${AT_UNLOCKED:-0}" != "0" ]; then
  LOCKED=0
  echo "[setup] AT_UNLOCKED is set: installing requirements.txt's lower bounds, not $LOCK"
elif [ ! -f "$LOCK" ]; then
  LOCKED=0
  echo "[setup] no $LOCK: installing requirements.txt's lower bounds"
else
  LOCK_PYTHON=$(sed -n 's/^# Python >= \([0-9.]*\).*/\1/p' "$LOCK" | head -n 1)
  if [ -n "$LOCK_PYTHON" ] && ! "$PY" -c "import sys; sys.exit(sys.version_info[:3] < tuple(map(int, '$LOCK_PYTHON'.split('.'))))"; then
    LOCKED=0
    echo "[setup] $LOCK needs Python >= $LOCK_PYTHON, this is $("$PY" --version): installing requirements.txt's lower bounds"
  fi
  LOCK_TORCH=$(sed -n 's/^# torch: \([0-9][0-9.]*\).*/\1/p' "$LOCK" | head -n 1)
  if [ "$LOCKED" = "1" ] && [ -n "$LOCK_TORCH" ]; then
    TORCH_DEFAULT_SPEC="torch==$LOCK_TORCH"
  fi
fi

if ! "$PY" -c "import torch" 2>/dev/null; then
  if [ -n "$TORCH_SPEC" ]; then
    echo "[setup] installing $TORCH_SPEC"
    "$PY" -m pip install --quiet "$TORCH_SPEC"
  elif [ "$(uname -s)" = "Linux" ] && ! command -v nvidia-smi >/dev/null 2>&1; then
    echo "[setup] no NVIDIA driver found: installing PyTorch's CPU-only build from $CPU_WHEELS"
    "$PY" -m pip install --quiet --retries 1 --timeout 30 "$TORCH_DEFAULT_SPEC" --index-url "$CPU_WHEELS" \
      || { echo "[setup] could not install from $CPU_WHEELS: installing $TORCH_DEFAULT_SPEC from the default index"
           "$PY" -m pip install --quiet "$TORCH_DEFAULT_SPEC"; }
  else
    echo "[setup] installing $TORCH_DEFAULT_SPEC"
    "$PY" -m pip install --quiet "$TORCH_DEFAULT_SPEC"
  fi
fi
# torch's version from its metadata: importing torch before numpy is installed prints a warning
TORCH_HAVE=$("$PY" -c 'from importlib.metadata import version; print(version("torch"))')
echo "[setup] torch $TORCH_HAVE"
if [ "$LOCKED" = "1" ] && [ -n "$LOCK_TORCH" ] && [ "${TORCH_HAVE%%+*}" != "$LOCK_TORCH" ]; then
  echo "[setup] note: $LOCK was made and tested with torch $LOCK_TORCH, not $TORCH_HAVE"
fi

if [ "$LOCKED" = "1" ]; then
  echo "[setup] installing the locked versions ($LOCK) and the package (editable)"
  "$PY" -m pip install --quiet --require-hashes -r "$LOCK" || {
    echo "[setup] could not install $LOCK; AT_UNLOCKED=1 bash scripts/setup.sh installs requirements.txt's lower bounds instead" >&2
    exit 1
  }
else
  echo "[setup] installing requirements and the package (editable)"
  "$PY" -m pip install --quiet -r requirements.txt
fi
"$PY" -m pip install --quiet --no-deps -e .

# The papermill runner executes chapters with this venv's interpreter.
"$PY" -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (annotated-transformer)" >/dev/null

# onnxruntime-web's WebAssembly runtime for chapter 08's live page, from the npm registry (no npm needed),
# checked against its pinned sha512 into .cache/; the book build fetches it too when it is missing.
"$PY" -c "from annotated_transformer.web.live_page import onnxruntime_web_files as f; print('[setup] onnxruntime-web in', f())" \
  || echo "[setup] could not fetch onnxruntime-web: chapter 08's live translation and its test will be skipped"

if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "[setup] installing Debian's chromium for the browser test"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
      || echo "[setup] could not install chromium: the browser test will be skipped"
  else
    echo "[setup] chromium not found (install it to run the browser test; it is skipped otherwise)"
  fi
fi
echo "[setup] done"

#!/usr/bin/env bash
# Set up everything the project needs in ./.venv: torch (if absent), the package with every extra
# (the experiments, the charts, the book's tools, the tests), JupyterLab with jupytext's contents
# manager and a kernel for the project, and (where apt is available as root) Debian's Chromium for
# the browser test.
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
# requirements.txt's torch line (the range the test suite passed with), unless the lock names a version
TORCH_DEFAULT_SPEC=$(sed -n 's/^\(torch[<>=!~][^ #]*\).*/\1/p' requirements.txt | head -n 1)
TORCH_DEFAULT_SPEC=${TORCH_DEFAULT_SPEC:-torch}
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
# A clone set up before the build backend was hatchling holds setuptools' metadata folder; it would
# shadow the installed package's metadata for anything run from the clone's root.
rm -rf annotated_transformer.egg-info
"$PY" -m pip install --quiet --no-deps -e .

# Kernels, both this venv's interpreter: python3, the name in the chapters' metadata (JupyterLab and a
# papermill run by hand start it for a chapter; the book command writes its own), under the metadata's
# display name too, so that a chapter saved from JupyterLab keeps its header; and
# annotated-transformer, named for the project, for a new notebook.
"$PY" -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (ipykernel)" >/dev/null
"$PY" -m ipykernel install --sys-prefix --name annotated-transformer \
  --display-name "Python 3 (annotated-transformer)" >/dev/null

# JupyterLab: jupytext's wheel turns its contents manager on, which serves either file of a chapter's
# pair as one notebook (jupytext.toml); this makes a double-click on a .py open it as a notebook too.
LAB_DIR=$("$PY" -c "from jupyterlab.commands import get_app_dir; print(get_app_dir())" 2>/dev/null || true)
if [ -n "$LAB_DIR" ]; then
  mkdir -p "$LAB_DIR/settings/overrides.d"
  cp scripts/jupyter/lab-overrides.json "$LAB_DIR/settings/overrides.d/annotated-transformer.json"
else
  echo "[setup] JupyterLab is not installed: .venv/bin/jupyter lab will not be there"
fi

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

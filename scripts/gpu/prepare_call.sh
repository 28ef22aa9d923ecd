#!/usr/bin/env bash
# Here, before a call on a lent GPU machine (no network there): what the call must carry, and its
# command. Gathers the wheels the chapters import into .whl/ (scripts/gpu/gather_wheels.py --lean,
# for the machine's Python 3.12), copies the corpora from AT_DATA_DIR into .data/ (both folders are
# git-ignored and travel only through `carry`), checks that the checkout and both fit the 64 MiB a
# call sends, checks the spell's steps (scripts/gpu/spell.py --dry-run), and prints the command and
# the carry list to give the device tool:
#
#   AT_DATA_DIR=/path/to/data bash scripts/gpu/prepare_call.sh chapters:04 chapters:05 chapters:08
#
# LIMIT_S (default 590) is how far into the call the spell may run, under the call's 600 s: the
# printed command gives spell.py what is left of it once the wheels are installed (bash's SECONDS).
# A second call on the still-warm machine (chapter 08 after a first call that ran 04, say) needs
# nothing new here: WARM=1 prints its command (spell.py --warm, which lets 05 and 08 through the
# plan's check; their step still skips where the machine has no model) and LIMIT_S sets it under
# the device time left.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 2
python=${PYTHON:-python3}
limit=${LIMIT_S:-590}
warm=()
[ "${WARM:-0}" = 1 ] && warm=(--warm)
[ $# -gt 0 ] || { echo "usage: prepare_call.sh STEP [STEP ...] (spell.py's steps)" >&2; exit 2; }
if [ -z "${AT_DATA_DIR:-}" ] || [ ! -d "$AT_DATA_DIR/multi30k" ]; then
  echo "prepare_call.sh: AT_DATA_DIR must name the corpora's folder (with multi30k/ in it);" \
    "export AT_DATA_DIR=/path/to/data" >&2
  exit 2
fi
# the steps first: a name the spell would refuse is refused here, before any download
# (the plan as the call would meet it, some 20 s of it spent on the wheels' install)
$python scripts/gpu/spell.py --limit-s $(( limit - 20 )) "${warm[@]}" --dry-run "$@" || exit 2
data=$(cd "$AT_DATA_DIR" && pwd)
if [ "$data" != "$PWD/.data" ] && [ -e .data ] && [ ! -f .data/.copied_by_prepare_call ]; then
  echo "prepare_call.sh: .data/ exists and this script did not make it; move it away, or set" \
    "AT_DATA_DIR=$PWD/.data to send it as it is" >&2
  exit 2
fi
$python scripts/gpu/gather_wheels.py --python-version 3.12 \
  --have scripts/gpu/device_packages.txt --lean || exit 1
if [ "$data" != "$PWD/.data" ]; then
  rm -rf .data.partial && cp -r "$data" .data.partial && touch .data.partial/.copied_by_prepare_call \
    || exit 1
  rm -rf .data && mv .data.partial .data  # this script's own copy, git-ignored
fi
# what a call sends: tracked and untracked-not-ignored files, the git metadata, the carried folders
sent=$(git ls-files -co --exclude-standard -z | du -cb --files0-from=- 2> /dev/null | tail -1 | cut -f1)
sent=$(( sent + $(du -sb .git | cut -f1) ))
carried=$(du -sb .whl .data | awk '{ s += $1 } END { print s }')
total_mib=$(( (sent + carried) / 1048576 ))
echo "prepare_call.sh: the call sends about $total_mib MiB (checkout $(( sent / 1048576 )), .whl and .data $(( carried / 1048576 )))"
if [ "$total_mib" -ge 64 ]; then
  echo "prepare_call.sh: over the 64 MiB a call sends; gather fewer wheels or copy fewer corpora" >&2
  exit 1
fi
command="python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site AT_DATA_DIR=\$PWD/.data || exit 1; python3 scripts/gpu/spell.py --limit-s \$(($limit - SECONDS)) ${warm[*]} $*"
if [ ${#command} -gt 2000 ]; then
  echo "prepare_call.sh: the command is ${#command} characters, over the device tool's 2,000" >&2
  exit 1
fi
echo "carry: [\".whl\", \".data\"]   timeout_s: $(( limit + 10 > 600 ? 600 : limit + 10 ))"
echo "command: $command"

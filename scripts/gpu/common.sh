# What the experiment scripts beside this file share; each sources it first. Strict mode, data
# read offline (AT_OFFLINE=0 lets a missing corpus download), Python unbuffered so that the logs
# keep up, the interpreter ($PYTHON, default python3) and the device ($DEVICE, default cuda).
set -uo pipefail
export AT_OFFLINE=${AT_OFFLINE:-1} PYTHONUNBUFFERED=1
python=${PYTHON:-python3}
device=${DEVICE:-cuda}

usage() {  # the script's arguments, in words: say them and stop
  echo "usage: $(basename "$0") $*" >&2
  exit 2
}

shared_tokenizer() {  # Multi30k's tokenizer, trained once before parallel runs race for its cache
  $python -c "from annotated_transformer.data import tokenizer_for_corpus as t; t('multi30k', 8000)"
}

wait_all() {  # PID...: wait for each; fails when any of them failed
  local status=0 pid
  for pid in "$@"; do wait "$pid" || status=1; done
  return $status
}

threads_each() {  # N: the machine's cores shared among N processes, at least one each
  local threads=$(( $(nproc) / ($1 > 0 ? $1 : 1) ))
  echo $(( threads > 0 ? threads : 1 ))
}

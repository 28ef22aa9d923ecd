#!/usr/bin/env bash
# On one GPU: what each change buys the `base` training step and decoding, and where the
# step's time goes, in parts ordered by what they tell per second of GPU time (the benchmarks put
# the checkout on sys.path and use the machine's torch):
#
#   bash scripts/gpu/speed.sh OUT                       # every part, into OUT (up to 21 files)
#   bash scripts/gpu/speed.sh OUT profile_compiled      # the parts named
#   DEVICE=cpu QUICK=1 bash scripts/gpu/speed.sh OUT    # the same commands on a CPU (the test)
#
# Every part is one run of benchmarks/bench_step.py (see its docstring), the parts (default: all
# of them, in this order):
#   decode            --decode greedy beam: greedy decoding and beam search (4) by
#                     recomputation, the eager KV cache and the static cache as a CUDA graph, batch
#                     1 and 64, same tokens checked; greedy's eager cache also asking every step
#                     whether all rows have finished (the default asks every 8 on a GPU)
#                     -> speed_decode.json
#   decode_bf16       the same in bf16 autocast, as translate decodes on a GPU (the static step
#                     captured in autocast, as translate --cuda-graphs runs it; rows alike
#                     recorded, rounding may part them), with the `gpu` profile's model at the
#                     batches translate gives it on test2016 (64 and 384 sources of 16 positions,
#                     an allowance of 16 + 50) -> speed_decode_bf16.json
#   train_eager       the eager step with and without cuDNN's attention, and with the loss's CPU
#                     strategy (row blocks) instead of the softmax kernels, and with lengths
#                     bucketed, without and with cuDNN's attention, and graphed (--cuda-graphs),
#                     interleaved on one batch (tokens/s, MFU) -> speed_train_eager.json
#   profile_eager     --profiler: the eager bf16 step under torch.profiler: kernel time by kind
#                     against the plain matmul peak, the top kernels, the launch calls, the host
#                     synchronisations by line -> profile_step_eager.{json,md}
#   profile_graphed   the same for the graphed eager step (train --length-buckets --cuda-graphs),
#                     which leaves the host little to do -> profile_step_graphed.{json,md}
#   train_compiled, train_bucketed, train_graphs
#                     one change each beside eager (the reference, same process and batch): the
#                     model and loss compiled; and lengths bucketed; and mode="reduce-overhead"
#                     (CUDA graphs) -> speed_train_<part>.json
#   profile_compiled  --profiler for the compiled step -> profile_step_compiled.{json,md}
# Compiling the `base` model with its 37,000-piece vocabulary takes minutes, so the compiled parts
# come last, one compile a part: the benchmark times training only once every variant it was given
# has warmed up, so a part stopped early loses only its own variant. Each part's log goes to
# OUT/<part>.log; a failed part does not stop the others, and the script then exits non-zero. The
# JSON files are committed in results/gpu/ (the benchmarks' in results/benchmarks/gpu_*.json).
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
[ $# -ge 1 ] || usage "OUT [PART ...]"
out=$1
shift
if [ -n "${QUICK:-}" ]; then
  bench=(--quick --precision fp32 --profiler-steps 2)
  translate_batches=(--decode-batch 2 3)
else
  # The paper's base model, bf16, about 22k target tokens per step.
  bench=(--profile paper --precision bf16 --batch-tokens 24576 --warmup 5 --profiler-steps 10)
  # what translate --cuda-graphs decodes with the gpu recipe's model (profile given last wins)
  translate_batches=(--profile gpu --decode-batch 64 384 --decode-src-len 16 --decode-max-new 66)
fi
known=(decode decode_bf16 train_eager profile_eager profile_graphed train_compiled train_bucketed train_graphs profile_compiled)
parts=("$@")
[ ${#parts[@]} -eq 0 ] && parts=("${known[@]}")
for part in "${parts[@]}"; do  # every name checked, exactly, before any part runs
  found=
  for name in "${known[@]}"; do [ "$part" = "$name" ] && found=1; done
  [ -n "$found" ] || { echo "speed.sh: unknown part '$part'; choose from ${known[*]}" >&2; exit 2; }
done
mkdir -p "$out"
status=0
run() {  # part, command...
  local part=$1
  shift
  echo "[speed] $part: $*"
  "$@" >"$out/$part.log" 2>&1 || { echo "[speed] $part failed (exit $?), see $out/$part.log"; status=1; }
  tail -n 25 "$out/$part.log"
}
step() {  # part, then bench_step.py's arguments
  local part=$1
  shift
  run "$part" $python benchmarks/bench_step.py --device "$device" "${bench[@]}" "$@"
}
for part in "${parts[@]}"; do
  case $part in
    decode) step decode --variants --decode greedy beam --out "$out/speed_decode.json" ;;
    decode_bf16) step decode_bf16 "${translate_batches[@]}" --variants --decode greedy beam \
      --decode-precision bf16 --out "$out/speed_decode_bf16.json" ;;
    train_eager) step train_eager --variants eager eager_cudnn_attention eager_row_blocks_loss \
      eager_bucketed eager_bucketed_cudnn_attention eager_bucketed_graphed \
      --out "$out/speed_train_eager.json" ;;
    profile_eager) step profile_eager --profiler --out "$out/profile_step_eager.json" ;;
    train_compiled) step train_compiled --variants compiled --out "$out/speed_train_compiled.json" ;;
    train_bucketed) step train_bucketed --variants compiled_bucketed \
      --out "$out/speed_train_bucketed.json" ;;
    train_graphs) step train_graphs --variants compiled_bucketed_reduce_overhead \
      --out "$out/speed_train_graphs.json" ;;
    profile_graphed) step profile_graphed --variants eager_bucketed_graphed --profiler \
      --out "$out/profile_step_graphed.json" ;;
    profile_compiled) step profile_compiled --variants compiled --profiler \
      --out "$out/profile_step_compiled.json" ;;
    *) echo "speed.sh: no command for part '$part'" >&2; exit 2 ;;
  esac
done
echo "[speed] done, exit $status; files in $out"
exit $status

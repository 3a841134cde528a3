#!/usr/bin/env bash
# Whole-decoder throughput on a GPU: synthesizes the TinyLlama-1.1B shape (random F16 weights,
# the llama tokenizer) and runs `tessera bench --device cuda:0` on it as bf16 and through the
# precision plans that quantize it online (INT4 g128 and NVFP4/MXFP4 -> the W4A16 kernel, FP8 ->
# cuBLASLt W8A8). Prints one bench table per plan.
# Usage: tests/gpu/bench_decoder.sh TESSERA_BIN LLAMA_VOCAB_GGUF [WORK_DIR]
set -u
root="$(cd "$(dirname "$0")/../.." && pwd)"
bin="$1"; vocab="$2"; work="${3:-$(mktemp -d)}"
mkdir -p "$work"
model="$work/tinyllama-f16.gguf"
if [[ ! -f "$model" ]]; then
  "$bin" synth --shape tinyllama-1.1b --type F16 --out "$model" --vocab-from "$vocab" || exit 1
fi
status=0
for plan in ${PLANS:-none bench-int4-g128 bench-fp8 bench-nvfp4 bench-mxfp4}; do
  echo "== plan: $plan"
  extra=()
  [[ "$plan" != none ]] && extra=(--precision_plan "$root/configs/plans/$plan.json")
  "$bin" bench --model "$model" --device cuda:0 --batch "${BATCHES:-1,16,64}" --prompt 128 \
    --gen 64 "${extra[@]}" 2>"$work/bench-$plan.err" || { status=1; tail -3 "$work/bench-$plan.err"; }
  grep -m1 -o 'fallback[^|]*' "$work/bench-$plan.err" | head -1
done
exit $status

#!/usr/bin/env bash
# The CPU-speed acceptance sweep in one go: synthesizes TinyLlama-1.1B-shaped GGUF files (Q4_0,
# Q8_0, F16, and llama.cpp's Q4_K_M mix) once, then runs `tessera bench` for every format the acceptance names, each with the
# triad, the read-only stream and the read of the model's own weight pages measured in the same
# process (tessera bench prints them beside every batch). Prints the bench rows, one per format
# and batch size. Usage: bench/decode_table.sh [BUILD_DIR] [OUT_DIR]
# (defaults build/fast and /tmp/synth). Run it on an otherwise idle machine: a second job on a
# 2-core VM deschedules one of the two pool threads and halves every number.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${1:-build/fast}"
OUT="${2:-/tmp/synth}"
B="$BUILD/cli/tessera"
VOCAB=../shared/reference/vocab/ggml-vocab-llama-spm.gguf
mkdir -p "$OUT"
for t in Q4_0 Q8_0 F16 Q4_K_M; do
  [ -f "$OUT/tl-$t.gguf" ] || "$B" synth --shape tinyllama-1.1b --type "$t" --out "$OUT/tl-$t.gguf" --vocab-from "$VOCAB"
done
ARGS=(--batch "${BATCHES:-1,16}" --prompt "${PROMPT:-32}" --gen "${GEN:-32}")
run() {
  local label="$1"
  shift
  echo "== $label"
  "$B" bench "$@" "${ARGS[@]}" 2>/dev/null | sed -n '/^ batch/,$p'
}
run "Q4_0, int8 activations" --model "$OUT/tl-Q4_0.gguf" --cpu_int8_activations
run "Q8_0, int8 activations" --model "$OUT/tl-Q8_0.gguf" --cpu_int8_activations
run "Q8_0, f32 activations" --model "$OUT/tl-Q8_0.gguf" --cpu_int8_activations=false
run "FP8 W8A16 (bench-fp8-wo)" --model "$OUT/tl-F16.gguf" --precision_plan configs/plans/bench-fp8-wo.json
run "FP8 W8A8 (bench-fp8)" --model "$OUT/tl-F16.gguf" --precision_plan configs/plans/bench-fp8.json
run "INT4 g128, int8 activations" --model "$OUT/tl-F16.gguf" --precision_plan configs/plans/bench-int4-g128.json --cpu_int8_activations
run "INT4 g128, f32 activations" --model "$OUT/tl-F16.gguf" --precision_plan configs/plans/bench-int4-g128.json
run "INT4 g128, bf16 activations" --model "$OUT/tl-F16.gguf" --precision_plan configs/plans/bench-int4-g128.json --cpu_bf16_activations
run "INT4 g128, int16 activations" --model "$OUT/tl-F16.gguf" --precision_plan configs/plans/bench-int4-g128.json --cpu_int16_activations
run "NVFP4 W4A4 (bench-nvfp4)" --model "$OUT/tl-F16.gguf" --precision_plan configs/plans/bench-nvfp4.json
run "NVFP4 W4A16 (bench-nvfp4-a16)" --model "$OUT/tl-F16.gguf" --precision_plan configs/plans/bench-nvfp4-a16.json
run "NVFP4 W4A16 (bench-nvfp4-a16), int16 activations" --model "$OUT/tl-F16.gguf" --precision_plan configs/plans/bench-nvfp4-a16.json --cpu_int16_activations
run "MXFP4 W4A16 (bench-mxfp4), int8 activations" --model "$OUT/tl-F16.gguf" --precision_plan configs/plans/bench-mxfp4.json --cpu_int8_activations
run "MXFP4 W4A16 (bench-mxfp4), f32 activations" --model "$OUT/tl-F16.gguf" --precision_plan configs/plans/bench-mxfp4.json
run "MXFP4 W4A16 (bench-mxfp4), int16 activations" --model "$OUT/tl-F16.gguf" --precision_plan configs/plans/bench-mxfp4.json --cpu_int16_activations
run "Q4_0, f32 activations" --model "$OUT/tl-Q4_0.gguf" --cpu_int8_activations=false
run "Q4_K_M (Q4_K + Q6_K), int8 activations" --model "$OUT/tl-Q4_K_M.gguf" --cpu_int8_activations
run "Q4_K_M (Q4_K + Q6_K), f32 activations" --model "$OUT/tl-Q4_K_M.gguf" \
  --cpu_int8_activations=false
run "F16 (dense)" --model "$OUT/tl-F16.gguf"

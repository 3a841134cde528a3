#!/usr/bin/env bash
# tessera against llama.cpp, the peer it must beat on the CPU: the same GGUF files, the same
# machine, the same thread count, measured in the same minutes (per model, ROUNDS rounds of
# llama.cpp then tessera; each side keeps its best round per column, since this VM's memory
# bandwidth flips between a ~35 and a ~55 GB/s mode within minutes and one side must not get the
# fast mode alone). llama.cpp runs its own tools: `llama-bench` (one prompt of PROMPT tokens,
# then GEN tokens at batch 1) and `llama-batched-bench` (BATCH parallel sequences); tessera runs
# `tessera bench` with the same lengths, in both activation modes: int8 activations (the default
# for GGUF block formats, and what llama.cpp always does: it quantizes activations to Q8_0 / Q8_K
# blocks for every quantized weight type) and exact f32 activations (--cpu_int8_activations=false;
# F16 weights run f32 activations in both rows).
#
# llama.cpp comes from PyPI (nothing else is reachable here): the pinned llama-cpp-python sdist
# vendors a llama.cpp tree, built once into $LLAMA_CPP_DIR/build with GGML_NATIVE=ON (this CPU's
# AVX-512 VNNI / BF16 kernels and its weight repacking, as a llama.cpp user here would build it)
# and OpenMP. Set LLAMA_CPP_DIR to an existing llama.cpp tree with build/bin/llama-bench to skip
# the download and build (about 6 minutes on 2 cores).
#
# Usage: bench/llama_cpp_peer.sh [BUILD_DIR] [MODEL.gguf ...]
#   defaults: build/fast; /tmp/synth/tl-{Q4_0,Q8_0,Q4_K_M,F16}.gguf (synthesized if missing)
#   env: THREADS (2), PROMPT (128), GEN (64), BATCH (16), ROUNDS (2), LLAMA_CPP_PY (0.3.36),
#        ISA (native | avx2)
# Run it on an otherwise idle machine (see decode_table.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${1:-build/fast}"
shift || true
TESSERA="$BUILD/cli/tessera"
THREADS="${THREADS:-2}" PROMPT="${PROMPT:-128}" GEN="${GEN:-64}" BATCH="${BATCH:-16}"
ROUNDS="${ROUNDS:-2}"
PY_VERSION="${LLAMA_CPP_PY:-0.3.36}"
VOCAB=../shared/reference/vocab/ggml-vocab-llama-spm.gguf

# ISA=native: each side uses this CPU's best instructions (AVX-512 VNNI / BF16 here). ISA=avx2:
# both sides as on an AVX2-only CPU (Zen 2 / Zen 3, Intel before Ice Lake): llama.cpp built with
# GGML_NATIVE=OFF (its AVX / AVX2 / FMA / F16C / BMI2 defaults, no AVX-512), tessera under
# TESSERA_CPU_ISA=avx2 (kernels/cpu/fast/isa_limit.h).
ISA="${ISA:-native}"
BUILD_SUB=build NATIVE=ON
if [ "$ISA" = avx2 ]; then
  BUILD_SUB=build-avx2 NATIVE=OFF
  export TESSERA_CPU_ISA=avx2
fi

if [ -z "${LLAMA_CPP_DIR:-}" ]; then
  WORK=/tmp/llama-cpp-peer
  LLAMA_CPP_DIR="$WORK/llama_cpp_python-$PY_VERSION/vendor/llama.cpp"
  if [ ! -d "$LLAMA_CPP_DIR" ]; then
    mkdir -p "$WORK"
    python3 -m pip download "llama-cpp-python==$PY_VERSION" --no-binary :all: --no-deps -d "$WORK" >&2
    tar -xzf "$WORK/llama_cpp_python-$PY_VERSION.tar.gz" -C "$WORK"
  fi
fi
if [ ! -x "$LLAMA_CPP_DIR/$BUILD_SUB/bin/llama-bench" ]; then
  cmake -S "$LLAMA_CPP_DIR" -B "$LLAMA_CPP_DIR/$BUILD_SUB" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DGGML_NATIVE=$NATIVE -DGGML_OPENMP=ON -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF >&2
  ninja -C "$LLAMA_CPP_DIR/$BUILD_SUB" -j2 llama-bench llama-batched-bench >&2
fi
LB="$LLAMA_CPP_DIR/$BUILD_SUB/bin/llama-bench"
LBB="$LLAMA_CPP_DIR/$BUILD_SUB/bin/llama-batched-bench"

MODELS=("$@")
if [ ${#MODELS[@]} -eq 0 ]; then
  mkdir -p /tmp/synth
  for t in Q4_0 Q8_0 Q4_K_M F16; do
    f=/tmp/synth/tl-$t.gguf
    [ -f "$f" ] || "$TESSERA" synth --shape tinyllama-1.1b --type "$t" --out "$f" --vocab-from "$VOCAB"
    MODELS+=("$f")
  done
fi

# One llama.cpp measurement: "pp tg b_tg" (tokens/s: prompt processing, batch-1 generation,
# aggregate generation of BATCH parallel sequences).
llama_cpp() {
  local m="$1" pp tg btg
  read -r pp tg < <("$LB" -m "$m" -t "$THREADS" -p "$PROMPT" -n "$GEN" -r 3 -o jsonl 2>/dev/null |
    python3 -c '
import json, sys
rows = [json.loads(l) for l in sys.stdin if l.startswith("{")]
pp = [r["avg_ts"] for r in rows if r["n_prompt"] > 0]
tg = [r["avg_ts"] for r in rows if r["n_gen"] > 0]
print(pp[0], tg[0])')
  btg=$("$LBB" -m "$m" -t "$THREADS" -c $((BATCH * (PROMPT + GEN) + 256)) -npp "$PROMPT" \
    -ntg "$GEN" -npl "$BATCH" --output-format jsonl 2>/dev/null |
    python3 -c '
import json, sys
rows = [json.loads(l) for l in sys.stdin if l.startswith("{")]
print(rows[-1]["speed_tg"])')
  echo "$pp $tg $btg"
}

# One tessera measurement: "pp tg b_tg" from `tessera bench --batch 1,BATCH` (prefill tok/s of the
# batch-1 row, decode tok/s of the batch-1 row, aggregate decode tok/s of the BATCH row).
tessera() {
  "$TESSERA" bench --model "$1" "${@:2}" --threads "$THREADS" --batch "1,$BATCH" \
    --prompt "$PROMPT" --gen "$GEN" 2>/dev/null |
    awk '$1 == 1 && $2 ~ /^[0-9]+$/ {pp = $4; tg = $5} $1 == '"$BATCH"' && $2 ~ /^[0-9]+$/ {b = $6}
         END {print pp, tg, b}'
}

best() {  # the element-wise maximum of two "a b c" triples
  python3 -c 'import sys; a, b = sys.argv[1].split(), sys.argv[2].split(); print(" ".join(str(max(float(x), float(y))) for x, y in zip(a, b)))' "$1" "$2"
}

build=$("$LB" -m "${MODELS[0]}" -p 0 -n 1 -r 1 -o jsonl 2>/dev/null |
  python3 -c 'import json, sys; print(json.loads(sys.stdin.readline())["build_commit"])')
echo "llama.cpp $build (llama-cpp-python $PY_VERSION's vendor tree), ISA $ISA, threads $THREADS," \
  "prompt $PROMPT, gen $GEN, batch $BATCH; $(date -u +%FT%TZ)"
printf '| model | tessera mode | prefill tok/s tessera / llama.cpp | ratio | B=1 decode tok/s tessera / llama.cpp | ratio | B=%s aggregate tok/s tessera / llama.cpp | ratio |\n|---|---|---|---|---|---|---|---|\n' "$BATCH"
for m in "${MODELS[@]}"; do
  l="0 0 0" t_exact="0 0 0" t_int8="0 0 0"
  for ((round = 0; round < ROUNDS; ++round)); do
    l=$(best "$l" "$(llama_cpp "$m")")
    t_exact=$(best "$t_exact" "$(tessera "$m" --cpu_int8_activations=false)")
    t_int8=$(best "$t_int8" "$(tessera "$m" --cpu_int8_activations)")
  done
  for mode in exact int8; do
    t=$t_exact
    [ "$mode" = int8 ] && t=$t_int8
    python3 - "$m" "$mode" "$t" "$l" <<'EOF'
import os, sys
name, mode, t, l = os.path.basename(sys.argv[1]), sys.argv[2], sys.argv[3].split(), sys.argv[4].split()
label = "--cpu_int8_activations=false" if mode == "exact" else "--cpu_int8_activations"
cells = []
for a, b in zip(map(float, t), map(float, l)):
    cells += [f"{a:.1f} / {b:.1f}", f"**{a / b:.2f}x**"]
print(f"| {name} | {label} | " + " | ".join(cells) + " |")
EOF
  done
done

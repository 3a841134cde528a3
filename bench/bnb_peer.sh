#!/usr/bin/env bash
# tessera against transformers + bitsandbytes on bitsandbytes checkpoints: the same files, the
# same machine and thread count, in the same minutes (per model, ROUNDS rounds of the peer then
# tessera, each side's best round per column, as bench/llama_cpp_peer.sh does against this VM's
# bandwidth modes). The peer is bench/transformers_bnb_peer.py (prefill, batch-1 decode and
# batch-BATCH aggregate decode, the work `tessera bench` times); tessera runs its default (exact
# f32 activations) and the mode that computes as bitsandbytes does (4-bit: --cpu_bf16_activations,
# bf16 activations and codebook; LLM.int8: --cpu_int8_activations=true, int8 activations).
#
# Models: TinyLlama-1.1B-shape checkpoints that bitsandbytes quantizes from `tessera synth
# --format hf` (random bf16 weights): NF4 with double quant, and LLM.int8, written once to
# /tmp/synth/tl-bnb-{nf4,int8} (about 20 s each). Needs a venv with tools/reference/requirements.txt
# (torch, transformers, bitsandbytes): VENV (default .venv).
#
# Usage: bench/bnb_peer.sh [BUILD_DIR]   env: THREADS (2), PROMPT (128), GEN (32), BATCH (16),
#        ROUNDS (2), VENV (.venv). Run it on an otherwise idle machine.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${1:-build/fast}"
TESSERA="$BUILD/cli/tessera"
THREADS="${THREADS:-2}" PROMPT="${PROMPT:-128}" GEN="${GEN:-32}" BATCH="${BATCH:-16}"
ROUNDS="${ROUNDS:-2}" VENV="${VENV:-.venv}"
PY="$VENV/bin/python"

mkdir -p /tmp/synth
[ -d /tmp/synth/tl-hf ] || "$TESSERA" synth --shape tinyllama-1.1b --format hf --out /tmp/synth/tl-hf >&2
for kind in nf4 int8; do
  out=/tmp/synth/tl-bnb-$kind
  [ -f "$out/model.safetensors" ] && continue
  "$PY" - "$kind" "$out" >&2 <<'PYEOF'
import shutil, sys, torch
from transformers import AutoModelForCausalLM, BitsAndBytesConfig
kind, out = sys.argv[1], sys.argv[2]
qc = (BitsAndBytesConfig(load_in_8bit=True) if kind == "int8" else
      BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
                         bnb_4bit_use_double_quant=True, bnb_4bit_compute_dtype=torch.bfloat16))
m = AutoModelForCausalLM.from_pretrained("/tmp/synth/tl-hf", quantization_config=qc,
                                         device_map="cpu", dtype=torch.bfloat16)
m.save_pretrained(out)
for f in ("tokenizer.json", "tokenizer_config.json"):
    shutil.copy(f"/tmp/synth/tl-hf/{f}", f"{out}/{f}")
PYEOF
done

best() {  # best of a column over lines of numbers
  sort -g | tail -1
}
echo "| model | tessera mode | prefill tok/s, tessera / peer | ratio | B=1 decode tok/s | ratio | B=$BATCH aggregate tok/s | ratio |"
echo "|---|---|---|---|---|---|---|---|"
for kind in nf4 int8; do
  model=/tmp/synth/tl-bnb-$kind
  fast_flag=--cpu_bf16_activations
  fast_name="bf16 activations and codebook (\`--cpu_bf16_activations\`)"
  if [ $kind = int8 ]; then
    fast_flag=--cpu_int8_activations=true
    fast_name="int8 activations (\`--cpu_int8_activations=true\`)"
  fi
  peer=$(mktemp) t_exact=$(mktemp) t_fast=$(mktemp)
  for _ in $(seq "$ROUNDS"); do
    "$PY" bench/transformers_bnb_peer.py "$model" --prompt "$PROMPT" --gen "$GEN" \
      --batch "$BATCH" --threads "$THREADS" --rounds 1 2>/dev/null | tail -1 >>"$peer"
    for mode in exact fast; do
      flag=""
      [ $mode = fast ] && flag=$fast_flag
      out=$t_exact
      [ $mode = fast ] && out=$t_fast
      # shellcheck disable=SC2086
      "$TESSERA" bench --model "$model" --batch "1,$BATCH" --prompt "$PROMPT" --gen "$GEN" \
        --threads "$THREADS" $flag 2>/dev/null |
        awk '$1 ~ /^[0-9]+$/ && NF > 8 { print $1, $4, $5, $6 }' >>"$out"
    done
  done
  p_pre=$("$PY" -c 'import json,sys; print(max(json.loads(l)["prefill"] for l in open(sys.argv[1])))' "$peer")
  p_b1=$("$PY" -c 'import json,sys; print(max(json.loads(l)["decode_b1"] for l in open(sys.argv[1])))' "$peer")
  p_agg=$("$PY" -c 'import json,sys; print(max(json.loads(l)["decode_agg"] for l in open(sys.argv[1])))' "$peer")
  for mode in exact fast; do
    out=$t_exact name="exact f32 activations (default)"
    [ $mode = fast ] && out=$t_fast name=$fast_name
    pre=$(awk '$1 == 1 { print $2 }' "$out" | best)
    b1=$(awk '$1 == 1 { print $3 }' "$out" | best)
    agg=$(awk -v b="$BATCH" '$1 == b { print $4 }' "$out" | best)
    awk -v m="tl-bnb-$kind" -v n="$name" -v a="$pre" -v b="$p_pre" -v c="$b1" -v d="$p_b1" \
      -v e="$agg" -v f="$p_agg" 'BEGIN { printf "| %s | %s | %.1f / %.1f | %.2fx | %.2f / %.2f | %.2fx | %.1f / %.1f | %.2fx |\n", m, n, a, b, a / b, c, d, c / d, e, f, e / f }'
  done
  head -1 "$peer" | "$PY" -c 'import json,sys; print("peer:", json.loads(sys.stdin.read())["peer"])' >&2
  rm -f "$peer" "$t_exact" "$t_fast"
done

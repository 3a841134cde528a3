#!/usr/bin/env bash
# Per-kernel GPU time of a few decode steps: `ncu` times every kernel of `tessera generate` (CUDA
# graphs off, so each launch is seen; clocks left alone) and the summary is printed as one row per
# kernel and grid, largest total first. Prompt and 3 new tokens: one prefill pass, two decode
# passes; a kernel's "x" column divided by the passes gives its launches per pass.
# Usage: tests/gpu/ncu_decode_profile.sh TESSERA_BIN MODEL [extra generate flags...]
# LAUNCHES (default 2000) caps the kernels profiled: raise it for models of many layers.
# (as run on an H200: TinyLlama synth F16, with and without --precision_plan bench-int4-g128.json)
set -u
bin="$1"; model="$2"; shift 2
csv="$(mktemp)"
trap 'rm -f "$csv"' EXIT
TESSERA_CUDA_GRAPHS=0 ncu --clock-control none --metrics gpu__time_duration.sum --csv \
  --print-summary per-kernel --launch-count "${LAUNCHES:-2000}" "$bin" generate --model "$model" --device cuda:0 \
  --prompt "Once upon a time there was a little girl" --max_new_tokens 3 --temperature 0 "$@" \
  >"$csv" 2>/dev/null || { echo "ncu failed"; exit 1; }
python3 - "$csv" <<'PY'
import csv, sys
unit = {'ns': 1e-3, 'nsecond': 1e-3, 'us': 1.0, 'usecond': 1.0, 'ms': 1e3, 'msecond': 1e3}
rows = []
for r in csv.reader(open(sys.argv[1])):
    if len(r) < 15 or r[0] == 'Process ID':
        continue
    scale = unit.get(r[11], 1.0)
    us = lambda s: float(s.replace(',', '')) * scale
    calls = int(r[8].replace(',', ''))
    rows.append((calls * us(r[14]), calls, us(r[14]), us(r[12]), us(r[13]), r[3][:72], r[5]))
total = sum(r[0] for r in rows)
print(f"{'total us':>9} {'x':>5} {'avg us':>7} {'min':>7} {'max':>7}  kernel  grid")
for t, n, avg, lo, hi, name, grid in sorted(rows, reverse=True):
    print(f"{t:9.0f} {n:5d} {avg:7.1f} {lo:7.1f} {hi:7.1f}  {name}  {grid}")
print(f"{total:9.0f} us in all")
PY

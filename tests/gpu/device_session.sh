#!/usr/bin/env bash
# One call on a lent GPU machine, everything this repo checks there (what the 2026-11-26 H200
# session ran by hand): run_prebuilt.sh on PACK (the CUDA tests, compute-sanitizer memcheck with
# SANITIZE=1, the kernel benchmark, generate cpu vs cuda:0), then the TinyLlama-1.1B decoder
# benchmark per precision plan, each run alternated with BASE_PACK's binary when one is given
# (an A/B on the same machine), then the per-kernel ncu profile of a bf16 and an INT4 decode step,
# then the host CPU's own checks (the CPU tests that take AMX routes there; where it has AMX, the
# AMX panels against oneDNN and the CPU decoder, dense and FP8, with AMX on and off).
# Every log goes to LOG_DIR (default $OUT/logs when $OUT is set, else a temp dir), tarred into
# $OUT/logs.tgz when $OUT is set (the device tool returns at most 8 files).
# Usage, from the repository root: tests/gpu/device_session.sh PACK.tar.xz [BASE_PACK.tar.xz]
# Make PACK here with tests/gpu/pack_prebuilt.sh BUILD_DIR DIR (about 37 MB; the base pack with
# CPU=0, about 25 MB, so that both fit the device tool's 64 MiB carry; .gpupack*/ is git-ignored,
# so name DIR in `carry`); PLANS, BATCHES and
# ROUNDS override the decoder benchmark's plans (default: none bench-int4-g128 bench-fp8
# bench-nvfp4 bench-mxfp4), batches (1,16) and A/B rounds (2; 1 without BASE_PACK); NCU=0 skips
# the ncu profiles; GPU=0 skips every GPU step (run_prebuilt, the decoder benchmark, ncu) for a
# call that checks the host CPU alone. CPU_PLANS: the host-CPU decoder's plans (default:
# bench-fp8 bench-int4-g128 bench-mxfp4 bench-nvfp4-a16, the layers with AMX routes), each as PLAN or PLAN:i16 (with --cpu_int16_activations); MATMUL_FILTER replaces the
# host-CPU matmul benchmark's filter.
set -u
root="$(cd "$(dirname "$0")/../.." && pwd)"
pack="$1"; base="${2:-}"
logs="${LOG_DIR:-${OUT:+/tmp/device_session_logs}}"; logs="${logs:-$(mktemp -d)}"
mkdir -p "$logs"
t0=$(date +%s)
stamp() { echo "== $* at $(( $(date +%s) - t0 )) s"; }
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
gpu="${GPU:-1}"
if [[ "$gpu" == 1 ]]; then
  LOG_DIR="$logs" timeout "${T_TESTS:-300}" "$root/tests/gpu/run_prebuilt.sh" "$pack" 2>&1 |
    tee "$logs/prebuilt.txt"
  stamp "run_prebuilt exit ${PIPESTATUS[0]}"
fi
work="$(mktemp -d)"
mkdir -p "$work/new" "$work/base"
tar -C "$work/new" -xJf "$pack" || exit 1
[[ -n "$base" ]] && { tar -C "$work/base" -xJf "$base" || exit 1; }
export LD_LIBRARY_PATH="$work/new/gpupack/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
bin="$work/new/gpupack/bin/tessera"
model="$work/tinyllama-f16.gguf"
"$bin" synth --shape tinyllama-1.1b --type F16 --out "$model" \
  --vocab-from "$work/new/gpupack/models/ggml-vocab-llama-spm.gguf" 2>&1 | tail -1
versions=(new); [[ -n "$base" ]] && versions=(base new)
rounds="${ROUNDS:-$([[ -n "$base" ]] && echo 2 || echo 1)}"
gpu_plans="${PLANS:-none bench-int4-g128 bench-fp8 bench-nvfp4 bench-mxfp4}"
[[ "$gpu" == 1 ]] || gpu_plans=""
for plan in $gpu_plans; do
  extra=(); [[ "$plan" != none ]] && extra=(--precision_plan "$root/configs/plans/$plan.json")
  for ((r = 0; r < rounds; ++r)); do
    for v in "${versions[@]}"; do
      stamp "plan $plan, $v binary, round $((r + 1))"
      timeout 90 "$work/$v/gpupack/bin/tessera" bench --model "$model" --device cuda:0 \
        --batch "${BATCHES:-1,16}" --prompt 128 --gen 64 "${extra[@]}" 2>>"$logs/bench.err" | tail -n +3
    done
  done
done
if [[ "$gpu" == 1 && "${NCU:-1}" == 1 ]] && command -v ncu >/dev/null; then
  for plan in none bench-int4-g128; do
    extra=(); [[ "$plan" != none ]] && extra=(--precision_plan "$root/configs/plans/$plan.json")
    stamp "ncu profile, plan $plan"
    timeout 120 "$root/tests/gpu/ncu_decode_profile.sh" "$bin" "$model" "${extra[@]}" \
      >"$logs/ncu-$plan.txt" 2>&1
    head -25 "$logs/ncu-$plan.txt"
  done
fi
# The host CPU (often a Xeon with AMX, which no CI machine has): the CPU tests in PACK on it (the
# AMX tests and routes run for real where Linux grants AMX, and every Highway target it has), then
# prefill GEMM M = 128 against oneDNN with our AMX tiles on and off (TESSERA_DISABLE_AMX=1), the
# FP8 panels at M = 1 and 128, and the decoder on this CPU (dense and FP8) with AMX on and off.
stamp "host CPU"
lscpu | grep -E '^(Model name|Socket|Core|Thread|CPU\(s\))' | tr -s ' '
echo "AMX flags: $(grep -o -w -E 'amx_(tile|bf16|int8)' /proc/cpuinfo | sort -u | tr '\n' ' ')"
cpu_bin="$work/new/gpupack/bin"
if [[ ! -x "$cpu_bin/kernels_cpu_fast_test" ]]; then
  echo "no CPU binaries in PACK (packed with CPU=0)"
else
  # The FP8 panel tests take the AMX route with the real instructions where AMX is granted.
  # The quant panel and column split tests run the int16 route (vpdpwssd) on an Intel host, and
  # the quant panel and GGUF panel tests the 4-bit pair panels' AMX route where AMX is granted.
  for t in kernels_cpu_fast_test kernels_cpu_fast_fp8_bf16_test kernels_cpu_fast_quant_panel_test \
           kernels_cpu_fast_ggml_quant_panels_test engine_backend_cpu_column_split_test \
           bf16_activations_test; do
    [[ -x "$cpu_bin/$t" ]] || { echo "$t: not in PACK"; continue; }
    timeout 120 "$cpu_bin/$t" >"$logs/$t.log" 2>&1
    echo "$t: exit $? ($(grep -E '^\[  (PASSED|FAILED) +\] [0-9]+ test' "$logs/$t.log" |
      tr '\n' ' '))"
    grep -E 'Failure|FAILED|SKIPPED|differ from the model|route:' "$logs/$t.log" | head -30
  done
  if grep -q -w amx_tile /proc/cpuinfo; then
    shapes='(4096x4096|1.1b_gate_up)/M:128'
    filter="Triad|Peak|Bf16DotMatmul/BF16/$shapes/|Int8DotMatmul/INT8_W8A8/$shapes/"
    filter+="|OneDnnMatmul/(bf16|s8)/$shapes"
    filter+="|QuantMatmul/(FP8_PANEL|FP8_W8A8_PANEL)/(4096x4096|1.1b_gate_up)/M:(1|128)/"
    # Decode (M = 1) on the AMX panels, and the INT4 pairs with int16 activations (VNNI).
    filter+="|(Bf16DotMatmul/BF16|Int8DotMatmul/INT8_W8A8)/(4096x4096|1.1b_gate_up)/M:1/"
    filter+="|QuantMatmul/INT4_G128_PAIRS(|_I16|_BF16)/$shapes/"
    # The 4-bit pair panels' AMX route (exact split; bf16 activations) at M = 1 and 128.
    filter+="|QuantMatmul/(INT4_G128|MXFP4|NVFP4)_PAIRS(|_BF16)/(4096x4096|1.1b_gate_up)/M:(1|128)/"
    filter="${MATMUL_FILTER:-$filter}"
    for amx in on off; do
      stamp "matmul bench, AMX $amx"
      amx_env=(-u TESSERA_DISABLE_AMX); [[ $amx == off ]] && amx_env=(TESSERA_DISABLE_AMX=1)
      env "${amx_env[@]}" TESSERA_BENCH_COVER_MIB=64 timeout 150 \
        "$cpu_bin/tessera_matmul_bench" --benchmark_filter="$filter" --benchmark_min_time=0.2 2>&1 |
        tee "$logs/matmul-amx-$amx.txt" | grep -E 'amx_tiles|dnnl_isa|BM_'
    done
    # End to end on this CPU: the decoder's prefill and decode per plan, AMX on and off.
    for entry in ${CPU_PLANS:-bench-fp8 bench-int4-g128 bench-mxfp4 bench-nvfp4-a16}; do
      plan="${entry%:i16}"
      extra=(); [[ "$plan" != none ]] && extra=(--precision_plan "$root/configs/plans/$plan.json")
      [[ "$entry" == *:i16 ]] && extra+=(--cpu_int16_activations)
      for amx in on off; do
        stamp "tessera bench --device cpu, plan $entry, AMX $amx"
        amx_env=(-u TESSERA_DISABLE_AMX); [[ $amx == off ]] && amx_env=(TESSERA_DISABLE_AMX=1)
        env "${amx_env[@]}" timeout 90 "$bin" bench --model "$model" --device cpu --batch 1 \
          --prompt 256 --gen 16 "${extra[@]}" 2>>"$logs/bench-cpu.err" | tail -n +3 |
          tee -a "$logs/bench-cpu.txt"
      done
    done
  fi
fi
stamp done
rm -rf "$work"
[[ -n "${OUT:-}" ]] && tar -C "$(dirname "$logs")" -czf "$OUT/logs.tgz" "$(basename "$logs")"
exit 0

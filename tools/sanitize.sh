#!/usr/bin/env bash
# The CPU kernels' and CPU engine's tests under ASan + UBSan (the `asan` preset, build/asan), in
# every ISA mode this machine can run: natively, then each mode tools/isa_modes.sh prints. Each
# mode takes other kernels and other engine branches, so each finds its own defects: the
# twenty-third session's stack use after scope in DenseLinear failed two binaries natively and
# four under each limited mode. Exits non-zero on any failure or sanitizer report. Not part of CI
# (a cold build of these targets takes ~14 minutes of two cores); run it when kernels or the CPU
# Linear layers change. Usage: tools/sanitize.sh [extra test targets...]
set -euo pipefail
cd "$(dirname "$0")/.."
./tools/setup.sh
TARGETS=(
  kernels_cpu_fast_test kernels_cpu_fast_quant_test kernels_cpu_fast_fp8_bf16_test
  kernels_cpu_fast_quant_panel_test kernels_cpu_fast_ggml_quant_panels_test
  engine_backend_cpu_selector_test engine_backend_cpu_column_split_test
  engine_backend_cpu_dense_linear_kquant_test bf16_activations_test int16_activations_test
  q4k_int8_activations_test model_test quant_test "$@"
)
[ -f build/asan/build.ninja ] || cmake --preset asan >/dev/null
ninja -C build/asan -j "${JOBS:-2}" "${TARGETS[@]}"
read -r -a limited <<<"$(./tools/isa_modes.sh | tr '\n' ' ')"
modes=(native "${limited[@]}")
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
log=$(mktemp -d)
failed=0
for mode in "${modes[@]}"; do
  for t in "${TARGETS[@]}"; do
    bin=$(find build/asan/tests -type f -executable -name "$t" | head -1)
    out="$log/$mode-$t.log"
    if [ -z "$bin" ]; then
      echo "FAIL $mode $t: no test binary of that name under build/asan/tests"
      failed=1
      continue
    fi
    if [ "$mode" = native ]; then
      env -u TESSERA_CPU_ISA "$bin" >"$out" 2>&1 && rc=0 || rc=$?
    else
      TESSERA_CPU_ISA="$mode" "$bin" >"$out" 2>&1 && rc=0 || rc=$?
    fi
    reports=$(grep -cE 'ERROR: (Address|Leak)Sanitizer|runtime error' "$out" || true)
    if [ "$rc" != 0 ] || [ "$reports" != 0 ]; then
      echo "FAIL $mode $t (exit $rc, $reports sanitizer reports): $out"
      failed=1
    else
      echo "ok   $mode $t"
    fi
  done
done
exit "$failed"

#!/usr/bin/env bash
# Runs the CUDA test binaries and the GPU benchmark found under DIR (a build tree or a flat folder
# of prebuilt binaries), prints one pass/skip/fail table and then the benchmark table. Device
# tests skip without a GPU. LOG_DIR, when set, receives each binary's full output.
# Usage: tests/gpu/run_tests.sh DIR
set -u
dir="$1"
log_dir="${LOG_DIR:-}"
tests=(kernels_cuda_no_device_test kernels_cuda_device_test kernels_cuda_ptxas_report_test
       engine_backend_cuda_selector_test engine_backend_cuda_arena_test
       engine_backend_cuda_decoder_test engine_loader_device_test)
status=0
summary=()
for t in "${tests[@]}"; do
  bin="$(find "$dir" -name "$t" -type f -perm -u+x | head -1)"
  if [[ -z "$bin" ]]; then
    summary+=("$(printf '| %-36s | %4s | %4s | %4s |' "$t" - - missing)"); status=1; continue
  fi
  out="$(timeout 600 "$bin" 2>&1)"; rc=$?
  [[ -n "$log_dir" ]] && printf '%s\n' "$out" >"$log_dir/$t.log"
  pass=$(grep -c '^\[       OK \]' <<<"$out"); skip=$(grep -c '^\[  SKIPPED \] .*ms)' <<<"$out")
  fail=$(grep -c '^\[  FAILED  \] .*ms)$' <<<"$out")
  if [[ $rc -ne 0 ]]; then
    status=1
    echo "== $t (exit $rc)"
    grep -B2 -A8 -e 'Failure' -e 'FAILED' -e 'Error' <<<"$out" | head -60
  fi
  summary+=("$(printf '| %-36s | %4d | %4d | %4d |' "$t" "$pass" "$skip" "$fail")")
done
echo
printf '| %-36s | %4s | %4s | %4s |\n' test pass skip fail
printf '%s\n' "${summary[@]}"
echo
bench="$(find "$dir" -name tessera_gpu_bench -type f -perm -u+x | head -1)"
if [[ -z "$bench" ]]; then
  echo "tessera_gpu_bench not found under $dir"; exit 1
fi
if [[ -n "$log_dir" ]]; then
  timeout 600 "$bench" 2>&1 | tee "$log_dir/tessera_gpu_bench.log"; rc=${PIPESTATUS[0]}
else
  timeout 600 "$bench"; rc=$?
fi
[[ $rc -ne 0 ]] && status=1
exit $status

#!/usr/bin/env bash
# Builds the CUDA kernels, their tests and the GPU benchmarks, runs the tests (device tests skip
# without a GPU) and the benchmarks, and prints one summary table.
# Usage: tests/gpu/run_all.sh [build-dir]   (default build/cuda; CUDA_ARCHS overrides the arches)
set -u
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$root/build/cuda}"
archs="${CUDA_ARCHS:-80;89;90a;100a;120a}"
jobs="${JOBS:-2}"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTESSERA_ENABLE_CUDA=ON \
  "-DCMAKE_CUDA_ARCHITECTURES=$archs" >/dev/null || exit 1
tests=(kernels_cuda_no_device_test kernels_cuda_device_test kernels_cuda_ptxas_report_test
       engine_backend_cuda_selector_test engine_backend_cuda_arena_test
       engine_backend_cuda_decoder_test engine_loader_device_test)
ninja -C "$build" -j"$jobs" "${tests[@]}" tessera_gpu_bench || exit 1
status=0
summary=()
for t in "${tests[@]}"; do
  bin="$(find "$build/tests" -name "$t" -type f -perm -u+x | head -1)"
  out="$("$bin" 2>&1)"; rc=$?
  pass=$(grep -c '^\[       OK \]' <<<"$out"); skip=$(grep -c '^\[  SKIPPED \] .*ms)' <<<"$out")
  fail=$(grep -c '^\[  FAILED  \].*(' <<<"$out")
  [[ $rc -ne 0 ]] && status=1 && echo "$out" | grep -A5 -e 'Failure' -e 'FAILED' | head -40
  summary+=("$(printf '| %-36s | %4d | %4d | %4d |' "$t" "$pass" "$skip" "$fail")")
done
echo
printf '| %-36s | %4s | %4s | %4s |\n' test pass skip fail
printf '%s\n' "${summary[@]}"
echo
"$build/tests/gpu/tessera_gpu_bench" || status=1
exit $status

#!/usr/bin/env bash
# Builds the CUDA kernels, their tests and the GPU benchmarks, then runs them through
# run_tests.sh (device tests skip without a GPU) and prints one summary table.
# Usage: tests/gpu/run_all.sh [build-dir]   (default build/cuda; CUDA_ARCHS overrides the arches)
# On a GPU machine that cannot build (no absl/gtest there), pack_prebuilt.sh + run_prebuilt.sh
# carry binaries built elsewhere instead.
set -u
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$root/build/cuda}"
archs="${CUDA_ARCHS:-80;89;90a;100a;120a}"
jobs="${JOBS:-2}"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTESSERA_ENABLE_CUDA=ON \
  "-DCMAKE_CUDA_ARCHITECTURES=$archs" >/dev/null || exit 1
ninja -C "$build" -j"$jobs" kernels_cuda_no_device_test kernels_cuda_device_test \
  kernels_cuda_ptxas_report_test engine_backend_cuda_selector_test engine_backend_cuda_arena_test \
  engine_backend_cuda_decoder_test engine_loader_device_test tessera_gpu_bench || exit 1
exec "$root/tests/gpu/run_tests.sh" "$build"

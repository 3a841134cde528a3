#!/usr/bin/env bash
# Packs the CUDA test binaries, the GPU benchmark, the tessera CLI, the CPU tests that run AMX
# (fast kernels, FP8 panels, column splits, bf16 activations end to end) and the CPU matmul
# benchmark (for the host CPU: device_session.sh), the shared libraries they need that a CUDA
# machine may lack (absl, gRPC, ICU, Highway; not libc or CUDA's own), the ptxas reports and the
# stories260K model into OUT_DIR/gpupack.tar.xz, for a GPU machine that has CUDA but none of our
# build dependencies. run_prebuilt.sh unpacks and runs it there.
# Usage: tests/gpu/pack_prebuilt.sh BUILD_DIR OUT_DIR   (BUILD_DIR configured with CUDA on)
# CPU=0 leaves the CPU binaries out (about 37 -> 25 MB: oneDNN is most of the difference), for a
# base pack that only an A/B of the decoder uses, so that two packs fit the device tool's carry.
set -eu
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$(cd "$1" && pwd)"; out="$2"
# CPU tests that take the AMX routes where a host grants AMX (the 4-bit pair panels' too, GGUF's
# among them), and the int16 route (paths under BUILD_DIR/tests).
cpu_tests=(kernels/cpu/kernels_cpu_fast_test kernels/cpu/kernels_cpu_fast_fp8_bf16_test
           kernels/cpu/kernels_cpu_fast_quant_panel_test kernels/cpu/kernels_cpu_fast_ggml_quant_panels_test
           engine/backend/engine_backend_cpu_column_split_test engine/runtime/bf16_activations_test)
cpu_targets=()
if [[ "${CPU:-1}" == 1 ]]; then
  for t in "${cpu_tests[@]}"; do cpu_targets+=("$(basename "$t")"); done
  cpu_targets+=(tessera_matmul_bench)
fi
ninja -C "$build" -j"${JOBS:-2}" kernels_cuda_no_device_test kernels_cuda_device_test \
  kernels_cuda_ptxas_report_test engine_backend_cuda_selector_test engine_backend_cuda_arena_test \
  engine_backend_cuda_decoder_test engine_loader_device_test tessera_gpu_bench tessera \
  "${cpu_targets[@]}" >/dev/null
stage="$(mktemp -d)"; pack="$stage/gpupack"
mkdir -p "$pack/bin" "$pack/lib" "$pack/ptxas" "$pack/models"
bins=("$build/cli/tessera")
while IFS= read -r f; do bins+=("$f"); done < <(find "$build/tests" -type f -perm -u+x \
  \( -name 'kernels_cuda_*_test' -o -name 'engine_backend_cuda_*_test' \
     -o -name engine_loader_device_test -o -name tessera_gpu_bench \))
if [[ "${CPU:-1}" == 1 ]]; then
  for t in "${cpu_tests[@]}"; do bins+=("$build/tests/$t"); done
  bins+=("$build/bench/tessera_matmul_bench")
fi
cp "${bins[@]}" "$pack/bin/"
for b in "${bins[@]}"; do ldd "$b" | awk '$3 ~ /^\// {print $3}'; done | sort -u |
  grep -v -e /cuda/ -e '/libc\.so' -e '/libm\.so' -e libstdc++ -e libgcc_s -e '/libdl\.so' \
          -e libpthread -e '/librt\.so' | xargs -r -I{} cp -L {} "$pack/lib/"
cp "$build"/kernels/cuda/CMakeFiles/tessera_kernels_cuda.dir/*.ptxas.txt "$pack/ptxas/"
shared="$(sed -n 's/^TESSERA_SHARED_DIR:PATH=//p' "$build/CMakeCache.txt")"
cp "$shared/models/stories260K/stories260K.gguf" "$shared/reference/stories260K-greedy.json" \
  "$shared/reference/vocab/ggml-vocab-llama-spm.gguf" "$pack/models/" 2>/dev/null ||
  echo "note: stories260K / the llama vocab not packed (no shared/ at $shared)"
# Where the binaries look for test data and ptxas reports (compiled-in absolute paths).
printf 'source=%s\nbuild=%s\n' "$root" "$build" >"$pack/paths"
mkdir -p "$out"
tar -C "$stage" -cJf "$out/gpupack.tar.xz" gpupack
rm -rf "$stage"
ls -la "$out/gpupack.tar.xz"

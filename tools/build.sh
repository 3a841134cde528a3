#!/usr/bin/env bash
# Configures and builds tessera in build/release (Ninja, -j2). CUDA is compiled when nvcc exists
# (PATH or /usr/local/cuda); set TESSERA_ENABLE_CUDA=OFF to skip it. Used by run.sh and test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="$PATH:/usr/local/cuda/bin"
fi
BUILD_DIR="${BUILD_DIR:-build/release}"
cuda_flag=()
[ -n "${TESSERA_ENABLE_CUDA:-}" ] && cuda_flag=(-DTESSERA_ENABLE_CUDA="$TESSERA_ENABLE_CUDA")
if [ ! -f "$BUILD_DIR/build.ninja" ] || [ -n "${TESSERA_ENABLE_CUDA:-}" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release "${cuda_flag[@]}" >/dev/null
fi
cmake --build "$BUILD_DIR" -j "${JOBS:-2}" "$@"

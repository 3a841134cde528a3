#!/usr/bin/env bash
# Sets up (Debian packages), builds everything (CUDA code too when nvcc exists) and runs every
# test with ctest. Exits non-zero on any failure. This is the README's test command and CI's.
set -euo pipefail
cd "$(dirname "$0")/.."
./tools/setup.sh
./tools/build.sh
cd "${BUILD_DIR:-build/release}"
ctest --output-on-failure -j "${JOBS:-2}" --timeout 900
# Once more as an AVX2-only CPU where this one has AVX-512 (TESSERA_CPU_ISA=avx2:
# kernels/cpu/fast/isa_limit.h): the kernels that Zen 2 / Zen 3 and older Intel users run.
if grep -qw avx512f /proc/cpuinfo 2>/dev/null; then
  echo "== again with TESSERA_CPU_ISA=avx2 =="
  TESSERA_CPU_ISA=avx2 ctest --output-on-failure -j "${JOBS:-2}" --timeout 900
fi

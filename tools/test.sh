#!/usr/bin/env bash
# Sets up (Debian packages), builds everything (CUDA code too when nvcc exists) and runs every
# test with ctest. Exits non-zero on any failure. This is the README's test command and CI's.
set -euo pipefail
cd "$(dirname "$0")/.."
./tools/setup.sh
./tools/build.sh
cd "${BUILD_DIR:-build/release}"
ctest --output-on-failure -j "${JOBS:-2}" --timeout 900

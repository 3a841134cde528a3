#!/usr/bin/env bash
# Sets up (Debian packages), builds everything (CUDA code too when nvcc exists) and runs every
# test with ctest (again as an AVX2-only CPU on AVX-512 machines, and as one without AVX-512 BF16 /
# AMX on machines with them), then checks that the README's
# first command (tools/run.sh) serves. Exits non-zero on any failure. This is the README's test
# command and CI's.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
./tools/setup.sh
./tools/build.sh
cd "${BUILD_DIR:-build/release}"
ctest --output-on-failure -j "${JOBS:-2}" --timeout 900
# Once more as an AVX2-only CPU where this one has AVX-512 (TESSERA_CPU_ISA=avx2:
# kernels/cpu/fast/isa_limit.h): the kernels that Zen 2 / Zen 3 and older Intel users run; and
# where it has AVX-512 BF16 or AMX, once more without them (TESSERA_CPU_ISA=avx512-vnni): the
# kernels of Cascade Lake and Ice Lake servers.
for mode in $("$ROOT/tools/isa_modes.sh"); do
  echo "== again with TESSERA_CPU_ISA=$mode =="
  TESSERA_CPU_ISA="$mode" ctest --output-on-failure -j "${JOBS:-2}" --timeout 900
done
# The README's first command: tools/run.sh builds the server and serves the demo model until
# /readyz answers (on ports of its own, so a running server does not interfere).
echo "== tools/run.sh smoke test =="
cd "$ROOT"
port=$((20000 + RANDOM % 20000))
log=$(mktemp)
./tools/run.sh --grpc_address=127.0.0.1:0 --http_address=127.0.0.1:$port >"$log" 2>&1 &
run_pid=$!
ready=0
for _ in $(seq 1 600); do
  if python3 -c 'import sys, urllib.request as u; u.urlopen(sys.argv[1], timeout=2)' \
    "http://127.0.0.1:$port/readyz" >/dev/null 2>&1; then
    ready=1
    break
  fi
  kill -0 "$run_pid" 2>/dev/null || break
  sleep 1
done
kill "$run_pid" 2>/dev/null || true
wait "$run_pid" 2>/dev/null || true
if [ "$ready" != 1 ]; then
  echo "tools/run.sh did not become ready:"; tail -20 "$log"; exit 1
fi
echo "tools/run.sh served the demo model"

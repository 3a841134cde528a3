#!/usr/bin/env bash
# On a GPU machine, from the repository root: unpacks PACK (made by pack_prebuilt.sh), points the
# compiled-in source and build paths at this checkout, runs run_tests.sh over the binaries, then
# `tessera generate` on stories260K with --device cpu and cuda:0 and compares their greedy text.
# LOG_DIR (optional) receives every log.
# Usage: tests/gpu/run_prebuilt.sh PACK.tar.xz
set -u
here="$(pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
tar -C "$tmp" -xJf "$1" || exit 1
pack="$tmp/gpupack"
source_dir="$(sed -n 's/^source=//p' "$pack/paths")"
build_dir="$(sed -n 's/^build=//p' "$pack/paths")"
if [[ "$source_dir" != "$here" && ! -e "$source_dir" ]]; then
  mkdir -p "$(dirname "$source_dir")" && ln -s "$here" "$source_dir"
fi
ptxas_dir="$build_dir/kernels/cuda/CMakeFiles/tessera_kernels_cuda.dir"
mkdir -p "$ptxas_dir" && cp "$pack"/ptxas/*.ptxas.txt "$ptxas_dir/"
cuda_lib="$(dirname "$(readlink -f "$(command -v nvcc)")")/../lib64"
export LD_LIBRARY_PATH="$pack/lib:$cuda_lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
missing="$(ldd "$pack"/bin/* | grep 'not found' | sort -u)"
[[ -n "$missing" ]] && echo "missing libraries: $missing"
"$here/tests/gpu/run_tests.sh" "$pack/bin"; status=$?
model="$pack/models/stories260K.gguf"
if [[ -f "$model" ]]; then
  for dev in cpu cuda:0; do
    "$pack/bin/tessera" generate --model "$model" --prompt "Once upon a time" --max_new_tokens 64 --temperature 0 \
      --kv_cache_dtype f32 --device "$dev" >"$tmp/gen-$dev.txt" 2>"$tmp/gen-$dev.err"
    rc=$?
    echo "generate --device $dev: exit $rc"; cat "$tmp/gen-$dev.txt"; tail -3 "$tmp/gen-$dev.err"
    # Two failed runs print nothing and would compare equal.
    [[ $rc -ne 0 || ! -s "$tmp/gen-$dev.txt" ]] && status=1
  done
  if [[ -s "$tmp/gen-cpu.txt" ]] && cmp -s "$tmp/gen-cpu.txt" "$tmp/gen-cuda:0.txt"; then
    echo "greedy text: cuda:0 == cpu"
  else
    echo "greedy text: cuda:0 != cpu"; status=1
  fi
fi
# SANITIZE=1: compute-sanitizer memcheck over the device tests (out-of-bounds and misaligned
# accesses, leaks), one summary line per binary.
if [[ "${SANITIZE:-0}" == 1 ]] && command -v compute-sanitizer >/dev/null; then
  for t in kernels_cuda_device_test engine_backend_cuda_decoder_test; do
    compute-sanitizer --tool memcheck --leak-check full --error-exitcode 3 "$pack/bin/$t" \
      >"$tmp/san-$t.txt" 2>&1
    rc=$?
    echo "compute-sanitizer memcheck $t: exit $rc, $(grep -m1 'ERROR SUMMARY' "$tmp/san-$t.txt")"
    [[ $rc -ne 0 ]] && status=1
  done
fi
[[ -n "${LOG_DIR:-}" ]] && cp "$tmp"/gen-* "$tmp"/san-* "$LOG_DIR/" 2>/dev/null
exit $status

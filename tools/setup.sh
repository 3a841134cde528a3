#!/usr/bin/env bash
# Installs the Debian packages tessera builds and tests with (docs: ../shared/docs/toolchain.md).
# Idempotent: checks each package with dpkg first and says nothing when all are present.
# Works as root or through sudo; never prompts (CI runs with no stdin).
set -euo pipefail

PACKAGES=(
  cmake ninja-build pkg-config g++ ccache
  libgrpc++-dev libgrpc-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev prometheus-cpp-dev nlohmann-json3-dev libgtest-dev libgmock-dev googletest
  libbenchmark-dev libdnnl-dev libhwy-dev libpcre2-dev libicu-dev
  grpc-proto openssl prometheus python3-grpcio python3-grpc-tools python3-yaml
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
  SUDO=()
elif command -v sudo >/dev/null 2>&1; then
  SUDO=(sudo -n)
else
  echo "setup: missing packages (${missing[*]}) and neither root nor sudo is available" >&2
  exit 1
fi

echo "setup: installing ${missing[*]}"
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq </dev/null
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  "${missing[@]}" </dev/null >/dev/null

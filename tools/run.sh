#!/usr/bin/env bash
# Sets up, builds, and runs the project's main job. Until the gRPC server lands this is
# `tessera inspect` on the repo's own GGUF fixture (written by gguf-py).
set -euo pipefail
cd "$(dirname "$0")/.."
./tools/setup.sh
./tools/build.sh tessera
exec "${BUILD_DIR:-build/release}/cli/tessera" inspect tests/data/io/gguf/blocks.gguf "$@"

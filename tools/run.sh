#!/usr/bin/env bash
# Sets up, builds, and runs the project's main job: `tessera serve` on the built-in demo model
# (gRPC on 0.0.0.0:50051, Prometheus metrics on 0.0.0.0:9090). Extra arguments go to `serve`,
# e.g. `./tools/run.sh --model ../shared/models/stories260K/stories260K.gguf`.
set -euo pipefail
cd "$(dirname "$0")/.."
./tools/setup.sh
./tools/build.sh --target tessera
exec "${BUILD_DIR:-build/release}/cli/tessera" serve "$@"

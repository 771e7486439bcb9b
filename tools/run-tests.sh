#!/usr/bin/env bash
# The README's test command: installs the Debian packages, builds everything and runs the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh
# ccache hits across clones: paths below this folder are hashed relative to it.
export CCACHE_BASEDIR="$PWD"
build=${SWINFER_BUILD_DIR:-build}
jobs=${SWINFER_JOBS:-$(nproc)}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" -j "$jobs"
ctest --test-dir "$build" --output-on-failure -j "$jobs"

#!/usr/bin/env bash
# The sanitizer suite (docs/reliability.md): the whole host test suite built with clang 19, AddressSanitizer and
# UndefinedBehaviorSanitizer (-DSWINFER_SANITIZE=ON: every finding fatal, leaks included) and run. Run it before a
# release, with the 30-minute fuzz runs; tools/run-tests.sh runs it when SWINFER_SANITIZE_TESTS=full. It is not in
# every submission's CI because it doubles the host suite's cost: on 2 cores, about 20 minutes of compiling (no
# object is shared with the GCC build) and 17 of tests (docs/reliability.md).
# SWINFER_SANITIZE_EXCLUDE: a ctest regex of tests left out (default: none).
set -euo pipefail
cd "$(dirname "$0")/.."
export CCACHE_BASEDIR="$PWD"
dir=${SWINFER_SANITIZE_BUILD_DIR:-build-sanitize}
jobs=${SWINFER_JOBS:-$(nproc)}
start=$SECONDS
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=clang++-19 -DSWINFER_SANITIZE=ON \
  -DSWINFER_BUILD_BENCH=OFF > "$dir.configure.log" 2>&1 || { cat "$dir.configure.log" >&2; exit 1; }
cmake --build "$dir" -j "$jobs"
built=$SECONDS
# A finding aborts the test with its stack; halt_on_error is already implied by -fno-sanitize-recover.
export UBSAN_OPTIONS=print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1
ctest --test-dir "$dir" --output-on-failure -j "$jobs" ${SWINFER_SANITIZE_EXCLUDE:+-E "$SWINFER_SANITIZE_EXCLUDE"}
echo "swinfer: the sanitizer suite passed: built in $((built - start)) s, tests $((SECONDS - built)) s"

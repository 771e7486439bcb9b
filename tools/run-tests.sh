#!/usr/bin/env bash
# The README's test command: installs the Debian packages, builds everything and runs the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
SWINFER_GPU_DEPS=${SWINFER_GPU_DEPS:-1} bash tools/install-deps.sh
# ccache hits across clones: paths below this folder are hashed relative to it.
export CCACHE_BASEDIR="$PWD"
build=${SWINFER_BUILD_DIR:-build}
jobs=${SWINFER_JOBS:-$(nproc)}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" -j "$jobs"
ctest --test-dir "$build" --output-on-failure -j "$jobs"

# The hip GPU backend, compile only (no GPU here): its library and [gpu] test executable for both platforms, each in
# its own build folder. A platform whose compiler is absent is skipped with a message. docs/gpu.md runs the tests.
gpu_compile() {
  local platform=$1 dir=$2
  shift 2
  local start=$SECONDS
  echo "swinfer: compile-only build of the hip backend for $platform in $dir"
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSWINFER_GPU_PLATFORM="$platform" \
    -DSWINFER_BUILD_TESTS=OFF -DSWINFER_BUILD_EXAMPLES=OFF -DSWINFER_BUILD_BENCH=OFF -DSWINFER_WITH_ONEDNN=OFF "$@"
  cmake --build "$dir" -j "$jobs" --target swinfer_hip swinfer_gpu_tests
  echo "swinfer: hip backend for $platform compiled in $((SECONDS - start)) s (not run: no GPU in CI)"
}
if [[ "${SWINFER_GPU_COMPILE:-1}" == 1 ]]; then
  nvcc=$(command -v nvcc || true)
  [[ -z "$nvcc" && -x /usr/local/cuda/bin/nvcc ]] && nvcc=/usr/local/cuda/bin/nvcc
  if [[ -n "$nvcc" ]]; then
    gpu_compile nvidia "${build}-gpu-nvidia" -DCMAKE_CUDA_COMPILER="$nvcc" -DCMAKE_CUDA_ARCHITECTURES=90
  else
    echo "swinfer: SKIPPED the hip backend's NVIDIA compile check: no nvcc (install the CUDA toolkit)"
  fi
  if [[ -x /opt/rocm/llvm/bin/clang++ || -x /usr/lib/llvm-15/bin/clang++ && -e /usr/include/hip/hip_runtime.h ]]; then
    gpu_compile amd "${build}-gpu-amd" "-DCMAKE_HIP_ARCHITECTURES=gfx90a;gfx940"
  else
    echo "swinfer: SKIPPED the hip backend's AMD compile check: no HIP clang (apt-get install hipcc libamdhip64-dev)"
  fi
fi

#!/usr/bin/env bash
# Builds here what a lent GPU machine runs and packs it beside the working tree, git-ignored (docs/gpu.md, "The
# acceptance run there"; the GPU machine unpacks it with `tools/gpu-acceptance.sh unpack`):
#
#   bash tools/gpu-bundle.sh [gpu]  .gpu-bundle/: the NVIDIA GPU executables (the local nvcc is the GPU machine's
#                                   CUDA 13 release): the [gpu] tests, the swinfer tool and the two GPU benchmarks,
#                                   each loading nothing but glibc and the GPU driver (nifti_clib, znzlib, zlib,
#                                   libstdc++ and the CUDA runtime linked in: -DSWINFER_STATIC_LIBS=ON), and the MONAI
#                                   wheel the acceptance run's MONAI steps import
#   bash tools/gpu-bundle.sh host   .host-bundle/: the static swinfer tool and bench_forward (-DSWINFER_STATIC=ON, the
#                                   cpu kernels compiled for x86-64-v2 to AMX and chosen at run time) for the GPU
#                                   machine's own CPU, so far the only AMX-INT8 CPU this project has met
#                                   (`gpu-acceptance.sh host`); carried in a call of its own, since the tree and both
#                                   bundles exceed the 64 MiB one call carries
#
# Every executable is stripped and compressed, its ldd checked (glibc only; the host tools load nothing), no
# configure-time absolute path of this machine may be left in it, and each runs here once as a dry run (no GPU here).
#
# GPU host code is compiled for x86-64-v3 (AVX2, FMA), not this machine's -march=native: every H100/H200 server's CPU
# has them, and an executable built on an AVX-512 machine here would stop with SIGILL on a host without.
#
# Environment: SWINFER_GPU_BUNDLE_BUILD (build-gpu-bundle, build-host-bundle), CUDA_ARCHS (90a-real: Hopper machine
# code with its arch-specific instructions, what the lent H100/H200 run; '90a-real;90-virtual' adds compute_90 PTX
# that a later GPU's driver can compile, 1.8 MB more, which with the int8 kernels no longer fits the 64 MiB),
# HOST_ARCH (x86-64-v3), SWINFER_JOBS (nproc).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-gpu}
[[ $mode == gpu || $mode == host ]] || { echo "gpu-bundle: unknown bundle '$mode' (gpu or host)" >&2; exit 2; }
jobs=${SWINFER_JOBS:-$(nproc)}
export CCACHE_BASEDIR="$PWD"

# A path of this machine compiled in (a data folder fixed at configure time) would point nowhere there.
check_no_local_paths() {
  if strings "$1" | grep -Fq "$PWD/"; then
    echo "gpu-bundle: $(basename "$1") holds this checkout's path $PWD/:" >&2
    strings "$1" | grep -F "$PWD/" | head -5 >&2
    exit 1
  fi
}

# Compressed: the working tree and what is carried beside it travel within 64 MiB. xz -9's 64 MiB window sees the
# copies of the kernels the executables share as one (the GPU bundle's four: about 4.6 MB, 11 MB with tar -J's
# default). $1: the build's line for the manifest.
pack() {
  tar -C "$bundle" -cf - bin | xz -9 > "$bundle/bin.tar.xz"
  rm -rf "$bundle/bin"
  {
    echo "built $(date -u +%FT%TZ) from $(git rev-parse --short HEAD)$(git diff --quiet HEAD ||
      echo ' (with uncommitted changes)')"
    echo "$1"
    tar -tvJf "$bundle/bin.tar.xz" | awk '{print $3, $6}'
  } > "$bundle/MANIFEST"
  cat "$bundle/MANIFEST"
  local tree packed
  tree=$(git ls-files -z | du -cb --files0-from=- | tail -1 | cut -f1)
  packed=$(du -sb "$bundle" | cut -f1)
  if ((tree + packed > 64 << 20)); then
    echo "gpu-bundle: $((tree >> 20)) MiB of tracked files and $((packed >> 10)) KiB in $bundle/ exceed the 64 MiB" \
         "a device call carries: make the bundle or the tree smaller" >&2
    exit 1
  fi
  echo "gpu-bundle: $(du -sh "$bundle" | cut -f1) in $bundle/, $((tree >> 20)) MiB of tracked files beside it," \
       "$(((64 << 20) - tree - packed >> 10)) KiB to spare of the 64 MiB a call carries; carry it, then" \
       "tools/gpu-acceptance.sh unpack and its steps there"
}

if [[ $mode == host ]]; then
  build=${SWINFER_GPU_BUNDLE_BUILD:-build-host-bundle}
  bundle=.host-bundle
  mkdir -p "$build"
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSWINFER_STATIC=ON -DSWINFER_BUILD_TESTS=OFF \
    -DSWINFER_BUILD_TOOL=ON -DSWINFER_BUILD_EXAMPLES=OFF -DSWINFER_BUILD_BENCH=ON -DSWINFER_INSTALL=OFF \
    > "$build/configure.log" 2>&1 ||
    { cat "$build/configure.log" >&2; exit 1; }
  cmake --build "$build" -j "$jobs" --target swinfer_cli bench_forward
  rm -rf "$bundle"
  mkdir -p "$bundle/bin"
  for exe in apps/swinfer/swinfer bench/bench_forward; do
    strip -o "$bundle/bin/$(basename "$exe")" "$build/$exe"
    if ldd "$bundle/bin/$(basename "$exe")" > /dev/null 2>&1; then
      echo "gpu-bundle: $exe loads shared libraries; the host tools must be static" >&2
      exit 1
    fi
    check_no_local_paths "$bundle/bin/$(basename "$exe")"
  done
  # The dry run on this CPU: the levels it runs, and a small int8 forward on the chosen one.
  "$bundle/bin/swinfer" info --model data/demo/model.pt | sed -n "/^this CPU/,/^$/p"
  "$bundle/bin/bench_forward" --backends cpu --precisions int8 --feature-size 12 --size 64 --runs 1 --threads 1
  pack "static x86-64 (cpu kernels x86-64-v2 to amx, chosen at run time); $(c++ --version | head -1)"
  exit 0
fi

build=${SWINFER_GPU_BUNDLE_BUILD:-build-gpu-bundle}
archs=${CUDA_ARCHS:-90a-real}
host_arch=${HOST_ARCH:-x86-64-v3}
bundle=.gpu-bundle
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
[[ -x $nvcc ]] || { echo "gpu-bundle: no nvcc (install the CUDA 13 toolkit)" >&2; exit 1; }
mkdir -p "$build"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSWINFER_GPU_PLATFORM=nvidia \
  -DCMAKE_CUDA_COMPILER="$nvcc" "-DCMAKE_CUDA_ARCHITECTURES=$archs" -DSWINFER_STATIC_LIBS=ON \
  -DSWINFER_NATIVE=OFF -DSWINFER_CPU_DISPATCH=OFF "-DCMAKE_CXX_FLAGS=-march=$host_arch" \
  -DSWINFER_BUILD_TESTS=OFF -DSWINFER_BUILD_TOOL=ON -DSWINFER_BUILD_EXAMPLES=OFF -DSWINFER_BUILD_BENCH=ON \
  -DSWINFER_WITH_ONEDNN=OFF \
  -DSWINFER_INSTALL=OFF > "$build/configure.log" 2>&1 || { cat "$build/configure.log" >&2; exit 1; }
executables=(tests/gpu/swinfer_gpu_tests apps/swinfer/swinfer bench/bench_forward bench/bench_gpu_kernels)
cmake --build "$build" -j "$jobs" --target swinfer_gpu_tests swinfer_cli bench_forward bench_gpu_kernels

rm -rf "$bundle"
mkdir -p "$bundle/bin"
for exe in "${executables[@]}"; do
  strip -o "$bundle/bin/$(basename "$exe")" "$build/$exe"
done

# What each executable loads: glibc's libraries only (the CUDA runtime opens the driver's libcuda.so.1 itself).
allowed='^(linux-vdso\.so\.1|libc\.so\.6|libm\.so\.6|libdl\.so\.2|libpthread\.so\.0|librt\.so\.1|/lib64/ld-linux-x86-64\.so\.2)$'
for exe in "$bundle"/bin/*; do
  extra=$(ldd "$exe" | awk '{print $1}' | grep -Ev "$allowed" || true)
  if [[ -n $extra ]]; then
    echo "gpu-bundle: $(basename "$exe") needs libraries the GPU machine may lack: $extra" >&2
    exit 1
  fi
  check_no_local_paths "$exe"
done

# The dry run: no GPU here, so the tests must skip (exit 77) and the tool must say so, both from another folder with
# the test data found through $SWINFER_TEST_DATA_DIR as on the GPU machine.
dry=$(mktemp -d)
trap 'rm -rf "$dry"' EXIT
rc=0
(cd "$dry" && SWINFER_TEST_DATA_DIR="$OLDPWD/tests/data" "$OLDPWD/$bundle/bin/swinfer_gpu_tests" > tests.log 2>&1) ||
  rc=$?
if [[ $rc != 77 && $rc != 0 ]]; then
  cat "$dry/tests.log" >&2
  echo "gpu-bundle: swinfer_gpu_tests exited with $rc here (77: skipped, no GPU)" >&2
  exit 1
fi
rc=0
"$bundle/bin/swinfer" segment --model data/demo/model.pt --config data/demo/model_config.json --backend hip \
  -i data/demo/phantom.nii.gz -o "$dry/mask.nii.gz" -q > "$dry/segment.log" 2>&1 || rc=$?
if [[ $rc != 0 ]] && ! grep -q "no usable GPU" "$dry/segment.log"; then
  cat "$dry/segment.log" >&2
  echo "gpu-bundle: 'swinfer segment --backend hip' failed other than with 'no usable GPU'" >&2
  exit 1
fi

# MONAI for the acceptance run's MONAI steps (pure Python; the GPU machine has torch and einops, and no network), as
# an unpacked site tree under xz (1.2 MB instead of the 2.7 MB wheel: the tree and the bundle share the call's
# 64 MiB); tools/gpu-acceptance.sh unpacks it onto PYTHONPATH.
wheel_dir=$(mktemp -d)
trap 'rm -rf "$dry" "$wheel_dir"' EXIT
if ! python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$wheel_dir" monai==1.5.0; then
  echo "gpu-bundle: could not download the monai 1.5.0 wheel (no pip or no network)" >&2
  exit 1
fi
python3 -m zipfile -e "$wheel_dir"/monai-*.whl "$wheel_dir/site"
tar -C "$wheel_dir/site" -cf - . | xz -9 > "$bundle/monai-site.tar.xz"

pack "nvcc: $("$nvcc" --version | tail -2 | head -1); CUDA architectures: $archs"

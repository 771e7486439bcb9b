#!/usr/bin/env bash
# Stages what building and testing the hip GPU backend needs on a machine that has a GPU toolkit (CUDA or ROCm),
# CMake >= 3.25, ninja and a C++20 g++, but none of our Debian packages and no network: the header-only
# dependencies with their CMake package files, and the x86-64 libraries the configure step looks for (zlib,
# nifti2/znz; the GPU build links none of them). Everything goes to .gpu-stage/ (git-ignored), with
# .gpu-stage/stage.cmake, an initial cache (cmake -C) that points every find_package/find_library at it, links those
# libraries statically (SWINFER_STATIC_LIBS: the executables load nothing of ours at run time) and selects the
# GPU-only build. The fallback to building there: tools/gpu-bundle.sh builds here and carries the executables. Run it here (Debian 12, after tools/install-deps.sh); docs/gpu.md continues there.
set -euo pipefail
cd "$(dirname "$0")/.."
stage=${1:-.gpu-stage}
arch=x86_64-linux-gnu
rm -rf "$stage"
mkdir -p "$stage/root"
root=$(cd "$stage/root" && pwd)

# Header-only libraries and their (relocatable) package files, at their Debian paths below root/.
paths=(
  /usr/include/eigen3 /usr/share/eigen3/cmake
  /usr/include/nlohmann /usr/share/cmake/nlohmann_json
  /usr/include/xtensor /usr/lib/$arch/cmake/xtensor
  /usr/include/xtl /usr/share/cmake/xtl
  /usr/include/catch2 /usr/lib/cmake/Catch2 /usr/lib/libCatch2WithMain.a
  /usr/include/CLI /usr/share/cmake/CLI11
  /usr/include/nifti /usr/include/zlib.h /usr/include/zconf.h
)
for p in "${paths[@]}"; do
  [[ -e "$p" ]] || { echo "stage-gpu-build: $p is missing; run tools/install-deps.sh first" >&2; exit 1; }
  mkdir -p "$root$(dirname "$p")"
  cp -a "$p" "$root$(dirname "$p")/"
done
# Static libraries (x86-64): linked in, so nothing has to be found by its SONAME on the GPU machine.
mkdir -p "$root/usr/lib/$arch"
for lib in libz.a libnifti2.a libznz.a; do
  cp -L "/usr/lib/$arch/$lib" "$root/usr/lib/$arch/$lib"
done

cat > "$stage/stage.cmake" <<CMAKE
# Initial cache for the GPU machine (cmake -C .gpu-stage/stage.cmake ...): dependencies from this folder, and the
# GPU-only build (the hip backend and its [gpu] tests; no cpu/oneDNN suite, tool or benchmarks). Written by
# tools/stage-gpu-build.sh; paths are relative to this file, so the folder can travel with the tree.
set(_stage "\${CMAKE_CURRENT_LIST_DIR}/root/usr")
set(Eigen3_DIR "\${_stage}/share/eigen3/cmake" CACHE PATH "")
set(nlohmann_json_DIR "\${_stage}/share/cmake/nlohmann_json" CACHE PATH "")
set(xtensor_DIR "\${_stage}/lib/$arch/cmake/xtensor" CACHE PATH "")
set(xtl_DIR "\${_stage}/share/cmake/xtl" CACHE PATH "")
set(Catch2_DIR "\${_stage}/lib/cmake/Catch2" CACHE PATH "")
set(CLI11_DIR "\${_stage}/share/cmake/CLI11" CACHE PATH "")
set(ZLIB_INCLUDE_DIR "\${_stage}/include" CACHE PATH "")
set(ZLIB_LIBRARY "\${_stage}/lib/$arch/libz.a" CACHE FILEPATH "")
set(SWINFER_NIFTI_INCLUDE_DIR "\${_stage}/include/nifti" CACHE PATH "")
set(SWINFER_NIFTI2_LIBRARY "\${_stage}/lib/$arch/libnifti2.a" CACHE FILEPATH "")
set(SWINFER_ZNZ_LIBRARY "\${_stage}/lib/$arch/libznz.a" CACHE FILEPATH "")
set(SWINFER_STATIC_LIBS ON CACHE BOOL "")
set(CMAKE_BUILD_TYPE Release CACHE STRING "")
set(SWINFER_GPU_PLATFORM nvidia CACHE STRING "")
set(SWINFER_GPU_TESTS ON CACHE BOOL "")
set(SWINFER_BUILD_TESTS OFF CACHE BOOL "")
set(SWINFER_BUILD_TOOL OFF CACHE BOOL "")
set(SWINFER_BUILD_EXAMPLES OFF CACHE BOOL "")
set(SWINFER_BUILD_BENCH OFF CACHE BOOL "")
set(SWINFER_WITH_ONEDNN OFF CACHE BOOL "")
set(SWINFER_INSTALL OFF CACHE BOOL "")
CMAKE
# MONAI for bench/compare_pytorch.py there (pure Python; that machine has torch and einops but no network).
if python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$stage/wheels" monai==1.5.0 2>/dev/null; then
  echo "stage-gpu-build: staged the monai 1.5.0 wheel in $stage/wheels"
else
  echo "stage-gpu-build: could not download the monai wheel (no pip or no network): the GPU benchmark will lack MONAI"
fi
echo "stage-gpu-build: staged $(du -sh "$stage" | cut -f1) in $stage; see docs/gpu.md"

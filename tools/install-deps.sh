#!/usr/bin/env bash
# Installs what building and testing swinfer needs on Debian 12 (run as root). Safe to run again.
set -euo pipefail
packages=(
  build-essential cmake ninja-build ccache pkg-config
  libeigen3-dev libxtensor-dev nlohmann-json3-dev libcli11-dev zlib1g-dev
  libdnnl-dev libnifti2-dev catch2 libstb-dev
  ocl-icd-opencl-dev  # Debian's dnnl CMake package looks for OpenCL even for the CPU engine
)
# SWINFER_GPU_DEPS=1 (tools/run-tests.sh sets it for the release checks): Debian's HIP 5.2 compiler and runtime headers, so CI can
# compile the hip backend for AMD (gfx90a, gfx940); about 66 MB to download, 350 MB installed (clang-15, llvm-15).
# With clang 19, its linker and its offload bundler, the same headers also build gfx942 (MI300X).
# The NVIDIA compiler (nvcc) is not a Debian 12 package; CI uses it when the CUDA toolkit is installed.
if [[ "${SWINFER_GPU_DEPS:-0}" == 1 ]]; then
  packages+=(hipcc libamdhip64-dev clang-19 lld-19 clang-tools-19)
fi
# SWINFER_MPI_DEPS=1 (tools/run-tests.sh sets it): Debian's Open MPI, for the -DSWINFER_MPI=ON build of the tool and
# its mpirun tests (docs/distributed.md); about 12 MB to download.
if [[ "${SWINFER_MPI_DEPS:-0}" == 1 ]]; then
  packages+=(libopenmpi-dev openmpi-bin)
fi
# SWINFER_SANITIZE_DEPS=1 (tools/run-tests.sh sets it): clang 19 with its sanitizer and libFuzzer runtimes and its
# OpenMP, for the sanitizer suite and the fuzz harnesses (docs/reliability.md); 54 MB to download, 336 MB installed.
if [[ "${SWINFER_SANITIZE_DEPS:-0}" == 1 ]]; then
  packages+=(clang-19 libclang-rt-19-dev libomp-19-dev)
fi
# SWINFER_PYTHON_DEPS=1 (tools/run-tests.sh sets it): Python's headers and Debian's numpy, torch and pytest, for the
# Python package and its tests against MONAI (tools/python-env.sh adds nanobind and MONAI from PyPI in a venv);
# about 45 MB to download, 250 MB installed.
if [[ "${SWINFER_PYTHON_DEPS:-0}" == 1 ]]; then
  packages+=(python3-dev python3-venv python3-numpy python3-torch python3-pytest)
fi
# SWINFER_STATIC_DEPS=1 (tools/run-tests.sh sets it): qemu-user, to run the static executable on emulated CPUs
# (an SSE4.2-only Nehalem, an AVX2 Haswell, 64-bit Arm), and the aarch64 cross compiler; the arm64 libraries it links
# are unpacked by tools/arm64-sysroot.sh, for which Debian's arm64 package lists are added here.
update=0
if [[ "${SWINFER_STATIC_DEPS:-0}" == 1 ]]; then
  packages+=(qemu-user g++-aarch64-linux-gnu)
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    dpkg --add-architecture arm64
    update=1
  fi
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} || update)); then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
fi
if ((${#missing[@]})); then
  echo "swinfer: installing ${missing[*]}"
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

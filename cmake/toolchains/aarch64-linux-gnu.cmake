# Cross-compiling the static swinfer for 64-bit Arm with Debian's g++-aarch64-linux-gnu (tools/build-static.sh):
#   cmake -S . -B build-static-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake \
#         -DSWINFER_ARM64_SYSROOT=<folder with the arm64 libnifti2/libznz/zlib static libraries> -DSWINFER_STATIC=ON
# The header-only dependencies (Eigen, xtensor, nlohmann_json, CLI11) are the build machine's own packages; only the
# compiled libraries come from the arm64 packages, unpacked into the sysroot folder by tools/arm64-sysroot.sh.
# Tests run under qemu-aarch64 (Debian's qemu-user).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64)
# GCC notes that passing std::pair changed ABI in GCC 10.1; nothing here crosses that boundary.
set(CMAKE_CXX_FLAGS_INIT "-Wno-psabi")

set(SWINFER_ARM64_SYSROOT "" CACHE PATH "Folder holding the arm64 packages' static libraries (tools/arm64-sysroot.sh)")
list(APPEND CMAKE_FIND_ROOT_PATH "${SWINFER_ARM64_SYSROOT}" /)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
# xtensor's package files sit in the build machine's architecture folder; its headers are the same for every one.
set(xtensor_DIR /usr/lib/x86_64-linux-gnu/cmake/xtensor CACHE PATH "")

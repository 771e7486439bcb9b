// swinfer GPU emulator: the emulated device's description (warp size, thread order, memory capacity).
//
// The one place in the emulator that reads the environment. The emulator is no
// part of the library: it stands in for the GPU platform, as a driver does, and like a driver (CUDA_VISIBLE_DEVICES)
// takes the description of the device it presents from the process's environment, so that one test executable
// runs against several devices: tests/gpu/CMakeLists.txt sets these per ctest run, and tools/run-tests.sh caps the
// memory for its out-of-memory check.
//
//   SWINFER_GPU_EMULATOR_WARP        warp size: 32 (default) or 64 (CDNA)
//   SWINFER_GPU_EMULATOR_ORDER       "reverse" or "warps": the order a block's threads run in (scheduler.hpp)
//   SWINFER_GPU_EMULATOR_MEMORY_MIB  device memory in MiB (default 16 GiB)
//
// Each is read once, at first use, and fixed for the process.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>

namespace swinfer::gpu_emulator {

inline int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}
inline int warp_size() {
  static const int ws = env_int("SWINFER_GPU_EMULATOR_WARP", 32);
  return ws;
}
/// SWINFER_GPU_EMULATOR_ORDER: "reverse" resumes a block's threads in reverse order; "warps" runs one warp at a
/// time from one block barrier to the next (warp 0 first), so a warp that reads what another warp writes in the same
/// barrier interval reads it before it is written.
inline const char* order_name() {
  static const char* v = [] {
    const char* e = std::getenv("SWINFER_GPU_EMULATOR_ORDER");
    return e ? e : "";
  }();
  return v;
}
inline bool reverse_order() {
  static const bool r = std::strcmp(order_name(), "reverse") == 0;
  return r;
}
inline bool warp_serial() {
  static const bool w = std::strcmp(order_name(), "warps") == 0;
  return w;
}

/// The emulated device's memory in bytes: $SWINFER_GPU_EMULATOR_MEMORY_MIB (default 16 GiB), so that tests can run
/// out of it; allocations beyond it fail as a full device does.
inline std::size_t memory_capacity() {
  static const std::size_t capacity = [] {
    const char* mib = std::getenv("SWINFER_GPU_EMULATOR_MEMORY_MIB");
    return (mib && *mib ? std::strtoull(mib, nullptr, 10) : std::size_t{16} << 10) << 20;
  }();
  return capacity;
}

}  // namespace swinfer::gpu_emulator

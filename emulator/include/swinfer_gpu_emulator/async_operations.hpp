// swinfer GPU emulator: the device operations that are issued now and take effect when the issuing thread waits for
// their group: cp.async's 16-byte copies (landing only then, so a missing wait reads old data) and Hopper's
// warpgroup products (computed from shared memory only then, so a write before the wait changes them).
#pragma once

#include "swinfer_gpu_emulator/scheduler.hpp"

#include <Eigen/Core>

#include <cstdint>
#include <cstring>
#include <vector>

namespace swinfer::gpu_emulator {

/// cp.async as the devices order it: a 16-byte copy issued now (the source read now), landing in shared memory only
/// when the issuing thread waits for its group, so a read before the wait (and the barrier after it) sees old data.
inline void copy_async_16(void* dst, const void* src) {
  if (reinterpret_cast<std::uintptr_t>(dst) % 16 != 0 || reinterpret_cast<std::uintptr_t>(src) % 16 != 0) {
    fail("misaligned 16-byte asynchronous copy");
  }
  pending_copy c{static_cast<unsigned char*>(dst), {}};
  std::memcpy(c.bytes, src, sizeof c.bytes);
  state().current->open_copies.push_back(c);
}
inline void copy_async_commit() {
  fiber& f = *state().current;
  f.copy_groups.push_back(std::move(f.open_copies));
  f.open_copies.clear();
}
/// Lands every committed group but the newest `pending`.
inline void copy_async_wait(int pending) {
  fiber& f = *state().current;
  while (static_cast<int>(f.copy_groups.size()) > pending) {
    for (const pending_copy& c : f.copy_groups.front()) std::memcpy(c.dst, c.bytes, sizeof c.bytes);
    f.copy_groups.pop_front();
  }
}

/// The offset of p in the launch's dynamic shared memory: the address a warpgroup product's descriptor holds.
inline std::uint32_t shared_address(const void* p) {
  const auto* bytes = static_cast<const unsigned char*>(p);
  const std::vector<unsigned char>& shared = state().dynamic_shared;
  if (bytes < shared.data() || bytes >= shared.data() + shared.size()) {
    fail("a warpgroup product's operand outside dynamic shared memory");
  }
  return static_cast<std::uint32_t>(bytes - shared.data());
}

/// Element (row, k) of a K-major operand (8-row core matrices of 8 x 16 bytes, no swizzle), 16-bit, as float.
inline float operand_element(const smem_operand& m, int row, int k, bool bf16) {
  const std::size_t at = m.start + static_cast<std::size_t>(row / 8) * m.group_stride +
                         static_cast<std::size_t>(k / 8) * m.half_stride + (row % 8) * 16 + (k % 8) * 2;
  const std::vector<unsigned char>& shared = state().dynamic_shared;
  if (at + 2 > shared.size()) fail("a warpgroup product reads past dynamic shared memory");
  std::uint16_t bits = 0;
  std::memcpy(&bits, shared.data() + at, sizeof bits);
  return bf16 ? static_cast<float>(Eigen::numext::bit_cast<Eigen::bfloat16>(bits))
              : static_cast<float>(Eigen::numext::bit_cast<Eigen::half>(bits));
}

/// wgmma.mma_async m64nNk16 (vendor/warpgroup_mma.hpp): issued now, computed when the thread's wait retires it. Only
/// 32-lane warps have the instruction; the thread's warp in its warpgroup and its lane pick its D elements.
inline void wgmma_64xNx16(smem_operand a, smem_operand b, float* d, int n, bool bf16) {
  if (warp_size() != 32) fail("warpgroup products need 32-lane warps");
  if ((a.start | a.half_stride | a.group_stride | b.start | b.half_stride | b.group_stride) % 16 != 0) {
    fail("a warpgroup product's operand is not 16-byte aligned");
  }
  state().current->open_wgmma.push_back({a, b, d, n, bf16});
}
inline void wgmma_commit() {
  fiber& f = *state().current;
  f.wgmma_groups.push_back(std::move(f.open_wgmma));
  f.open_wgmma.clear();
}
/// Computes every committed group but the newest `pending`, reading shared memory as it is now.
inline void wgmma_wait(int pending) {
  fiber& f = *state().current;
  const int lane = f.linear % 32, warp = f.linear / 32 % 4;
  while (static_cast<int>(f.wgmma_groups.size()) > pending) {
    for (const pending_wgmma& op : f.wgmma_groups.front()) {
      for (int j = 0; j < op.n / 8; ++j)
        for (int e = 0; e < 4; ++e) {
          const int row = 16 * warp + lane / 4 + 8 * (e / 2), col = 8 * j + 2 * (lane % 4) + e % 2;
          float sum = op.d[4 * j + e];
          for (int k = 0; k < 16; ++k) {
            sum += operand_element(op.a, row, k, op.bf16) * operand_element(op.b, col, k, op.bf16);
          }
          op.d[4 * j + e] = sum;
        }
    }
    f.wgmma_groups.pop_front();
  }
}

}  // namespace swinfer::gpu_emulator

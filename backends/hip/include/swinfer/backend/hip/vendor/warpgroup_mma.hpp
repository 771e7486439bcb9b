// swinfer hip backend: Hopper's warpgroup matrix multiply (wgmma, sm_90a) behind one interface, for kernels that
// keep both operands in shared memory (src/conv3d_wgmma.cuh). The four warps of a warpgroup (128 threads) issue
// together, asynchronously:
//
//   D (64 x 48, float32, in registers) += A (64 x 16) B^T (48 x 16), A and B half_t or bf16_t in shared memory,
//
// each operand described by a `k_major_operand`: its rows' 16 k values as two 8-wide halves, each an 8-row "core
// matrix" of 8 x 16 bytes stored contiguously (row r at byte 16 r), the 8-row groups `group_stride` bytes apart and
// the two k halves `half_stride` bytes apart (PTX ISA, "Shared Memory Matrix Layout", K-major without swizzle).
// Lane l of warp w (of the warpgroup) holds d[4j + e] = D[16w + l/4 + 8(e/2)][8j + 2(l%4) + e%2], j < 6, e < 4.
//
//   NVIDIA sm_90a: wgmma.mma_async.sync.aligned.m64n48k16.f32.{f16,bf16}, wgmma.fence/commit_group/wait_group and
//          fence.proxy.async (shared-memory writes by ordinary stores and cp.async become visible to the operation).
//   emulator: the same fragment layout; each thread computes its D elements from shared memory when it waits for the
//          group (not when it issues), so a shared-memory write between the two shows as it may on the device.
//   elsewhere (AMD, NVIDIA code for other architectures): absent; warpgroup_mma_compiled() is false and the host
//          never launches a kernel that uses them (runtime.cu's warpgroup_mma_supported).
//
// Only for vendor/gpu.hpp's users in the library's translation units (backends/hip/src).
#pragma once

#include <cstdint>
#include <type_traits>

#include "swinfer/backend/hip/vendor/gpu.hpp"

#if SWINFER_GPU_NVIDIA && defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define SWINFER_GPU_WGMMA_PTX 1
#else
#define SWINFER_GPU_WGMMA_PTX 0
#endif

namespace swinfer::gpu {

/// Output columns of one warpgroup operation, and its accumulator registers per thread.
inline constexpr int wgmma_n = 48;
inline constexpr int wgmma_acc = wgmma_n / 2;

/// Whether this device code has the operations (sm_90a device code on NVIDIA, the emulator).
SWINFER_GPU_DEVICE constexpr bool warpgroup_mma_compiled() { return SWINFER_GPU_WGMMA_PTX || SWINFER_GPU_EMULATED; }

/// The address of a byte of (dynamic) shared memory as the operations see it.
SWINFER_GPU_DEVICE inline std::uint32_t shared_address(const void* p) {
#if SWINFER_GPU_EMULATED
  return ::swinfer::gpu_emulator::shared_address(p);
#elif SWINFER_GPU_NVIDIA && defined(__CUDA_ARCH__)
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
#else
  (void)p;
  return 0;
#endif
}

/// An operand in shared memory (see the top of this file); every field a multiple of 16 bytes below 256 KiB.
struct k_major_operand {
  std::uint32_t start;         ///< shared_address of row 0's first k half
  std::uint32_t half_stride;   ///< bytes from a core matrix of k 0-7 to its k 8-15
  std::uint32_t group_stride;  ///< bytes from rows 8g .. 8g+7 to rows 8g+8 .. 8g+15
};

/// The operation's 64-bit matrix descriptor: start, leading-dimension (k) and stride-dimension (row group) byte
/// offsets in 16-byte units, base offset 0, no swizzle.
SWINFER_GPU_DEVICE inline std::uint64_t wgmma_descriptor(const k_major_operand& m) {
  return std::uint64_t{(m.start >> 4) & 0x3fffu} | std::uint64_t{(m.half_stride >> 4) & 0x3fffu} << 16 |
         std::uint64_t{(m.group_stride >> 4) & 0x3fffu} << 32;
}

/// Orders this thread's earlier shared-memory writes (stores, landed cp.async copies) before the operations that
/// read them; a barrier must follow before other threads' operations rely on them.
SWINFER_GPU_DEVICE inline void fence_shared_for_wgmma() {
#if SWINFER_GPU_WGMMA_PTX
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

/// Before a batch of operations: orders earlier register and shared-memory accesses before them.
SWINFER_GPU_DEVICE inline void wgmma_fence() {
#if SWINFER_GPU_WGMMA_PTX
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}

/// Closes the batch of operations issued since the last commit into a group.
SWINFER_GPU_DEVICE inline void wgmma_commit() {
#if SWINFER_GPU_WGMMA_PTX
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#elif SWINFER_GPU_EMULATED
  ::swinfer::gpu_emulator::wgmma_commit();
#endif
}

/// Waits until at most `Pending` committed groups are in flight; then keep_registers on the accumulators they wrote.
template <int Pending>
SWINFER_GPU_DEVICE inline void wgmma_wait() {
#if SWINFER_GPU_WGMMA_PTX
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(Pending) : "memory");
#elif SWINFER_GPU_EMULATED
  ::swinfer::gpu_emulator::wgmma_wait(Pending);
#endif
}

/// Tells the compiler the accumulators change here, so it neither reads them before an operation in flight lands
/// (after a wait) nor keeps copies of them across the issue.
SWINFER_GPU_DEVICE inline void keep_registers(float (&d)[wgmma_acc]) {
#if SWINFER_GPU_WGMMA_PTX
#pragma unroll
  for (int i = 0; i < wgmma_acc; ++i) asm volatile("" : "+f"(d[i])::"memory");
#else
  (void)d;
#endif
}

/// d += A B^T for one 64 x 48 x 16 product (issued, in flight until wgmma_wait retires its group).
template <class T>
SWINFER_GPU_DEVICE inline void wgmma_64x48x16(const k_major_operand& a, const k_major_operand& b,
                                              float (&d)[wgmma_acc]) {
  static_assert(std::is_same_v<T, half_t> || std::is_same_v<T, bf16_t>, "wgmma takes fp16 or bf16 operands");
#if SWINFER_GPU_WGMMA_PTX
  const std::uint64_t da = wgmma_descriptor(a), db = wgmma_descriptor(b);
#define SWINFER_WGMMA_ASM(TYPE)                                                                                      \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %26, 0;\n"                                                           \
               "wgmma.mma_async.sync.aligned.m64n48k16.f32." TYPE "." TYPE " "                                      \
               "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, "  \
               "%21, %22, %23}, %24, %25, p, 1, 1, 0, 0;\n}\n"                                                      \
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),     \
                 "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]),          \
                 "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]),        \
                 "+f"(d[22]), "+f"(d[23])                                                                          \
               : "l"(da), "l"(db), "r"(1))
  if constexpr (std::is_same_v<T, half_t>) {
    SWINFER_WGMMA_ASM("f16");
  } else {
    SWINFER_WGMMA_ASM("bf16");
  }
#undef SWINFER_WGMMA_ASM
#elif SWINFER_GPU_EMULATED
  ::swinfer::gpu_emulator::wgmma_64xNx16({a.start, a.half_stride, a.group_stride},
                                         {b.start, b.half_stride, b.group_stride}, d, wgmma_n,
                                         std::is_same_v<T, bf16_t>);
#elif SWINFER_GPU_NVIDIA
  (void)a, (void)b, (void)d;
  __trap();  // the host launches wgmma kernels only where warpgroup_mma_supported
#else
  (void)a, (void)b, (void)d;
  __builtin_trap();
#endif
}

}  // namespace swinfer::gpu

#undef SWINFER_GPU_WGMMA_PTX

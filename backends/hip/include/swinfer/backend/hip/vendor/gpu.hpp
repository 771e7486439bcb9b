// swinfer hip backend: the one vendor header (one file by design, as ggml's vendors/*.h: every platform difference
// in one place, hence over 350 lines). Kernels are written once in the dialect CUDA and HIP share; this
// header maps what differs (runtime calls, error type, streams, events, device properties, 16-bit float types
// and their conversions, warp shuffles, launch bounds) for the platform the translation unit is compiled for.
//
// Only the backend's own translation units (backends/hip/src/*.cu, compiled by nvcc or by HIP clang) include it;
// the public headers never do, so host code built with g++ needs neither toolkit's headers.
//
//   NVIDIA (nvcc, __CUDACC__):              cuda_runtime.h, cuda_fp16.h, cuda_bf16.h, cuda_profiler_api.h and
//                                           nothing else. Debian's HIP 5.2 headers for the NVIDIA platform do not
//                                           compile with CUDA 13, so no hip/ header is ever included here.
//   AMD (HIP clang or hipcc, __HIP__ or      hip/hip_runtime.h, hip/hip_fp16.h and hip/hip_bfloat16.h (the
//        __HIP_PLATFORM_AMD__):              bfloat16 header HIP 5.2 already has; ROCm 6 keeps it).
//   CPU emulator (g++, SWINFER_GPU_EMULATOR) swinfer_gpu_emulator/emulator.hpp (emulator/, outside backends/): CUDA's
//                                           runtime names over host memory, every GPU thread a fiber
//                                           (SWINFER_GPU_PLATFORM=emulator; checks kernel logic only).
//
// Everything is prefixed: macros SWINFER_GPU_..., types and functions in swinfer::gpu. No generic name leaks.
//
// Warp size: 64 on CDNA (MI200/MI300), 32 on NVIDIA (and on RDNA in wave32 mode). No kernel may assume either:
// device code reads SWINFER_GPU_WARP_SIZE (the `warpSize` built-in, a run-time value on both platforms), host
// code reads device_properties::warp_size (from the device's properties). Block sizes are multiples of 64, so a
// block is always a whole number of warps on every platform.
#pragma once

#if defined(SWINFER_GPU_EMULATOR)
#define SWINFER_GPU_AMD 0
#define SWINFER_GPU_NVIDIA 0
#define SWINFER_GPU_EMULATED 1
#include "swinfer_gpu_emulator/emulator.hpp"
#elif defined(__HIP__) || defined(__HIP_PLATFORM_AMD__) || defined(__HIP_PLATFORM_HCC__)
#define SWINFER_GPU_AMD 1
#define SWINFER_GPU_NVIDIA 0
#define SWINFER_GPU_EMULATED 0
#include <hip/hip_bfloat16.h>
#include <hip/hip_fp16.h>
#include <hip/hip_runtime.h>
#elif defined(__CUDACC__)
#define SWINFER_GPU_AMD 0
#define SWINFER_GPU_NVIDIA 1
#define SWINFER_GPU_EMULATED 0
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>
#else
#error "swinfer/backend/hip/vendor/gpu.hpp is for GPU translation units: compile them with nvcc or HIP clang"
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

#include "swinfer/core/error.hpp"

/// Function qualifiers and launch bounds: the same spelling on both platforms, prefixed here so kernels do not
/// depend on it staying so.
#define SWINFER_GPU_DEVICE __device__
#define SWINFER_GPU_HOST_DEVICE __host__ __device__
#define SWINFER_GPU_GLOBAL __global__
#define SWINFER_GPU_LAUNCH_BOUNDS(max_threads) __launch_bounds__(max_threads)
/// Lanes per warp (wavefront) in device code; never a compile-time constant in our kernels.
#define SWINFER_GPU_WARP_SIZE warpSize
/// The most warps a block of at most 1024 threads can hold on any platform (warp size >= 32): sizes the
/// shared arrays of per-warp partial results.
#define SWINFER_GPU_MAX_WARPS_PER_BLOCK 32

/// Checks a runtime call; throws swinfer::error naming the call, the file and the runtime's message.
#define SWINFER_GPU_CHECK(call) ::swinfer::gpu::check((call), #call, __FILE__, __LINE__)

namespace swinfer::gpu {

#if SWINFER_GPU_AMD
using error_t = hipError_t;
using stream_t = hipStream_t;
using event_t = hipEvent_t;
using device_prop_t = hipDeviceProp_t;
using half_t = __half;
using bf16_t = hip_bfloat16;
inline constexpr error_t success = hipSuccess;
inline constexpr const char* platform_name = "amd";

inline const char* error_string(error_t e) { return hipGetErrorString(e); }
inline error_t get_last_error() { return hipGetLastError(); }
inline error_t get_device_count(int* n) { return hipGetDeviceCount(n); }
inline error_t set_device(int d) { return hipSetDevice(d); }
inline error_t get_device_properties(device_prop_t* p, int d) { return hipGetDeviceProperties(p, d); }
inline error_t device_malloc(void** p, std::size_t bytes) { return hipMalloc(p, bytes); }
inline error_t device_free(void* p) { return hipFree(p); }
inline error_t get_device(int* d) { return hipGetDevice(d); }
inline error_t memory_pools_supported(int* v, int d) {
  return hipDeviceGetAttribute(v, hipDeviceAttributeMemoryPoolsSupported, d);
}
/// Keeps freed pool memory for reuse instead of returning it to the driver at each synchronisation.
inline error_t retain_pool_memory(int d) {
  hipMemPool_t pool{};
  if (const error_t e = hipDeviceGetDefaultMemPool(&pool, d); e != hipSuccess) return e;
  std::uint64_t keep = ~std::uint64_t{0};
  return hipMemPoolSetAttribute(pool, hipMemPoolAttrReleaseThreshold, &keep);
}
inline error_t trim_pool_memory(int d) {
  hipMemPool_t pool{};
  if (const error_t e = hipDeviceGetDefaultMemPool(&pool, d); e != hipSuccess) return e;
  return hipMemPoolTrimTo(pool, 0);
}
/// The profiler's collection range: a no-op on AMD, where hipProfilerStart is deprecated (rocprof traces the run).
inline error_t profiler_start() { return hipSuccess; }
inline error_t profiler_stop() { return hipSuccess; }
inline error_t malloc_async(void** p, std::size_t bytes, stream_t s) { return hipMallocAsync(p, bytes, s); }
inline error_t free_async(void* p, stream_t s) { return hipFreeAsync(p, s); }
inline error_t memcpy_h2d_async(void* dst, const void* src, std::size_t bytes, stream_t s) {
  return hipMemcpyAsync(dst, src, bytes, hipMemcpyHostToDevice, s);
}
inline error_t memcpy_d2h_async(void* dst, const void* src, std::size_t bytes, stream_t s) {
  return hipMemcpyAsync(dst, src, bytes, hipMemcpyDeviceToHost, s);
}
inline error_t memcpy_d2d_async(void* dst, const void* src, std::size_t bytes, stream_t s) {
  return hipMemcpyAsync(dst, src, bytes, hipMemcpyDeviceToDevice, s);
}
inline error_t memcpy2d_d2d_async(void* dst, std::size_t dpitch, const void* src, std::size_t spitch,
                                  std::size_t width, std::size_t height, stream_t s) {
  return hipMemcpy2DAsync(dst, dpitch, src, spitch, width, height, hipMemcpyDeviceToDevice, s);
}
inline error_t memset_async(void* dst, int value, std::size_t bytes, stream_t s) {
  return hipMemsetAsync(dst, value, bytes, s);
}
inline error_t stream_create(stream_t* s) { return hipStreamCreateWithFlags(s, hipStreamNonBlocking); }
inline error_t stream_destroy(stream_t s) { return hipStreamDestroy(s); }
inline error_t stream_synchronize(stream_t s) { return hipStreamSynchronize(s); }
inline error_t event_create(event_t* e) { return hipEventCreate(e); }
inline error_t event_destroy(event_t e) { return hipEventDestroy(e); }
inline error_t event_record(event_t e, stream_t s) { return hipEventRecord(e, s); }
inline error_t event_synchronize(event_t e) { return hipEventSynchronize(e); }
inline error_t event_elapsed_ms(float* ms, event_t a, event_t b) { return hipEventElapsedTime(ms, a, b); }
inline error_t runtime_version(int* v) { return hipRuntimeGetVersion(v); }
inline error_t driver_version(int* v) { return hipDriverGetVersion(v); }
/// gfx name of the device ("gfx942:sramecc+:xnack-"), the code-object target it needs.
inline const char* arch_name(const device_prop_t& p) { return p.gcnArchName; }
/// The shared memory one block may use: CDNA's whole LDS (64 KiB), no opt-in needed.
inline std::size_t max_shared_per_block(const device_prop_t& p) { return p.sharedMemPerBlock; }
#else
using error_t = cudaError_t;
using stream_t = cudaStream_t;
using event_t = cudaEvent_t;
using device_prop_t = cudaDeviceProp;
using half_t = __half;
using bf16_t = __nv_bfloat16;
inline constexpr error_t success = cudaSuccess;
inline constexpr const char* platform_name = SWINFER_GPU_EMULATED ? "emulator" : "nvidia";

inline const char* error_string(error_t e) { return cudaGetErrorString(e); }
inline error_t get_last_error() { return cudaGetLastError(); }
inline error_t get_device_count(int* n) { return cudaGetDeviceCount(n); }
inline error_t set_device(int d) { return cudaSetDevice(d); }
inline error_t get_device_properties(device_prop_t* p, int d) { return cudaGetDeviceProperties(p, d); }
inline error_t device_malloc(void** p, std::size_t bytes) { return cudaMalloc(p, bytes); }
inline error_t device_free(void* p) { return cudaFree(p); }
inline error_t get_device(int* d) { return cudaGetDevice(d); }
inline error_t memory_pools_supported(int* v, int d) {
  return cudaDeviceGetAttribute(v, cudaDevAttrMemoryPoolsSupported, d);
}
/// Keeps freed pool memory for reuse instead of returning it to the driver at each synchronisation.
inline error_t retain_pool_memory(int d) {
  cudaMemPool_t pool{};
  if (const error_t e = cudaDeviceGetDefaultMemPool(&pool, d); e != cudaSuccess) return e;
  std::uint64_t keep = ~std::uint64_t{0};
  return cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
}
inline error_t trim_pool_memory(int d) {
  cudaMemPool_t pool{};
  if (const error_t e = cudaDeviceGetDefaultMemPool(&pool, d); e != cudaSuccess) return e;
  return cudaMemPoolTrimTo(pool, 0);
}
/// The profiler's collection range (Nsight Compute with --profile-from-start off profiles only inside it).
inline error_t profiler_start() { return cudaProfilerStart(); }
inline error_t profiler_stop() { return cudaProfilerStop(); }
inline error_t malloc_async(void** p, std::size_t bytes, stream_t s) { return cudaMallocAsync(p, bytes, s); }
inline error_t free_async(void* p, stream_t s) { return cudaFreeAsync(p, s); }
inline error_t memcpy_h2d_async(void* dst, const void* src, std::size_t bytes, stream_t s) {
  return cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s);
}
inline error_t memcpy_d2h_async(void* dst, const void* src, std::size_t bytes, stream_t s) {
  return cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s);
}
inline error_t memcpy_d2d_async(void* dst, const void* src, std::size_t bytes, stream_t s) {
  return cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s);
}
inline error_t memcpy2d_d2d_async(void* dst, std::size_t dpitch, const void* src, std::size_t spitch,
                                  std::size_t width, std::size_t height, stream_t s) {
  return cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, height, cudaMemcpyDeviceToDevice, s);
}
inline error_t memset_async(void* dst, int value, std::size_t bytes, stream_t s) {
  return cudaMemsetAsync(dst, value, bytes, s);
}
inline error_t stream_create(stream_t* s) { return cudaStreamCreateWithFlags(s, cudaStreamNonBlocking); }
inline error_t stream_destroy(stream_t s) { return cudaStreamDestroy(s); }
inline error_t stream_synchronize(stream_t s) { return cudaStreamSynchronize(s); }
inline error_t event_create(event_t* e) { return cudaEventCreate(e); }
inline error_t event_destroy(event_t e) { return cudaEventDestroy(e); }
inline error_t event_record(event_t e, stream_t s) { return cudaEventRecord(e, s); }
inline error_t event_synchronize(event_t e) { return cudaEventSynchronize(e); }
inline error_t event_elapsed_ms(float* ms, event_t a, event_t b) { return cudaEventElapsedTime(ms, a, b); }
inline error_t runtime_version(int* v) { return cudaRuntimeGetVersion(v); }
inline error_t driver_version(int* v) { return cudaDriverGetVersion(v); }
/// NVIDIA has no arch string in its properties; the backend prints sm_<major><minor> from major/minor.
inline const char* arch_name(const device_prop_t&) { return ""; }
/// The shared memory one block may use once the kernel opts in (enqueue_shared does): 227 KiB on Hopper.
inline std::size_t max_shared_per_block(const device_prop_t& p) { return p.sharedMemPerBlockOptin; }
#endif

/// Throws swinfer::error for a failed runtime call.
inline void check(error_t e, const char* what, const char* file, int line) {
  if (e != success) {
    detail::fail("swinfer hip backend (", platform_name, "): ", what, " failed: ", error_string(e), " (", file, ":",
                 line, ")");
  }
}

// ---- Kernel launches ------------------------------------------------------------------------------------------

/// Enqueues kernel<<<grid, block, shared_bytes, stream>>>(args...) and returns the launch's status. Dynamic shared
/// memory beyond 48 KiB is allowed for the kernel first (NVIDIA's opt-in; CDNA's 64 KiB need none): the caller
/// checks it against max_shared_per_block. On the emulator the kernel runs to completion here.
template <class... Params, class... Args>
error_t enqueue_shared(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t shared_bytes, stream_t stream,
                       Args&&... args) {
#if SWINFER_GPU_EMULATED
  (void)stream;
  ::swinfer::gpu_emulator::launch(grid, block, shared_bytes, [&] { kernel(args...); });
#else
#if SWINFER_GPU_NVIDIA
  if (shared_bytes > 48 * 1024) {
    const error_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           static_cast<int>(shared_bytes));
    if (e != success) return e;
  }
#endif
  kernel<<<grid, block, shared_bytes, stream>>>(std::forward<Args>(args)...);
#endif
  return get_last_error();
}
/// enqueue_shared without dynamic shared memory (most kernels use static shared memory only).
template <class... Params, class... Args>
error_t enqueue(void (*kernel)(Params...), dim3 grid, dim3 block, stream_t stream, Args&&... args) {
  return enqueue_shared(kernel, grid, block, 0, stream, std::forward<Args>(args)...);
}

/// enqueue, then throws swinfer::error naming `what` when the launch was refused (bad geometry, no code object for
/// the device's architecture).
template <class... Params, class... Args>
void launch(const char* what, void (*kernel)(Params...), dim3 grid, dim3 block, stream_t stream, Args&&... args) {
  check(enqueue(kernel, grid, block, stream, std::forward<Args>(args)...), what, __FILE__, __LINE__);
}
/// launch with `shared_bytes` of dynamic shared memory.
template <class... Params, class... Args>
void launch_shared(const char* what, void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t shared_bytes,
                   stream_t stream, Args&&... args) {
  check(enqueue_shared(kernel, grid, block, shared_bytes, stream, std::forward<Args>(args)...), what, __FILE__,
        __LINE__);
}

/// The block's dynamic shared memory (the launch's shared_bytes), 16-byte aligned.
SWINFER_GPU_DEVICE inline unsigned char* dynamic_shared_memory() {
#if SWINFER_GPU_EMULATED
  return ::swinfer::gpu_emulator::state().dynamic_shared.data();
#else
  extern __shared__ __align__(16) unsigned char swinfer_gpu_dynamic_shared[];
  return swinfer_gpu_dynamic_shared;
#endif
}

// ---- 16-bit floating point: storage types and float32 conversions (round to nearest even) ------------------

SWINFER_GPU_HOST_DEVICE inline float to_f32(float v) { return v; }
SWINFER_GPU_HOST_DEVICE inline float to_f32(half_t v) { return __half2float(v); }
#if SWINFER_GPU_AMD
SWINFER_GPU_HOST_DEVICE inline float to_f32(bf16_t v) { return static_cast<float>(v); }
#else
SWINFER_GPU_HOST_DEVICE inline float to_f32(bf16_t v) { return __bfloat162float(v); }
#endif

template <class T>
struct f32_to;
template <>
struct f32_to<float> {
  SWINFER_GPU_HOST_DEVICE static float convert(float v) { return v; }
};
template <>
struct f32_to<half_t> {
  SWINFER_GPU_HOST_DEVICE static half_t convert(float v) { return __float2half(v); }
};
template <>
struct f32_to<bf16_t> {
#if SWINFER_GPU_AMD
  SWINFER_GPU_HOST_DEVICE static bf16_t convert(float v) { return bf16_t(v); }  // hip_bfloat16 rounds to nearest even
#else
  SWINFER_GPU_HOST_DEVICE static bf16_t convert(float v) { return __float2bfloat16(v); }
#endif
};
/// float32 to a storage type: from_f32<half_t>(x).
template <class T>
SWINFER_GPU_HOST_DEVICE inline T from_f32(float v) {
  return f32_to<T>::convert(v);
}

// ---- 16-byte memory access ---------------------------------------------------------------------------------

/// 16 bytes moved as one unit: a single 128-bit load or store on both vendors (`global_load_dwordx4`,
/// `ld.global.v4`) where the address is 16-byte aligned, which the caller guarantees.
struct alignas(16) bytes16 {
  std::uint32_t word[4];
};
SWINFER_GPU_DEVICE inline bytes16 load16(const void* p) {
#if SWINFER_GPU_EMULATED
  // The devices fault on a misaligned 16-byte access; the emulator says where instead of reading it.
  if (reinterpret_cast<std::uintptr_t>(p) % 16 != 0) swinfer::gpu_emulator::fail("misaligned 16-byte load");
  bytes16 v;
  std::memcpy(&v, p, sizeof v);  // the host compiler: no aliasing assumptions
  return v;
#else
  return *static_cast<const bytes16*>(p);
#endif
}
/// The bytes of `from` as a To of the same size: a type pun every compiler turns into register moves
/// (__builtin_memcpy is callable from device code on both vendors, std::memcpy is not on HIP).
template <class To, class From>
SWINFER_GPU_HOST_DEVICE inline To bit_cast(const From& from) {
  static_assert(sizeof(To) == sizeof(From), "bit_cast needs types of one size");
  To to;
  __builtin_memcpy(static_cast<void*>(&to), static_cast<const void*>(&from), sizeof to);
  return to;
}
SWINFER_GPU_DEVICE inline void store16(void* p, const bytes16& v) {
#if SWINFER_GPU_EMULATED
  if (reinterpret_cast<std::uintptr_t>(p) % 16 != 0) swinfer::gpu_emulator::fail("misaligned 16-byte store");
  std::memcpy(p, &v, sizeof v);
#else
  *static_cast<bytes16*>(p) = v;
#endif
}

// ---- Asynchronous copies to shared memory -------------------------------------------------------------------

/// 16 bytes from global `src` to shared `dst` (both 16-byte aligned) without passing through registers: on NVIDIA
/// (sm_80+) cp.async, in flight until copy_async_wait; elsewhere a plain copy (the emulator holds it back until the
/// wait, as the devices may). Copies issued between two copy_async_commit calls form a group.
SWINFER_GPU_DEVICE inline void copy_async_16(void* dst, const void* src) {
#if SWINFER_GPU_EMULATED
  ::swinfer::gpu_emulator::copy_async_16(dst, src);
#elif SWINFER_GPU_NVIDIA && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const auto address = static_cast<std::uint32_t>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(address), "l"(src) : "memory");
#else
  store16(dst, load16(src));
#endif
}
SWINFER_GPU_DEVICE inline void copy_async_commit() {
#if SWINFER_GPU_EMULATED
  ::swinfer::gpu_emulator::copy_async_commit();
#elif SWINFER_GPU_NVIDIA && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
/// Waits until at most `Pending` of this thread's committed groups are still in flight (the older ones have
/// landed). Other threads see the copies after a barrier that follows their wait.
template <int Pending>
SWINFER_GPU_DEVICE inline void copy_async_wait() {
#if SWINFER_GPU_EMULATED
  ::swinfer::gpu_emulator::copy_async_wait(Pending);
#elif SWINFER_GPU_NVIDIA && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending) : "memory");
#endif
}

// ---- Arithmetic with a fixed rounding ------------------------------------------------------------------------

/// a * b rounded to float32 on its own: never contracted with a following add into an FMA (MONAI's blending
/// multiplies and adds in two tensor ops).
SWINFER_GPU_DEVICE inline float mul_rn(float a, float b) {
#if SWINFER_GPU_NVIDIA
  return __fmul_rn(a, b);
#elif SWINFER_GPU_AMD
#pragma clang fp contract(off)
  return a * b;
#else
  volatile float p = a * b;  // the emulator's host compiler may contract too
  return p;
#endif
}

// ---- Warp primitives: every lane of the warp takes part (blocks are whole warps) --------------------------

#if SWINFER_GPU_AMD
SWINFER_GPU_DEVICE inline float shfl_xor(float v, int lane_mask, int width) { return __shfl_xor(v, lane_mask, width); }
SWINFER_GPU_DEVICE inline float shfl_down(float v, unsigned delta, int width) { return __shfl_down(v, delta, width); }
SWINFER_GPU_DEVICE inline float shfl(float v, int src_lane, int width) { return __shfl(v, src_lane, width); }
#else
SWINFER_GPU_DEVICE inline float shfl_xor(float v, int lane_mask, int width) {
  return __shfl_xor_sync(0xffffffffu, v, lane_mask, width);
}
SWINFER_GPU_DEVICE inline float shfl_down(float v, unsigned delta, int width) {
  return __shfl_down_sync(0xffffffffu, v, delta, width);
}
SWINFER_GPU_DEVICE inline float shfl(float v, int src_lane, int width) {
  return __shfl_sync(0xffffffffu, v, src_lane, width);
}
#endif

/// Butterfly sum over aligned groups of `lanes` consecutive lanes (a power of two dividing the warp size; the
/// whole warp by default): every lane gets its group's total.
SWINFER_GPU_DEVICE inline float warp_sum(float v, int lanes = SWINFER_GPU_WARP_SIZE) {
  const int ws = SWINFER_GPU_WARP_SIZE;
  for (int m = lanes / 2; m > 0; m /= 2) v += shfl_xor(v, m, ws);
  return v;
}
/// Butterfly max over aligned groups of `lanes` consecutive lanes (the whole warp by default).
SWINFER_GPU_DEVICE inline float warp_max(float v, int lanes = SWINFER_GPU_WARP_SIZE) {
  const int ws = SWINFER_GPU_WARP_SIZE;
  for (int m = lanes / 2; m > 0; m /= 2) v = fmaxf(v, shfl_xor(v, m, ws));
  return v;
}

/// Sum over the whole block (blockDim.x a multiple of the warp size, at most 1024). Every thread gets the total.
/// `shared` holds SWINFER_GPU_MAX_WARPS_PER_BLOCK floats; the call synchronises the block twice.
SWINFER_GPU_DEVICE inline float block_sum(float v, float* shared) {
  const int ws = SWINFER_GPU_WARP_SIZE;
  const int lane = static_cast<int>(threadIdx.x) % ws, warp = static_cast<int>(threadIdx.x) / ws;
  const int warps = static_cast<int>(blockDim.x) / ws;
  v = warp_sum(v);
  __syncthreads();  // `shared` may still be read by a previous call
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  float total = 0.0f;
  for (int w = 0; w < warps; ++w) total += shared[w];  // fixed order: every thread gets the same bits
  return total;
}
/// Largest value over the whole block (as block_sum: every thread gets it; `shared` as there).
SWINFER_GPU_DEVICE inline float block_max(float v, float* shared) {
  const int ws = SWINFER_GPU_WARP_SIZE;
  const int lane = static_cast<int>(threadIdx.x) % ws, warp = static_cast<int>(threadIdx.x) / ws;
  const int warps = static_cast<int>(blockDim.x) / ws;
  v = warp_max(v);
  __syncthreads();  // `shared` may still be read by a previous call
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  float largest = shared[0];
  for (int w = 1; w < warps; ++w) largest = fmaxf(largest, shared[w]);
  return largest;
}

}  // namespace swinfer::gpu

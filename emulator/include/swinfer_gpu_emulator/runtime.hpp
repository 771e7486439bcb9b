// swinfer GPU emulator: the CUDA runtime names vendor/gpu.hpp maps: one device, whose memory is host memory up to
// the described capacity (fresh memory filled with 0xff bytes, NaN), and streams, copies and events that are all
// synchronous (a kernel has run by the time its launch returns).
#pragma once

#include "swinfer_gpu_emulator/device_description.hpp"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>

// ---- Runtime names (one device, host memory, everything synchronous) ---------------------------------------------

enum cudaError_t { cudaSuccess = 0, cudaErrorMemoryAllocation = 2 };
enum cudaMemcpyKind { cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost, cudaMemcpyDeviceToDevice };
struct swinfer_gpu_emulator_stream;
/// An event is the host time it was recorded at: kernels have run by the time their launch returns.
struct swinfer_gpu_emulator_event {
  std::chrono::steady_clock::time_point at;
};
using cudaStream_t = swinfer_gpu_emulator_stream*;
using cudaEvent_t = swinfer_gpu_emulator_event*;
inline constexpr unsigned cudaStreamNonBlocking = 1;
struct cudaDeviceProp {
  char name[256];
  int major, minor, warpSize, multiProcessorCount;
  std::size_t sharedMemPerBlock, sharedMemPerBlockOptin, totalGlobalMem;
};
inline const char* cudaGetErrorString(cudaError_t e) { return e == cudaSuccess ? "no error" : "out of memory"; }
inline cudaError_t cudaGetLastError() { return cudaSuccess; }
inline cudaError_t cudaGetDeviceCount(int* n) {
  *n = 1;
  return cudaSuccess;
}
inline cudaError_t cudaSetDevice(int) { return cudaSuccess; }
namespace swinfer::gpu_emulator {
inline std::atomic<std::size_t>& memory_in_use() {
  static std::atomic<std::size_t> bytes{0};
  return bytes;
}
/// Each allocation is preceded by this many bytes holding its size (keeps the 256-byte alignment of cudaMalloc).
inline constexpr std::size_t allocation_header = 256;
}  // namespace swinfer::gpu_emulator

inline cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int) {
  // As the devices each warp size stands for: CDNA's 64 KiB of LDS, Hopper's 227 KiB opt-in (the wgmma kernel's).
  p->sharedMemPerBlockOptin = (swinfer::gpu_emulator::warp_size() == 64 ? 64 : 227) * 1024;
  std::snprintf(p->name, sizeof p->name, "swinfer CPU emulator");
  p->major = 0;
  p->minor = 0;
  p->warpSize = ::swinfer::gpu_emulator::warp_size();
  p->multiProcessorCount = 4;
  p->sharedMemPerBlock = 48 * 1024;
  p->totalGlobalMem = ::swinfer::gpu_emulator::memory_capacity();
  return cudaSuccess;
}
inline cudaError_t cudaMalloc(void** p, std::size_t bytes) {
  namespace emu = ::swinfer::gpu_emulator;
  *p = nullptr;
  const std::size_t size = (bytes + 255) / 256 * 256;
  if (size > emu::memory_capacity() || emu::memory_in_use().fetch_add(size) + size > emu::memory_capacity()) {
    if (size <= emu::memory_capacity()) emu::memory_in_use() -= size;
    return cudaErrorMemoryAllocation;
  }
  auto* block = static_cast<unsigned char*>(std::aligned_alloc(256, emu::allocation_header + size));
  if (!block) {
    emu::memory_in_use() -= size;
    return cudaErrorMemoryAllocation;
  }
  std::memcpy(block, &size, sizeof size);
  *p = block + emu::allocation_header;
  std::memset(*p, 0xff, bytes);  // NaN in every element type: reading unwritten memory shows up
  return cudaSuccess;
}
inline cudaError_t cudaFree(void* p) {
  namespace emu = ::swinfer::gpu_emulator;
  if (!p) return cudaSuccess;
  auto* block = static_cast<unsigned char*>(p) - emu::allocation_header;
  std::size_t size = 0;
  std::memcpy(&size, block, sizeof size);
  emu::memory_in_use() -= size;
  std::free(block);
  return cudaSuccess;
}
inline cudaError_t cudaGetDevice(int* d) {
  *d = 0;
  return cudaSuccess;
}
// Stream-ordered allocation: everything is synchronous here, so it is plain allocation; the pool calls do nothing.
enum cudaDeviceAttr { cudaDevAttrMemoryPoolsSupported = 115 };
enum cudaMemPoolAttr { cudaMemPoolAttrReleaseThreshold = 4 };
using cudaMemPool_t = void*;
inline cudaError_t cudaDeviceGetAttribute(int* v, cudaDeviceAttr, int) {
  *v = 1;
  return cudaSuccess;
}
inline cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* pool, int) {
  *pool = nullptr;
  return cudaSuccess;
}
inline cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t, cudaMemPoolAttr, void*) { return cudaSuccess; }
inline cudaError_t cudaMemPoolTrimTo(cudaMemPool_t, std::size_t) { return cudaSuccess; }
inline cudaError_t cudaProfilerStart() { return cudaSuccess; }
inline cudaError_t cudaProfilerStop() { return cudaSuccess; }
inline cudaError_t cudaMallocAsync(void** p, std::size_t bytes, cudaStream_t) { return cudaMalloc(p, bytes); }
inline cudaError_t cudaFreeAsync(void* p, cudaStream_t) { return cudaFree(p); }
inline cudaError_t cudaMemcpyAsync(void* d, const void* s, std::size_t n, cudaMemcpyKind, cudaStream_t) {
  std::memmove(d, s, n);
  return cudaSuccess;
}
inline cudaError_t cudaMemcpy2DAsync(void* d, std::size_t dpitch, const void* s, std::size_t spitch,
                                     std::size_t width, std::size_t height, cudaMemcpyKind, cudaStream_t) {
  for (std::size_t r = 0; r < height; ++r) {
    std::memmove(static_cast<char*>(d) + r * dpitch, static_cast<const char*>(s) + r * spitch, width);
  }
  return cudaSuccess;
}
inline cudaError_t cudaMemsetAsync(void* d, int v, std::size_t n, cudaStream_t) {
  std::memset(d, v, n);
  return cudaSuccess;
}
inline cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned) {
  *s = nullptr;
  return cudaSuccess;
}
inline cudaError_t cudaStreamDestroy(cudaStream_t) { return cudaSuccess; }
inline cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
inline cudaError_t cudaEventCreate(cudaEvent_t* e) {
  *e = new swinfer_gpu_emulator_event{std::chrono::steady_clock::now()};
  return cudaSuccess;
}
inline cudaError_t cudaEventDestroy(cudaEvent_t e) {
  delete e;
  return cudaSuccess;
}
inline cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t) {
  e->at = std::chrono::steady_clock::now();
  return cudaSuccess;
}
inline cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
inline cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) {
  *ms = std::chrono::duration<float, std::milli>(b->at - a->at).count();
  return cudaSuccess;
}
inline cudaError_t cudaRuntimeGetVersion(int* v) {
  *v = 0;
  return cudaSuccess;
}
inline cudaError_t cudaDriverGetVersion(int* v) {
  *v = 0;
  return cudaSuccess;
}

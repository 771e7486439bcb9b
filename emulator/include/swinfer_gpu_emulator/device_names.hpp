// swinfer GPU emulator: the CUDA dialect's device-side names (qualifiers, built-in indices, warpSize,
// __syncthreads, the warp shuffles) and its 16-bit float types, as Eigen's round-to-nearest-even types.
#pragma once

#include "swinfer_gpu_emulator/device_description.hpp"
#include "swinfer_gpu_emulator/scheduler.hpp"
#include "swinfer_gpu_emulator/warp_operations.hpp"

#include <Eigen/Core>

#include <cmath>

// ---- Device-side names ---------------------------------------------------------------------------------------

#define __global__
#define __device__
#define __host__
#define __launch_bounds__(...)
#define __shared__ static
#define threadIdx (::swinfer::gpu_emulator::state().current->tid)
#define blockIdx (::swinfer::gpu_emulator::state().block_idx)
#define blockDim (::swinfer::gpu_emulator::state().block_dim)
#define gridDim (::swinfer::gpu_emulator::state().grid_dim)
inline const int warpSize = ::swinfer::gpu_emulator::warp_size();
inline void __syncthreads() { ::swinfer::gpu_emulator::wait(::swinfer::gpu_emulator::wait_kind::block); }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }

inline float __shfl_xor_sync(unsigned, float v, int mask, int width) {
  const int lane = ::swinfer::gpu_emulator::lane_id(), seg = lane / width * width, src = lane ^ mask;
  return ::swinfer::gpu_emulator::exchange(v, src, src >= seg && src < seg + width);
}
inline float __shfl_down_sync(unsigned, float v, unsigned delta, int width) {
  const int lane = ::swinfer::gpu_emulator::lane_id(), seg = lane / width * width;
  const int src = lane + static_cast<int>(delta);
  return ::swinfer::gpu_emulator::exchange(v, src, src < seg + width);
}
inline float __shfl_sync(unsigned, float v, int src_lane, int width) {
  const int lane = ::swinfer::gpu_emulator::lane_id(), seg = lane / width * width;
  return ::swinfer::gpu_emulator::exchange(v, seg + src_lane % width, true);
}

// ---- 16-bit types (bit-identical to the GPU ones, round to nearest even) ---------------------------------------

using __half = Eigen::half;
using __nv_bfloat16 = Eigen::bfloat16;
inline float __half2float(__half h) { return static_cast<float>(h); }
inline __half __float2half(float f) { return __half(f); }
inline float __bfloat162float(__nv_bfloat16 h) { return static_cast<float>(h); }
inline __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16(f); }

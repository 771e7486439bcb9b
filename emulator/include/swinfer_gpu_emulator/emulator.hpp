// swinfer GPU emulator: a CPU emulator of the CUDA dialect the hip backend's kernels use, so the kernels' *logic*
// can be tested on a machine without a GPU (SWINFER_GPU_PLATFORM=emulator; only the backend's vendor/gpu.hpp
// includes this, in the library's own translation units compiled by the C++ compiler with SWINFER_GPU_EMULATOR
// defined). It stands in for the GPU platform, not for the library: hence its own folder, outside backends/.
//
// It provides the CUDA runtime names vendor/gpu.hpp maps (runtime.hpp: host memory, synchronous copies, one fake
// device) and the device-side names (device_names.hpp: threadIdx, blockIdx, blockDim, gridDim, warpSize,
// __syncthreads, __shared__, warp shuffles, __half/__nv_bfloat16 as Eigen's round-to-nearest-even types), dynamic
// shared memory (0xff bytes at each block's start), cp.async's asynchronous copies and Hopper's warpgroup products
// (async_operations.hpp), and the matrix-core operations (warp_operations.hpp). A launch runs its blocks one after
// another on the calling thread, each thread a fiber (scheduler.hpp); fresh device memory is filled with 0xff
// bytes (NaN), so reads of unwritten memory show. The device it presents (warp size, thread order, memory) is
// described by the environment (device_description.hpp).
//
// What it cannot show: timing, occupancy, register or shared-memory limits, memory coalescing, data races inside
// one barrier interval in other interleavings, device-compiler bugs.
#pragma once

#include "swinfer_gpu_emulator/async_operations.hpp"
#include "swinfer_gpu_emulator/device_description.hpp"
#include "swinfer_gpu_emulator/device_names.hpp"
#include "swinfer_gpu_emulator/runtime.hpp"
#include "swinfer_gpu_emulator/scheduler.hpp"
#include "swinfer_gpu_emulator/warp_operations.hpp"

// swinfer hip backend: the dynamic int8 scale of a (transposed) convolution's input (precision::int8 with
// --int8-dynamic, docs/int8.md): max|x| over the tensor as the convolution reads it, on the device, so the
// convolution that follows in the stream quantizes with it without the host waiting.
#include <algorithm>

#include "norm_core.cuh"

namespace swinfer::hip {
namespace kern {
namespace {

constexpr int scale_threads = 256, scale_blocks = 256;

/// partial[blockIdx.x + block_offset] = the largest |v| this block saw, v an element of x as the convolution reads
/// it (act(InstanceNorm(x)) with norm.stats).
/// Shapes: x (N, C, D, H, W) any strides; norm.stats (N*C, 2) or null. Geometry: 1-D grid of scale_threads-thread
/// blocks, grid-stride over the elements in memory order (channels fastest for channels-last tensors).
template <class T>
SWINFER_GPU_GLOBAL void SWINFER_GPU_LAUNCH_BOUNDS(scale_threads)
    max_abs_kernel(const T* __restrict__ x, dims5 s, instance_norm_args norm, float* __restrict__ partial,
                   int block_offset) {
  __shared__ float red[SWINFER_GPU_MAX_WARPS_PER_BLOCK];
  const bool c_fastest = s.sc == 1;
  float largest = 0.0f;
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < s.numel();
       i += std::int64_t{gridDim.x} * blockDim.x) {
    std::int64_t n, c, z, y, w;
    unravel(s, c_fastest, i, n, c, z, y, w);
    float v = gpu::to_f32(x[s.offset(n, c, z, y, w)]);
    if (norm.stats) {
      v = leaky(instance_norm_value(v, norm.stats + (n * s.c + c) * 2), norm.has_slope, norm.negative_slope);
    }
    largest = fmaxf(largest, fabsf(v));
  }
  largest = gpu::block_max(largest, red);
  if (threadIdx.x == 0) partial[blockIdx.x + block_offset] = largest;
}

/// *scale = max(partial[0 .. count-1]) / 127, or 1 where it is 0.
/// Shapes: partial (count) float32, scale one float32. Geometry: one block of scale_threads threads.
SWINFER_GPU_GLOBAL void SWINFER_GPU_LAUNCH_BOUNDS(scale_threads)
    scale_from_max_kernel(const float* __restrict__ partial, int count, float* __restrict__ scale) {
  __shared__ float red[SWINFER_GPU_MAX_WARPS_PER_BLOCK];
  float largest = 0.0f;
  for (int i = static_cast<int>(threadIdx.x); i < count; i += static_cast<int>(blockDim.x)) {
    largest = fmaxf(largest, partial[i]);
  }
  largest = gpu::block_max(largest, red);
  if (threadIdx.x == 0) *scale = largest > 0.0f ? largest / 127.0f : 1.0f;
}

}  // namespace
}  // namespace kern

std::size_t int8_input_scale_scratch_bytes() { return 2 * kern::scale_blocks * sizeof(float); }

void launch_int8_input_scale(const launch_env& env, dtype type, const void* d_x, const strided5& x,
                             const instance_norm_args* in_norm, const void* d_x2, const strided5* x2,
                             float* d_scale, void* d_scratch) {
  auto* partial = static_cast<float*>(d_scratch);
  const instance_norm_args norm = in_norm ? *in_norm : instance_norm_args{};
  int blocks = 0;
  kern::dispatch(type, [&](auto t) {
    using T = decltype(t);
    const auto part = [&](const void* d, const strided5& desc, const instance_norm_args& n) {
      const kern::dims5 s = kern::to_dims(desc);
      const unsigned grid = std::min<unsigned>(kern::grid_for(s.numel(), kern::scale_threads, env), kern::scale_blocks);
      gpu::launch("int8 input scale kernel launch", kern::max_abs_kernel<T>, grid, kern::scale_threads,
                  kern::stream_of(env), static_cast<const T*>(d), s, n, partial, blocks);
      blocks += static_cast<int>(grid);
    };
    part(d_x, x, norm);
    if (d_x2) part(d_x2, *x2, instance_norm_args{});
  });
  gpu::launch("int8 input scale kernel launch", kern::scale_from_max_kernel, 1, kern::scale_threads,
              kern::stream_of(env), static_cast<const float*>(partial), blocks, d_scale);
}

}  // namespace swinfer::hip

// swinfer hip backend: the arithmetic of InstanceNorm and LayerNorm, shared by the norm kernels (norm.cu) and by
// the GEMM loaders that normalise their input on the way to shared memory (gemm_linear.cu, conv3d.cu,
// attention.cu), so a fused and an unfused run evaluate the same float32 expressions. Included only by
// backends/hip/src/*.cu.
#pragma once

#include <cstdint>

#include "common.cuh"

namespace swinfer::hip::kern {

/// LeakyReLU where the op has one.
SWINFER_GPU_DEVICE inline float leaky(float v, bool has_slope, float slope) {
  return has_slope && v < 0.0f ? v * slope : v;
}

/// InstanceNorm of one value: (x - mean) * inv, with {mean, inv} the (n, c) pair of the statistics.
SWINFER_GPU_DEVICE inline float instance_norm_value(float x, const float* mean_inv) {
  return (x - mean_inv[0]) * mean_inv[1];
}

/// LayerNorm of one value of channel c: (x - mean) * inv, then gamma[c] and beta[c] where given.
SWINFER_GPU_DEVICE inline float layer_norm_value(float x, float mean, float inv, const float* gamma,
                                                 const float* beta, int c) {
  float v = (x - mean) * inv;
  if (gamma) v *= gamma[c];
  if (beta) v += beta[c];
  return v;
}

/// One InstanceNorm moment record (api.hpp): count positions, their mean and the sum of their squared deviations.
SWINFER_GPU_DEVICE inline void store_moment_record(float* record, float count, float mean, float m2) {
  record[0] = count;
  record[1] = mean;
  record[2] = m2;
}

/// The cells whose moments a box convolution gathers as it stores its output (conv3d_halo.cuh): 4 x 4 x 8 output
/// positions (d, h, w) on a grid from the volume's corner, one record per cell and channel, cell (i, j, k) the
/// record (i * ceil(H / 4) + j) * ceil(W / 8) + k. Every box is a whole number of cells.
struct moment_cell {
  static constexpr int d = 4, h = 4, w = 8;
};
/// The cells of a volume of D x H x W positions.
SWINFER_GPU_HOST_DEVICE inline std::int64_t moment_cell_count(std::int64_t d, std::int64_t h, std::int64_t w) {
  return (d + moment_cell::d - 1) / moment_cell::d * ((h + moment_cell::h - 1) / moment_cell::h) *
         ((w + moment_cell::w - 1) / moment_cell::w);
}

/// Mean and 1/sqrt(var + eps) of the `channels` values row[c * stride], for LayerNorm: one warp per row, each lane
/// striding over the channels, butterflies for the mean and then for the variance of the deviations (two passes in
/// float32 over at most a few thousand values). Every lane of the warp gets both.
template <class T>
SWINFER_GPU_DEVICE void row_moments(const T* row, int channels, std::int64_t stride, float eps, float& mean,
                                    float& inv) {
  const int ws = SWINFER_GPU_WARP_SIZE, lane = static_cast<int>(threadIdx.x) % ws;
  const float inv_c = 1.0f / static_cast<float>(channels);
  float sum = 0.0f;
  for (int c = lane; c < channels; c += ws) sum += gpu::to_f32(row[c * stride]);
  mean = gpu::warp_sum(sum) * inv_c;
  float sq = 0.0f;
  for (int c = lane; c < channels; c += ws) {
    const float dv = gpu::to_f32(row[c * stride]) - mean;
    sq += dv * dv;
  }
  inv = rsqrtf(gpu::warp_sum(sq) * inv_c + eps);
}

}  // namespace swinfer::hip::kern

// swinfer hip backend: step 3 of window attention (attention.cu), softmax(q.k^T * scale + bias (+ mask)) . v per
// window and head with the scores kept on chip. Two kernels, each in its own translation unit: attention_fma.cu
// (float32 FMA, every model) and attention_mma.cu (matrix cores, fp16/bf16 models). Included only by those three.
#pragma once

#include <cstdint>

#include "common.cuh"

namespace swinfer::hip::kern {

/// What the attention kernels read and write.
/// Shapes: qkv (N * windows * t, 3C) float32, row (nw * t + i), q at columns h*hd.., k at C + h*hd.., v at 2C + h*hd..;
///         att (N * windows * t, C) float32, every head's columns written for every query row;
///         bias_t (heads, t, t) float32 as [h][j][i] (transposed, so consecutive queries read consecutive
///         addresses), the dense relative bias of the clamped window; regions (windows, t) uint8 region ids of the
///         rolled grid, or null when the block is not masked.
struct core_args {
  const float* qkv;
  float* att;
  std::int64_t windows_total;  ///< N * windows per sample
  int heads, t, C, hd;
  float scale;
  const float* bias_t;
  const std::uint8_t* regions;
  std::int64_t windows_per_sample;
};

/// The largest head dim the matrix-core kernel takes (padded to 16, 32 or 64).
inline constexpr int attention_mma_max_head_dim = 64;

/// The FMA kernel with the smallest padded head dim (8, 16, 32, 64, 128) that holds c.hd.
void launch_attention_fma(const launch_env& env, const core_args& c);

/// The matrix-core kernel for a 16-bit model (type f16 or bf16), c.hd <= attention_mma_max_head_dim.
void launch_attention_mma(const launch_env& env, dtype type, const core_args& c);

}  // namespace swinfer::hip::kern

// swinfer: LayerNorm over the channels of token rows (affine, or parameter-free for the hidden states).
#pragma once

#include <cmath>
#include <cstdint>

#include "swinfer/core/error.hpp"

namespace swinfer::ops {

/// Whether a LayerNorm over rows of `channels` values can be built: the channel count must be positive.
inline void check_layer_norm(int channels) {
  if (channels <= 0) detail::fail("layer_norm needs a positive channel count, got ", channels);
}

/// Whether it runs on `rows` rows of `channels` values (no rows is fine, a negative count is not).
inline void check_layer_norm(int channels, std::int64_t rows) {
  check_layer_norm(channels);
  if (rows < 0) detail::fail("layer_norm: negative row count ", rows);
}

namespace ref {

/// y[r] = (x[r] - mean) / sqrt(biased var + eps) * gamma + beta, per row of `channels` values.
/// gamma/beta may be null (MONAI's proj_out has no affine). x and y may alias.
inline void layer_norm(const float* x, std::int64_t rows, int channels, const float* gamma, const float* beta,
                       float eps, float* y) {
  check_layer_norm(channels, rows);
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * channels;
    double sum = 0, sq = 0;
    for (int c = 0; c < channels; ++c) sum += xr[c];
    const double mean = sum / channels;
    for (int c = 0; c < channels; ++c) sq += (xr[c] - mean) * (xr[c] - mean);
    const double inv = 1.0 / std::sqrt(sq / channels + eps);
    float* yr = y + r * channels;
    for (int c = 0; c < channels; ++c) {
      float v = static_cast<float>((xr[c] - mean) * inv);
      if (gamma) v *= gamma[c];
      if (beta) v += beta[c];
      yr[c] = v;
    }
  }
}

}  // namespace ref
}  // namespace swinfer::ops

// swinfer: LayerNorm over the channels of token rows (affine, or parameter-free for the hidden states).
#pragma once

#include <cmath>
#include <cstdint>

namespace swinfer::ops {
namespace ref {

/// y[r] = (x[r] - mean) / sqrt(biased var + eps) * gamma + beta, per row of `channels` values.
/// gamma/beta may be null (MONAI's proj_out has no affine). x and y may alias.
inline void layer_norm(const float* x, std::int64_t rows, int channels, const float* gamma, const float* beta,
                       float eps, float* y) {
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

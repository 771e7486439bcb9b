// swinfer cpu backend: LayerNorm over the channels of token rows (affine, or parameter-free for proj_out).
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "swinfer/backend/cpu/context.hpp"
#include "swinfer/backend/cpu/simd.hpp"
#include "swinfer/ops/layer_norm.hpp"

namespace swinfer::cpu {

/// \brief y[r] = (x[r] - mean) / sqrt(biased var + eps) * gamma + beta over rows of C channels; x and y may alias.
/// Statistics are two-pass in float32 (rows are at most a few thousand channels, so this is exact to rounding).
/// Threads: work items are blocks of rows; each row is converted to float32 once into worker scratch.
template <class S>
class layer_norm {
 public:
  static constexpr std::int64_t rows_per_task = 256;

  layer_norm(context& ctx, int channels, const float* gamma, const float* beta, float eps)
      : ctx_(ctx), channels_(channels), eps_(eps) {
    ops::check_layer_norm(channels);
    gamma_.assign(static_cast<std::size_t>(channels), 1.0f);
    beta_.assign(static_cast<std::size_t>(channels), 0.0f);
    if (gamma) std::copy(gamma, gamma + channels, gamma_.begin());
    if (beta) std::copy(beta, beta + channels, beta_.begin());
  }

  void run(const S* x, std::int64_t rows, S* y) {
    ops::check_layer_norm(channels_, rows);
    const auto timed = ctx_.time_op([&] {
      return op_label{"layer_norm", detail::concat("layer_norm C", channels_, ", ", rows, " rows")};
    });
    const std::int64_t c = channels_;
    const Eigen::Map<const Eigen::ArrayXf> gamma(gamma_.data(), c), beta(beta_.data(), c);
    ctx_.parallel_for(rows, rows_per_task, [&](std::int64_t r0, std::int64_t r1, int worker) {
      float* row = ctx_.workspace(worker).reserve(c);
      Eigen::Map<Eigen::ArrayXf> v(row, c);
      for (std::int64_t r = r0; r < r1; ++r) {
        to_floats(x + r * c, row, c);
        const float mean = v.sum() / static_cast<float>(c);
        v -= mean;
        const float inv = 1.0f / std::sqrt(v.square().sum() / static_cast<float>(c) + eps_);
        v = v * inv * gamma + beta;
        from_floats(row, y + r * c, c);
      }
    });
  }

 private:
  context& ctx_;
  int channels_;
  float eps_;
  std::vector<float> gamma_, beta_;  ///< ones / zeros when the norm has no affine
};

}  // namespace swinfer::cpu

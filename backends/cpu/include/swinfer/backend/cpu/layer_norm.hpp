// swinfer cpu backend: LayerNorm over the channels of token rows (affine, or parameter-free for proj_out).
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "swinfer/backend/cpu/context.hpp"
#include "swinfer/backend/cpu/simd.hpp"
#include "swinfer/ops/layer_norm.hpp"

namespace swinfer::cpu {

/// \brief y[r] = (x[r] - mean) / sqrt(biased var + eps) * gamma + beta over rows of C channels; x and y may alias.
/// Statistics are two-pass in float32 (rows are at most a few thousand channels, so this is exact to rounding).
/// Each pass runs on packets stepping down to the row's width (simd.hpp): the demo's 12-channel rows are 8 + 4
/// lanes, where Eigen's dynamic-size array code went value by value (6x slower at 12 channels on a Zen 4).
/// Threads: work items are blocks of rows; 16-bit rows are converted to float32 once, in steps, into worker scratch.
template <class S>
class layer_norm {
 public:
  static constexpr std::int64_t rows_per_task = 256;
  /// 16-bit rows: float32 values converted at a time (at least one row).
  static constexpr std::int64_t floats_per_step = 4096;

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
    ctx_.parallel_for(rows, rows_per_task, [&](std::int64_t r0, std::int64_t r1, int worker) {
      if constexpr (std::is_same_v<S, float>) {
        for (std::int64_t r = r0; r < r1; ++r) normalize_row(x + r * c, y + r * c);
      } else {  // rows are contiguous: converted a few KiB at a time, whole packets even where a row is not
        const std::int64_t rows_per_step = std::max<std::int64_t>(1, floats_per_step / c);
        float* buffer = ctx_.workspace(worker).reserve(rows_per_step * c);
        for (std::int64_t s0 = r0; s0 < r1; s0 += rows_per_step) {
          const std::int64_t values = std::min(rows_per_step, r1 - s0) * c;
          to_floats(x + s0 * c, buffer, values);
          for (std::int64_t v = 0; v < values; v += c) normalize_row(buffer + v, buffer + v);
          from_floats(buffer, y + s0 * c, values);
        }
      }
    });
  }

 private:
  /// out = LN(in) for one float32 row; out may be in.
  void normalize_row(const float* in, float* out) const {
    using namespace Eigen::internal;
    const std::int64_t c = channels_;
    const float mean = sum_stepping_down(0, c, [&](auto lanes, std::int64_t i) {
                         return ploadu<decltype(lanes)>(in + i);
                       }) / static_cast<float>(c);
    const float var = sum_stepping_down(0, c, [&](auto lanes, std::int64_t i) {
                        using T = decltype(lanes);
                        const T d = psub(ploadu<T>(in + i), pset1<T>(mean));
                        return pmul(d, d);
                      }) / static_cast<float>(c);
    const float inv = 1.0f / std::sqrt(var + eps_);
    for_each_packet_stepping_down(0, c, [&](auto lanes, std::int64_t i) {
      using T = decltype(lanes);
      const T normed = pmul(psub(ploadu<T>(in + i), pset1<T>(mean)), pset1<T>(inv));
      pstoreu(out + i, pmadd(normed, ploadu<T>(gamma_.data() + i), ploadu<T>(beta_.data() + i)));
    });
  }

  context& ctx_;
  int channels_;
  float eps_;
  std::vector<float> gamma_, beta_;  ///< ones / zeros when the norm has no affine
};

}  // namespace swinfer::cpu

// swinfer cpu backend: the Linear layer on token rows with its bias, GELU and residual-add epilogues.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cstdint>
#include <vector>

#include "swinfer/backend/cpu/context.hpp"
#include "swinfer/backend/cpu/gemm.hpp"
#include "swinfer/backend/cpu/simd.hpp"
#include "swinfer/core/error.hpp"
#include "swinfer/ops/linear.hpp"

namespace swinfer::cpu {

/// \brief y = act(x W^T + b) (or y += ...): x [rows][in], y [rows][out], storage S, float32 compute.
/// Weights are packed once as [in][48-column groups] float32.
/// Threads: work items are blocks of 64 rows; a worker converts its block to float32 once, then runs every column
/// group over it and applies bias (as the accumulator start), GELU and the residual add before storing.
template <class S>
class linear {
 public:
  static constexpr std::int64_t rows_per_task = 64;  // a multiple of max_micro_rows

  linear(context& ctx, const ops::linear_problem& p, const float* weight, const float* bias) : ctx_(ctx), p_(p) {
    if (p.in_features <= 0 || p.out_features <= 0) {
      detail::fail("linear needs positive feature counts, got ", p.in_features, " -> ", p.out_features);
    }
    if (!weight) detail::fail("linear: null weight");
    if (p.bias && !bias) detail::fail("linear: the problem has a bias but no bias values were given");
    const std::int64_t in = p.in_features;
    weights_ = packed_matrix(in, p.out_features, [&](std::int64_t k, std::int64_t o) { return weight[o * in + k]; });
    if (p.bias && bias) {  // "&& bias" is implied by the check above; it spares GCC 12 at -O3 a false -Wnonnull
      bias_.assign(static_cast<std::size_t>(round_up(p.out_features, group_width)), 0.0f);
      std::copy(bias, bias + p.out_features, bias_.begin());
    }
  }

  void run(const S* x, std::int64_t rows, S* y) {
    if (rows < 0) detail::fail("linear: negative row count ", rows);
    const std::int64_t in = p_.in_features, out = p_.out_features;
    const panel_layout& wl = weights_.layout();
    const std::int64_t blocks = (rows + rows_per_task - 1) / rows_per_task;
    ctx_.parallel_for(blocks, 1, [&](std::int64_t b0, std::int64_t b1, int worker) {
      float* staged = ctx_.workspace(worker).reserve(rows_per_task * (in + group_width));
      float* tile = staged + rows_per_task * in;
      for (std::int64_t b = b0; b < b1; ++b) {
        const std::int64_t r0 = b * rows_per_task, n = std::min(rows_per_task, rows - r0);
        to_floats(x + r0 * in, staged, n * in);
        const float* base = staged;
        const row_segments a{&base, 1, in, in};
        for (int g = 0; g < wl.groups(); ++g) {
          const std::int64_t col0 = wl.group_col0(g);
          const int cols = wl.group_cols(g);
          gemm_group(a, n, weights_.panel(g), wl.packets(g), bias_.empty() ? nullptr : bias_.data() + col0, 0, tile,
                     group_width);
          if (p_.gelu) gelu_in_place(tile, n * group_width);
          for (std::int64_t r = 0; r < n; ++r) {
            S* dst = y + (r0 + r) * out + col0;
            if (p_.accumulate) {
              add_floats(tile + r * group_width, dst, cols);
            } else {
              from_floats(tile + r * group_width, dst, cols);
            }
          }
        }
      }
    });
  }

 private:
  context& ctx_;
  ops::linear_problem p_;
  packed_matrix weights_;
  std::vector<float> bias_;  ///< zero padded to whole column groups; empty: no bias
};

}  // namespace swinfer::cpu

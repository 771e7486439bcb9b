// swinfer: the Linear layer on token rows, with the GELU and residual epilogues the Swin block needs.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "swinfer/core/error.hpp"
#include "swinfer/ops/activation.hpp"
#include "swinfer/ops/quantization.hpp"

namespace swinfer::ops {

/// \brief y = act(x W^T + b), W stored (out_features, in_features) as PyTorch does.
struct linear_problem {
  int in_features = 0, out_features = 0;
  bool bias = true;
  /// Apply exact GELU to the result (MLP linear1).
  bool gelu = false;
  /// Add the result into y instead of overwriting it (residual: MLP linear2, attention proj).
  bool accumulate = false;
  /// Under precision::int8: the input's calibration point and scale (int8 products), or float (scale 0).
  int8_input int8;

  /// Whether an op can be built for this problem: positive feature counts, a weight, and bias values when the
  /// problem has a bias. Throws swinfer::error naming what is wrong.
  void check_parameters(const float* weight, const float* bias_values) const {
    if (in_features <= 0 || out_features <= 0) {
      detail::fail("linear needs positive feature counts, got ", in_features, " -> ", out_features);
    }
    if (!weight) detail::fail("linear: null weight");
    if (bias && !bias_values) detail::fail("linear: the problem has a bias but no bias values were given");
    int8.check();
  }

  /// Whether the op runs on `rows` token rows (none is fine, a negative count is not).
  void check(std::int64_t rows) const {
    if (rows < 0) detail::fail("linear: negative row count ", rows);
  }

  /// Whether a LayerNorm over `norm_channels` can be applied to the input rows as they are loaded.
  void check_pre_norm(int norm_channels) const {
    if (norm_channels != in_features) {
      detail::fail("linear: a pre-norm over ", norm_channels, " channels for ", in_features, " inputs");
    }
  }
};

namespace ref {

/// y (=|+=) act(x W^T + b), double accumulation. A quantized problem (p.int8) quantizes each row with the input's
/// scale (dynamic: the row's own) and the weights per output feature, sums the integer products exactly and scales
/// the sum back (docs/int8.md).
inline void linear(const linear_problem& p, const float* x, std::int64_t rows, const float* weight,
                   const float* bias, float* y) {
  p.check(rows);
  std::vector<double> products(static_cast<std::size_t>(p.out_features));
  std::optional<reference_int8_product> quantized;
  if (p.int8.quantized()) quantized.emplace(p.int8, weight, p.out_features, p.in_features);
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * p.in_features;
    if (quantized) {
      quantized->run(row, products.data());
    } else {
      for (int o = 0; o < p.out_features; ++o) {
        double acc = 0;
        for (int i = 0; i < p.in_features; ++i) acc += double{row[i]} * weight[o * p.in_features + i];
        products[static_cast<std::size_t>(o)] = acc;
      }
    }
    for (int o = 0; o < p.out_features; ++o) {
      float v = static_cast<float>(products[static_cast<std::size_t>(o)] + ((p.bias && bias) ? bias[o] : 0.0));
      if (p.gelu) v = gelu(v);
      float& out = y[r * p.out_features + o];
      out = p.accumulate ? out + v : v;
    }
  }
}

}  // namespace ref
}  // namespace swinfer::ops

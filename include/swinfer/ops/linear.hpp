// swinfer: the Linear layer on token rows, with the GELU and residual epilogues the Swin block needs.
#pragma once

#include <cstdint>

#include "swinfer/ops/activation.hpp"

namespace swinfer::ops {

/// \brief y = act(x W^T + b), W stored (out_features, in_features) as PyTorch does.
struct linear_problem {
  int in_features = 0, out_features = 0;
  bool bias = true;
  /// Apply exact GELU to the result (MLP linear1).
  bool gelu = false;
  /// Add the result into y instead of overwriting it (residual: MLP linear2, attention proj).
  bool accumulate = false;
};

namespace ref {

inline void linear(const linear_problem& p, const float* x, std::int64_t rows, const float* weight,
                   const float* bias, float* y) {
  for (std::int64_t r = 0; r < rows; ++r)
    for (int o = 0; o < p.out_features; ++o) {
      double acc = (p.bias && bias) ? bias[o] : 0.0;
      for (int i = 0; i < p.in_features; ++i) acc += double{x[r * p.in_features + i]} * weight[o * p.in_features + i];
      float v = static_cast<float>(acc);
      if (p.gelu) v = gelu(v);
      float& out = y[r * p.out_features + o];
      out = p.accumulate ? out + v : v;
    }
}

}  // namespace ref
}  // namespace swinfer::ops

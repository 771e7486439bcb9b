// swinfer: InstanceNorm (no affine, batch statistics) with the residual add and LeakyReLU that follow it.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>

#include "swinfer/core/error.hpp"
#include "swinfer/core/tensor.hpp"
#include "swinfer/ops/activation.hpp"

namespace swinfer::ops {

/// \brief What follows the normalisation: x = act(IN(x) + residual). MONAI's UnetResBlock uses all three forms.
struct instance_norm_epilogue {
  float eps = 1e-5f;
  /// LeakyReLU slope applied after the (optional) residual add; empty for no activation.
  std::optional<float> negative_slope;
};

/// Whether x of shape `x` can be normalised with this residual (null: none): the residual has x's shape.
inline void check_instance_norm(const shape5& x, const shape5* residual) {
  if (residual && !(*residual == x)) {
    detail::fail("instance_norm residual shape ", residual->str(), " differs from ", x.str());
  }
}

namespace ref {

/// Per (n, c): mean and biased variance over D*H*W accumulated in double (float32 drifts at 96^3).
inline void instance_norm(tensor<float>& x, const tensor<float>* residual, const instance_norm_epilogue& e) {
  const auto& s = x.shape();
  check_instance_norm(s, residual ? &residual->shape() : nullptr);
  for (std::int64_t n = 0; n < s.n; ++n)
    for (std::int64_t c = 0; c < s.c; ++c) {
      double sum = 0, sq = 0;
      for (std::int64_t z = 0; z < s.d; ++z)
        for (std::int64_t y = 0; y < s.h; ++y)
          for (std::int64_t w = 0; w < s.w; ++w) sum += x(n, c, z, y, w);
      const double mean = sum / static_cast<double>(s.spatial());
      for (std::int64_t z = 0; z < s.d; ++z)
        for (std::int64_t y = 0; y < s.h; ++y)
          for (std::int64_t w = 0; w < s.w; ++w) {
            const double dv = x(n, c, z, y, w) - mean;
            sq += dv * dv;
          }
      const double inv = 1.0 / std::sqrt(sq / static_cast<double>(s.spatial()) + e.eps);
      for (std::int64_t z = 0; z < s.d; ++z)
        for (std::int64_t y = 0; y < s.h; ++y)
          for (std::int64_t w = 0; w < s.w; ++w) {
            float v = static_cast<float>((x(n, c, z, y, w) - mean) * inv);
            if (residual) v += (*residual)(n, c, z, y, w);
            if (e.negative_slope) v = leaky_relu(v, *e.negative_slope);
            x(n, c, z, y, w) = v;
          }
    }
}

/// x = act(IN(x) + IN(residual)), `residual` left as it is: a residual block's projected shortcut normalised as it
/// is added (MONAI's UnetResBlock when the width changes), both norms with e.eps. The reference is the two ops.
inline void instance_norm_sum(tensor<float>& x, const tensor<float>& residual, const instance_norm_epilogue& e) {
  check_instance_norm(x.shape(), &residual.shape());
  tensor<float> normalised = residual.clone();
  instance_norm(normalised, nullptr, {e.eps, std::nullopt});
  instance_norm(x, &normalised, e);
}

}  // namespace ref
}  // namespace swinfer::ops

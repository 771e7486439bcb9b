// swinfer: 3-D max and average pooling with kernel = stride (PyTorch MaxPool3d / AvgPool3d, no padding, floor mode),
// which the Swin Fusion skips use to bring higher-resolution maps down to a level's grid.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string_view>

#include "swinfer/core/error.hpp"
#include "swinfer/core/tensor.hpp"

namespace swinfer::ops {

enum class pool_mode { max, avg };

inline std::string_view pool_mode_name(pool_mode m) { return m == pool_mode::max ? "max" : "avg"; }

/// \brief kernel^3 windows at stride kernel; a trailing remainder smaller than the kernel is dropped (floor).
struct pool3d_problem {
  pool_mode mode = pool_mode::max;
  int kernel = 2;

  shape5 output_shape(const shape5& in) const {
    if (kernel <= 0) detail::fail("pool3d: kernel must be positive, got ", kernel);
    if (in.d < kernel || in.h < kernel || in.w < kernel) {
      detail::fail("pool3d: input ", in.str(), " is smaller than the ", kernel, "^3 ", pool_mode_name(mode),
                   "-pooling kernel");
    }
    return {in.n, in.c, in.d / kernel, in.h / kernel, in.w / kernel};
  }

  /// Whether the op runs from an input of shape `in` into an output of shape `out` (output_shape(in)).
  void check(const shape5& in, const shape5& out) const {
    const shape5 os = output_shape(in);
    if (!(out == os)) detail::fail("pool3d output shape ", out.str(), " should be ", os.str());
  }
};

namespace ref {

/// Max, or the mean accumulated in double, of each kernel^3 window.
inline void pool3d(const tensor<float>& in, const pool3d_problem& p, tensor<float>& out) {
  p.check(in.shape(), out.shape());
  const shape5& s = out.shape();
  const int k = p.kernel;
  for (std::int64_t n = 0; n < s.n; ++n)
    for (std::int64_t c = 0; c < s.c; ++c)
      for (std::int64_t z = 0; z < s.d; ++z)
        for (std::int64_t y = 0; y < s.h; ++y)
          for (std::int64_t x = 0; x < s.w; ++x) {
            double sum = 0, best = -std::numeric_limits<double>::infinity();
            for (int a = 0; a < k; ++a)
              for (int b = 0; b < k; ++b)
                for (int e = 0; e < k; ++e) {
                  const double v = in(n, c, z * k + a, y * k + b, x * k + e);
                  sum += v;
                  best = std::max(best, v);
                }
            out(n, c, z, y, x) = static_cast<float>(p.mode == pool_mode::max ? best : sum / (double(k) * k * k));
          }
}

}  // namespace ref
}  // namespace swinfer::ops

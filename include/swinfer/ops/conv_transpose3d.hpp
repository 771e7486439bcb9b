// swinfer: the kernel-2, stride-2 transposed convolution of the UNETR up-blocks, and its naive reference.
#pragma once

#include <cstdint>

#include "swinfer/core/error.hpp"
#include "swinfer/core/tensor.hpp"

namespace swinfer::ops {

/// Output shape of a k2s2 transposed convolution (no bias, no padding): spatial extents double.
inline shape5 conv_transpose3d_output_shape(const shape5& in, int cin, int cout) {
  if (in.c != cin) detail::fail("conv_transpose3d expects ", cin, " input channels, got ", in.str());
  return {in.n, cout, 2 * in.d, 2 * in.h, 2 * in.w};
}

namespace ref {

/// out[o, 2z+a, 2y+b, 2x+c] = sum_i in[i, z, y, x] * W[i, o, a, b, c]; weight (cin, cout, 2, 2, 2).
inline void conv_transpose3d(const tensor<float>& in, int cout, const float* weight, tensor<float>& out) {
  const auto& s = in.shape();
  const shape5 os = conv_transpose3d_output_shape(s, static_cast<int>(s.c), cout);
  if (!(out.shape() == os)) detail::fail("conv_transpose3d output shape ", out.shape().str(), " should be ", os.str());
  for (std::int64_t n = 0; n < s.n; ++n)
    for (std::int64_t o = 0; o < cout; ++o)
      for (std::int64_t z = 0; z < os.d; ++z)
        for (std::int64_t y = 0; y < os.h; ++y)
          for (std::int64_t x = 0; x < os.w; ++x) {
            double acc = 0;
            const int a = z & 1, b = y & 1, c = x & 1;
            for (std::int64_t i = 0; i < s.c; ++i)
              acc += double{weight[(((i * cout + o) * 2 + a) * 2 + b) * 2 + c]} * in(n, i, z >> 1, y >> 1, x >> 1);
            out(n, o, z, y, x) = static_cast<float>(acc);
          }
}

}  // namespace ref
}  // namespace swinfer::ops

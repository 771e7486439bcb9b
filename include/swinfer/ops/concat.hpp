// swinfer: channel concatenation [a, b] of the UNETR decoder (upsampled first, skip second).
#pragma once

#include <cstdint>

#include "swinfer/core/error.hpp"
#include "swinfer/core/tensor.hpp"

namespace swinfer::ops {

inline shape5 concat_channels_shape(const shape5& a, const shape5& b) {
  if (a.n != b.n || a.d != b.d || a.h != b.h || a.w != b.w) {
    detail::fail("cannot concatenate tensors of shapes ", a.str(), " and ", b.str(), " along channels");
  }
  return {a.n, a.c + b.c, a.d, a.h, a.w};
}

namespace ref {

template <class T>
void concat_channels(const tensor<T>& a, const tensor<T>& b, tensor<T>& out) {
  const shape5 s = concat_channels_shape(a.shape(), b.shape());
  if (!(out.shape() == s)) detail::fail("concat output shape ", out.shape().str(), " should be ", s.str());
  for (std::int64_t n = 0; n < s.n; ++n)
    for (std::int64_t c = 0; c < s.c; ++c)
      for (std::int64_t z = 0; z < s.d; ++z)
        for (std::int64_t y = 0; y < s.h; ++y)
          for (std::int64_t x = 0; x < s.w; ++x)
            out(n, c, z, y, x) = c < a.shape().c ? a(n, c, z, y, x) : b(n, c - a.shape().c, z, y, x);
}

}  // namespace ref
}  // namespace swinfer::ops

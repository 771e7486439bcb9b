// swinfer: element-type and layout conversion between tensors of one logical shape, and its naive reference.
#pragma once

#include <cstdint>

#include "swinfer/core/error.hpp"
#include "swinfer/core/precision.hpp"
#include "swinfer/core/tensor.hpp"

namespace swinfer::ops {
namespace ref {

/// dst(n, c, d, h, w) = src(n, c, d, h, w), converting the element type; layouts may differ.
template <class A, class B>
void convert(const tensor<A>& src, tensor<B>& dst) {
  const auto& s = src.shape();
  if (!(dst.shape() == s)) detail::fail("convert: shapes ", s.str(), " and ", dst.shape().str(), " differ");
  for (std::int64_t n = 0; n < s.n; ++n)
    for (std::int64_t c = 0; c < s.c; ++c)
      for (std::int64_t z = 0; z < s.d; ++z)
        for (std::int64_t y = 0; y < s.h; ++y)
          for (std::int64_t x = 0; x < s.w; ++x) dst(n, c, z, y, x) = from_float<B>(to_float(src(n, c, z, y, x)));
}

}  // namespace ref
}  // namespace swinfer::ops

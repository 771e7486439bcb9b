// swinfer: element-type and layout conversion between tensors of one logical shape, and its naive reference.
#pragma once

#include <cstdint>

#include "swinfer/core/error.hpp"
#include "swinfer/core/precision.hpp"
#include "swinfer/core/tensor.hpp"

namespace swinfer::ops {

/// Whether a conversion from a tensor of shape `src` into one of shape `dst` is possible: the same logical shape.
inline void check_convert(const shape5& src, const shape5& dst) {
  if (!(dst == src)) detail::fail("convert: source shape ", src.str(), " differs from destination ", dst.str());
}

namespace ref {

/// dst(n, c, d, h, w) = src(n, c, d, h, w), converting the element type; layouts may differ.
template <class A, class B>
void convert(const tensor<A>& src, tensor<B>& dst) {
  check_convert(src.shape(), dst.shape());
  const auto& s = src.shape();
  for (std::int64_t n = 0; n < s.n; ++n)
    for (std::int64_t c = 0; c < s.c; ++c)
      for (std::int64_t z = 0; z < s.d; ++z)
        for (std::int64_t y = 0; y < s.h; ++y)
          for (std::int64_t x = 0; x < s.w; ++x) dst(n, c, z, y, x) = from_float<B>(to_float(src(n, c, z, y, x)));
}

}  // namespace ref
}  // namespace swinfer::ops

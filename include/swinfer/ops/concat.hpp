// swinfer: channel concatenation [parts...] (the UNETR decoder's [upsampled, skip] and the fused skips' inputs).
#pragma once

#include <cstdint>
#include <vector>

#include "swinfer/core/error.hpp"
#include "swinfer/core/tensor.hpp"

namespace swinfer::ops {

/// (N, sum of C, D, H, W); every part must share N, D, H and W.
inline shape5 concat_channels_shape(const std::vector<shape5>& parts) {
  if (parts.empty()) detail::fail("cannot concatenate zero tensors");
  shape5 s = parts.front();
  s.c = 0;
  for (const auto& p : parts) {
    if (p.n != s.n || p.d != s.d || p.h != s.h || p.w != s.w) {
      detail::fail("cannot concatenate tensors of shapes ", parts.front().str(), " and ", p.str(), " along channels");
    }
    s.c += p.c;
  }
  return s;
}

template <class T>
shape5 concat_channels_shape(const std::vector<const tensor<T>*>& parts) {
  std::vector<shape5> shapes;
  for (const auto* p : parts) shapes.push_back(p->shape());
  return concat_channels_shape(shapes);
}

namespace ref {

template <class T>
void concat_channels(const std::vector<const tensor<T>*>& parts, tensor<T>& out) {
  const shape5 s = concat_channels_shape(parts);
  if (!(out.shape() == s)) detail::fail("concat output shape ", out.shape().str(), " should be ", s.str());
  std::int64_t first = 0;
  for (const auto* p : parts) {
    for (std::int64_t n = 0; n < s.n; ++n)
      for (std::int64_t c = 0; c < p->shape().c; ++c)
        for (std::int64_t z = 0; z < s.d; ++z)
          for (std::int64_t y = 0; y < s.h; ++y)
            for (std::int64_t x = 0; x < s.w; ++x) out(n, first + c, z, y, x) = (*p)(n, c, z, y, x);
    first += p->shape().c;
  }
}

}  // namespace ref
}  // namespace swinfer::ops

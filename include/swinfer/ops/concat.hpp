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

/// The shapes of parts given as tensors (host tensors, or any backend's tensors with a shape()).
template <class Tensor>
std::vector<shape5> part_shapes(const std::vector<const Tensor*>& parts) {
  std::vector<shape5> shapes;
  for (const auto* p : parts) shapes.push_back(p->shape());
  return shapes;
}

template <class Tensor>
shape5 concat_channels_shape(const std::vector<const Tensor*>& parts) {
  return concat_channels_shape(part_shapes(parts));
}

/// Whether parts of these shapes concatenate along channels into an output of shape `out`.
inline void check_concat_channels(const std::vector<shape5>& parts, const shape5& out) {
  const shape5 s = concat_channels_shape(parts);
  if (!(out == s)) detail::fail("concat output shape ", out.str(), " should be ", s.str());
}

template <class Tensor>
void check_concat_channels(const std::vector<const Tensor*>& parts, const shape5& out) {
  check_concat_channels(part_shapes(parts), out);
}

namespace ref {

template <class T>
void concat_channels(const std::vector<const tensor<T>*>& parts, tensor<T>& out) {
  check_concat_channels(parts, out.shape());
  const shape5& s = out.shape();
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

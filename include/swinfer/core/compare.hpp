// swinfer: how far a tensor is from a reference (max|diff|, max|ref|, relative L2), by logical index in any layouts.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "swinfer/core/error.hpp"
#include "swinfer/core/precision.hpp"
#include "swinfer/core/tensor.hpp"

namespace swinfer {

/// \brief The difference between a result and its reference over every element.
struct tensor_difference {
  double max_abs = 0;      ///< max |got - ref|; infinite when any difference is NaN (a NaN or infinity involved)
  double max_ref = 0;      ///< max |ref| (NaN ignored)
  double rel_l2 = 0;       ///< ||got - ref|| / ||ref||, or ||got - ref|| when ref is all zero
  std::int64_t count = 0;  ///< elements compared

  /// max|diff| / max|ref|: the scale-free measure tolerances on logits are set on.
  double relative() const { return max_abs / std::max(max_ref, 1e-30); }
  /// False when a NaN or an infinity in either operand made max_abs infinite.
  bool finite() const { return std::isfinite(max_abs); }
};

/// \brief Compares `got` with `ref` element by element, by logical (N, C, D, H, W) index whatever the strides of
/// each, in double precision (any storage type is widened exactly first).
/// \throws swinfer::error naming both shapes when they differ.
template <class G, class R>
tensor_difference compare_tensors(tensor_view<const G> got, tensor_view<const R> ref) {
  if (!(got.shape == ref.shape)) {
    detail::fail("cannot compare a tensor of shape ", got.shape.str(), " with a reference of shape ", ref.shape.str());
  }
  tensor_difference e;
  double num = 0, den = 0;
  const auto& s = ref.shape;
  for (std::int64_t n = 0; n < s.n; ++n)
    for (std::int64_t c = 0; c < s.c; ++c)
      for (std::int64_t z = 0; z < s.d; ++z)
        for (std::int64_t y = 0; y < s.h; ++y)
          for (std::int64_t x = 0; x < s.w; ++x) {
            const double a = to_float(got(n, c, z, y, x)), b = to_float(ref(n, c, z, y, x));
            const double d = std::abs(a - b);
            // std::max would drop a NaN; a NaN difference must fail every tolerance instead.
            e.max_abs = std::isnan(d) ? std::numeric_limits<double>::infinity() : std::max(e.max_abs, d);
            e.max_ref = std::max(e.max_ref, std::abs(b));
            num += d * d;
            den += b * b;
          }
  e.count = s.numel();
  e.rel_l2 = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  return e;
}

/// compare_tensors for owning tensors.
template <class G, class R>
tensor_difference compare_tensors(const tensor<G>& got, const tensor<R>& ref) {
  return compare_tensors(got.view(), ref.view());
}

}  // namespace swinfer

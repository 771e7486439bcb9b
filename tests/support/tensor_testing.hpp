// Test helpers: fresh random inputs, poisoned outputs, error measures. Shared by every test file.
#pragma once

#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "swinfer/core/compare.hpp"
#include "swinfer/core/precision.hpp"
#include "swinfer/core/tensor.hpp"

namespace swinfer_test {

/// A generator seeded from Catch's random seed (`--rng-seed`), so each run draws fresh data unless pinned.
std::mt19937_64& rng();

inline std::vector<float> random_vector(std::size_t n, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng());
  return v;
}

template <class T>
void fill_random(swinfer::tensor<T>& t, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> u(lo, hi);
  for (std::int64_t i = 0; i < t.size(); ++i) t.data()[i] = swinfer::from_float<T>(u(rng()));
}

/// Fills with NaN so any element a kernel forgets to write shows up in the comparison.
template <class T>
void poison(swinfer::tensor<T>& t) {
  t.fill(swinfer::from_float<T>(std::numeric_limits<float>::quiet_NaN()));
}

/// Copies any tensor to a float32 tensor in the given layout (values compared by logical index).
template <class T>
swinfer::tensor<float> to_float_tensor(const swinfer::tensor<T>& t, swinfer::layout_kind k) {
  swinfer::tensor<float> out(t.shape(), k);
  const auto& s = t.shape();
  for (std::int64_t n = 0; n < s.n; ++n)
    for (std::int64_t c = 0; c < s.c; ++c)
      for (std::int64_t z = 0; z < s.d; ++z)
        for (std::int64_t y = 0; y < s.h; ++y)
          for (std::int64_t x = 0; x < s.w; ++x) out(n, c, z, y, x) = swinfer::to_float(t(n, c, z, y, x));
  return out;
}

/// max_abs, max_ref, rel_l2 and count of swinfer::compare_tensors (NaN anywhere makes max_abs infinite).
using error_stats = swinfer::tensor_difference;

/// Compares two tensors of equal logical shape element by element, whatever their layouts. Unlike
/// swinfer::compare_tensors, differing shapes give an infinite max_abs, so the test's CHECK on it fails.
template <class A, class B>
error_stats compare(const swinfer::tensor<A>& a, const swinfer::tensor<B>& b) {
  if (!(a.shape() == b.shape())) {
    error_stats e;
    e.max_abs = std::numeric_limits<double>::infinity();
    return e;
  }
  return swinfer::compare_tensors(a, b);
}

/// Same measures over raw arrays.
inline error_stats compare(const float* a, const float* b, std::size_t n) {
  const swinfer::shape5 s{1, 1, 1, 1, static_cast<std::int64_t>(n)};
  const auto strides = swinfer::packed_strides(s, swinfer::layout_kind::ncdhw);
  return swinfer::compare_tensors(swinfer::tensor_view<const float>{a, s, strides},
                                  swinfer::tensor_view<const float>{b, s, strides});
}

}  // namespace swinfer_test

// Test helpers: fresh random inputs, poisoned outputs, error measures. Shared by every test file.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

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

struct error_stats {
  double max_abs = 0;       ///< max |a - b| (NaN anywhere makes it infinite)
  double max_ref = 0;       ///< max |b|
  double rel_l2 = 0;        ///< ||a - b|| / ||b||
  std::int64_t count = 0;
};

/// Compares two tensors of equal logical shape element by element, whatever their layouts.
template <class A, class B>
error_stats compare(const swinfer::tensor<A>& a, const swinfer::tensor<B>& b) {
  error_stats e;
  if (!(a.shape() == b.shape())) {
    e.max_abs = std::numeric_limits<double>::infinity();
    return e;
  }
  double num = 0, den = 0;
  const auto& s = a.shape();
  for (std::int64_t n = 0; n < s.n; ++n)
    for (std::int64_t c = 0; c < s.c; ++c)
      for (std::int64_t z = 0; z < s.d; ++z)
        for (std::int64_t y = 0; y < s.h; ++y)
          for (std::int64_t x = 0; x < s.w; ++x) {
            const double va = swinfer::to_float(a(n, c, z, y, x)), vb = swinfer::to_float(b(n, c, z, y, x));
            const double d = std::abs(va - vb);
            e.max_abs = std::isnan(d) ? std::numeric_limits<double>::infinity() : std::max(e.max_abs, d);
            e.max_ref = std::max(e.max_ref, std::abs(vb));
            num += d * d;
            den += vb * vb;
            ++e.count;
          }
  e.rel_l2 = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  return e;
}

/// Same measures over raw arrays.
inline error_stats compare(const float* a, const float* b, std::size_t n) {
  error_stats e;
  double num = 0, den = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double d = std::abs(double{a[i]} - b[i]);
    e.max_abs = std::isnan(d) ? std::numeric_limits<double>::infinity() : std::max(e.max_abs, d);
    e.max_ref = std::max(e.max_ref, std::abs(double{b[i]}));
    num += d * d;
    den += double{b[i]} * b[i];
  }
  e.count = static_cast<std::int64_t>(n);
  e.rel_l2 = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  return e;
}

}  // namespace swinfer_test

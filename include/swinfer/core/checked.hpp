// swinfer: overflow-checked arithmetic for sizes (element counts, strides, byte sizes) and checked conversion of
// floating-point sizes to integers. Every size derived from untrusted numbers (a file's header, a JSON option, a
// command-line flag) goes through these, so an absurd value is an error naming it rather than a wrapped-around
// product that allocates too little and writes past it.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <type_traits>

#include "swinfer/core/error.hpp"

namespace swinfer::detail {

/// a * b when it fits in int64, else nothing. The primitive the throwing helpers below share.
constexpr std::optional<std::int64_t> multiply_exact(std::int64_t a, std::int64_t b) {
  std::int64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}

/// a + b when it fits in int64, else nothing.
constexpr std::optional<std::int64_t> add_exact(std::int64_t a, std::int64_t b) {
  std::int64_t out = 0;
  if (__builtin_add_overflow(a, b, &out)) return std::nullopt;
  return out;
}

/// \brief a * b; a swinfer::error when it overflows int64. `what...` names the parameter and its value, e.g.
/// checked_mul(size, k, "CropForeground: k_divisible ", k).
template <class... What>
constexpr std::int64_t checked_mul(std::int64_t a, std::int64_t b, const What&... what) {
  const auto product = multiply_exact(a, b);
  if (!product) fail(what..., ": ", a, " x ", b, " overflows 64-bit integers");
  return *product;
}

/// \brief a + b; a swinfer::error naming `what...` when it overflows int64.
template <class... What>
constexpr std::int64_t checked_add(std::int64_t a, std::int64_t b, const What&... what) {
  const auto sum = add_exact(a, b);
  if (!sum) fail(what..., ": ", a, " + ", b, " overflows 64-bit integers");
  return *sum;
}

/// \brief The product of extents, each of which must be non-negative; a swinfer::error naming `what...` for a
/// negative extent or a product past int64.
template <class... What>
constexpr std::int64_t checked_product(std::initializer_list<std::int64_t> extents, const What&... what) {
  std::int64_t product = 1;
  for (const std::int64_t e : extents) {
    if (e < 0) fail(what..., ": extent ", e, " is negative");
    product = checked_mul(product, e, what...);
  }
  return product;
}

/// \brief Bytes taken by `count` elements of `item_size` bytes, checked like checked_mul.
template <class... What>
constexpr std::int64_t checked_byte_size(std::int64_t count, std::size_t item_size, const What&... what) {
  return checked_mul(count, static_cast<std::int64_t>(item_size), what...);
}

/// \brief A floating-point size converted to the integer type Int, after checking it is finite and representable
/// (converting anything else is undefined behaviour); a swinfer::error naming `what...` and the value otherwise.
/// The value is truncated towards zero, as static_cast does; round it first where rounding is meant.
template <class Int, class... What>
Int checked_integer_cast(double value, const What&... what) {
  static_assert(std::is_integral_v<Int>);
  // Int's range as doubles, both bounds exact powers of two: [-2^(bits-1), 2^(bits-1)) or (-1, 2^bits).
  constexpr int bits = std::numeric_limits<Int>::digits;
  const double upper = std::ldexp(1.0, bits);
  const bool fits = std::is_signed_v<Int> ? value >= -upper && value < upper : value > -1.0 && value < upper;
  if (!fits) fail(what..., ": ", value, " is not representable as a ", sizeof(Int) * 8, "-bit integer");  // NaN too
  return static_cast<Int>(value);
}

}  // namespace swinfer::detail

// swinfer: exact decoding of stored tensor elements (float16, bfloat16, any endianness) to float32 / int64.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "swinfer/io/state_dict.hpp"

namespace swinfer::detail {

/// IEEE binary16 bits to float32, bit-exact: subnormals are normalised, infinities kept,
/// NaN payloads kept (as numpy and c10 do) rather than canonicalised.
inline float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1fu;
  std::uint32_t mantissa = h & 0x3ffu;
  std::uint32_t bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {
    bits = sign | ((exponent + (127 - 15)) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;
  } else {
    // Subnormal half: every one is a normal float32, found by shifting the leading 1 into the implicit bit.
    std::uint32_t e = 127 - 15 + 1;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --e;
    }
    bits = sign | (e << 23) | ((mantissa & 0x3ffu) << 13);
  }
  return std::bit_cast<float>(bits);
}

/// bfloat16 is the top half of a float32, so widening is a shift.
inline float bfloat16_to_float(std::uint16_t b) { return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16); }

/// Size in bytes of one stored element of type `t`.
inline std::size_t item_size(dtype t) {
  switch (t) {
    case dtype::f64:
    case dtype::i64: return 8;
    case dtype::f32:
    case dtype::i32: return 4;
    case dtype::f16:
    case dtype::bf16:
    case dtype::i16: return 2;
    case dtype::i8:
    case dtype::u8:
    case dtype::boolean: return 1;
  }
  return 1;
}

/// Reads an unsigned integer of sizeof(U) bytes stored in the given byte order, whatever the host's.
template <class U>
U load_unsigned(const std::byte* p, bool big_endian) {
  U v = 0;
  for (std::size_t i = 0; i < sizeof(U); ++i) {
    const std::size_t shift = 8 * (big_endian ? sizeof(U) - 1 - i : i);
    v = static_cast<U>(v | (static_cast<U>(std::to_integer<unsigned>(p[i])) << shift));
  }
  return v;
}

/// One element of type `t` at `p`, as float32 (floating types) or int64 (integer and bool types).
template <class Out>
Out decode_element(dtype t, const std::byte* p, bool big_endian) {
  if constexpr (std::is_same_v<Out, float>) {
    switch (t) {
      case dtype::f32: return std::bit_cast<float>(load_unsigned<std::uint32_t>(p, big_endian));
      case dtype::f16: return half_to_float(load_unsigned<std::uint16_t>(p, big_endian));
      case dtype::bf16: return bfloat16_to_float(load_unsigned<std::uint16_t>(p, big_endian));
      case dtype::f64: return static_cast<float>(std::bit_cast<double>(load_unsigned<std::uint64_t>(p, big_endian)));
      default: break;
    }
  } else {
    switch (t) {
      case dtype::i64: return std::bit_cast<std::int64_t>(load_unsigned<std::uint64_t>(p, big_endian));
      case dtype::i32: return std::bit_cast<std::int32_t>(load_unsigned<std::uint32_t>(p, big_endian));
      case dtype::i16: return std::bit_cast<std::int16_t>(load_unsigned<std::uint16_t>(p, big_endian));
      case dtype::i8: return std::bit_cast<std::int8_t>(p[0]);
      case dtype::u8: return std::to_integer<std::uint8_t>(p[0]);
      case dtype::boolean: return p[0] != std::byte{0};
      default: break;
    }
  }
  fail("internal error: dtype ", dtype_name(t), " decoded into the wrong value kind");
}

/// Decodes `count` elements of type `t`, the i-th at element index `first + i * step` of `src`,
/// into out[0..count). Callers have checked every index lies inside `src`.
template <class Out>
void decode_elements(dtype t, bool big_endian, const std::byte* src, std::int64_t first, std::int64_t step,
                     std::int64_t count, Out* out) {
  // A zero-element array has no storage: both pointers may be null, and memcpy with a null pointer is undefined
  // even for zero bytes.
  if (count == 0) return;
  const auto size = static_cast<std::int64_t>(item_size(t));
  // The contiguous little-endian float32 case is the bulk of every checkpoint; copy it directly.
  if constexpr (std::is_same_v<Out, float>) {
    if (t == dtype::f32 && step == 1 && !big_endian && std::endian::native == std::endian::little) {
      std::memcpy(out, src + first * size, static_cast<std::size_t>(count) * sizeof(float));
      return;
    }
  }
  for (std::int64_t i = 0; i < count; ++i) out[i] = decode_element<Out>(t, src + (first + i * step) * size, big_endian);
}

}  // namespace swinfer::detail

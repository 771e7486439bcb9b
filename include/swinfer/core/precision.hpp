// swinfer: precision tags and what each one stores, computes and accumulates in.
#pragma once

#include <bit>
#include <cstdint>
#include <string_view>

#include <Eigen/Core>  // Eigen::half and Eigen::bfloat16: bit-exact IEEE binary16 / bfloat16 storage types

namespace swinfer {

/// Precision tags. Storage is the element type of activations between layers; compute is float32, except for
/// int8's matrix products (docs/int8.md).
namespace precision {
struct fp32 {};
struct fp16 {};
struct bf16 {};
/// The matrix products (convolutions, transposed convolutions, linears) on int8: weights per output channel, inputs
/// with calibrated or dynamic scales, int32 sums; activations between layers stay float32. Needs a calibration or
/// dynamic scales (engine_options::calibration, engine_options::int8_dynamic).
struct int8 {};
}  // namespace precision

/// \brief What a precision tag means for storage, compute and accumulation.
/// \tparam P one of the swinfer::precision tags.
template <class P>
struct precision_traits {
  static_assert(sizeof(P) == 0, "swinfer: unknown precision tag; use swinfer::precision::fp32, fp16, bf16 or int8");
};

template <>
struct precision_traits<precision::fp32> {
  using storage_type = float;
  using compute_type = float;
  using accum_type = float;
  static constexpr std::string_view name = "fp32";
  static constexpr bool is_quantized = false;
};

template <>
struct precision_traits<precision::fp16> {
  using storage_type = Eigen::half;
  using compute_type = float;
  using accum_type = float;
  static constexpr std::string_view name = "fp16";
  static constexpr bool is_quantized = false;
};

template <>
struct precision_traits<precision::bf16> {
  using storage_type = Eigen::bfloat16;
  using compute_type = float;
  using accum_type = float;
  static constexpr std::string_view name = "bf16";
  static constexpr bool is_quantized = false;
};

template <>
struct precision_traits<precision::int8> {
  /// Activations are stored as float32: every product quantizes its input with the calibrated scale as it stages
  /// it, and dequantizes its int32 sums in the epilogue, where a norm, GELU or residual follows in float.
  using storage_type = float;
  using compute_type = float;
  using product_type = std::int8_t;
  using accum_type = std::int32_t;
  static constexpr std::string_view name = "int8";
  /// Scales are run-time values (per tensor or per channel, from calibration), never template parameters.
  static constexpr bool is_quantized = true;
};

template <class P>
using storage_t = typename precision_traits<P>::storage_type;

/// Converts any storage type to float32 (exact for every supported type).
template <class T>
inline float to_float(T v) {
  return static_cast<float>(v);
}
/// bfloat16 is the high half of a float32: the same bits as Eigen's conversion, as a shift compilers vectorise
/// (Eigen's writes 16 bits into a float through a pointer, which keeps loops over it scalar).
inline float to_float(Eigen::bfloat16 v) {
  return std::bit_cast<float>(std::uint32_t{Eigen::numext::bit_cast<std::uint16_t>(v)} << 16);
}

/// Rounds a float32 to a storage type (round-to-nearest-even for fp16/bf16).
template <class T>
inline T from_float(float v) {
  return static_cast<T>(v);
}

}  // namespace swinfer

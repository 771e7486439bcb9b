// swinfer: the int8 scheme's arithmetic (docs/int8.md), shared by every backend and the naive references:
// symmetric per-tensor activation scales from calibration (or taken from each input, dynamic), symmetric
// per-output-channel weight scales, int32 accumulation, float epilogue.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "swinfer/core/error.hpp"
#include "swinfer/core/tensor.hpp"

namespace swinfer::ops {

/// Activation range: q = clamp(round_half_even(x / scale), -128, 127) (PyTorch's qint8 rounding and range).
inline constexpr int activation_min = -128, activation_max = 127;
/// Weight range: symmetric, so a per-channel scale maps max|w| to 127 and -max|w| to -127.
inline constexpr int weight_max = 127;
/// The zero point that turns an int8 activation into the uint8 operand of u8 x s8 dot products (vpdpbusd).
inline constexpr int activation_zero_point = 128;

/// x / scale rounded half to even and clamped to the activation range; `inverse_scale` is 1 / scale.
inline int quantize_activation(float x, float inverse_scale) {
  const float q = std::nearbyint(x * inverse_scale);
  return static_cast<int>(std::clamp(q, float(activation_min), float(activation_max)));
}

/// The dynamic activation scale for values whose largest magnitude is `largest`: largest / 127, so it maps to +-127
/// and nothing clips; 1 where every value is zero.
inline float dynamic_scale_of_largest(float largest) { return largest > 0 ? largest / activation_max : 1.0f; }

/// max |x[i]| over `n` values (0 when n is 0; a NaN is skipped, as std::max skips it). Written as 16 independent
/// maxima, which compilers vectorise: a single running max stays scalar (its NaN and signed-zero rules), several
/// times slower over a convolution's whole input.
template <class T>
float largest_magnitude(const T* x, std::int64_t n) {
  constexpr int lanes = 16;
  float lane_max[lanes] = {};
  std::int64_t i = 0;
  for (; i + lanes <= n; i += lanes)
    for (int k = 0; k < lanes; ++k) {
      const float v = std::fabs(static_cast<float>(x[i + k]));
      lane_max[k] = lane_max[k] < v ? v : lane_max[k];
    }
  float largest = 0;
  for (; i < n; ++i) largest = std::max(largest, std::fabs(static_cast<float>(x[i])));
  for (const float m : lane_max) largest = std::max(largest, m);
  return largest;
}

/// The dynamic activation scale of `n` values (a linear's input row under --int8-dynamic).
template <class T>
float dynamic_activation_scale(const T* x, std::int64_t n) {
  return dynamic_scale_of_largest(largest_magnitude(x, n));
}

/// The dynamic activation scale of a whole tensor (a convolution's input under --int8-dynamic).
inline float dynamic_activation_scale(const tensor<float>& x) { return dynamic_activation_scale(x.data(), x.size()); }

/// \brief How a matrix product's input is quantized under precision::int8.
/// `point` names the calibration point (the consuming module's key prefix, e.g. "encoder1.layer.conv1.conv"); it is
/// set for every product so calibration can observe its input. `scale` > 0 quantizes the input to int8 with it;
/// `dynamic` (--int8-dynamic) quantizes it with a scale taken from the input itself: a (transposed) convolution's
/// whole input tensor per forward (so per sliding window: dynamic_activation_scale(tensor)), a linear's each row
/// (token) on its own, as the row is staged (dynamic_activation_scale(row, n)); neither keeps the product in float
/// (float precisions, and a layer calibration left in float).
struct int8_input {
  std::string point;
  float scale = 0;
  bool dynamic = false;

  bool quantized() const { return dynamic || scale > 0; }
  /// The scale that quantizes the whole tensor `x` (a convolution's input).
  float scale_for(const tensor<float>& x) const { return dynamic ? dynamic_activation_scale(x) : scale; }
  /// The scale that quantizes a linear's input row of `n` values.
  float row_scale(const float* row, std::int64_t n) const { return dynamic ? dynamic_activation_scale(row, n) : scale; }
  /// A scale must be positive and finite; zero is "not quantized" (or dynamic) and nothing else is accepted.
  void check() const {
    if (!(scale >= 0) || !std::isfinite(scale)) {
      detail::fail("int8 calibration point '", point, "': the activation scale must be positive and finite, got ",
                   scale);
    }
  }
};

/// Calibration's view of the model: the float32 input of a product at its calibration point (int8_input::point),
/// on the thread that runs the model.
using calibration_observer = std::function<void(const std::string& point, const tensor<float>& input)>;

/// \brief Symmetric per-output-channel int8 weights: w[o][k] ~ values[o][k] * scales[o], scales[o] = max|w[o]| / 127
/// (1 for an all-zero channel, whose values are then all zero).
struct channel_quantized_weights {
  std::vector<std::int8_t> values;  ///< (channels, per_channel)
  std::vector<float> scales;        ///< (channels)

  /// Quantizes `channels` rows of `per_channel` floats, weight(o, k) being element k of channel o's row (any order
  /// the weight is stored in: a Conv3d's (cout, ...), a ConvTranspose3d's (cin, cout, ...)).
  template <class Weight>
  static channel_quantized_weights quantize(std::int64_t channels, std::int64_t per_channel, Weight&& weight) {
    channel_quantized_weights q;
    q.values.resize(static_cast<std::size_t>(channels * per_channel));
    q.scales.resize(static_cast<std::size_t>(channels));
    for (std::int64_t o = 0; o < channels; ++o) {
      float max_abs = 0;
      for (std::int64_t k = 0; k < per_channel; ++k) max_abs = std::max(max_abs, std::fabs(float{weight(o, k)}));
      const float scale = max_abs > 0 ? max_abs / weight_max : 1.0f;
      const float inverse = 1.0f / scale;  // multiplied, not divided: the same float as PyTorch's fake quantization
      q.scales[static_cast<std::size_t>(o)] = scale;
      for (std::int64_t k = 0; k < per_channel; ++k) {
        const float v = std::clamp(std::nearbyint(float{weight(o, k)} * inverse), float(-weight_max), float(weight_max));
        q.values[static_cast<std::size_t>(o * per_channel + k)] = static_cast<std::int8_t>(v);
      }
    }
    return q;
  }
  /// Channel `o`'s row starting at w + o * per_channel (weights stored output channel first: Conv3d, Linear).
  static channel_quantized_weights quantize(const float* w, std::int64_t channels, std::int64_t per_channel) {
    return quantize(channels, per_channel, [&](std::int64_t o, std::int64_t k) { return w[o * per_channel + k]; });
  }
  std::int8_t at(std::int64_t channel, std::int64_t k, std::int64_t per_channel) const {
    return values[static_cast<std::size_t>(channel * per_channel + k)];
  }
};

/// \brief The naive references' int8 matrix-vector step: out[o] = s_x * s_w[o] * sum_k q_w[o][k] q_x[k], the sum
/// exact (int64), for a row of `in` floats quantized with the input's scale (the row's own with dynamic scales) and
/// weights quantized per output.
class reference_int8_product {
 public:
  reference_int8_product(const int8_input& input, const float* weight, std::int64_t out, std::int64_t in)
      : input_(input), in_(in), out_(out), weights_(channel_quantized_weights::quantize(weight, out, in)),
        row_(static_cast<std::size_t>(in)) {}

  /// The products of one row x (in floats) with every output channel, in double (before bias).
  void run(const float* x, double* out) {
    const float scale = input_.row_scale(x, in_), inverse = 1.0f / scale;
    for (std::int64_t k = 0; k < in_; ++k) row_[static_cast<std::size_t>(k)] = quantize_activation(x[k], inverse);
    for (std::int64_t o = 0; o < out_; ++o) {
      std::int64_t acc = 0;
      for (std::int64_t k = 0; k < in_; ++k) acc += std::int64_t{weights_.at(o, k, in_)} * row_[static_cast<std::size_t>(k)];
      out[o] = static_cast<double>(acc) * (double{scale} * weights_.scales[static_cast<std::size_t>(o)]);
    }
  }

 private:
  int8_input input_;
  std::int64_t in_, out_;
  channel_quantized_weights weights_;
  std::vector<int> row_;
};

}  // namespace swinfer::ops

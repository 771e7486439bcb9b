// swinfer: 3-D convolution (patch embedding, 3x3x3 and 1x1x1 UNet convs, output head) and its naive reference.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "swinfer/core/error.hpp"
#include "swinfer/core/tensor.hpp"
#include "swinfer/ops/quantization.hpp"

namespace swinfer::ops {

/// \brief A 3-D convolution: weight (cout, cin, kd, kh, kw) as PyTorch stores it, zero padding, optional bias.
struct conv3d_problem {
  int cin = 0, cout = 0;
  std::array<int, 3> kernel{3, 3, 3};
  std::array<int, 3> stride{1, 1, 1};
  std::array<int, 3> pad{1, 1, 1};
  bool bias = false;
  /// Under precision::int8: the input's calibration point and scale (int8 products), or float (scale 0).
  int8_input int8;

  std::int64_t weight_count() const { return std::int64_t{cout} * cin * kernel[0] * kernel[1] * kernel[2]; }

  /// Whether an op can be built for this problem: positive channel counts, kernel and stride, non-negative
  /// padding, a weight, and bias values when the problem has a bias. Throws swinfer::error naming what is wrong.
  void check_parameters(const float* weight, const float* bias_values) const {
    if (cin <= 0 || cout <= 0) detail::fail("conv3d needs positive channel counts, got ", cin, " -> ", cout);
    for (int a = 0; a < 3; ++a) {
      if (kernel[a] <= 0 || stride[a] <= 0 || pad[a] < 0) {
        detail::fail("conv3d: invalid kernel/stride/pad (", kernel[0], "x", kernel[1], "x", kernel[2], ", stride ",
                     stride[0], "x", stride[1], "x", stride[2], ", pad ", pad[0], "x", pad[1], "x", pad[2],
                     "): kernel and stride must be positive, pad not negative");
      }
    }
    if (!weight) detail::fail("conv3d: null weight");
    if (bias && !bias_values) detail::fail("conv3d: the problem has a bias but no bias values were given");
    int8.check();
  }

  /// Output shape for an input shape; a channel mismatch or an empty output is an error naming both.
  shape5 output_shape(const shape5& in) const {
    if (in.c != cin) detail::fail("conv3d expects ", cin, " input channels, got input of shape ", in.str());
    const std::array<std::int64_t, 3> sp{in.d, in.h, in.w};
    std::array<std::int64_t, 3> o{};
    for (int a = 0; a < 3; ++a) {
      o[a] = (sp[a] + 2 * pad[a] - kernel[a]) / stride[a] + 1;
      if (o[a] <= 0) detail::fail("conv3d input ", in.str(), " is smaller than its kernel");
    }
    return {in.n, cout, o[0], o[1], o[2]};
  }

  /// Whether the op runs from an input of shape `in` into an output of shape `out` (output_shape(in)).
  void check(const shape5& in, const shape5& out) const {
    const shape5 os = output_shape(in);
    if (!(out == os)) detail::fail("conv3d output shape ", out.str(), " should be ", os.str());
  }

  /// The same for a convolution of concat_channels(first, second) read where the two parts are: they must share
  /// N, D, H and W, and their channels add up to cin.
  void check(const shape5& first, const shape5& second, const shape5& out) const {
    if (second.n != first.n || second.d != first.d || second.h != first.h || second.w != first.w) {
      detail::fail("conv3d: the two inputs ", first.str(), " and ", second.str(), " differ beyond their channels");
    }
    shape5 joined = first;
    joined.c += second.c;
    check(joined, out);
  }
};

namespace ref {

/// Naive direct convolution, double accumulation. Any layouts (it indexes through the strides). A quantized
/// problem (p.int8) quantizes the input per tensor (its calibrated or dynamic scale) and the weights per output
/// channel, sums the integer products exactly and scales the sum back (the int8 scheme, docs/int8.md).
inline void conv3d(const conv3d_problem& p, const tensor<float>& in, const float* weight, const float* bias,
                   tensor<float>& out) {
  p.check(in.shape(), out.shape());
  const shape5& os = out.shape();
  const auto& is = in.shape();
  const auto [kd, kh, kw] = p.kernel;
  const std::int64_t per_channel = std::int64_t{is.c} * kd * kh * kw;
  const bool quantized = p.int8.quantized();
  const auto qw = quantized ? channel_quantized_weights::quantize(weight, os.c, per_channel)
                            : channel_quantized_weights{};
  const float scale = quantized ? p.int8.scale_for(in) : 0.0f;
  const float inverse_scale = quantized ? 1.0f / scale : 0.0f;
  // The input's int8 values, taken once (calibration runs this reference on every product it measures).
  const auto input = in.view();
  std::vector<int> q;
  if (quantized) {
    q.resize(static_cast<std::size_t>(in.size()));
    for (std::int64_t i = 0; i < in.size(); ++i) {
      q[static_cast<std::size_t>(i)] = quantize_activation(in.data()[i], inverse_scale);
    }
  }
  for (std::int64_t n = 0; n < os.n; ++n)
    for (std::int64_t co = 0; co < os.c; ++co)
      for (std::int64_t z = 0; z < os.d; ++z)
        for (std::int64_t y = 0; y < os.h; ++y)
          for (std::int64_t x = 0; x < os.w; ++x) {
            double acc = 0.0;  // integer products are exact in double for any realistic depth
            for (std::int64_t ci = 0; ci < is.c; ++ci)
              for (int a = 0; a < kd; ++a)
                for (int b = 0; b < kh; ++b)
                  for (int c = 0; c < kw; ++c) {
                    const std::int64_t iz = z * p.stride[0] - p.pad[0] + a;
                    const std::int64_t iy = y * p.stride[1] - p.pad[1] + b;
                    const std::int64_t ix = x * p.stride[2] - p.pad[2] + c;
                    if (iz < 0 || iy < 0 || ix < 0 || iz >= is.d || iy >= is.h || ix >= is.w) continue;
                    const std::int64_t k = ((ci * kd + a) * kh + b) * kw + c;
                    const std::int64_t at = input.offset(n, ci, iz, iy, ix);
                    acc += quantized ? static_cast<double>(qw.at(co, k, per_channel)) * q[static_cast<std::size_t>(at)]
                                     : double{weight[co * per_channel + k]} * in.data()[at];
                  }
            if (quantized) acc *= double{scale} * qw.scales[static_cast<std::size_t>(co)];
            out(n, co, z, y, x) = static_cast<float>(acc + (bias ? bias[co] : 0.0));
          }
}

}  // namespace ref
}  // namespace swinfer::ops

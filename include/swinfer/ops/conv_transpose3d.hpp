// swinfer: the kernel-2, stride-2 transposed convolution of the UNETR up-blocks, and its naive reference.
#pragma once

#include <cstdint>

#include "swinfer/core/error.hpp"
#include "swinfer/core/tensor.hpp"
#include "swinfer/ops/quantization.hpp"

namespace swinfer::ops {

/// \brief A k2s2 transposed convolution (no bias, no padding): weight (cin, cout, 2, 2, 2) as PyTorch stores it.
struct conv_transpose3d_problem {
  int cin = 0, cout = 0;
  /// Under precision::int8: the input's calibration point and scale, or dynamic scales (int8 products), or float.
  int8_input int8;

  std::int64_t weight_count() const { return std::int64_t{cin} * cout * 8; }

  /// Output shape for an input shape: spatial extents double; a channel mismatch is an error naming both.
  shape5 output_shape(const shape5& in) const {
    if (in.c != cin) detail::fail("conv_transpose3d expects ", cin, " input channels, got ", in.str());
    return {in.n, cout, 2 * in.d, 2 * in.h, 2 * in.w};
  }

  /// Whether an op can be built for this problem: positive channel counts and a weight.
  void check_parameters(const float* weight) const {
    if (cin <= 0 || cout <= 0) detail::fail("conv_transpose3d needs positive channel counts, got ", cin, " -> ", cout);
    if (!weight) detail::fail("conv_transpose3d: null weight");
    int8.check();
  }

  /// Whether the op runs from an input of shape `in` into an output of shape `out` (output_shape(in)).
  void check(const shape5& in, const shape5& out) const {
    const shape5 os = output_shape(in);
    if (!(out == os)) detail::fail("conv_transpose3d output shape ", out.str(), " should be ", os.str());
  }
};

/// The int8 scheme's weights of a transposed convolution (weight (cin, cout, 2, 2, 2)): one scale per output
/// channel over its cin x 8 values, value (o, i * 8 + offset) with offset = a*4 + b*2 + c.
inline channel_quantized_weights quantized_transposed_weights(const conv_transpose3d_problem& p, const float* weight) {
  const std::int64_t cout = p.cout;
  return channel_quantized_weights::quantize(cout, std::int64_t{p.cin} * 8, [&](std::int64_t o, std::int64_t k) {
    return weight[((k / 8) * cout + o) * 8 + k % 8];
  });
}

/// Output shape of a k2s2 transposed convolution from cin to cout channels.
inline shape5 conv_transpose3d_output_shape(const shape5& in, int cin, int cout) {
  return conv_transpose3d_problem{cin, cout}.output_shape(in);
}

namespace ref {

/// out[o, 2z+a, 2y+b, 2x+c] = sum_i in[i, z, y, x] * W[i, o, a, b, c]; weight (cin, cout, 2, 2, 2). A quantized
/// problem (p.int8) quantizes the input per tensor and the weights per output channel (over cin and the 8 offsets),
/// sums the integer products exactly and scales the sum back (docs/int8.md).
inline void conv_transpose3d(const conv_transpose3d_problem& p, const tensor<float>& in, const float* weight,
                             tensor<float>& out) {
  p.check(in.shape(), out.shape());
  const auto& s = in.shape();
  const shape5& os = out.shape();
  const std::int64_t cout = p.cout, per_channel = std::int64_t{p.cin} * 8;
  const bool quantized = p.int8.quantized();
  const auto qw = quantized ? quantized_transposed_weights(p, weight) : channel_quantized_weights{};
  const float scale = quantized ? p.int8.scale_for(in) : 0.0f, inverse_scale = quantized ? 1.0f / scale : 0.0f;
  for (std::int64_t n = 0; n < s.n; ++n)
    for (std::int64_t o = 0; o < cout; ++o)
      for (std::int64_t z = 0; z < os.d; ++z)
        for (std::int64_t y = 0; y < os.h; ++y)
          for (std::int64_t x = 0; x < os.w; ++x) {
            double acc = 0;  // integer products are exact in double for any realistic depth
            const int offset = (z & 1) * 4 + (y & 1) * 2 + (x & 1);
            for (std::int64_t i = 0; i < s.c; ++i) {
              const float v = in(n, i, z >> 1, y >> 1, x >> 1);
              acc += quantized ? double(qw.at(o, i * 8 + offset, per_channel)) * quantize_activation(v, inverse_scale)
                               : double{weight[(i * cout + o) * 8 + offset]} * v;
            }
            if (quantized) acc *= double{scale} * qw.scales[static_cast<std::size_t>(o)];
            out(n, o, z, y, x) = static_cast<float>(acc);
          }
}

}  // namespace ref
}  // namespace swinfer::ops

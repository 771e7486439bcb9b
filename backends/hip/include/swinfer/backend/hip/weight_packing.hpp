// swinfer hip backend: PyTorch weights packed once, on the host, as the rows the GEMM kernels read (then uploaded in
// the storage type by context::upload_weights).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "swinfer/ops/conv3d.hpp"
#include "swinfer/ops/conv_transpose3d.hpp"
#include "swinfer/ops/quantization.hpp"

namespace swinfer::hip {

/// (cout, K) packing of a PyTorch conv weight (cout, cin, kd, kh, kw): the GEMM's B rows, column
/// k = ((a*kh + b)*kw + c)*cin + ci (taps outside, channels inside, as the implicit GEMM's A columns).
inline std::vector<float> pack_conv3d_weight(const ops::conv3d_problem& p, const float* w) {
  const int kd = p.kernel[0], kh = p.kernel[1], kw = p.kernel[2];
  const auto k_total = static_cast<std::size_t>(kd) * kh * kw * p.cin;
  std::vector<float> packed(static_cast<std::size_t>(p.weight_count()));
  for (int co = 0; co < p.cout; ++co)
    for (int ci = 0; ci < p.cin; ++ci)
      for (int a = 0; a < kd; ++a)
        for (int b = 0; b < kh; ++b)
          for (int c = 0; c < kw; ++c) {
            const std::size_t k = static_cast<std::size_t>(((a * kh + b) * kw + c) * p.cin + ci);
            packed[co * k_total + k] = w[(((static_cast<std::size_t>(co) * p.cin + ci) * kd + a) * kh + b) * kw + c];
          }
  return packed;
}

/// (8*cout, cin) packing of a PyTorch transposed-conv weight (cin, cout, 2, 2, 2): row (a*4+b*2+c)*cout+o.
inline std::vector<float> pack_conv_transpose3d_weight(int cin, int cout, const float* w) {
  std::vector<float> packed(static_cast<std::size_t>(cin) * 8 * cout);
  for (int i = 0; i < cin; ++i)
    for (int o = 0; o < cout; ++o)
      for (int s = 0; s < 8; ++s)
        packed[(static_cast<std::size_t>(s) * cout + o) * cin + i] =
            w[(static_cast<std::size_t>(i) * cout + o) * 8 + s];
  return packed;
}

/// A PyTorch linear weight (out, in) is already the GEMM's (N, K) rows: copied as it is.
inline std::vector<float> pack_linear_weight(int in, int out, const float* w) {
  return std::vector<float>(w, w + static_cast<std::size_t>(in) * out);
}

/// The int8 form of a GEMM's (N, K) weight rows (precision::int8, docs/int8.md): the values, and each row's scale.
struct int8_rows {
  std::vector<std::int8_t> values;  ///< (N, K)
  std::vector<float> scales;        ///< (N)
};

/// Packed rows quantized one scale per row: each row is one output channel (conv3d) or feature (linear).
inline int8_rows quantize_rows(const std::vector<float>& packed, std::int64_t rows) {
  const auto per_row = static_cast<std::int64_t>(packed.size()) / rows;
  auto q = ops::channel_quantized_weights::quantize(packed.data(), rows, per_row);
  return {std::move(q.values), std::move(q.scales)};
}

/// The transposed convolution's rows (pack_conv_transpose3d_weight's order) in int8: one scale per output
/// channel over its cin x 8 weights (ops::quantized_transposed_weights, as every backend), repeated on the
/// channel's 8 rows.
inline int8_rows pack_conv_transpose3d_int8(const ops::conv_transpose3d_problem& p, const float* w) {
  const ops::channel_quantized_weights q = ops::quantized_transposed_weights(p, w);
  const std::int64_t cin = p.cin, cout = p.cout;
  int8_rows r{std::vector<std::int8_t>(static_cast<std::size_t>(cin * 8 * cout)),
              std::vector<float>(static_cast<std::size_t>(8 * cout))};
  for (std::int64_t s = 0; s < 8; ++s)
    for (std::int64_t o = 0; o < cout; ++o) {
      r.scales[static_cast<std::size_t>(s * cout + o)] = q.scales[static_cast<std::size_t>(o)];
      for (std::int64_t i = 0; i < cin; ++i) {
        r.values[static_cast<std::size_t>((s * cout + o) * cin + i)] = q.at(o, i * 8 + s, cin * 8);
      }
    }
  return r;
}

}  // namespace swinfer::hip

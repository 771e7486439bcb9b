// swinfer cpu backend: the int8 form of a product whose left operand is float32 rows in memory (docs/int8.md): the
// linears, the window attention's qkv and proj, each offset of a transposed convolution. The rows are quantized to
// uint8 (int8 + zero point 128) as they are staged, the weights are int8 packed once in quads (int8_dot.hpp), and
// each column group's exact int32 sums become floats in the tile: (sum - 128 x weight sum) x s_x x s_w[o] + bias[o].
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "swinfer/backend/cpu/gemm.hpp"
#include "swinfer/backend/cpu/int8_dot.hpp"
#include "swinfer/ops/quantization.hpp"

namespace swinfer::cpu {

/// \brief B (depth x cols) in int8 for rows quantized with one activation scale; empty (no groups) for a product
/// that stays in float.
class quantized_matrix {
 public:
  quantized_matrix() = default;
  /// `weights` holds each column's int8 values and scale, column o's depth k at weights.at(o, k, depth) unless
  /// `element(k, o)` says where (a transposed convolution's offsets share one scale per output channel).
  template <class Element>
  quantized_matrix(const ops::int8_input& input, std::int64_t depth, std::int64_t cols,
                   const ops::channel_quantized_weights& weights, Element&& element)
      : packed_(1, depth, cols, element), depth_(depth), weight_scales_(weights.scales) {
    scales_.assign(static_cast<std::size_t>(round_up(cols, group_width)), 0.0f);
    if (!input.dynamic) set_input_scale(input.scale);
  }
  /// A Linear's (out, in) weight: one scale per output feature.
  quantized_matrix(const ops::int8_input& input, const float* weight, std::int64_t in, std::int64_t out)
      : quantized_matrix(input, in, out, ops::channel_quantized_weights::quantize(weight, out, in)) {}

  bool empty() const { return packed_.layout().groups() == 0; }
  /// The activation scale the rows are quantized with: the calibrated one (set at construction), or with dynamic
  /// scales each input's, set before its rows are staged.
  void set_input_scale(float scale) {
    inverse_scale_ = 1.0f / scale;
    for (std::size_t o = 0; o < weight_scales_.size(); ++o) scales_[o] = scale * weight_scales_[o];
  }
  /// 1 / the activation scale.
  float inverse_scale() const { return inverse_scale_; }
  /// The int8 kernel its products run on.
  int8_dot::int8_path path() const { return packed_.path(); }
  /// Groups and widths as the float32 panels of the same product have them.
  const panel_layout& layout() const { return packed_.layout(); }
  /// The product's depth (the rows' length).
  std::int64_t depth() const { return depth_; }
  /// Bytes between staged rows: the depth in whole quads.
  std::int64_t staged_stride() const { return packed_.quads_per_segment() * int8_dot::quad; }

  /// Floats of scratch that staging `rows` rows takes: whole micro tiles of rows, staged_stride() bytes each.
  std::int64_t staged_floats(std::int64_t rows) const {
    return (round_up(rows, max_micro_rows) * staged_stride() + 3) / 4;
  }
  /// Quantizes rows [0, rows) of x (row r at x + r * ld, depth values) into `staged`; the quads' padding and the
  /// slack rows up to a whole micro tile hold the zero point, so every sum is finite (the slack's are unused).
  template <class S>
  void stage(const S* x, std::int64_t rows, std::int64_t ld, std::uint8_t* staged) const {
    const std::int64_t stride = staged_stride();
    const auto zero = static_cast<std::uint8_t>(ops::activation_zero_point);
    for (std::int64_t r = 0; r < rows; ++r) {
      int8_dot::quantize_run(x + r * ld, staged + r * stride, depth_, inverse_scale_);
      std::fill(staged + r * stride + depth_, staged + (r + 1) * stride, zero);
    }
    std::fill(staged + rows * stride, staged + round_up(rows, max_micro_rows) * stride, zero);
  }

  /// Column group g over uint8 rows [0, rows) `stride` bytes apart (stage()'s, or any whose bytes past the depth
  /// are readable up to whole quads and whole micro tiles of rows): c[r][0, group_cols) = the dequantized sums
  /// (+ bias[col] when `bias` is not null, indexed from the group's first column); C rows ldc floats apart, with
  /// the same slack rows.
  void product(const std::uint8_t* staged, std::int64_t stride, std::int64_t rows, int g, const float* bias, float* c,
               std::int64_t ldc) const {
    const panel_layout& l = packed_.layout();
    const std::int64_t padded = round_up(rows, max_micro_rows), col0 = l.group_col0(g);
    int8_dot::gemm_group(&staged, 1, stride, padded, packed_, g, reinterpret_cast<std::int32_t*>(c), ldc);
    int8_dot::dequantize_tile(c, padded, l.group_cols(g), ldc, packed_.compensation() + col0, scales_.data() + col0,
                              bias);
  }

 private:
  quantized_matrix(const ops::int8_input& input, std::int64_t in, std::int64_t out,
                   const ops::channel_quantized_weights& q)
      : quantized_matrix(input, in, out, q, [&](std::int64_t k, std::int64_t o) { return q.at(o, k, in); }) {}

  int8_dot::packed_quads packed_;
  std::int64_t depth_ = 0;
  std::vector<float> weight_scales_;  ///< per column: s_w[o]
  float inverse_scale_ = 0;
  std::vector<float> scales_;  ///< per column: s_x * s_w[o], zero padded to whole groups
};

}  // namespace swinfer::cpu

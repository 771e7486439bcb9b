// swinfer cpu backend: the int8 form of a product whose left operand is float32 rows in memory (docs/int8.md): the
// linears, the window attention's qkv and proj, each offset of a transposed convolution. The rows are quantized to
// uint8 (int8 + zero point 128) as they are staged, the weights are int8 packed once in quads (int8_dot.hpp), and
// each column group's exact int32 sums become floats in the tile: (sum - 128 x weight sum) x s_x x s_w[o] + bias[o],
// s_x the calibrated scale, the input tensor's (a transposed convolution's dynamic one) or each row's own (a linear's
// dynamic one, taken as the row is staged and kept after the staged rows).
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <type_traits>
#include <vector>

#include "swinfer/backend/cpu/gemm.hpp"
#include "swinfer/backend/cpu/int8_dot.hpp"
#include "swinfer/ops/quantization.hpp"

namespace swinfer::cpu {

/// \brief B (depth x cols) in int8 for rows quantized with one activation scale, or each with its own (a Linear's
/// dynamic scales); empty (no groups) for a product that stays in float.
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
  /// A Linear's (out, in) weight: one scale per output feature; dynamic scales are each row's.
  quantized_matrix(const ops::int8_input& input, const float* weight, std::int64_t in, std::int64_t out)
      : quantized_matrix(input, in, out, ops::channel_quantized_weights::quantize(weight, out, in)) {
    if (input.dynamic) {
      row_scales_ = true;
      set_input_scale(1.0f);  // the columns' factors are s_w[o]; each row's s_x joins them in product()
    }
  }

  bool empty() const { return packed_.layout().groups() == 0; }
  /// The activation scale the rows are quantized with: the calibrated one (set at construction), or with a
  /// transposed convolution's dynamic scales each input's, set before its rows are staged.
  void set_input_scale(float scale) {
    inverse_scale_ = 1.0f / scale;
    for (std::size_t o = 0; o < weight_scales_.size(); ++o) scales_[o] = scale * weight_scales_[o];
  }
  /// 1 / the activation scale.
  float inverse_scale() const { return inverse_scale_; }
  /// The AMX tile configuration its products load (none off the amx path): a loop of products holds it.
  std::optional<amx::tile_shapes> tile_shapes() const { return int8_dot::tile_shapes_for(packed_); }
  /// The int8 kernel its products run on.
  int8_dot::int8_path path() const { return packed_.path(); }
  /// Groups and widths as the float32 panels of the same product have them.
  const panel_layout& layout() const { return packed_.layout(); }
  /// The product's depth (the rows' length).
  std::int64_t depth() const { return depth_; }
  /// Bytes between staged rows: the depth in whole quads.
  std::int64_t staged_stride() const { return packed_.quads_per_segment() * int8_dot::quad; }

  /// Floats of scratch that staging `rows` rows takes: whole micro tiles of rows, staged_stride() bytes each, and
  /// with rows' own scales one float per row after them.
  std::int64_t staged_floats(std::int64_t rows) const {
    const std::int64_t padded = round_up(rows, max_micro_rows);
    return (padded * staged_stride() + 3) / 4 + (row_scales_ ? padded : 0);
  }
  /// Quantizes rows [0, rows) of x (row r at x + r * ld, depth values) into `staged`; the quads' padding and the
  /// slack rows up to a whole micro tile hold the zero point, so every sum is finite (the slack's are unused).
  template <class S>
  void stage(const S* x, std::int64_t rows, std::int64_t ld, std::uint8_t* staged) const {
    const std::int64_t stride = staged_stride(), padded = round_up(rows, max_micro_rows);
    const auto zero = static_cast<std::uint8_t>(ops::activation_zero_point);
    float* scales = row_scales_ ? staged_row_scales(staged, rows) : nullptr;
    for (std::int64_t r = 0; r < rows; ++r) {
      float inverse = inverse_scale_;
      if (scales) {
        scales[r] = ops::dynamic_scale_of_largest(int8_dot::largest_magnitude(x + r * ld, depth_));
        inverse = 1.0f / scales[r];
      }
      int8_dot::quantize_run(x + r * ld, staged + r * stride, depth_, inverse);
      std::fill(staged + r * stride + depth_, staged + (r + 1) * stride, zero);
    }
    std::fill(staged + rows * stride, staged + padded * stride, zero);
    if (scales) std::fill(scales + rows, scales + padded, 1.0f);
  }

  /// Column group g over uint8 rows [0, rows) `stride` bytes apart (stage()'s, or, with one scale for all rows,
  /// any whose bytes past the depth are readable up to whole quads and whole micro tiles of rows): c[r][0,
  /// group_cols) = the dequantized sums (+ bias[col] when `bias` is not null, indexed from the group's first column);
  /// C rows ldc floats apart, with the same slack rows.
  void product(const std::uint8_t* staged, std::int64_t stride, std::int64_t rows, int g, const float* bias, float* c,
               std::int64_t ldc) const {
    const panel_layout& l = packed_.layout();
    const std::int64_t padded = round_up(rows, max_micro_rows), col0 = l.group_col0(g);
    int8_dot::gemm_group(&staged, 1, stride, padded, packed_, g, reinterpret_cast<std::int32_t*>(c), ldc);
    const float* rows_scales = row_scales_ ? staged_row_scales(staged, rows) : nullptr;
    int8_dot::dequantize_tile(c, padded, l.group_cols(g), ldc, packed_.compensation() + col0, scales_.data() + col0,
                              bias, rows_scales);
  }

 private:
  quantized_matrix(const ops::int8_input& input, std::int64_t in, std::int64_t out,
                   const ops::channel_quantized_weights& q)
      : quantized_matrix(input, in, out, q, [&](std::int64_t k, std::int64_t o) { return q.at(o, k, in); }) {}

  /// Where stage() keeps the rows' own scales: after the staged rows.
  template <class Byte, class Float = std::conditional_t<std::is_const_v<Byte>, const float, float>>
  Float* staged_row_scales(Byte* staged, std::int64_t rows) const {
    return reinterpret_cast<Float*>(staged) + (round_up(rows, max_micro_rows) * staged_stride() + 3) / 4;
  }

  int8_dot::packed_quads packed_;
  std::int64_t depth_ = 0;
  std::vector<float> weight_scales_;  ///< per column: s_w[o]
  float inverse_scale_ = 0;
  std::vector<float> scales_;  ///< per column: s_x * s_w[o] (s_w[o] with rows' own scales), zero padded to whole groups
  bool row_scales_ = false;    ///< each row quantized with its own scale (a Linear's dynamic scales)
};

}  // namespace swinfer::cpu

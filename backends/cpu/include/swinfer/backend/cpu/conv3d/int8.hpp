// swinfer cpu conv3d, implementations `int8-amx`, `int8-vnni`, `int8-madd` and `int8-portable`: a quantized problem
// (precision::int8) on the int8 products of int8_dot.hpp, one implementation per product kernel.
#pragma once

#include <cstdint>
#include <string_view>
#include <type_traits>
#include <vector>

#include "swinfer/backend/cpu/conv3d/sweep.hpp"
#include "swinfer/backend/cpu/conv3d/weights.hpp"
#include "swinfer/backend/cpu/int8_dot.hpp"
#include "swinfer/backend/cpu/options.hpp"
#include "swinfer/core/implementation_list.hpp"
#include "swinfer/ops/quantization.hpp"

namespace swinfer::cpu {

/// Planes staged as uint8 (the input quantized with the calibrated scale, or with its own max|x| / 127 when dynamic,
/// zero point 128, so the zero padding stages as 128); weights quantized per output channel and packed once in quads
/// for `Path`; int32 sums, dequantized to float in the tile. The four paths give the same int32 sums bit for bit;
/// the automatic choice takes AMX where its products are deep enough, else VNNI, else madd, else portable.
template <class S, int8_dot::int8_path Path>
class conv3d_int8 {
  static constexpr std::int64_t quads_per_segment(const ops::conv3d_problem& p) {
    return (std::int64_t{p.kernel[2]} * p.cin + int8_dot::quad - 1) / int8_dot::quad;
  }

 public:
  static constexpr conv3d_kernel id = Path == int8_dot::int8_path::amx    ? conv3d_kernel::int8_amx
                                      : Path == int8_dot::int8_path::vnni ? conv3d_kernel::int8_vnni
                                      : Path == int8_dot::int8_path::madd ? conv3d_kernel::int8_madd
                                                                           : conv3d_kernel::int8_portable;
  static constexpr std::string_view name = Path == int8_dot::int8_path::amx    ? "int8-amx"
                                           : Path == int8_dot::int8_path::vnni ? "int8-vnni"
                                           : Path == int8_dot::int8_path::madd ? "int8-madd"
                                                                                : "int8-portable";
  static constexpr bool every_grid = true;
  static constexpr bool records_rows = true;

  static implementable can_implement(const ops::conv3d_problem& p, const context&) {
    if (!p.int8.quantized()) return implementable::no("it runs quantized problems (precision int8) only");
    if (!std::is_same_v<S, float>) return implementable::no("int8 models store float32 activations");
    if (Path == int8_dot::int8_path::amx && !int8_dot::amx_available()) {
      return implementable::no("this build or CPU has no AMX-INT8 tiles");
    }
    if (Path == int8_dot::int8_path::vnni && !int8_dot::vnni_available()) {
      return implementable::no("this build or CPU has no AVX-512 VNNI");
    }
    if (Path == int8_dot::int8_path::madd && !int8_dot::madd_compiled()) {
      return implementable::no("this build has no madd kernel (AVX2 or AVX-512BW)");
    }
    return implementable::yes();
  }
  /// AMX only where a segment's quads fill its tile products deep enough.
  static bool pays(const ops::conv3d_problem& p, const context&, const conv3d_prepared&) {
    if constexpr (Path == int8_dot::int8_path::amx) {
      return amx::int8_chunk(quads_per_segment(p)) >= amx::int8_min_chunk;
    } else {
      return true;
    }
  }
  bool pays(const shape5&) const { return true; }
  bool rounds_weights() const { return false; }
  /// The int8 product kernel's name in reports ("avx2 madd int8", ...).
  const char* product_name() const { return int8_dot::path_name(weights_.path()); }

  conv3d_int8(context&, const conv3d_weights& w) : bias_(w.padded_bias()) {
    const auto& p = w.problem();
    const int kd = p.kernel[0], kh = p.kernel[1], kw = p.kernel[2];
    const std::int64_t cin = p.cin, per_channel = p.weight_count() / p.cout;
    const auto q = ops::channel_quantized_weights::quantize(w.weight(), p.cout, per_channel);
    weights_ = int8_dot::packed_quads(
        kd * kh, kw * cin, p.cout,
        [&](std::int64_t k, std::int64_t co) {
          const std::int64_t ci = k % cin, tap = k / cin;
          const std::int64_t kx = tap % kw, ky = (tap / kw) % kh, kz = tap / (kw * kh);
          return q.at(co, ((ci * kd + kz) * kh + ky) * kw + kx, per_channel);
        },
        Path);
    weight_scales_ = q.scales;
    scales_.assign(bias_.size(), 0.0f);
    if (!p.int8.dynamic) set_input_scale(p.int8.scale);
  }

  void run(context& ctx, const ops::conv3d_problem& p, const conv_input<S>& in, tensor<S>& out,
           const row_moment_records* records) {
    if constexpr (std::is_same_v<S, float>) {
      if (p.int8.dynamic) set_input_scale(ops::dynamic_scale_of_largest(in.largest_magnitude(ctx)));
      const panel_layout& ql = weights_.layout();
      const int taps = p.kernel[0] * p.kernel[1];
      const std::int64_t a_stride = std::int64_t{p.stride[2]} * p.cin, width = out.shape().w;
      const float inverse_scale = 1.0f / input_scale_;
      conv3d_sweep<S>::template run<std::uint8_t>(
          ctx, p, in, out, records, ql.groups(), weights_.group_bytes(), int8_dot::quad,
          int8_dot::tile_shapes_for(weights_), inverse_scale, [&](const std::uint8_t* const* rows, int g, float* tile) {
            int8_dot::gemm_group(rows, taps, a_stride, width, weights_, g, reinterpret_cast<std::int32_t*>(tile),
                                 group_width);
            const std::int64_t col0 = ql.group_col0(g);
            int8_dot::dequantize_tile(tile, width, ql.group_cols(g), group_width, weights_.compensation() + col0,
                                      scales_.data() + col0, p.bias ? bias_.data() + col0 : nullptr);
          });
    }
  }

 private:
  /// The activation scale of the current input: the calibrated one, or (dynamic) the input's own.
  void set_input_scale(float scale) {
    input_scale_ = scale;
    for (std::size_t co = 0; co < weight_scales_.size(); ++co) scales_[co] = scale * weight_scales_[co];
  }

  int8_dot::packed_quads weights_;
  std::vector<float> bias_;           ///< zero padded to whole column groups
  std::vector<float> weight_scales_;  ///< per output channel
  std::vector<float> scales_;         ///< per column: input scale x weight scale, zero padded like bias_
  float input_scale_ = 0;
};

}  // namespace swinfer::cpu

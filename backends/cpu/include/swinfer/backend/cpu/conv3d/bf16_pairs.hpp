// swinfer cpu conv3d, implementation `bf16-pairs`: bf16 storage with rounded weights on the AVX-512 BF16 pair dot
// product.
#pragma once

#include <string_view>
#include <type_traits>
#include <vector>

#include "swinfer/backend/cpu/bf16_dot.hpp"
#include "swinfer/backend/cpu/conv3d/sweep.hpp"
#include "swinfer/backend/cpu/conv3d/weights.hpp"
#include "swinfer/backend/cpu/options.hpp"
#include "swinfer/core/implementation_list.hpp"

namespace swinfer::cpu {

/// Planes staged as bf16; weights rounded to bf16 and packed once in channel pairs (bf16_dot.hpp): twice the float32
/// path's multiply-adds per instruction. It multiplies rounded weights, so it implements bf16_weight_mode::rounded
/// only; the automatic choice takes it on CPUs with vdpbf16ps and no AMX (where AMX is, AMX is faster).
template <class S>
class conv3d_bf16_pairs {
 public:
  static constexpr conv3d_kernel id = conv3d_kernel::bf16_pairs;
  static constexpr std::string_view name = "bf16-pairs";
  static constexpr bool every_grid = true;
  static constexpr bool records_rows = true;

  static implementable can_implement(const ops::conv3d_problem& p, const context& ctx) {
    if (!std::is_same_v<S, Eigen::bfloat16>) return implementable::no("it runs bf16 storage only");
    if (p.int8.quantized()) return implementable::no("the problem is quantized (int8)");
    if (!ctx.round_bf16_weights()) {
      return implementable::no("it multiplies weights rounded to bf16: set bf16_weights = rounded");
    }
#ifdef SWINFER_CPU_AVX512_BF16
    if (!bf16_dot::available()) return implementable::no("this CPU has no AVX512_BF16 (vdpbf16ps)");
    return implementable::yes();
#else
    return implementable::no("this build's kernels have no AVX512_BF16 (compiled without SWINFER_CPU_AVX512_BF16)");
#endif
  }
  static bool pays(const ops::conv3d_problem&, const context&, const conv3d_prepared&) {
#ifdef SWINFER_CPU_AVX512_BF16
    return bf16_dot::pays();
#else
    return false;
#endif
  }
  bool pays(const shape5&) const { return true; }
  bool rounds_weights() const { return true; }

#ifdef SWINFER_CPU_AVX512_BF16
  conv3d_bf16_pairs(context&, const conv3d_weights& w) : bias_(w.padded_bias()) {
    const auto& p = w.problem();
    weights_ = bf16_dot::packed_pairs(p.kernel[0] * p.kernel[1], p.kernel[2] * p.cin, p.cout,
                                      [&](std::int64_t k, std::int64_t co) { return w.element(k, co); });
  }

  void run(context& ctx, const ops::conv3d_problem& p, const conv_input<S>& in, tensor<S>& out,
           const row_moment_records* records) {
    if constexpr (std::is_same_v<S, Eigen::bfloat16>) {
      const panel_layout& pl = weights_.layout();
      const int taps = p.kernel[0] * p.kernel[1];
      const std::int64_t a_stride = std::int64_t{p.stride[2]} * p.cin, width = out.shape().w;
      conv3d_sweep<S>::template run<S>(ctx, p, in, out, records, pl.groups(), pl.group_bytes(), bf16_dot::pair,
                                       std::nullopt, 0.0f, [&](const S* const* rows, int g, float* tile) {
                                         bf16_dot::gemm_group(rows, taps, weights_.pairs_per_segment(), a_stride,
                                                              width, weights_.panel(g), pl.packets(g),
                                                              p.bias ? bias_.data() + pl.group_col0(g) : nullptr,
                                                              tile, group_width);
                                       });
    }
  }
#else
  conv3d_bf16_pairs(context&, const conv3d_weights&) { detail::fail("conv3d: this build has no AVX512_BF16 kernels"); }
  void run(context&, const ops::conv3d_problem&, const conv_input<S>&, tensor<S>&, const row_moment_records*) {}
#endif

 private:
#ifdef SWINFER_CPU_AVX512_BF16
  std::vector<float> bias_;  ///< zero padded to whole column groups
  bf16_dot::packed_pairs weights_;
#endif
};

}  // namespace swinfer::cpu

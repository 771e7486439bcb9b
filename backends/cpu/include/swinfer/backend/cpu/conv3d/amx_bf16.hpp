// swinfer cpu conv3d, implementation `amx-bf16`: bf16 storage on AMX tiles.
#pragma once

#include <string_view>
#include <type_traits>
#include <vector>

#include "swinfer/backend/cpu/amx.hpp"
#include "swinfer/backend/cpu/conv3d/sweep.hpp"
#include "swinfer/backend/cpu/conv3d/weights.hpp"
#include "swinfer/backend/cpu/options.hpp"
#include "swinfer/core/implementation_list.hpp"

namespace swinfer::cpu {

/// Planes staged as bf16 (a copy for channels-last input); weights packed once as hi + lo bf16 AMX tiles (amx.hpp):
/// products exact, or with bf16_weight_mode::rounded as hi alone, one tile product per multiply; float32
/// accumulation. Needs a build with AMX kernels (SWINFER_CPU_AMX) on a CPU whose kernel grants the tile state.
template <class S>
class conv3d_amx_bf16 {
 public:
  static constexpr conv3d_kernel id = conv3d_kernel::amx_bf16;
  static constexpr std::string_view name = "amx-bf16";
  static constexpr bool every_grid = true;
  static constexpr bool records_rows = true;

  static implementable can_implement(const ops::conv3d_problem& p, const context&) {
    if (!std::is_same_v<S, Eigen::bfloat16>) return implementable::no("it runs bf16 storage only");
    if (p.int8.quantized()) return implementable::no("the problem is quantized (int8)");
#ifdef SWINFER_CPU_AMX
    if (!amx::available()) return implementable::no("this CPU (or its kernel) offers no AMX-BF16 tiles");
    return implementable::yes();
#else
    return implementable::no("this build's kernels have no AMX (compiled without SWINFER_CPU_AMX)");
#endif
  }
  static bool pays(const ops::conv3d_problem&, const context&, const conv3d_prepared&) { return true; }
  bool pays(const shape5&) const { return true; }
  bool rounds_weights() const { return rounded_; }

#ifdef SWINFER_CPU_AMX
  conv3d_amx_bf16(context& ctx, const conv3d_weights& w) : rounded_(ctx.round_bf16_weights()) {
    const auto& p = w.problem();
    weights_ = amx::packed_bf16(p.kernel[0] * p.kernel[1], p.kernel[2] * p.cin, p.cout, !rounded_,
                                [&](std::int64_t k, std::int64_t co) { return w.element(k, co); });
    if (p.bias) bias_rows_ = amx::repeated_bias_rows(w.padded_bias());
  }

  void run(context& ctx, const ops::conv3d_problem& p, const conv_input<S>& in, tensor<S>& out,
           const row_moment_records* records) {
    if constexpr (std::is_same_v<S, Eigen::bfloat16>) {
      const int taps = p.kernel[0] * p.kernel[1];
      const std::int64_t a_stride = std::int64_t{p.stride[2]} * p.cin, width = out.shape().w;
      conv3d_sweep<S>::template run<S>(
          ctx, p, in, out, records, weights_.groups(), weights_.group_bytes(), amx::tile_depth, amx::full_tiles(), 0.0f,
          [&](const S* const* rows, int g, float* tile) {
            const amx::tile_scope tiles;  // the sweep's: loads nothing
            amx::gemm_group(rows, taps, a_stride, width, weights_, g,
                            bias_rows_.empty() ? nullptr : bias_rows_.data() + g * amx::tile_rows * group_width, tile,
                            group_width);
          });
    }
  }
#else
  conv3d_amx_bf16(context&, const conv3d_weights&) { detail::fail("conv3d: this build has no AMX kernels"); }
  void run(context&, const ops::conv3d_problem&, const conv_input<S>&, tensor<S>&, const row_moment_records*) {}
#endif

 private:
  bool rounded_ = false;
#ifdef SWINFER_CPU_AMX
  amx::packed_bf16 weights_;
  std::vector<float> bias_rows_;  ///< per group [16][48] repeated bias rows; empty without bias
#endif
};

}  // namespace swinfer::cpu

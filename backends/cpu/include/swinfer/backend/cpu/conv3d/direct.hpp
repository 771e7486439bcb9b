// swinfer cpu conv3d, implementation `direct`: the float32 implicit GEMM over staged input planes, for every
// problem that is not quantized (storage S rounded on store; activations staged as float32).
#pragma once

#include <memory>
#include <string_view>

#include "swinfer/backend/cpu/conv3d/sweep.hpp"
#include "swinfer/backend/cpu/conv3d/weights.hpp"
#include "swinfer/backend/cpu/options.hpp"
#include "swinfer/core/implementation_list.hpp"

namespace swinfer::cpu {

/// Weights packed once as [tap][Cin][48] float32 panels for the register-blocked FMA micro-kernel (gemm.hpp); each
/// output row is [OW x 27Cin] x [27Cin x 48] per column group (conv3d_sweep).
template <class S>
class conv3d_direct {
 public:
  static constexpr conv3d_kernel id = conv3d_kernel::direct;
  static constexpr std::string_view name = "direct";
  static constexpr bool every_grid = true;    ///< runs every output grid
  static constexpr bool records_rows = true;  ///< gathers InstanceNorm moments as it stores rows

  static implementable can_implement(const ops::conv3d_problem& p, const context&) {
    if (p.int8.quantized()) return implementable::no("it multiplies in float32, and the problem is quantized (int8)");
    return implementable::yes();
  }
  static bool pays(const ops::conv3d_problem&, const context&, const conv3d_prepared&) { return true; }
  bool pays(const shape5&) const { return true; }
  bool rounds_weights() const { return false; }

  conv3d_direct(context&, const conv3d_weights& w) : weights_(w.float_panels()), bias_(w.padded_bias()) {}

  void run(context& ctx, const ops::conv3d_problem& p, const conv_input<S>& in, tensor<S>& out,
           const row_moment_records* records) {
    const panel_layout& wl = weights_->layout();
    const int taps = p.kernel[0] * p.kernel[1];
    const std::int64_t run = std::int64_t{p.kernel[2]} * p.cin, a_stride = std::int64_t{p.stride[2]} * p.cin;
    const std::int64_t width = out.shape().w;
    conv3d_sweep<S>::template run<float>(ctx, p, in, out, records, wl.groups(), wl.group_bytes(), 0, std::nullopt,
                                         0.0f, [&](const float* const* rows, int g, float* tile) {
                                           gemm_group({rows, taps, run, a_stride}, width, weights_->panel(g),
                                                      wl.packets(g), p.bias ? bias_.data() + wl.group_col0(g) : nullptr,
                                                      0, tile, group_width);
                                         });
  }

 private:
  std::shared_ptr<const packed_matrix> weights_;
  std::vector<float> bias_;  ///< zero padded to whole column groups
};

}  // namespace swinfer::cpu

// swinfer cpu conv3d, implementation `whole-grid`: small grids with large float32 weights as one GEMM.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "swinfer/backend/cpu/conv3d/sweep.hpp"
#include "swinfer/backend/cpu/conv3d/weights.hpp"
#include "swinfer/backend/cpu/options.hpp"
#include "swinfer/core/implementation_list.hpp"

namespace swinfer::cpu {

/// The float32 path's large weights on small grids (the bottom of the U: 768 -> 768 at 3^3, 768 -> 384 and
/// 384 -> 384 at 6^3): the sweep's work items are output planes, each streaming the whole weight panel (64 MiB at
/// 768 -> 768) once per output row for micro tiles whose 8 rows hold 3 or 6 outputs. Here the whole grid's im2col
/// rows are one A [N * D' * H' * W'][kd * kh * kw * cin] (at most most_floats, zero in the padding), and each column
/// group streams its weights once over every row (one work item per group): fs48's three such convolutions take
/// 38 ms per forward instead of 53 (2-core Zen 4). Shares direct's packed panels.
template <class S>
class conv3d_whole_grid {
 public:
  static constexpr conv3d_kernel id = conv3d_kernel::whole_grid;
  static constexpr std::string_view name = "whole-grid";
  static constexpr bool every_grid = false;  ///< the grids pays(out) accepts; later implementations take the rest
  static constexpr bool records_rows = true;

  static constexpr std::int64_t most_voxels = 512, most_floats = std::int64_t{8} << 20;
  static constexpr std::int64_t least_weight_floats = std::int64_t{1} << 19;  // 2 MiB: past L2

  static implementable can_implement(const ops::conv3d_problem& p, const context&) {
    if (p.int8.quantized()) return implementable::no("it multiplies in float32, and the problem is quantized (int8)");
    return implementable::yes();
  }
  /// Weights past L2, where streaming them once per output row costs more than gathering the grid once.
  static bool pays(const ops::conv3d_problem& p, const context&, const conv3d_prepared&) {
    const std::int64_t depth = std::int64_t{p.kernel[0]} * p.kernel[1] * p.kernel[2] * p.cin;
    return panel_layout{depth, p.cout}.size() >= least_weight_floats;
  }
  bool pays(const shape5& os) const {
    const std::int64_t rows = round_up(os.n * os.spatial(), max_micro_rows);
    return os.spatial() <= most_voxels && rows * weights_->layout().depth <= most_floats;
  }
  bool rounds_weights() const { return false; }

  conv3d_whole_grid(context&, const conv3d_weights& w) : weights_(w.float_panels()), bias_(w.padded_bias()) {}

  void run(context& ctx, const ops::conv3d_problem& p, const conv_input<S>& in, tensor<S>& out,
           const row_moment_records* records) {
    const shape5& is = in.shape();
    const shape5& os = out.shape();
    const std::int64_t depth = weights_->layout().depth, cin = p.cin, outputs = os.n * os.spatial();
    const std::int64_t rows = round_up(outputs, max_micro_rows);
    std::vector<float> a(static_cast<std::size_t>(rows * depth), 0.0f);  // the slack rows stay zero
    ctx.parallel_for(outputs, 1, [&](std::int64_t m0, std::int64_t m1, int) {
      for (std::int64_t m = m0; m < m1; ++m) {
        const std::int64_t ox = m % os.w, oy = (m / os.w) % os.h, oz = (m / (os.w * os.h)) % os.d;
        const std::int64_t n = m / os.spatial();
        float* row = a.data() + m * depth;
        for (int kz = 0; kz < p.kernel[0]; ++kz)
          for (int ky = 0; ky < p.kernel[1]; ++ky)
            for (int kx = 0; kx < p.kernel[2]; ++kx, row += cin) {
              const std::int64_t z = oz * p.stride[0] - p.pad[0] + kz, y = oy * p.stride[1] - p.pad[1] + ky;
              const std::int64_t x = ox * p.stride[2] - p.pad[2] + kx;
              const bool inside = z >= 0 && z < is.d && y >= 0 && y < is.h && x >= 0 && x < is.w;
              if (inside) in.load_run(n, z, y, x, 1, row);
            }
      }
    });
    const panel_layout& wl = weights_->layout();
    ctx.parallel_for(wl.groups(), 1, [&](std::int64_t g0, std::int64_t g1, int worker) {
      float* tile = ctx.workspace(worker).reserve(rows * group_width);
      const float* base = a.data();
      for (auto g = static_cast<int>(g0); g < g1; ++g) {
        const std::int64_t col0 = wl.group_col0(g);
        gemm_group({&base, 1, depth, depth}, outputs, weights_->panel(g), wl.packets(g),
                   p.bias ? bias_.data() + col0 : nullptr, 0, tile, group_width);
        for (std::int64_t n = 0; n < os.n; ++n)
          for (std::int64_t oz = 0; oz < os.d; ++oz)
            for (std::int64_t oy = 0; oy < os.h; ++oy) {
              float* row = tile + ((n * os.d + oz) * os.h + oy) * os.w * group_width;
              conv3d_sweep<S>::store_row(out, n, oz, oy, col0, wl.group_cols(g), row, records);
            }
      }
    });
  }

 private:
  std::shared_ptr<const packed_matrix> weights_;
  std::vector<float> bias_;
};

}  // namespace swinfer::cpu

// swinfer cpu backend: the kernel-2 stride-2 transposed convolution of the UNETR up-blocks.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <type_traits>

#include "swinfer/backend/cpu/context.hpp"
#include "swinfer/backend/cpu/conv3d.hpp"
#include "swinfer/backend/cpu/data_movement.hpp"
#include "swinfer/backend/cpu/dynamic_scale.hpp"
#include "swinfer/backend/cpu/gemm.hpp"
#include "swinfer/backend/cpu/int8_matrix.hpp"
#include "swinfer/backend/cpu/streaming_store.hpp"
#include "swinfer/core/error.hpp"
#include "swinfer/core/precision.hpp"
#include "swinfer/core/tensor.hpp"
#include "swinfer/ops/conv_transpose3d.hpp"

namespace swinfer::cpu {

/// \brief out[o, 2z+a, 2y+b, 2x+c] = sum_i in[i, z, y, x] W[i, o, a, b, c]: input (N, Cin, D, H, W) -> output
/// (N, Cout, 2D, 2H, 2W), either layout, storage S, float32 compute.
///
/// No output voxel gets contributions from two input voxels, so this is 8 independent GEMMs, one per offset
/// (a, b, c): [input row of W voxels x Cin] x [Cin x Cout], scattered to every second output voxel. Weights are
/// packed once per offset: float32, or for a quantized problem (precision::int8) int8 with one scale per output
/// channel over all offsets (int8_matrix.hpp), the input staged as uint8. Threads: work items are (sample, chunk of
/// channel groups, input plane), or blocks of a plane's rows where planes are few (context::rows_per_item); a worker
/// stages its plane channels-last (float32 or uint8) and sweeps its rows.
template <class S>
class conv_transpose3d {
 public:
  conv_transpose3d(context& ctx, const ops::conv_transpose3d_problem& p, const float* weight) : ctx_(ctx), p_(p) {
    p_.check_parameters(weight);
    const std::int64_t cin = p.cin, cout = p.cout;
    // (cin, cout, 2, 2, 2): offset = a*4 + b*2 + c
    const auto at = [&](std::int64_t i, std::int64_t o, int offset) { return weight[(i * cout + o) * 8 + offset]; };
    if (p.int8.quantized()) {
      const auto q = ops::quantized_transposed_weights(p, weight);
      for (int offset = 0; offset < 8; ++offset) {
        int8_[offset] = quantized_matrix(p.int8, cin, cout, q, [&](std::int64_t i, std::int64_t o) {
          return q.at(o, i * 8 + offset, cin * 8);
        });
      }
      return;
    }
    for (int offset = 0; offset < 8; ++offset) {
      weights_[offset] = packed_matrix(cin, cout, [&](std::int64_t i, std::int64_t o) { return at(i, o, offset); });
    }
  }

  /// The instruction path this instance runs: "fp32 fma" or an int8 path (int8_dot::path_name).
  const char* path() const { return int8_[0].empty() ? "fp32 fma" : int8_dot::path_name(int8_[0].path()); }

  void run(const tensor<S>& in, tensor<S>& out) {
    p_.check(in.shape(), out.shape());
    if constexpr (std::is_same_v<S, float>) ctx_.observe_input(p_.int8.point, in);
    const shape5& is = in.shape();
    const auto timed = ctx_.time_op([&] {
      return op_label{"conv_transpose3d 2x2x2",
                      detail::concat("conv_transpose3d 2x2x2 ", p_.cin, "->", p_.cout, " @", grid_name(out.shape())),
                      2.0 * 8 * p_.cin * p_.cout * static_cast<double>(is.n * is.spatial())};
    });
    const std::int64_t cin = p_.cin;
    const bool quantized = !int8_[0].empty();
    if constexpr (std::is_same_v<S, float>) {
      if (p_.int8.dynamic) {
        const float scale = dynamic_input_scale(ctx_, in);
        for (auto& offset : int8_) offset.set_input_scale(scale);
      }
    }
    const float inverse_scale = quantized ? int8_[0].inverse_scale() : 0.0f;
    // A staged row: float32 or uint8 voxels of cin channels, whole micro tiles of them; a quad reads past the last.
    const std::int64_t row_values = round_up(is.w, max_micro_rows) * cin;
    const std::int64_t plane_floats = quantized ? (is.h * row_values + int8_dot::quad + 3) / 4 : is.h * row_values;
    const std::int64_t out_row_floats = round_up(is.w, max_micro_rows) * group_width;

    const panel_layout& wl = quantized ? int8_[0].layout() : weights_[0].layout();
    const int groups = wl.groups();
    const int groups_per_chunk =
        static_cast<int>(std::clamp<std::int64_t>(weight_chunk_bytes / (8 * wl.group_bytes()), 1, groups));
    const std::int64_t chunks = (groups + groups_per_chunk - 1) / groups_per_chunk;
    // A task is a block of an input plane's rows (usually all) for a chunk of column groups.
    const std::int64_t plane_tasks = is.n * chunks * is.d, rows_per_block = ctx_.rows_per_item(plane_tasks, is.h);
    const std::int64_t row_blocks = (is.h + rows_per_block - 1) / rows_per_block;
    const std::int64_t tasks = plane_tasks * row_blocks;

    const std::optional<amx::tile_shapes> tiles = quantized ? int8_[0].tile_shapes() : std::nullopt;
    ctx_.parallel_for(tasks, ctx_.even_grain(tasks), [&](std::int64_t t0, std::int64_t t1, int worker) {
      const amx::optional_tile_scope held(tiles);  // the eight offsets' products share one configuration
      float* plane = ctx_.workspace(worker).reserve(plane_floats + out_row_floats);
      float* out_row = plane + plane_floats;
      std::int64_t staged = -1;
      for (std::int64_t t = t0; t < t1; ++t) {
        const std::int64_t row_block = t % row_blocks, plane_task = t / row_blocks, z = plane_task % is.d;
        const std::int64_t chunk = (plane_task / is.d) % chunks, n = plane_task / (is.d * chunks);
        auto* bytes = reinterpret_cast<std::uint8_t*>(plane);
        if (staged != n * is.d + z) {
          for (std::int64_t y = 0; y < is.h; ++y) {
            if (quantized) {
              quantize_voxel_row(in, n, z, y, bytes + y * row_values, inverse_scale);
            } else {
              load_voxel_row(in, n, z, y, plane + y * row_values);
            }
          }
          staged = n * is.d + z;
        }
        const int g0 = static_cast<int>(chunk) * groups_per_chunk, g1 = std::min(groups, g0 + groups_per_chunk);
        const std::int64_t y1 = std::min(is.h, (row_block + 1) * rows_per_block);
        for (std::int64_t y = row_block * rows_per_block; y < y1; ++y) {
          const float* row = plane + y * row_values;
          const row_segments a{&row, 1, cin, cin};
          for (int offset = 0; offset < 8; ++offset)
            for (int g = g0; g < g1; ++g) {
              if (quantized) {
                int8_[offset].product(bytes + y * row_values, cin, is.w, g, nullptr, out_row, group_width);
              } else {
                gemm_group(a, is.w, weights_[offset].panel(g), wl.packets(g), nullptr, 0, out_row, group_width);
              }
              store_row(out, n, 2 * z + (offset >> 2), 2 * y + ((offset >> 1) & 1), offset & 1, wl.group_col0(g),
                        wl.group_cols(g), out_row);
            }
        }
      }
    });
  }

 private:
  /// Writes channels [col0, col0 + cols) of output voxels (n, oz, oy, 2x + ox) from the tile [W][group_width]
  /// (streamed where the output is large).
  static void store_row(tensor<S>& out, std::int64_t n, std::int64_t oz, std::int64_t oy, int ox, std::int64_t col0,
                        int cols, const float* tile) {
    const shape5& s = out.shape();
    const std::int64_t in_w = s.w / 2;
    if (out.layout() == layout_kind::ndhwc) {
      S* dst = out.data() + (((n * s.d + oz) * s.h + oy) * s.w + ox) * s.c + col0;
      const bool streamed = streams_output<S>(out.size());
      for (std::int64_t x = 0; x < in_w; ++x) store_floats(tile + x * group_width, dst + 2 * x * s.c, cols, streamed);
    } else {
      const std::int64_t plane = s.d * s.h * s.w;
      S* dst = out.data() + (n * s.c + col0) * plane + (oz * s.h + oy) * s.w + ox;
      for (int c = 0; c < cols; ++c, dst += plane)
        for (std::int64_t x = 0; x < in_w; ++x) dst[2 * x] = from_float<S>(tile[x * group_width + c]);
    }
  }

  context& ctx_;
  ops::conv_transpose3d_problem p_;
  std::array<packed_matrix, 8> weights_;
  std::array<quantized_matrix, 8> int8_;  ///< int8 path (a quantized problem); empty otherwise
};

}  // namespace swinfer::cpu

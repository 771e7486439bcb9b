// swinfer cpu conv3d: the implicit-GEMM sweep over staged input planes that the direct, AMX, bf16-pair and int8
// implementations share (each brings its own packed weights and micro-kernel), and the row store they all use.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <type_traits>
#include <vector>

#include "swinfer/backend/cpu/amx.hpp"
#include "swinfer/backend/cpu/context.hpp"
#include "swinfer/backend/cpu/conv_input.hpp"
#include "swinfer/backend/cpu/data_movement.hpp"
#include "swinfer/backend/cpu/gemm.hpp"
#include "swinfer/backend/cpu/instance_norm.hpp"
#include "swinfer/backend/cpu/streaming_store.hpp"
#include "swinfer/core/tensor.hpp"
#include "swinfer/ops/conv3d.hpp"
#include "swinfer/ops/quantization.hpp"

namespace swinfer::cpu {

/// Packed weights of one chunk of column groups should stay in L2 (about half of it) while a plane is swept.
inline constexpr std::int64_t weight_chunk_bytes = std::int64_t{1} << 20;

/// \brief Direct convolution as an implicit GEMM: input (N, Cin, D, H, W) -> output (N, Cout, OD, OH, OW), either
/// layout, storage S, float32 accumulation.
///
/// Each worker keeps a ring of kd zero-padded input planes staged channels-last ([H+2p][W'][Cin], as D: float32,
/// bf16, or uint8 for int8). An output row (n, oz, oy) is then a GEMM whose A rows are the row's output voxels and
/// whose depth is the kd*kh tap rows of the ring, each a contiguous run of kw*Cin values (no im2col copy):
/// [OW x 27Cin] x [27Cin x 48] per column group of 48 output channels, computed by the implementation's
/// product(tap_rows, group, tile) into a float32 row tile [OW][48] and stored (rounded to S, in the output's layout).
/// Threads: work items are (sample, chunk of channel groups, output plane) with the plane fastest, or blocks of a
/// plane's rows where planes are few (context::rows_per_item); each worker takes one contiguous range, so
/// consecutive planes reuse kd-1 staged input planes (and a plane's row blocks all of them).
template <class S>
struct conv3d_sweep {
  /// `slack` extra D values past the last plane are zeroed for products that read past a row's run; each worker
  /// holds the AMX tile configuration `tiles` (if any) over its share; uint8 planes quantize the input with
  /// `inverse_scale` (zero point 128, so the zero padding stages as 128).
  template <class D, class Product>
  static void run(context& ctx, const ops::conv3d_problem& p, const conv_input<S>& in, tensor<S>& out,
                  const row_moment_records* records, int groups, std::int64_t group_bytes, std::int64_t slack,
                  const std::optional<amx::tile_shapes>& tiles, float inverse_scale, Product&& product) {
    const shape5& is = in.shape();
    const shape5& os = out.shape();
    const int kd = p.kernel[0], kh = p.kernel[1], kw = p.kernel[2];
    const int sd = p.stride[0], sh = p.stride[1], sw = p.stride[2];
    const int pd = p.pad[0], ph = p.pad[1], pw = p.pad[2];
    // Staged plane geometry: rows are wide enough for the last row tile's overhang past OW.
    const std::int64_t plane_w = std::max(is.w + 2 * pw, (round_up(os.w, max_micro_rows) - 1) * sw + kw);
    const std::int64_t plane_h = is.h + 2 * ph, row_values = plane_w * is.c, plane_values = plane_h * row_values;
    const std::int64_t ring_floats = round_up((kd * plane_values + slack) * static_cast<std::int64_t>(sizeof(D)), 64) /
                                     static_cast<std::int64_t>(sizeof(float));
    const std::int64_t tile_floats = round_up(os.w, max_micro_rows) * group_width;
    const int groups_per_chunk =
        static_cast<int>(std::clamp<std::int64_t>(weight_chunk_bytes / group_bytes, 1, groups));
    const std::int64_t chunks = (groups + groups_per_chunk - 1) / groups_per_chunk;
    // A task is a block of an output plane's rows (usually all) for a chunk of column groups.
    const std::int64_t plane_tasks = os.n * chunks * os.d, rows_per_block = ctx.rows_per_item(plane_tasks, os.h);
    const std::int64_t row_blocks = (os.h + rows_per_block - 1) / rows_per_block;
    const std::int64_t tasks = plane_tasks * row_blocks, padded_depth = is.d + 2 * pd;

    ctx.parallel_for(tasks, ctx.even_grain(tasks), [&](std::int64_t t0, std::int64_t t1, int worker) {
      const amx::optional_tile_scope held(tiles);
      float* scratch = ctx.workspace(worker).reserve(ring_floats + tile_floats);
      D* ring = reinterpret_cast<D*>(scratch);
      float* tile = scratch + ring_floats;
      std::fill(ring + kd * plane_values, ring + kd * plane_values + slack, D(0));
      std::vector<std::int64_t> staged(static_cast<std::size_t>(kd), -1);  // n * padded_depth + pz per ring slot
      std::vector<const D*> planes(static_cast<std::size_t>(kd)), rows(static_cast<std::size_t>(kd * kh));
      for (std::int64_t t = t0; t < t1; ++t) {
        const std::int64_t row_block = t % row_blocks, plane_task = t / row_blocks, oz = plane_task % os.d;
        const std::int64_t chunk = (plane_task / os.d) % chunks, n = plane_task / (os.d * chunks);
        for (int kz = 0; kz < kd; ++kz) {
          const std::int64_t pz = oz * sd + kz, slot = pz % kd;
          D* plane = ring + slot * plane_values;
          if (staged[slot] != n * padded_depth + pz) {
            stage_plane(in, n, pz - pd, ph, pw, plane_h, row_values, inverse_scale, plane);
            staged[slot] = n * padded_depth + pz;
          }
          planes[kz] = plane;
        }
        const int g0 = static_cast<int>(chunk) * groups_per_chunk, g1 = std::min(groups, g0 + groups_per_chunk);
        const std::int64_t oy1 = std::min(os.h, (row_block + 1) * rows_per_block);
        for (std::int64_t oy = row_block * rows_per_block; oy < oy1; ++oy) {
          for (int kz = 0; kz < kd; ++kz)
            for (int ky = 0; ky < kh; ++ky) rows[kz * kh + ky] = planes[kz] + (oy * sh + ky) * row_values;
          for (int g = g0; g < g1; ++g) {
            product(rows.data(), g, tile);
            const std::int64_t col0 = std::int64_t{g} * group_width;
            store_row(out, n, oz, oy, col0, static_cast<int>(std::min<std::int64_t>(group_width, os.c - col0)), tile,
                      records);
          }
        }
      }
    });
  }

  /// Fills one staged plane (input depth z, possibly in the zero padding) with zeros around the input values
  /// (uint8 planes: the input quantized, and the zero point for zero).
  template <class D>
  static void stage_plane(const conv_input<S>& in, std::int64_t n, std::int64_t z, int ph, int pw,
                          std::int64_t plane_h, std::int64_t row_values, float inverse_scale, D* plane) {
    const shape5& is = in.shape();
    constexpr bool quantizing = std::is_same_v<D, std::uint8_t>;
    const D zero = quantizing ? D(ops::activation_zero_point) : D(0.0f);
    if (z < 0 || z >= is.d) {
      std::fill(plane, plane + plane_h * row_values, zero);
      return;
    }
    const std::int64_t left = std::int64_t{pw} * is.c, body = is.w * is.c;
    for (std::int64_t py = 0; py < plane_h; ++py) {
      D* row = plane + py * row_values;
      const std::int64_t y = py - ph;
      if (y < 0 || y >= is.h) {
        std::fill(row, row + row_values, zero);
        continue;
      }
      std::fill(row, row + left, zero);
      if constexpr (quantizing) {
        in.quantize_row(n, z, y, row + left, inverse_scale);
      } else {
        in.load_row(n, z, y, row + left);
      }
      std::fill(row + left + body, row + row_values, zero);
    }
  }

  /// Writes channels [col0, col0 + cols) of output row (n, oz, oy) from the float tile [OW][group_width]; streamed
  /// where the output is large (a row of all channels, channels-last, is one contiguous run).
  /// With `records` (channels-last), the row's moments too, of the values as stored (the tile rounded to S first).
  static void store_row(tensor<S>& out, std::int64_t n, std::int64_t oz, std::int64_t oy, std::int64_t col0, int cols,
                        float* tile, const row_moment_records* records) {
    const shape5& s = out.shape();
    if (out.layout() == layout_kind::ndhwc) {
      if (records) {
        const std::int64_t row = (n * s.d + oz) * s.h + oy;
        if constexpr (std::is_same_v<S, Eigen::half>) {
          round_like_storage<S>(tile, s.w * group_width);
          records->record<float>(row, tile, group_width, col0, cols);
        } else {
          records->record<S>(row, tile, group_width, col0, cols);
        }
      }
      S* dst = out.data() + (((n * s.d + oz) * s.h + oy) * s.w) * s.c + col0;
      const bool streamed = streams_output<S>(out.size());
      if (cols == s.c && s.c == group_width) {
        store_floats(tile, dst, s.w * s.c, streamed);
        return;
      }
      for (std::int64_t x = 0; x < s.w; ++x)
        store_floats(tile + x * group_width, dst + x * s.c, cols, streamed);
    } else {
      const std::int64_t plane = s.d * s.h * s.w;
      S* dst = out.data() + (n * s.c + col0) * plane + (oz * s.h + oy) * s.w;
      for (int c = 0; c < cols; ++c, dst += plane)
        for (std::int64_t x = 0; x < s.w; ++x) dst[x] = from_float<S>(tile[x * group_width + c]);
    }
  }
};

}  // namespace swinfer::cpu

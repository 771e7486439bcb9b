// swinfer cpu backend: the 3x3x3 stride-1 convolutions by Winograd's minimal filtering F(2x2x2, 3x3x3): 64
// multiplies per 2x2x2 output tile and channel pair instead of 216, on the same register-blocked GEMM.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "swinfer/backend/cpu/context.hpp"
#include "swinfer/backend/cpu/data_movement.hpp"
#include "swinfer/backend/cpu/gemm.hpp"
#include "swinfer/backend/cpu/simd.hpp"
#include "swinfer/core/tensor.hpp"
#include "swinfer/ops/conv3d.hpp"

namespace swinfer::cpu {

namespace winograd {

/// Output tile side, input tile side, and the points of a 3-D tile (one GEMM each).
inline constexpr int out_side = 2, in_side = 4, points = in_side * in_side * in_side;

/// F(2, 3)'s input transform B^T d along one axis (Lavin and Gray): exact up to one rounding per value.
template <class T>
inline void input_1d(T& d0, T& d1, T& d2, T& d3) {
  using namespace Eigen::internal;
  const T v0 = psub(d0, d2), v1 = padd(d1, d2), v2 = psub(d2, d1), v3 = psub(d1, d3);
  d0 = v0, d1 = v1, d2 = v2, d3 = v3;
}

/// F(2, 3)'s output transform A^T m along one axis: y0 = m0 + m1 + m2, y1 = m1 - m2 - m3.
template <class T>
inline void output_1d(const T& m0, const T& m1, const T& m2, const T& m3, T& y0, T& y1) {
  using namespace Eigen::internal;
  y0 = padd(padd(m0, m1), m2);
  y1 = psub(psub(m1, m2), m3);
}

/// F(2, 3)'s filter transform G g along one axis, in double (the weights are transformed once).
inline std::array<double, in_side> filter_1d(double g0, double g1, double g2) {
  return {g0, 0.5 * (g0 + g1 + g2), 0.5 * (g0 - g1 + g2), g2};
}

}  // namespace winograd

/// \brief A 3x3x3, stride 1, padding 1 convolution (the UNet blocks' convs) as Winograd F(2x2x2, 3x3x3): input
/// (N, Cin, D, H, W) -> output (N, Cout, D, H, W), either layout, storage S, float32 compute.
///
/// The output is cut into 2x2x2 tiles, each computed from the 4x4x4 input block around it: V = B^T d B per input
/// channel (3-D, separable), then for each of the 64 points a GEMM M[point] = V[point] [tiles x Cin] x
/// U[point] [Cin x Cout] with the filters transformed once (U = G g G^T, in double, rounded to float32), then
/// y = A^T M A per output channel. 3.4x fewer multiplies than direct convolution; the transforms only add and
/// subtract, so float32 results stay within about twice the direct convolution's rounding (measured on random
/// 48-channel convs: max error 3.4e-7 against 2.4e-7 of max|y|).
/// Threads: a work item is a block of about `item_tiles` tiles (part of a tile row, or several rows of a small
/// grid); a worker stages the item's 4 x 4 input rows channels-last in float32, transforms its tiles into V, runs
/// the 64 GEMMs (V and M stay in its scratch) and writes the output tiles in the output's layout and type.
class conv3d_winograd {
 public:
  /// Tiles per work item: enough GEMM rows to amortise streaming U (64 Cin x Cout panels) once per item, few
  /// enough for the item's V and M to stay in L2.
  static constexpr std::int64_t item_tiles = 16;
  static constexpr int min_channels = 8;
  static constexpr std::int64_t min_grid = 4;
  static constexpr std::int64_t max_filter_bytes = std::int64_t{16} << 20;

  /// Whether this convolution is one Winograd F(2x2x2, 3x3x3) computes: 3x3x3, stride 1, padding 1, float.
  static bool applies(const ops::conv3d_problem& p) {
    return p.kernel == std::array<int, 3>{3, 3, 3} && p.stride == std::array<int, 3>{1, 1, 1} &&
           p.pad == std::array<int, 3>{1, 1, 1} && !p.int8.quantized();
  }

  /// Whether Winograd pays for this problem: enough channels for the GEMMs to outweigh the transforms, and
  /// transformed filters (64 Cin x Cout floats) small enough to stream from cache for every work item.
  static bool pays(const ops::conv3d_problem& p) {
    const std::int64_t filter_bytes = std::int64_t{winograd::points} * p.cin * p.cout * std::int64_t{sizeof(float)};
    return p.cin >= min_channels && p.cout >= min_channels && filter_bytes <= max_filter_bytes;
  }
  /// ... and for this output grid: tiles wide enough for the GEMM rows (smaller grids run direct convolution).
  static bool pays(const shape5& out) { return std::min({out.d, out.h, out.w}) >= min_grid; }

  /// Transforms and packs the weights (cout, cin, 3, 3, 3) and bias (cout or null).
  conv3d_winograd(const ops::conv3d_problem& p, const float* weight, const float* bias) : p_(p) {
    const std::int64_t cin = p.cin, cout = p.cout;
    // u[(co * cin + ci) * 64 + point]: G g G^T per filter, in double, then float32.
    std::vector<float> u(static_cast<std::size_t>(cout * cin * winograd::points));
    for (std::int64_t f = 0; f < cout * cin; ++f) {
      const float* g = weight + f * 27;
      double along_x[3][3][winograd::in_side], along_y[3][winograd::in_side][winograd::in_side];
      for (int z = 0; z < 3; ++z)
        for (int y = 0; y < 3; ++y) {
          const auto t = winograd::filter_1d(g[(z * 3 + y) * 3], g[(z * 3 + y) * 3 + 1], g[(z * 3 + y) * 3 + 2]);
          std::copy(t.begin(), t.end(), along_x[z][y]);
        }
      for (int z = 0; z < 3; ++z)
        for (int x = 0; x < winograd::in_side; ++x) {
          const auto t = winograd::filter_1d(along_x[z][0][x], along_x[z][1][x], along_x[z][2][x]);
          for (int y = 0; y < winograd::in_side; ++y) along_y[z][y][x] = t[static_cast<std::size_t>(y)];
        }
      for (int y = 0; y < winograd::in_side; ++y)
        for (int x = 0; x < winograd::in_side; ++x) {
          const auto t = winograd::filter_1d(along_y[0][y][x], along_y[1][y][x], along_y[2][y][x]);
          for (int z = 0; z < winograd::in_side; ++z)
            u[static_cast<std::size_t>(f * winograd::points + (z * winograd::in_side + y) * winograd::in_side + x)] =
                static_cast<float>(t[static_cast<std::size_t>(z)]);
        }
    }
    filters_.reserve(winograd::points);
    for (int point = 0; point < winograd::points; ++point) {
      filters_.emplace_back(cin, cout, [&](std::int64_t ci, std::int64_t co) {
        return u[static_cast<std::size_t>((co * cin + ci) * winograd::points + point)];
      });
    }
    bias_.assign(static_cast<std::size_t>(round_up(cout, packet_size)), 0.0f);
    if (p.bias && bias) std::copy(bias, bias + cout, bias_.begin());
  }

  template <class S>
  void run(context& ctx, const tensor<S>& in, tensor<S>& out) const {
    const shape5& s = in.shape();
    const std::int64_t cin = p_.cin;
    const std::int64_t tiles_z = (s.d + 1) / 2, tiles_y = (s.h + 1) / 2, tiles_x = (s.w + 1) / 2;
    // A work item is a block of `block_x` tiles along x in each of `block_y` tile rows: part of a row on wide grids,
    // several whole rows on narrow ones, about `item_tiles` tiles either way.
    const std::int64_t blocks_x = (tiles_x + item_tiles - 1) / item_tiles;
    const std::int64_t block_x = (tiles_x + blocks_x - 1) / blocks_x;
    const std::int64_t block_y = std::clamp<std::int64_t>(item_tiles / block_x, 1, tiles_y);
    const std::int64_t blocks_y = (tiles_y + block_y - 1) / block_y;
    const std::int64_t tile_rows = round_up(block_x * block_y, max_micro_rows);
    const panel_layout& fl = filters_[0].layout();
    const std::int64_t ldm = m_columns();
    // Worker scratch, floats: 16 staged input rows of (2 block_x + 2) voxels, V [tile_rows][64][cin] and
    // M [tile_rows][64][ldm]. Tile-major, so that each tile's transforms read and write one contiguous block; the
    // GEMMs read and write their rows 64 points apart.
    const std::int64_t row_floats = (2 * block_x + 2) * cin;
    const std::int64_t staged_floats = winograd::in_side * winograd::in_side * row_floats;
    const std::int64_t tile_floats_in = winograd::points * cin, tile_floats_out = winograd::points * ldm;
    const std::int64_t v_floats = tile_rows * tile_floats_in, m_floats = tile_rows * tile_floats_out;
    const std::int64_t items = s.n * tiles_z * blocks_y * blocks_x;

    ctx.parallel_for(items, 1, [&](std::int64_t i0, std::int64_t i1, int worker) {
      float* staged = ctx.workspace(worker).reserve(staged_floats + v_floats + m_floats);
      float* v = staged + staged_floats;
      float* m = v + v_floats;
      for (std::int64_t item = i0; item < i1; ++item) {
        const std::int64_t bx = item % blocks_x, by = (item / blocks_x) % blocks_y;
        const std::int64_t tz = (item / (blocks_x * blocks_y)) % tiles_z, n = item / (blocks_x * blocks_y * tiles_z);
        const std::int64_t tx0 = bx * block_x, columns = std::min(block_x, tiles_x - tx0);
        const std::int64_t ty0 = by * block_y, rows = std::min(block_y, tiles_y - ty0), used = rows * columns;
        for (std::int64_t r = 0; r < rows; ++r) {
          stage_rows(in, n, 2 * tz - 1, 2 * (ty0 + r) - 1, 2 * tx0 - 1, row_floats, staged);
          for (std::int64_t tx = 0; tx < columns; ++tx)
            transform_input(staged, row_floats, tx, v + (r * columns + tx) * tile_floats_in);
        }
        // Tiles past the item's feed only GEMM rows that are never read back; keep them finite.
        std::fill(v + used * tile_floats_in, v + tile_rows * tile_floats_in, 0.0f);
        for (int point = 0; point < winograd::points; ++point) {
          const float* a = v + point * cin;
          for (int g = 0; g < fl.groups(); ++g)
            gemm_group({&a, 1, cin, tile_floats_in}, used, filters_[static_cast<std::size_t>(point)].panel(g),
                       fl.packets(g), nullptr, 0, m + point * ldm + fl.group_col0(g), tile_floats_out);
        }
        for (std::int64_t r = 0; r < rows; ++r)
          for (std::int64_t tx = 0; tx < columns; ++tx)
            store_tile(m + (r * columns + tx) * tile_floats_out, out, n, 2 * tz, 2 * (ty0 + r), 2 * (tx0 + tx));
      }
    });
  }

 private:
  /// Columns of a point's M row: the GEMM's output channels, padded to whole column groups.
  std::int64_t m_columns() const { return round_up(p_.cout, group_width); }

  /// Stages the 4 x 4 input rows (z0 + a, y0 + b), a, b < 4, from x = x0 on as float32 channels-last, zeros outside
  /// the volume: row (a, b) at staged + (a * 4 + b) * row_floats.
  template <class S>
  void stage_rows(const tensor<S>& in, std::int64_t n, std::int64_t z0, std::int64_t y0, std::int64_t x0,
                  std::int64_t row_floats, float* staged) const {
    const shape5& s = in.shape();
    const std::int64_t voxels = row_floats / s.c, first = std::max<std::int64_t>(x0, 0);
    const std::int64_t last = std::min(x0 + voxels, s.w);  // staged voxels [first, last) lie in the volume
    for (int a = 0; a < winograd::in_side; ++a)
      for (int b = 0; b < winograd::in_side; ++b) {
        float* row = staged + (a * winograd::in_side + b) * row_floats;
        const std::int64_t z = z0 + a, y = y0 + b;
        if (z < 0 || z >= s.d || y < 0 || y >= s.h || last <= first) {
          std::fill(row, row + row_floats, 0.0f);
          continue;
        }
        std::fill(row, row + (first - x0) * s.c, 0.0f);
        load_voxel_run(in, n, z, y, first, last - first, row + (first - x0) * s.c);
        std::fill(row + (last - x0) * s.c, row + row_floats, 0.0f);
      }
  }

  /// The tile's V[point][cin] = B^T d B of tile tx's 4x4x4 input block, every input channel.
  void transform_input(const float* staged, std::int64_t row_floats, std::int64_t tx, float* v) const {
    const std::int64_t cin = p_.cin;
    const float* block = staged + 2 * tx * cin;  // the item's tile tx reads staged voxels 2 tx .. 2 tx + 3
    std::int64_t c = 0;
    for (; c + packet_size <= cin; c += packet_size) transform_input_channels<packet>(block + c, row_floats, v + c);
    for (; c < cin; ++c) transform_input_channels<float>(block + c, row_floats, v + c);
  }

  template <class T>
  void transform_input_channels(const float* block, std::int64_t row_floats, float* v) const {
    using namespace Eigen::internal;
    const std::int64_t cin = p_.cin;
    T d[winograd::in_side][winograd::in_side][winograd::in_side];
    for (int a = 0; a < winograd::in_side; ++a)
      for (int b = 0; b < winograd::in_side; ++b) {
        const float* row = block + (a * winograd::in_side + b) * row_floats;
        for (int x = 0; x < winograd::in_side; ++x) d[a][b][x] = ploadu<T>(row + x * cin);
        winograd::input_1d(d[a][b][0], d[a][b][1], d[a][b][2], d[a][b][3]);
      }
    for (int a = 0; a < winograd::in_side; ++a)
      for (int x = 0; x < winograd::in_side; ++x) winograd::input_1d(d[a][0][x], d[a][1][x], d[a][2][x], d[a][3][x]);
    for (int b = 0; b < winograd::in_side; ++b)
      for (int x = 0; x < winograd::in_side; ++x) {
        winograd::input_1d(d[0][b][x], d[1][b][x], d[2][b][x], d[3][b][x]);
        for (int a = 0; a < winograd::in_side; ++a)
          pstoreu(v + ((a * winograd::in_side + b) * winograd::in_side + x) * cin, d[a][b][x]);
      }
  }

  /// Output tile (n, z0.., y0.., x0..) = A^T M A (+ bias) from the tile's M[point][ldm], clipped to the volume,
  /// stored in the output's layout and type, one packet of channels at a time (M's columns past cout are zero).
  template <class S>
  void store_tile(const float* m, tensor<S>& out, std::int64_t n, std::int64_t z0, std::int64_t y0,
                  std::int64_t x0) const {
    const shape5& s = out.shape();
    const std::int64_t cout = p_.cout;
    const int dz = static_cast<int>(std::min<std::int64_t>(winograd::out_side, s.d - z0));
    const int dy = static_cast<int>(std::min<std::int64_t>(winograd::out_side, s.h - y0));
    const int dx = static_cast<int>(std::min<std::int64_t>(winograd::out_side, s.w - x0));
    float y[winograd::out_side][winograd::out_side][winograd::out_side][packet_size];
    for (std::int64_t c = 0; c < cout; c += packet_size) {
      transform_output(m + c, m_columns(), bias_.data() + c, y);
      const int width = static_cast<int>(std::min<std::int64_t>(packet_size, cout - c));
      for (int a = 0; a < dz; ++a)
        for (int b = 0; b < dy; ++b)
          for (int e = 0; e < dx; ++e) store_voxel(out, n, z0 + a, y0 + b, x0 + e, c, width, y[a][b][e]);
    }
  }

  /// The 2x2x2 outputs y[a][b][e] of packet_size channels.
  void transform_output(const float* m, std::int64_t point_stride, const float* bias,
                        float (&y)[winograd::out_side][winograd::out_side][winograd::out_side][packet_size]) const {
    using namespace Eigen::internal;
    constexpr int n = winograd::in_side, o = winograd::out_side;
    packet t[n][n][n];
    for (int point = 0; point < winograd::points; ++point)
      (&t[0][0][0])[point] = ploadu<packet>(m + point * point_stride);
    packet u[n][n][o], w[n][o][o];
    for (int a = 0; a < n; ++a)
      for (int b = 0; b < n; ++b)
        winograd::output_1d(t[a][b][0], t[a][b][1], t[a][b][2], t[a][b][3], u[a][b][0], u[a][b][1]);
    for (int a = 0; a < n; ++a)
      for (int e = 0; e < o; ++e)
        winograd::output_1d(u[a][0][e], u[a][1][e], u[a][2][e], u[a][3][e], w[a][0][e], w[a][1][e]);
    const packet b = ploadu<packet>(bias);
    for (int by = 0; by < o; ++by)
      for (int e = 0; e < o; ++e) {
        packet y0, y1;
        winograd::output_1d(w[0][by][e], w[1][by][e], w[2][by][e], w[3][by][e], y0, y1);
        pstoreu(y[0][by][e], padd(y0, b));
        pstoreu(y[1][by][e], padd(y1, b));
      }
  }

  /// Writes channels [c0, c0 + width) of voxel (n, z, y, x) from float32 values.
  template <class S>
  static void store_voxel(tensor<S>& out, std::int64_t n, std::int64_t z, std::int64_t y, std::int64_t x,
                          std::int64_t c0, int width, const float* values) {
    const shape5& s = out.shape();
    if (out.layout() == layout_kind::ndhwc) {
      from_floats(values, out.data() + (((n * s.d + z) * s.h + y) * s.w + x) * s.c + c0, width);
    } else {
      const std::int64_t plane = s.d * s.h * s.w;
      S* dst = out.data() + (n * s.c + c0) * plane + (z * s.h + y) * s.w + x;
      for (int c = 0; c < width; ++c) dst[c * plane] = from_float<S>(values[c]);
    }
  }

  ops::conv3d_problem p_;
  std::vector<packed_matrix> filters_;  ///< U per point: [Cin x Cout] GEMM panels
  std::vector<float> bias_;             ///< zero padded to whole packets
};

}  // namespace swinfer::cpu

// swinfer cpu backend: the 3x3x3 stride-1 convolutions by Winograd's minimal filtering, F(2x2x2, 3x3x3) or
// F(4x4x4, 3x3x3): 64 or 216 multiplies per output tile and channel pair instead of 216 or 1728, on the same
// register-blocked GEMM.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "swinfer/backend/cpu/context.hpp"
#include "swinfer/backend/cpu/conv_input.hpp"
#include "swinfer/backend/cpu/data_movement.hpp"
#include "swinfer/backend/cpu/gemm.hpp"
#include "swinfer/backend/cpu/simd.hpp"
#include "swinfer/backend/cpu/streaming_store.hpp"
#include "swinfer/core/tensor.hpp"
#include "swinfer/ops/conv3d.hpp"

namespace swinfer::cpu {

namespace winograd {

/// F(2, 3) (Lavin and Gray): 2 outputs from 4 inputs per axis, 64 multiplies per 2x2x2 output tile and channel pair
/// instead of 216. The transforms only add and subtract, so float32 results stay within about twice the direct
/// convolution's rounding (measured on random 48-channel convs: 3.4e-7 against 2.4e-7 of max|y|).
struct f2x3 {
  static constexpr int out_side = 2, in_side = 4;
  /// Tiles per work item: enough GEMM rows to amortise streaming U (64 Cin x Cout panels) once per item, few enough
  /// for the item's V and M to stay in L2.
  static constexpr std::int64_t item_tiles = 16;
  /// The smallest output grid side it runs on (smaller grids run direct convolution).
  static constexpr std::int64_t min_grid = 4;

  /// B^T d along one axis, in place.
  template <class T>
  static void input_1d(T (&d)[in_side]) {
    using namespace Eigen::internal;
    const T v0 = psub(d[0], d[2]), v1 = padd(d[1], d[2]), v2 = psub(d[2], d[1]), v3 = psub(d[1], d[3]);
    d[0] = v0, d[1] = v1, d[2] = v2, d[3] = v3;
  }
  /// A^T m along one axis: y0 = m0 + m1 + m2, y1 = m1 - m2 - m3.
  template <class T>
  static void output_1d(const T (&m)[in_side], T (&y)[out_side]) {
    using namespace Eigen::internal;
    y[0] = padd(padd(m[0], m[1]), m[2]);
    y[1] = psub(psub(m[1], m[2]), m[3]);
  }
  /// G g along one axis, in double (the weights are transformed once).
  static std::array<double, in_side> filter_1d(double g0, double g1, double g2) {
    return {g0, 0.5 * (g0 + g1 + g2), 0.5 * (g0 - g1 + g2), g2};
  }
};

/// F(4, 3) at the points 0, 1, -1, 2, -2 and infinity (Lavin and Gray's F(4x4, 3x3) per axis): 4 outputs from 6
/// inputs, 216 multiplies per 4x4x4 output tile and channel pair instead of 1728, 2.4x fewer than F(2, 3). The
/// transforms multiply by up to 8, so float32 results carry about 50x F(2, 3)'s rounding: measured on random convs,
/// up to 3.9e-5 of max|y| with 96 input channels (5e-6 relative L2 with 48). Far below the 2^-9 relative rounding
/// of every stored bf16 (or the 2^-11 of fp16) value, so the 16-bit storage precisions run on it; float32 keeps
/// F(2, 3), whose rounding stays within the 1e-5 of MONAI that fp32 promises. (Points 0, 1, -1, 1/2, -2 round 4x
/// less but need about twice the transform arithmetic.)
struct f4x3 {
  static constexpr int out_side = 4, in_side = 6;
  /// Tiles per work item: one 8-row micro tile of GEMM rows per point (a 96->48 conv at 96^3 on a 2-core Zen 4:
  /// 219 ms with 8, 265-377 ms with 4, 6, 12 or 16: V and M of 216 points each outgrow L2 quickly).
  static constexpr std::int64_t item_tiles = 8;
  static constexpr std::int64_t min_grid = 8;

  /// B^T d along one axis, in place: rows (4 0 -5 0 1 0), (0 -4 -4 1 1 0), (0 4 -4 -1 1 0), (0 -2 -1 2 1 0),
  /// (0 2 -1 -2 1 0), (0 4 0 -5 0 1), with the pairs' shared sums.
  template <class T>
  static void input_1d(T (&d)[in_side]) {
    using namespace Eigen::internal;
    const T four = pset1<T>(4.0f), minus_four = pset1<T>(-4.0f), minus_five = pset1<T>(-5.0f);
    const T two = pset1<T>(2.0f), minus_two = pset1<T>(-2.0f);
    const T sum12 = padd(d[1], d[2]), sum34 = padd(d[3], d[4]);
    const T diff12 = psub(d[1], d[2]), diff43 = psub(d[4], d[3]);
    const T diff42 = psub(d[4], d[2]), diff31 = psub(d[3], d[1]);
    const T v0 = pmadd(four, d[0], pmadd(minus_five, d[2], d[4]));
    const T v1 = pmadd(minus_four, sum12, sum34);
    const T v2 = pmadd(four, diff12, diff43);
    const T v3 = pmadd(two, diff31, diff42);
    const T v4 = pmadd(minus_two, diff31, diff42);
    const T v5 = pmadd(four, d[1], pmadd(minus_five, d[3], d[5]));
    d[0] = v0, d[1] = v1, d[2] = v2, d[3] = v3, d[4] = v4, d[5] = v5;
  }
  /// A^T m along one axis: rows (1 1 1 1 1 0), (0 1 -1 2 -2 0), (0 1 1 4 4 0), (0 1 -1 8 -8 1).
  template <class T>
  static void output_1d(const T (&m)[in_side], T (&y)[out_side]) {
    using namespace Eigen::internal;
    const T two = pset1<T>(2.0f), four = pset1<T>(4.0f), eight = pset1<T>(8.0f);
    const T sum12 = padd(m[1], m[2]), diff12 = psub(m[1], m[2]);
    const T sum34 = padd(m[3], m[4]), diff34 = psub(m[3], m[4]);
    y[0] = padd(padd(m[0], sum12), sum34);
    y[1] = pmadd(two, diff34, diff12);
    y[2] = pmadd(four, sum34, sum12);
    y[3] = padd(pmadd(eight, diff34, diff12), m[5]);
  }
  /// G g along one axis, in double: rows (1/4 0 0), (-1/6 -1/6 -1/6), (-1/6 1/6 -1/6), (1/24 1/12 1/6),
  /// (1/24 -1/12 1/6), (0 0 1).
  static std::array<double, in_side> filter_1d(double g0, double g1, double g2) {
    return {g0 / 4, -(g0 + g1 + g2) / 6, -(g0 - g1 + g2) / 6, (g0 + 2 * g1 + 4 * g2) / 24,
            (g0 - 2 * g1 + 4 * g2) / 24, g2};
  }
};

}  // namespace winograd

/// \brief A 3x3x3, stride 1, padding 1 convolution (the UNet blocks' convs) as Winograd F(m x m x m, 3x3x3), m the
/// Tile's out_side (winograd::f2x3 or f4x3): input (N, Cin, D, H, W) -> output (N, Cout, D, H, W), either layout,
/// storage S, float32 compute.
///
/// The output is cut into m^3 tiles, each computed from the n^3 input block around it (n = m + 2): V = B^T d B per
/// input channel (3-D, separable), then for each of the n^3 points a GEMM M[point] = V[point] [tiles x Cin] x
/// U[point] [Cin x Cout] with the filters transformed once (U = G g G^T, in double, rounded to float32), then
/// y = A^T M A per output channel.
/// Threads: a work item is a block of about Tile::item_tiles tiles (part of a tile row, or several rows of a small
/// grid); a worker stages the item's n x n input rows channels-last in float32, transforms its tiles into V, runs
/// the n^3 GEMMs (V and M stay in its scratch) and writes the output tiles in the output's layout and type.
template <class Tile>
class conv3d_winograd {
 public:
  static constexpr int out_side = Tile::out_side, in_side = Tile::in_side;
  static constexpr int points = in_side * in_side * in_side;
  static constexpr int min_channels = 8;
  static constexpr std::int64_t max_filter_bytes = std::int64_t{16} << 20;

  /// Whether this convolution is one Winograd computes: 3x3x3, stride 1, padding 1, float.
  static bool applies(const ops::conv3d_problem& p) {
    return p.kernel == std::array<int, 3>{3, 3, 3} && p.stride == std::array<int, 3>{1, 1, 1} &&
           p.pad == std::array<int, 3>{1, 1, 1} && !p.int8.quantized();
  }

  /// Whether Winograd pays for this problem: enough channels for the GEMMs to outweigh the transforms, and
  /// transformed filters (points x Cin x Cout floats) small enough to stream from cache for every work item.
  static bool pays(const ops::conv3d_problem& p) {
    const std::int64_t filter_bytes = std::int64_t{points} * p.cin * p.cout * std::int64_t{sizeof(float)};
    return applies(p) && p.cin >= min_channels && p.cout >= min_channels && filter_bytes <= max_filter_bytes;
  }
  /// ... and for this output grid: tiles wide enough for the GEMM rows (smaller grids run something else).
  static bool pays(const shape5& out) { return std::min({out.d, out.h, out.w}) >= Tile::min_grid; }

  /// Transforms and packs the weights (cout, cin, 3, 3, 3) and bias (cout or null).
  conv3d_winograd(const ops::conv3d_problem& p, const float* weight, const float* bias) : p_(p) {
    const std::int64_t cin = p.cin, cout = p.cout;
    // u[(co * cin + ci) * points + point]: G g G^T per filter, in double, then float32.
    std::vector<float> u(static_cast<std::size_t>(cout * cin * points));
    for (std::int64_t f = 0; f < cout * cin; ++f) {
      const float* g = weight + f * 27;
      double along_x[3][3][in_side], along_y[3][in_side][in_side];
      for (int z = 0; z < 3; ++z)
        for (int y = 0; y < 3; ++y) {
          const auto t = Tile::filter_1d(g[(z * 3 + y) * 3], g[(z * 3 + y) * 3 + 1], g[(z * 3 + y) * 3 + 2]);
          std::copy(t.begin(), t.end(), along_x[z][y]);
        }
      for (int z = 0; z < 3; ++z)
        for (int x = 0; x < in_side; ++x) {
          const auto t = Tile::filter_1d(along_x[z][0][x], along_x[z][1][x], along_x[z][2][x]);
          for (int y = 0; y < in_side; ++y) along_y[z][y][x] = t[static_cast<std::size_t>(y)];
        }
      for (int y = 0; y < in_side; ++y)
        for (int x = 0; x < in_side; ++x) {
          const auto t = Tile::filter_1d(along_y[0][y][x], along_y[1][y][x], along_y[2][y][x]);
          for (int z = 0; z < in_side; ++z)
            u[static_cast<std::size_t>(f * points + (z * in_side + y) * in_side + x)] =
                static_cast<float>(t[static_cast<std::size_t>(z)]);
        }
    }
    filters_.reserve(points);
    for (int point = 0; point < points; ++point) {
      filters_.emplace_back(cin, cout, [&](std::int64_t ci, std::int64_t co) {
        return u[static_cast<std::size_t>((co * cin + ci) * points + point)];
      });
    }
    bias_.assign(static_cast<std::size_t>(round_up(cout, packet_size)), 0.0f);
    if (p.bias && bias) std::copy(bias, bias + cout, bias_.begin());
  }

  template <class S>
  void run(context& ctx, const tensor<S>& in, tensor<S>& out) const {
    run(ctx, conv_input<S>(in), out);
  }

  /// The same on a conv_input (a concatenation, or a volume normalised on load).
  template <class S>
  void run(context& ctx, const conv_input<S>& in, tensor<S>& out) const {
    const shape5& s = in.shape();
    const std::int64_t cin = p_.cin;
    const std::int64_t tiles_z = tiles(s.d), tiles_y = tiles(s.h), tiles_x = tiles(s.w);
    // A work item is a block of `block_x` tiles along x in each of `block_y` tile rows: part of a row on wide grids,
    // several whole rows on narrow ones, about Tile::item_tiles tiles either way.
    const std::int64_t blocks_x = (tiles_x + Tile::item_tiles - 1) / Tile::item_tiles;
    const std::int64_t block_x = (tiles_x + blocks_x - 1) / blocks_x;
    const std::int64_t block_y = std::clamp<std::int64_t>(Tile::item_tiles / block_x, 1, tiles_y);
    const std::int64_t blocks_y = (tiles_y + block_y - 1) / block_y;
    const std::int64_t tile_rows = round_up(block_x * block_y, max_micro_rows);
    const panel_layout& fl = filters_[0].layout();
    const std::int64_t ldm = m_columns();
    // Worker scratch, floats: n x n staged input rows of (m block_x + 2) voxels, V [tile_rows][points][cin] and
    // M [tile_rows][points][ldm]. Tile-major, so that each tile's transforms read and write one contiguous block;
    // the GEMMs read and write their rows `points` apart.
    const std::int64_t row_floats = (out_side * block_x + 2) * cin;
    const std::int64_t staged_floats = in_side * in_side * row_floats;
    const std::int64_t tile_floats_in = points * cin, tile_floats_out = points * ldm;
    const std::int64_t v_floats = tile_rows * tile_floats_in, m_floats = tile_rows * tile_floats_out;
    const std::int64_t items = s.n * tiles_z * blocks_y * blocks_x;
    // V's tiles past an item's `used` feed only GEMM rows that are never read back, but must be finite numbers
    // (NaN or denormal garbage slows the FMAs): zeros, or an earlier item's tiles. Each worker clears its V once.
    std::vector<char> v_cleared(static_cast<std::size_t>(ctx.threads()), 0);

    ctx.parallel_for(items, 1, [&](std::int64_t i0, std::int64_t i1, int worker) {
      float* staged = ctx.workspace(worker).reserve(staged_floats + v_floats + m_floats);
      float* v = staged + staged_floats;
      float* m = v + v_floats;
      if (!v_cleared[static_cast<std::size_t>(worker)]) {
        std::fill(v, v + v_floats, 0.0f);
        v_cleared[static_cast<std::size_t>(worker)] = 1;
      }
      for (std::int64_t item = i0; item < i1; ++item) {
        const std::int64_t bx = item % blocks_x, by = (item / blocks_x) % blocks_y;
        const std::int64_t tz = (item / (blocks_x * blocks_y)) % tiles_z, n = item / (blocks_x * blocks_y * tiles_z);
        const std::int64_t tx0 = bx * block_x, columns = std::min(block_x, tiles_x - tx0);
        const std::int64_t ty0 = by * block_y, rows = std::min(block_y, tiles_y - ty0), used = rows * columns;
        for (std::int64_t r = 0; r < rows; ++r) {
          stage_rows(in, n, out_side * tz - 1, out_side * (ty0 + r) - 1, out_side * tx0 - 1, row_floats, staged);
          for (std::int64_t tx = 0; tx < columns; ++tx)
            transform_input(staged, row_floats, tx, v + (r * columns + tx) * tile_floats_in);
        }
        for (int point = 0; point < points; ++point) {
          const float* a = v + point * cin;
          for (int g = 0; g < fl.groups(); ++g)
            gemm_group({&a, 1, cin, tile_floats_in}, used, filters_[static_cast<std::size_t>(point)].panel(g),
                       fl.packets(g), nullptr, 0, m + point * ldm + fl.group_col0(g), tile_floats_out);
        }
        for (std::int64_t r = 0; r < rows; ++r)
          for (std::int64_t tx = 0; tx < columns; ++tx)
            store_tile(m + (r * columns + tx) * tile_floats_out, out, n, out_side * tz, out_side * (ty0 + r),
                       out_side * (tx0 + tx));
      }
    });
  }

 private:
  /// Tiles along a side of `size` outputs (the last one clipped).
  static std::int64_t tiles(std::int64_t size) { return (size + out_side - 1) / out_side; }

  /// Columns of a point's M row: the GEMM's output channels, padded to whole column groups.
  std::int64_t m_columns() const { return round_up(p_.cout, group_width); }

  /// Stages the n x n input rows (z0 + a, y0 + b), a, b < n, from x = x0 on as float32 channels-last, zeros outside
  /// the volume: row (a, b) at staged + (a * n + b) * row_floats.
  template <class S>
  void stage_rows(const conv_input<S>& in, std::int64_t n, std::int64_t z0, std::int64_t y0, std::int64_t x0,
                  std::int64_t row_floats, float* staged) const {
    const shape5& s = in.shape();
    const std::int64_t voxels = row_floats / s.c, first = std::max<std::int64_t>(x0, 0);
    const std::int64_t last = std::min(x0 + voxels, s.w);  // staged voxels [first, last) lie in the volume
    for (int a = 0; a < in_side; ++a)
      for (int b = 0; b < in_side; ++b) {
        float* row = staged + (a * in_side + b) * row_floats;
        const std::int64_t z = z0 + a, y = y0 + b;
        if (z < 0 || z >= s.d || y < 0 || y >= s.h || last <= first) {
          std::fill(row, row + row_floats, 0.0f);
          continue;
        }
        std::fill(row, row + (first - x0) * s.c, 0.0f);
        in.load_run(n, z, y, first, last - first, row + (first - x0) * s.c);
        std::fill(row + (last - x0) * s.c, row + row_floats, 0.0f);
      }
  }

  /// The tile's V[point][cin] = B^T d B of tile tx's n^3 input block, every input channel (in packets as wide as
  /// fit: fs12's 12 and 24 channels are 8 + 4 and 16 + 8 lanes).
  void transform_input(const float* staged, std::int64_t row_floats, std::int64_t tx, float* v) const {
    const float* block = staged + out_side * tx * p_.cin;  // tile tx reads staged voxels m tx .. m tx + n - 1
    for_each_packet_stepping_down(0, p_.cin, [&](auto lanes, std::int64_t c) {
      transform_input_channels<decltype(lanes)>(block + c, row_floats, v + c);
    });
  }

  template <class T>
  void transform_input_channels(const float* block, std::int64_t row_floats, float* v) const {
    using namespace Eigen::internal;
    const std::int64_t cin = p_.cin;
    T d[in_side][in_side][in_side], line[in_side];
    for (int a = 0; a < in_side; ++a)
      for (int b = 0; b < in_side; ++b) {
        const float* row = block + (a * in_side + b) * row_floats;
        for (int x = 0; x < in_side; ++x) d[a][b][x] = ploadu<T>(row + x * cin);
        Tile::input_1d(d[a][b]);
      }
    for (int a = 0; a < in_side; ++a)
      for (int x = 0; x < in_side; ++x) {
        for (int b = 0; b < in_side; ++b) line[b] = d[a][b][x];
        Tile::input_1d(line);
        for (int b = 0; b < in_side; ++b) d[a][b][x] = line[b];
      }
    for (int b = 0; b < in_side; ++b)
      for (int x = 0; x < in_side; ++x) {
        for (int a = 0; a < in_side; ++a) line[a] = d[a][b][x];
        Tile::input_1d(line);
        for (int a = 0; a < in_side; ++a) pstoreu(v + ((a * in_side + b) * in_side + x) * cin, line[a]);
      }
  }

  /// Output tile (n, z0.., y0.., x0..) = A^T M A (+ bias) from the tile's M[point][ldm], clipped to the volume,
  /// stored in the output's layout and type, one packet of channels at a time (M's columns past cout are zero).
  template <class S>
  void store_tile(const float* m, tensor<S>& out, std::int64_t n, std::int64_t z0, std::int64_t y0,
                  std::int64_t x0) const {
    const shape5& s = out.shape();
    const std::int64_t cout = p_.cout;
    const int dz = static_cast<int>(std::min<std::int64_t>(out_side, s.d - z0));
    const int dy = static_cast<int>(std::min<std::int64_t>(out_side, s.h - y0));
    const int dx = static_cast<int>(std::min<std::int64_t>(out_side, s.w - x0));
    float y[out_side][out_side][out_side][packet_size];
    for (std::int64_t c = 0; c < cout; c += packet_size) {
      transform_output(m + c, m_columns(), bias_.data() + c, y);
      const int width = static_cast<int>(std::min<std::int64_t>(packet_size, cout - c));
      for (int a = 0; a < dz; ++a)
        for (int b = 0; b < dy; ++b)
          for (int e = 0; e < dx; ++e) store_voxel(out, n, z0 + a, y0 + b, x0 + e, c, width, y[a][b][e]);
    }
  }

  /// The m^3 outputs y[a][b][e] of packet_size channels.
  void transform_output(const float* m, std::int64_t point_stride, const float* bias,
                        float (&y)[out_side][out_side][out_side][packet_size]) const {
    using namespace Eigen::internal;
    constexpr int n = in_side, o = out_side;
    packet t[n][n][n], u[n][n][o], w[n][o][o], line[n], result[o];
    for (int point = 0; point < points; ++point) (&t[0][0][0])[point] = ploadu<packet>(m + point * point_stride);
    for (int a = 0; a < n; ++a)
      for (int b = 0; b < n; ++b) Tile::output_1d(t[a][b], u[a][b]);
    for (int a = 0; a < n; ++a)
      for (int e = 0; e < o; ++e) {
        for (int b = 0; b < n; ++b) line[b] = u[a][b][e];
        Tile::output_1d(line, result);
        for (int b = 0; b < o; ++b) w[a][b][e] = result[b];
      }
    const packet bias_packet = ploadu<packet>(bias);
    for (int b = 0; b < o; ++b)
      for (int e = 0; e < o; ++e) {
        for (int a = 0; a < n; ++a) line[a] = w[a][b][e];
        Tile::output_1d(line, result);
        for (int a = 0; a < o; ++a) pstoreu(y[a][b][e], padd(result[a], bias_packet));
      }
  }

  /// Writes channels [c0, c0 + width) of voxel (n, z, y, x) from float32 values (streamed where the output is large).
  template <class S>
  static void store_voxel(tensor<S>& out, std::int64_t n, std::int64_t z, std::int64_t y, std::int64_t x,
                          std::int64_t c0, int width, const float* values) {
    const shape5& s = out.shape();
    if (out.layout() == layout_kind::ndhwc) {
      store_floats(values, out.data() + (((n * s.d + z) * s.h + y) * s.w + x) * s.c + c0, width,
                   streams_output<S>(out.size()));
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

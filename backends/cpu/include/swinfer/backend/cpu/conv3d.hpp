// swinfer cpu backend: 3-D convolution (3x3x3 UNet convs, 1x1x1 projections and head, k2s2 patch embedding).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "swinfer/backend/cpu/amx.hpp"
#include "swinfer/backend/cpu/bf16_dot.hpp"
#include "swinfer/backend/cpu/context.hpp"
#include "swinfer/backend/cpu/conv3d_winograd.hpp"
#include "swinfer/backend/cpu/conv_input.hpp"
#include "swinfer/backend/cpu/data_movement.hpp"
#include "swinfer/backend/cpu/dynamic_scale.hpp"
#include "swinfer/backend/cpu/gemm.hpp"
#include "swinfer/backend/cpu/instance_norm.hpp"
#include "swinfer/backend/cpu/int8_dot.hpp"
#include "swinfer/backend/cpu/streaming_store.hpp"
#include "swinfer/core/error.hpp"
#include "swinfer/core/precision.hpp"
#include "swinfer/core/tensor.hpp"
#include "swinfer/ops/conv3d.hpp"
#include "swinfer/ops/quantization.hpp"

namespace swinfer::cpu {

/// Packed weights of one chunk of column groups should stay in L2 (about half of it) while a plane is swept.
inline constexpr std::int64_t weight_chunk_bytes = std::int64_t{1} << 20;

/// \brief Direct convolution as an implicit GEMM: input (N, Cin, D, H, W) -> output (N, Cout, OD, OH, OW), either
/// layout, storage S, float32 accumulation.
///
/// Each worker keeps a ring of kd zero-padded input planes staged channels-last ([H+2p][W'][Cin]). An output row
/// (n, oz, oy) is then a GEMM whose A rows are the row's output voxels and whose depth is the kd*kh tap rows of
/// the ring, each a contiguous run of kw*Cin values (no im2col copy): [OW x 27Cin] x [27Cin x 48] per column group
/// of 48 output channels, computed into a float32 row tile and stored (rounded to S, in the output's layout).
/// - float32 path (every S): planes staged as float32; weights packed once as [tap][Cin][48] float32 for the
///   register-blocked FMA micro-kernel.
/// - AMX path (S = bf16 on AMX hardware): planes staged as bf16 (a copy for channels-last input); weights packed
///   once as hi + lo bf16 AMX tiles (see amx.hpp), products exact, or with bf16_weight_mode::rounded as hi alone,
///   one product per multiply; float32 accumulation.
/// - AVX-512 BF16 path (S = bf16 with bf16_weight_mode::rounded, on CPUs with vdpbf16ps but no AMX): planes staged as
///   bf16; weights rounded to bf16 and packed once in channel pairs (see bf16_dot.hpp); twice the float32 path's
///   multiply-adds per instruction.
/// - int8 path (a quantized problem, precision::int8): planes staged as uint8 (the input quantized with the
///   calibrated scale, or with its own max|x| / 127 when dynamic, zero point 128, so the zero padding stages as 128);
///   weights quantized per output channel and packed once in quads (see int8_dot.hpp); int32 sums, dequantized to
///   float in the tile.
/// 3x3x3 stride-1 convolutions on large enough grids skip the direct GEMM for Winograd (conv3d_winograd.hpp), except
/// on the AMX and int8 paths: F(4x4x4) under 16-bit storage (grids from 8^3 on, also with rounded bf16 weights,
/// where it is twice as fast as the pair dot product), F(2x2x2) under float32 (grids from 4^3 on).
/// Threads: work items are (sample, chunk of channel groups, output plane) with the plane fastest, or blocks of a
/// plane's rows where planes are few (context::rows_per_item); each worker takes one contiguous range, so
/// consecutive planes reuse kd-1 staged input planes (and a plane's row blocks all of them).
template <class S>
class conv3d {
  using winograd2 = conv3d_winograd<winograd::f2x3>;
  using winograd4 = conv3d_winograd<winograd::f4x3>;
  static constexpr bool sixteen_bit_storage = sizeof(S) == 2;

 public:
  conv3d(context& ctx, const ops::conv3d_problem& p, const float* weight, const float* bias) : ctx_(ctx), p_(p) {
    p.check_parameters(weight, bias);
    // Named copies, not structured bindings, here and below: lambdas capture them, which clang < 16 rejects.
    const int kd = p.kernel[0], kh = p.kernel[1], kw = p.kernel[2];
    const std::int64_t cin = p.cin;
    auto element = [&](std::int64_t k, std::int64_t co) {
      const std::int64_t ci = k % cin, tap = k / cin;  // depth order: (kz, ky, kx, ci), matching the staged rows
      const std::int64_t kx = tap % kw, ky = (tap / kw) % kh, kz = tap / (kw * kh);
      return weight[(((co * cin + ci) * kd + kz) * kh + ky) * kw + kx];
    };
    bias_.assign(static_cast<std::size_t>(round_up(p.cout, group_width)), 0.0f);  // zero padded to whole groups
    // "&& bias" is implied by the check above; it spares GCC 12 at -O3 a false -Wnonnull.
    if (p.bias && bias) std::copy(bias, bias + p.cout, bias_.begin());
    if (p.int8.quantized()) {
      const std::int64_t per_channel = p.weight_count() / p.cout;
      const auto q = ops::channel_quantized_weights::quantize(weight, p.cout, per_channel);
      int8_weights_ = int8_dot::packed_quads(kd * kh, kw * cin, p.cout, [&](std::int64_t k, std::int64_t co) {
        const std::int64_t ci = k % cin, tap = k / cin;
        const std::int64_t kx = tap % kw, ky = (tap / kw) % kh, kz = tap / (kw * kh);
        return q.at(co, ((ci * kd + kz) * kh + ky) * kw + kx, per_channel);
      });
      weight_scales_ = q.scales;
      int8_scales_.assign(bias_.size(), 0.0f);
      if (!p.int8.dynamic) set_input_scale(p.int8.scale);
      return;
    }
#ifdef SWINFER_CPU_AMX
    if constexpr (std::is_same_v<S, Eigen::bfloat16>) {
      if (amx::available()) {
        amx_weights_ = amx::packed_bf16(kd * kh, kw * cin, p.cout, !ctx.round_bf16_weights(), element);
        if (p.bias) amx_bias_ = amx::repeated_bias_rows(bias_);
        return;
      }
    }
#endif
    // 16-bit storage rounds every value by 2^-9 (bf16) or 2^-11 (fp16), so F(4x4x4)'s float32 rounding (up to ~4e-5
    // of max|y|) is invisible there; float32 storage keeps the tighter F(2x2x2). F(4x4x4) also takes the grids it pays
    // for under rounded bf16 weights: with exact weights it is twice as fast as the pair dot product there.
    if (sixteen_bit_storage && winograd4::pays(p)) winograd4_.emplace(p, weight, bias);
#ifdef SWINFER_CPU_AVX512_BF16
    if constexpr (std::is_same_v<S, Eigen::bfloat16>) {
      if (ctx.round_bf16_weights() && bf16_dot::pays()) {
        pair_weights_ = bf16_dot::packed_pairs(kd * kh, kw * cin, p.cout, element);
        return;
      }
    }
#endif
    if (!winograd4_ && winograd2::pays(p)) winograd2_.emplace(p, weight, bias);
    weights_ = packed_matrix(std::int64_t{kd} * kh * kw * cin, p.cout, element);
  }

  /// The instruction path this instance runs: "fp32 fma", "fp32 winograd" (fp32 fma on F(2x2x2) Winograd tiles,
  /// where the grid is large enough; direct fp32 fma below), "fp32 winograd4" (F(4x4x4) tiles, 16-bit storage),
  /// "avx512 bf16 dot", "amx bf16" ("amx bf16 rounded" with the weights rounded) or an int8 path
  /// (int8_dot::path_name: amx, vnni, madd or portable).
  const char* path() const {
    if (int8_weights_.layout().groups() > 0) return int8_dot::path_name(int8_weights_.path());
#ifdef SWINFER_CPU_AMX
    if (amx_weights_.groups() > 0) return amx_weights_.exact() ? "amx bf16" : "amx bf16 rounded";
#endif
    if (winograd4_) return "fp32 winograd4";
#ifdef SWINFER_CPU_AVX512_BF16
    if (pair_weights_.layout().groups() > 0) return "avx512 bf16 dot";
#endif
    return winograd2_ ? "fp32 winograd" : "fp32 fma";
  }

  void run(const tensor<S>& in, tensor<S>& out) { run_on(conv_input<S>(in), out, nullptr); }

  /// run(in, out), and InstanceNorm's moments of out, gathered as its rows are stored (row_moment_records; where the
  /// output is channels-first or the route is Winograd's, a pass over out after it).
  void run(const tensor<S>& in, tensor<S>& out, channel_moments& moments) {
    run_on(conv_input<S>(in), out, &moments);
  }

  /// out = conv(concat_channels(first, second)) (a decoder's [upsampled, skip]), each part read where it is.
  void run(const tensor<S>& first, const tensor<S>& second, tensor<S>& out) {
    p_.check(first.shape(), second.shape(), out.shape());
    run_on(conv_input<S>(first, second), out, nullptr);
  }
  /// run(first, second, out), and out's moments as run(in, out, moments) gathers them.
  void run(const tensor<S>& first, const tensor<S>& second, tensor<S>& out, channel_moments& moments) {
    p_.check(first.shape(), second.shape(), out.shape());
    run_on(conv_input<S>(first, second), out, &moments);
  }

  /// out = conv(act(InstanceNorm(in))), the norm applied as the input is staged (`in` is left as it is): its
  /// statistics in one pass over `in` (timed as an instance_norm), then the convolution.
  void run(const tensor<S>& in, const ops::instance_norm_epilogue& e, tensor<S>& out) {
    p_.check(in.shape(), out.shape());
    instance_statistics stats;
    {
      const auto timed = ctx_.time_op([&] {
        return op_label{"instance_norm",
                        detail::concat("instance_norm C", in.shape().c, " @", grid_name(in.shape()), " statistics")};
      });
      stats = instance_norm_statistics(ctx_, in, e.eps);
    }
    run_on(conv_input<S>(in, stats, e), out, nullptr);
  }

  /// out = conv(act(InstanceNorm(in))) from in's moments (gathered where `in` was written: no pass over it), and
  /// out's moments as run(in, out, moments) gathers them.
  void run(const tensor<S>& in, const channel_moments& in_moments, const ops::instance_norm_epilogue& e,
           tensor<S>& out, channel_moments& moments) {
    p_.check(in.shape(), out.shape());
    in_moments.check_for(in.shape(), "conv3d");
    run_on(conv_input<S>(in, statistics_from(in_moments, e.eps), e), out, &moments);
  }

 private:
  /// How a call computes (route_for chooses in this order).
  enum class route { int8, amx, winograd4, pairs, winograd2, whole_grid, direct };

  route route_for(const shape5& os) const {
    if (int8_weights_.layout().groups() > 0) return route::int8;
#ifdef SWINFER_CPU_AMX
    if (amx_weights_.groups() > 0) return route::amx;
#endif
    if (winograd4_ && winograd4::pays(os)) return route::winograd4;
#ifdef SWINFER_CPU_AVX512_BF16
    if (pair_weights_.layout().groups() > 0) return route::pairs;
#endif
    if (winograd2_ && winograd2::pays(os)) return route::winograd2;
    if (by_whole_grid(os)) return route::whole_grid;
    return route::direct;
  }

  /// out = conv(in), and where `moments` is given, out's moments.
  void run_on(const conv_input<S>& in, tensor<S>& out, channel_moments* moments) {
    p_.check(in.shape(), out.shape());
    const route how = route_for(out.shape());
    const auto timed = ctx_.time_op([&] {
      const auto& k = p_.kernel;
      std::string kind = detail::concat("conv3d ", k[0], "x", k[1], "x", k[2]);
      if (p_.stride != std::array<int, 3>{1, 1, 1}) kind += " strided";
      const double outputs = static_cast<double>(out.shape().n * out.shape().spatial());
      return op_label{kind, detail::concat(kind, " ", p_.cin, "->", p_.cout, " @", grid_name(out.shape()),
                                           how == route::winograd4   ? " winograd4"
                                           : how == route::winograd2 ? " winograd"
                                                                     : ""),
                      2.0 * static_cast<double>(p_.weight_count()) * outputs};
    });
    if (!moments) {
      compute(how, in, out, nullptr);
      return;
    }
    // The routes that store whole output rows record their moments as they store them (channels-last).
    const bool by_rows = how != route::winograd4 && how != route::winograd2 && out.layout() == layout_kind::ndhwc;
    std::optional<row_moment_records> records;
    if (by_rows && out.size() > 0) records.emplace(ctx_, out.shape());
    compute(how, in, out, records ? &*records : nullptr);
    *moments = records ? records->merge() : instance_norm_moments(ctx_, out);
  }

  /// out = conv(in) on route `how`, each stored output row's moments into `records` (if any).
  void compute(route how, const conv_input<S>& in, tensor<S>& out, const row_moment_records* records) {
    const shape5& os = out.shape();
    const int kd = p_.kernel[0], kh = p_.kernel[1], kw = p_.kernel[2];
    const std::int64_t cin = p_.cin, run = std::int64_t{kw} * cin, a_stride = std::int64_t{p_.stride[2]} * cin;
    if constexpr (std::is_same_v<S, float>) {
      if (ctx_.observes(p_.int8.point)) ctx_.observe_input(p_.int8.point, in.materialized(ctx_));
    }
    switch (how) {
      case route::int8: {
        if constexpr (std::is_same_v<S, float>) {
          if (p_.int8.dynamic) set_input_scale(ops::dynamic_scale_of_largest(in.largest_magnitude(ctx_)));
        }
        const panel_layout& ql = int8_weights_.layout();
        sweep<std::uint8_t>(in, out, records, ql.groups(), int8_weights_.group_bytes(), int8_dot::quad,
                            int8_dot::tile_shapes_for(int8_weights_),
                            [&](const std::uint8_t* const* rows, int g, float* tile) {
                              int8_dot::gemm_group(rows, kd * kh, a_stride, os.w, int8_weights_, g,
                                                   reinterpret_cast<std::int32_t*>(tile), group_width);
                              const std::int64_t col0 = ql.group_col0(g);
                              int8_dot::dequantize_tile(tile, os.w, ql.group_cols(g), group_width,
                                                        int8_weights_.compensation() + col0, int8_scales_.data() + col0,
                                                        p_.bias ? bias_.data() + col0 : nullptr);
                            });
        return;
      }
      case route::amx:
#ifdef SWINFER_CPU_AMX
        if constexpr (std::is_same_v<S, Eigen::bfloat16>) {
          sweep<S>(in, out, records, amx_weights_.groups(), amx_weights_.group_bytes(), amx::tile_depth,
                   amx::full_tiles(), [&](const S* const* rows, int g, float* tile) {
                     const amx::tile_scope tiles;  // the sweep's: loads nothing
                     amx::gemm_group(rows, kd * kh, a_stride, os.w, amx_weights_, g,
                                     amx_bias_.empty() ? nullptr : amx_bias_.data() + g * amx::tile_rows * group_width,
                                     tile, group_width);
                   });
        }
#endif
        return;
      case route::winograd4:
        winograd4_->run(ctx_, in, out);
        return;
      case route::pairs:
#ifdef SWINFER_CPU_AVX512_BF16
        if constexpr (std::is_same_v<S, Eigen::bfloat16>) {
          const panel_layout& pl = pair_weights_.layout();
          sweep<S>(in, out, records, pl.groups(), pl.group_bytes(), bf16_dot::pair, std::nullopt,
                   [&](const S* const* rows, int g, float* tile) {
                     bf16_dot::gemm_group(rows, kd * kh, pair_weights_.pairs_per_segment(), a_stride, os.w,
                                          pair_weights_.panel(g), pl.packets(g),
                                          p_.bias ? bias_.data() + pl.group_col0(g) : nullptr, tile, group_width);
                   });
        }
#endif
        return;
      case route::winograd2:
        winograd2_->run(ctx_, in, out);
        return;
      case route::whole_grid:
        whole_grid_product(in, out, records);
        return;
      case route::direct: {
        const panel_layout& wl = weights_.layout();
        sweep<float>(in, out, records, wl.groups(), wl.group_bytes(), 0, std::nullopt,
                     [&](const float* const* rows, int g, float* tile) {
                       gemm_group({rows, kd * kh, run, a_stride}, os.w, weights_.panel(g), wl.packets(g),
                                  p_.bias ? bias_.data() + wl.group_col0(g) : nullptr, 0, tile, group_width);
                     });
        return;
      }
    }
  }

  /// The float32 path's large weights on small grids (the bottom of the U: 768 -> 768 at 3^3, 768 -> 384 and
  /// 384 -> 384 at 6^3): the sweep's work items are output planes, each streaming the whole weight panel (64 MiB at
  /// 768 -> 768) once per output row for micro tiles whose 8 rows hold 3 or 6 outputs. Here the whole grid's im2col
  /// rows are one A (at most whole_grid_floats), and each column group streams its weights once over every row:
  /// fs48's three such convolutions 53 -> 38 ms per forward (2-core Zen 4).
  static constexpr std::int64_t whole_grid_most_voxels = 512, whole_grid_floats = std::int64_t{8} << 20;
  static constexpr std::int64_t whole_grid_least_weight_floats = std::int64_t{1} << 19;  // 2 MiB: past L2
  bool by_whole_grid(const shape5& os) const {
    const panel_layout& wl = weights_.layout();
    const std::int64_t rows = round_up(os.n * os.spatial(), max_micro_rows);
    return os.spatial() <= whole_grid_most_voxels && rows * wl.depth <= whole_grid_floats &&
           wl.size() >= whole_grid_least_weight_floats;
  }

  /// out = conv(in) as one GEMM: A [N * D' * H' * W'][kd * kh * kw * cin] gathered once (zero in the padding), then
  /// one work item per column group.
  void whole_grid_product(const conv_input<S>& in, tensor<S>& out, const row_moment_records* records) {
    const shape5& is = in.shape();
    const shape5& os = out.shape();
    const std::int64_t depth = weights_.layout().depth, cin = p_.cin, outputs = os.n * os.spatial();
    const std::int64_t rows = round_up(outputs, max_micro_rows);
    std::vector<float> a(static_cast<std::size_t>(rows * depth), 0.0f);  // the slack rows stay zero
    ctx_.parallel_for(outputs, 1, [&](std::int64_t m0, std::int64_t m1, int) {
      for (std::int64_t m = m0; m < m1; ++m) {
        const std::int64_t ox = m % os.w, oy = (m / os.w) % os.h, oz = (m / (os.w * os.h)) % os.d;
        const std::int64_t n = m / os.spatial();
        float* row = a.data() + m * depth;
        for (int kz = 0; kz < p_.kernel[0]; ++kz)
          for (int ky = 0; ky < p_.kernel[1]; ++ky)
            for (int kx = 0; kx < p_.kernel[2]; ++kx, row += cin) {
              const std::int64_t z = oz * p_.stride[0] - p_.pad[0] + kz, y = oy * p_.stride[1] - p_.pad[1] + ky;
              const std::int64_t x = ox * p_.stride[2] - p_.pad[2] + kx;
              const bool inside = z >= 0 && z < is.d && y >= 0 && y < is.h && x >= 0 && x < is.w;
              if (inside) in.load_run(n, z, y, x, 1, row);
            }
      }
    });
    const panel_layout& wl = weights_.layout();
    ctx_.parallel_for(wl.groups(), 1, [&](std::int64_t g0, std::int64_t g1, int worker) {
      float* tile = ctx_.workspace(worker).reserve(rows * group_width);
      const float* base = a.data();
      for (auto g = static_cast<int>(g0); g < g1; ++g) {
        const std::int64_t col0 = wl.group_col0(g);
        gemm_group({&base, 1, depth, depth}, outputs, weights_.panel(g), wl.packets(g),
                   p_.bias ? bias_.data() + col0 : nullptr, 0, tile, group_width);
        for (std::int64_t n = 0; n < os.n; ++n)
          for (std::int64_t oz = 0; oz < os.d; ++oz)
            for (std::int64_t oy = 0; oy < os.h; ++oy) {
              float* row = tile + ((n * os.d + oz) * os.h + oy) * os.w * group_width;
              store_row(out, n, oz, oy, col0, wl.group_cols(g), row, records);
            }
      }
    });
  }

  /// The parallel sweep shared by both paths: stages input planes as D into each worker's ring and calls
  /// product(tap_rows, group, tile) for every output row and column group, then stores the tile.
  /// `slack` extra D values past the last plane are zeroed for products that read past a row's run; each worker
  /// holds the AMX tile configuration `tiles` (if any) over its share.
  template <class D, class Product>
  void sweep(const conv_input<S>& in, tensor<S>& out, const row_moment_records* records, int groups,
             std::int64_t group_bytes, std::int64_t slack, const std::optional<amx::tile_shapes>& tiles,
             Product&& product) {
    const shape5& is = in.shape();
    const shape5& os = out.shape();
    const int kd = p_.kernel[0], kh = p_.kernel[1], kw = p_.kernel[2];
    const int sd = p_.stride[0], sh = p_.stride[1], sw = p_.stride[2];
    const int pd = p_.pad[0], ph = p_.pad[1], pw = p_.pad[2];
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
    const std::int64_t plane_tasks = os.n * chunks * os.d, rows_per_block = ctx_.rows_per_item(plane_tasks, os.h);
    const std::int64_t row_blocks = (os.h + rows_per_block - 1) / rows_per_block;
    const std::int64_t tasks = plane_tasks * row_blocks, padded_depth = is.d + 2 * pd;

    ctx_.parallel_for(tasks, ctx_.even_grain(tasks), [&](std::int64_t t0, std::int64_t t1, int worker) {
      const amx::optional_tile_scope held(tiles);
      float* scratch = ctx_.workspace(worker).reserve(ring_floats + tile_floats);
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
            stage_plane(in, n, pz - pd, ph, pw, plane_h, row_values, plane);
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
  void stage_plane(const conv_input<S>& in, std::int64_t n, std::int64_t z, int ph, int pw, std::int64_t plane_h,
                   std::int64_t row_values, D* plane) const {
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
        in.quantize_row(n, z, y, row + left, 1.0f / input_scale_);
      } else {
        in.load_row(n, z, y, row + left);
      }
      std::fill(row + left + body, row + row_values, zero);
    }
  }

  /// The int8 path's activation scale: the calibrated one, or (dynamic) the current input's.
  void set_input_scale(float scale) {
    input_scale_ = scale;
    for (std::size_t co = 0; co < weight_scales_.size(); ++co) int8_scales_[co] = scale * weight_scales_[co];
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

  context& ctx_;
  ops::conv3d_problem p_;
  packed_matrix weights_;    ///< float32 path
  std::optional<winograd2> winograd2_;  ///< 3x3x3 convs where F(2x2x2) pays (float32 storage, or F(4x4x4) does not)
  std::optional<winograd4> winograd4_;  ///< 3x3x3 convs under 16-bit storage where F(4x4x4) pays
  int8_dot::packed_quads int8_weights_;  ///< int8 path (a quantized problem); empty otherwise
  std::vector<float> int8_scales_;       ///< per column: input scale x weight scale, zero padded like bias_
  std::vector<float> weight_scales_;     ///< int8 path: per output channel
  float input_scale_ = 0;                ///< int8 path: the activation scale of the current input
  std::vector<float> bias_;  ///< zero padded to whole column groups (the accumulators' start)
#ifdef SWINFER_CPU_AMX
  amx::packed_bf16 amx_weights_;  ///< AMX path (bf16 storage on AMX hardware); empty otherwise
  std::vector<float> amx_bias_;   ///< per group [16][48] repeated bias rows; empty without bias
#endif
#ifdef SWINFER_CPU_AVX512_BF16
  bf16_dot::packed_pairs pair_weights_;  ///< AVX-512 BF16 path (bf16 storage without AMX); empty otherwise
#endif
};

}  // namespace swinfer::cpu

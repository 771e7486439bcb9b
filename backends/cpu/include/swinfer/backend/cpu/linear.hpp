// swinfer cpu backend: the Linear layer on token rows with its bias, GELU and residual-add epilogues.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cstdint>
#include <optional>
#include <type_traits>
#include <vector>

#include "swinfer/backend/cpu/amx.hpp"
#include "swinfer/backend/cpu/bf16_dot.hpp"
#include "swinfer/backend/cpu/context.hpp"
#include "swinfer/backend/cpu/gemm.hpp"
#include "swinfer/backend/cpu/int8_matrix.hpp"
#include "swinfer/backend/cpu/simd.hpp"
#include "swinfer/backend/cpu/streaming_store.hpp"
#include "swinfer/core/error.hpp"
#include "swinfer/ops/linear.hpp"

namespace swinfer::cpu {

/// \brief y = act(x W^T + b) (or y += ...): x [rows][in], y [rows][out], storage S, float32 compute.
/// Weights are packed once as [in][48-column groups] float32, or, for bf16 storage on CPUs with AMX, as bf16 AMX
/// tiles (hi + lo, or hi alone with bf16_weight_mode::rounded; amx.hpp), or, for bf16 storage with rounded weights
/// where the AVX-512 BF16 pair dot product pays (bf16_dot::pays), as bf16 channel pairs, or, for a quantized problem
/// (precision::int8), as int8 quads with the rows quantized to uint8 as they are staged (int8_matrix.hpp).
/// Threads: work items are blocks of 64 rows; a worker stages its block once (as float32, bf16 for the AMX and pair
/// paths or uint8 for int8), then runs every column group over it and applies bias (as the accumulator start, or in
/// the int8 epilogue), GELU and the residual add before storing.
template <class S>
class linear {
 public:
  static constexpr std::int64_t rows_per_task = 64;  // a multiple of max_micro_rows

  linear(context& ctx, const ops::linear_problem& p, const float* weight, const float* bias) : ctx_(ctx), p_(p) {
    p.check_parameters(weight, bias);
    const std::int64_t in = p.in_features;
    auto element = [&](std::int64_t k, std::int64_t o) { return weight[o * in + k]; };
    if (p.int8.quantized()) int8_ = quantized_matrix(p.int8, weight, in, p.out_features);
#ifdef SWINFER_CPU_AMX
    if constexpr (std::is_same_v<S, Eigen::bfloat16>) {
      if (amx::available()) amx_weights_ = amx::packed_bf16(1, in, p.out_features, !ctx.round_bf16_weights(), element);
    }
#endif
#ifdef SWINFER_CPU_AVX512_BF16
    if constexpr (std::is_same_v<S, Eigen::bfloat16>) {
      if (ctx.round_bf16_weights() && bf16_dot::pays()) {
        pair_weights_ = bf16_dot::packed_pairs(1, in, p.out_features, element);
      }
    }
#endif
    if (!uses_pairs() && !uses_amx() && int8_.empty()) weights_ = packed_matrix(in, p.out_features, element);
    if (p.bias && bias) {  // "&& bias" is implied by the check above; it spares GCC 12 at -O3 a false -Wnonnull
      bias_.assign(static_cast<std::size_t>(round_up(p.out_features, group_width)), 0.0f);
      std::copy(bias, bias + p.out_features, bias_.begin());
#ifdef SWINFER_CPU_AMX
      if (uses_amx()) amx_bias_ = amx::repeated_bias_rows(bias_);
#endif
    }
  }

  /// The instruction path this instance runs: "fp32 fma", "amx bf16" ("amx bf16 rounded" with the weights rounded),
  /// "avx512 bf16 dot" or an int8 path (int8_dot::path_name).
  const char* path() const {
    if (!int8_.empty()) return int8_dot::path_name(int8_.path());
    if (uses_amx()) return amx_path();
    return uses_pairs() ? "avx512 bf16 dot" : "fp32 fma";
  }

  void run(const S* x, std::int64_t rows, S* y) {
    p_.check(rows);
    const auto timed = ctx_.time_op([&] {
      return op_label{"linear",
                      detail::concat("linear ", p_.in_features, "->", p_.out_features, p_.gelu ? " +gelu" : "",
                                     p_.accumulate ? " +add" : "", ", ", rows, " rows"),
                      2.0 * static_cast<double>(rows) * p_.in_features * p_.out_features};
    });
    const std::int64_t in = p_.in_features, out = p_.out_features;
    if constexpr (std::is_same_v<S, float>) ctx_.observe_rows(p_.int8.point, x, rows, in);
    const bool pairs = uses_pairs(), tiles = uses_amx(), quantized = !int8_.empty();
    const panel_layout& wl = quantized ? int8_.layout() : pairs ? pair_layout() : weights_.layout();
    const int groups = tiles ? amx_groups() : wl.groups();
    const std::int64_t blocks = (rows + rows_per_task - 1) / rows_per_task;
    // Staged block: float32 rows, or bf16 rows (half the floats; for AMX padded to whole tile depths, else one pair
    // of slack for an odd `in`), or uint8.
    const std::int64_t staged_floats = quantized ? int8_.staged_floats(rows_per_task)
                                       : tiles   ? rows_per_task * amx_stride() / 2
                                       : pairs   ? round_up(rows_per_task * in + 2, 32) / 2
                                                 : rows_per_task * in;
    const bool streamed = !p_.accumulate && streams_output<S>(rows * out);
    const std::optional<amx::tile_shapes> tile_shapes =
        quantized ? int8_.tile_shapes() : tiles ? std::optional(amx::full_tiles()) : std::nullopt;
    ctx_.parallel_for(blocks, 1, [&](std::int64_t b0, std::int64_t b1, int worker) {
      const amx::optional_tile_scope held(tile_shapes);
      float* staged = ctx_.workspace(worker).reserve(staged_floats + rows_per_task * group_width);
      float* tile = staged + staged_floats;
      for (std::int64_t b = b0; b < b1; ++b) {
        const std::int64_t r0 = b * rows_per_task, n = std::min(rows_per_task, rows - r0);
        for (int g = 0; g < groups; ++g) {
          const std::int64_t col0 = std::int64_t{g} * group_width;
          const int cols = static_cast<int>(std::min<std::int64_t>(group_width, out - col0));
          const float* start = bias_.empty() ? nullptr : bias_.data() + col0;
          if (quantized) {
            auto* bytes = reinterpret_cast<std::uint8_t*>(staged);
            if (g == 0) int8_.stage(x + r0 * in, n, in, bytes);
            int8_.product(bytes, int8_.staged_stride(), n, g, start, tile, group_width);
          } else if (tiles) {
            product_tiles(x + r0 * in, n, g == 0, reinterpret_cast<S*>(staged), g, tile);
          } else if (pairs) {
            product_pairs(x + r0 * in, n, g == 0, reinterpret_cast<S*>(staged), g, start, tile);
          } else {
            if (g == 0) to_floats(x + r0 * in, staged, n * in);
            const float* base = staged;
            gemm_group(row_segments{&base, 1, in, in}, n, weights_.panel(g), wl.packets(g), start, 0, tile,
                       group_width);
          }
          if (p_.gelu) gelu_in_place(tile, n * group_width);
          for (std::int64_t r = 0; r < n; ++r) {
            S* dst = y + (r0 + r) * out + col0;
            if (p_.accumulate) {
              add_floats(tile + r * group_width, dst, cols);
            } else {
              store_floats(tile + r * group_width, dst, cols, streamed);
            }
          }
        }
      }
    });
  }

 private:
#ifdef SWINFER_CPU_AMX
  bool uses_amx() const { return amx_weights_.groups() > 0; }
  const char* amx_path() const { return amx_weights_.exact() ? "amx bf16" : "amx bf16 rounded"; }
  int amx_groups() const { return amx_weights_.groups(); }
  /// Staged row stride: `in` zero padded to whole tile depths, the chunks the AMX products read.
  std::int64_t amx_stride() const { return round_up(p_.in_features, amx::tile_depth); }
  /// Column group g of a block of n rows on AMX tiles, the bias as the tiles' start; `stage` copies the rows in
  /// first, zero padded to the stride and to whole 16-row tiles.
  void product_tiles(const S* x, std::int64_t n, bool stage, S* staged, int g, float* tile) const {
    if constexpr (std::is_same_v<S, Eigen::bfloat16>) {
      const std::int64_t in = p_.in_features, stride = amx_stride();
      if (stage) {
        for (std::int64_t r = 0; r < n; ++r) {
          std::copy_n(x + r * in, in, staged + r * stride);
          std::fill(staged + r * stride + in, staged + (r + 1) * stride, S(0.0f));
        }
        std::fill(staged + n * stride, staged + round_up(n, amx::tile_rows) * stride, S(0.0f));
      }
      const S* base = staged;
      const amx::tile_scope tiles;
      amx::gemm_group(&base, 1, stride, n, amx_weights_, g,
                      amx_bias_.empty() ? nullptr : amx_bias_.data() + g * amx::tile_rows * group_width, tile,
                      group_width);
    }
  }
#else
  static constexpr bool uses_amx() { return false; }
  static constexpr const char* amx_path() { return ""; }
  static constexpr int amx_groups() { return 0; }
  static constexpr std::int64_t amx_stride() { return 0; }
  void product_tiles(const S*, std::int64_t, bool, S*, int, float*) const {}
#endif
#ifdef SWINFER_CPU_AVX512_BF16
  bool uses_pairs() const { return pair_weights_.layout().groups() > 0; }
  const panel_layout& pair_layout() const { return pair_weights_.layout(); }
  /// Column group g of a block of n rows on the pair path; `stage` copies the rows in first (zeroing the slack
  /// the micro tiles read past them, which an odd `in` pairs with zero weights).
  void product_pairs(const S* x, std::int64_t n, bool stage, S* staged, int g, const float* start, float* tile) const {
    if constexpr (std::is_same_v<S, Eigen::bfloat16>) {
      const std::int64_t in = p_.in_features;
      if (stage) {
        std::copy(x, x + n * in, staged);
        std::fill(staged + n * in, staged + round_up(n, max_micro_rows) * in + 2, S(0.0f));
      }
      const S* base = staged;
      bf16_dot::gemm_group(&base, 1, pair_weights_.pairs_per_segment(), in, n, pair_weights_.panel(g),
                           pair_weights_.layout().packets(g), start, tile, group_width);
    }
  }
#else
  static constexpr bool uses_pairs() { return false; }
  const panel_layout& pair_layout() const { return weights_.layout(); }
  void product_pairs(const S*, std::int64_t, bool, S*, int, const float*, float*) const {}
#endif

  context& ctx_;
  ops::linear_problem p_;
  packed_matrix weights_;
  quantized_matrix int8_;    ///< int8 path (a quantized problem); empty otherwise
  std::vector<float> bias_;  ///< zero padded to whole column groups; empty: no bias
#ifdef SWINFER_CPU_AMX
  amx::packed_bf16 amx_weights_;  ///< bf16 storage on AMX hardware; empty otherwise
  std::vector<float> amx_bias_;   ///< per group [16][48] repeated bias rows; empty without bias
#endif
#ifdef SWINFER_CPU_AVX512_BF16
  bf16_dot::packed_pairs pair_weights_;  ///< bf16 storage on AVX-512 BF16 CPUs; empty otherwise
#endif
};

}  // namespace swinfer::cpu

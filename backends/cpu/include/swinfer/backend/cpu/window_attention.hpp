// swinfer cpu backend: fused (shifted-)window multi-head self-attention of a Swin block, x += attn(y).
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "swinfer/backend/cpu/context.hpp"
#include "swinfer/backend/cpu/gemm.hpp"
#include "swinfer/backend/cpu/int8_matrix.hpp"
#include "swinfer/backend/cpu/simd.hpp"
#include "swinfer/core/error.hpp"
#include "swinfer/core/precision.hpp"
#include "swinfer/core/tensor.hpp"
#include "swinfer/ops/window_attention.hpp"
#include "swinfer/ops/window_bias_cache.hpp"
#include "swinfer/ops/window_plan.hpp"

namespace swinfer::cpu {

/// \brief x += WindowAttention(y) for token tensors (N, C, D, H, W) (channels-last in the model; channels-first
/// works too), storage S, float32 compute.
///
/// One window is one work item, processed entirely in worker scratch (~0.5 MiB at fs48 stage 1, L2-resident):
/// gather its t tokens (shift roll and zero padding applied by index), qkv = X Wqkv^T + b [t x 3C], q *= scale,
/// then per head and per 16 query rows: scores = q k^T [16 x t], + relative bias + shift mask (-100) in one
/// streaming pass, softmax (unnormalised exp; 1/sum applied to P.v), P.v [16 x hd]; finally proj [t x C] and a
/// scatter-add of the real tokens into x. Scores never leave L1. Under precision::int8 the qkv and proj products
/// whose inputs are quantized (calibrated, or each row's dynamic scale) run on int8 (int8_matrix.hpp), the window's
/// rows quantized as they are staged; the attention products and the softmax stay float32. The dense bias
/// [heads][t][t] (1.5 MiB at fs48 stage 1, read row by row as the softmax streams it, not as GEMM start values:
/// those loads stall every micro tile) and the region ids depend only on the plan: ops::window_bias_cache keeps
/// them for the last plan, and the bias is laid out like the scores again only when it changes.
/// Threads: work items are (sample, window), claimed one at a time (masked windows cost a little more).
template <class S>
class window_attention {
 public:
  /// Query rows per scores block: [16 x t] floats stay in L1 for the bias, softmax and P.v passes.
  static constexpr std::int64_t query_rows = max_micro_rows;

  window_attention(context& ctx, const ops::window_attention_weights& w) : ctx_(ctx), w_(w) {
    w.check();
    tables_ = ops::window_bias_cache(w);
    const std::int64_t c = w.channels;
    if (w.qkv_int8.quantized()) {
      qkv_int8_ = quantized_matrix(w.qkv_int8, w.qkv_weight, c, 3 * c);
    } else {
      qkv_ = packed_matrix(c, 3 * c, [&](std::int64_t k, std::int64_t o) { return w.qkv_weight[o * c + k]; });
    }
    if (w.proj_int8.quantized()) {
      proj_int8_ = quantized_matrix(w.proj_int8, w.proj_weight, c, c);
    } else {
      proj_ = packed_matrix(c, c, [&](std::int64_t k, std::int64_t o) { return w.proj_weight[o * c + k]; });
    }
    qkv_bias_ = padded_bias(w.qkv_bias, 3 * c);
    proj_bias_ = padded_bias(w.proj_bias, c);
    // Packed above, and the bias table and index are copied into tables_: the op must not depend on the
    // checkpoint's lifetime.
    w_.qkv_weight = w_.qkv_bias = w_.proj_weight = w_.proj_bias = w_.bias_table = nullptr;
    w_.relative_index = nullptr;
  }

  void run(const tensor<S>& y, const ops::window_plan& plan, bool shifted, tensor<S>& x) {
    w_.check(y.shape(), x.shape(), plan);
    if (x.layout() != y.layout()) detail::fail("window_attention: y and x need one layout");
    const auto timed = ctx_.time_op([&] {
      return op_label{"window_attention",
                      detail::concat("window_attention C", w_.channels, " @", grid_name(y.shape()),
                                     shifted && plan.has_shift() ? " shifted" : ""),
                      2.0 * static_cast<double>(y.shape().n) * ops::window_attention_macs(plan, w_.channels)};
    });
    const shape5& s = y.shape();
    const std::int64_t c = w_.channels;
    const bool masked = shifted && plan.has_shift();
    update_caches(plan, masked);

    const int t = plan.tokens(), hd = w_.head_dim();
    const std::int64_t rows = round_up(t, max_micro_rows);
    const panel_layout kt{hd, t}, v{t, hd};
    const std::int64_t qkv_ld = round_up(3 * c, group_width), proj_ld = round_up(c, group_width);
    const std::int64_t score_ld = round_up(t, group_width), pv_ld = round_up(hd, group_width);
    // Worker scratch, in floats: X, qkv, attention output, proj output, K^T and V panels, scores, P.v block, the
    // window's region ids as floats, and the uint8 rows of the int8 products.
    const std::int64_t staged_floats = std::max(qkv_int8_.staged_floats(t), proj_int8_.staged_floats(t));
    const std::int64_t scratch = rows * (c + qkv_ld + c + proj_ld) + kt.size() + v.size() +
                                 query_rows * (score_ld + pv_ld) + score_ld + staged_floats;
    const float scale = w_.scale();
    const std::array<std::int64_t, 5>& st = y.strides();
    const std::int64_t cs = st[1];
    token_offsets_.resize(static_cast<std::size_t>(ctx_.threads()));
    // Calibration sees the two linears' inputs as MONAI computes them: every window's rows, pad tokens included.
    const std::int64_t items = s.n * plan.num_windows();
    window_rows qkv_seen(ctx_, w_.qkv_int8.point, items * t, c), proj_seen(ctx_, w_.proj_int8.point, items * t, c);

    ctx_.parallel_for(s.n * plan.num_windows(), 1, [&](std::int64_t i0, std::int64_t i1, int worker) {
      float* tokens = ctx_.workspace(worker).reserve(scratch);
      float* qkv = tokens + rows * c;
      float* att = qkv + rows * qkv_ld;
      float* proj = att + rows * c;
      float* kt_panel = proj + rows * proj_ld;
      float* v_panel = kt_panel + kt.size();
      float* scores = v_panel + v.size();
      float* pv = scores + query_rows * score_ld;
      float* regions = pv + query_rows * pv_ld;
      auto* staged = reinterpret_cast<std::uint8_t*>(regions + score_ld);
      std::vector<std::int64_t>& offsets = token_offsets_[static_cast<std::size_t>(worker)];
      offsets.resize(static_cast<std::size_t>(t));

      for (std::int64_t item = i0; item < i1; ++item) {
        const std::int64_t n = item / plan.num_windows(), win = item % plan.num_windows();
        // Gather: token i is pad (zero) or y(n, :, src) with the roll undone by index.
        std::fill(tokens + t * c, tokens + rows * c, 0.0f);
        for (int i = 0; i < t; ++i) {
          std::array<std::int64_t, 3> src{};
          float* row = tokens + i * c;
          if (!ops::window_token_source(plan, shifted, win, i, src)) {
            offsets[i] = -1;
            std::fill(row, row + c, 0.0f);
            continue;
          }
          offsets[i] = n * st[0] + src[0] * st[2] + src[1] * st[3] + src[2] * st[4];
          gather_channels(y.data() + offsets[i], cs, c, row);
        }
        qkv_seen.copy(item * t, tokens, t);
        linear_rows(qkv_, qkv_int8_, tokens, t, qkv_bias_, staged, qkv, qkv_ld);
        for (int i = 0; i < t; ++i) Eigen::Map<Eigen::ArrayXf>(qkv + i * qkv_ld, c) *= scale;

        const bool window_masked = masked && tables_.mixed_windows()[static_cast<std::size_t>(win)];
        const std::uint8_t* region = masked ? tables_.regions().data() + win * t : nullptr;
        if (window_masked) {
          std::copy(region, region + t, regions);
          std::fill(regions + t, regions + score_ld, 0.0f);
        }
        for (int h = 0; h < w_.heads; ++h) {
          const float* q = qkv + h * hd;
          const float* k = qkv + c + h * hd;
          const float* val = qkv + 2 * c + h * hd;
          kt.pack([&](std::int64_t d, std::int64_t j) { return k[j * qkv_ld + d]; }, kt_panel);
          v.pack([&](std::int64_t j, std::int64_t d) { return val[j * qkv_ld + d]; }, v_panel);
          for (std::int64_t r0 = 0; r0 < t; r0 += query_rows) {
            const std::int64_t block = std::min<std::int64_t>(query_rows, t - r0);
            const float* q_rows = q + r0 * qkv_ld;
            for (int g = 0; g < kt.groups(); ++g) {
              gemm_group({&q_rows, 1, hd, qkv_ld}, block, kt_panel + kt.offset(g), kt.packets(g), nullptr, 0,
                         scores + kt.group_col0(g), score_ld);
            }
            const float* bias_rows = bias_.data() + (h * rows + r0) * score_ld;
            float inv_sum[query_rows];
            for (std::int64_t r = 0; r < block; ++r) {
              float* row = scores + r * score_ld;
              add_bias_and_mask(bias_rows + r * score_ld, window_masked ? regions : nullptr,
                                window_masked ? region[r0 + r] : 0, t, row);
              inv_sum[r] = 1.0f / exp_minus_max(row, t);
            }
            const float* p_rows = scores;
            for (int g = 0; g < v.groups(); ++g) {
              gemm_group({&p_rows, 1, t, score_ld}, block, v_panel + v.offset(g), v.packets(g), nullptr, 0,
                         pv + v.group_col0(g), pv_ld);
            }
            for (std::int64_t r = 0; r < block; ++r) {
              Eigen::Map<Eigen::ArrayXf>(att + (r0 + r) * c + h * hd, hd) =
                  Eigen::Map<const Eigen::ArrayXf>(pv + r * pv_ld, hd) * inv_sum[r];
            }
          }
        }
        proj_seen.copy(item * t, att, t);
        linear_rows(proj_, proj_int8_, att, t, proj_bias_, staged, proj, proj_ld);
        for (int i = 0; i < t; ++i) {
          if (offsets[i] >= 0) scatter_add_channels(proj + i * proj_ld, cs, c, x.data() + offsets[i]);
        }
      }
    });
    qkv_seen.hand_over();
    proj_seen.hand_over();
  }

 private:
  /// \brief Calibration's copy of one linear's input rows, filled by the workers and handed to the observer after
  /// the parallel loop (observers run on the calling thread); nothing when calibration does not observe the point.
  class window_rows {
   public:
    window_rows(const context& ctx, const std::string& point, std::int64_t rows, std::int64_t channels)
        : ctx_(ctx), point_(point) {
      if constexpr (std::is_same_v<S, float>) {
        if (ctx.observes(point)) rows_ = tensor<float>({1, channels, 1, 1, rows}, layout_kind::ndhwc);
      }
    }
    /// Rows [row0, row0 + count) from x (rows of `channels` floats).
    void copy(std::int64_t row0, const float* x, std::int64_t count) {
      if (rows_.size() == 0) return;
      const std::int64_t channels = rows_.shape().c;
      std::copy_n(x, count * channels, rows_.data() + row0 * channels);
    }
    void hand_over() const {
      if (rows_.size() > 0) ctx_.observe_input(point_, rows_);
    }

   private:
    const context& ctx_;
    const std::string& point_;
    tensor<float> rows_;
  };

  /// row[j] += bias[j], and the shift mask where the window's region ids (as floats; null: unmasked) differ from
  /// the query's `own`, over round_up(t, packet_size) values (the padding stays finite).
  static void add_bias_and_mask(const float* bias, const float* regions, float own, std::int64_t t, float* row) {
    using namespace Eigen::internal;
    const packet own_id = pset1<packet>(own), zero = pset1<packet>(0.0f);
    const packet mask_value = pset1<packet>(ops::shift_mask_value);
    for (std::int64_t j = 0; j < t; j += packet_size) {
      packet s = padd(ploadu<packet>(row + j), ploadu<packet>(bias + j));
      if (regions) s = padd(s, pselect(pcmp_eq(ploadu<packet>(regions + j), own_id), zero, mask_value));
      pstoreu(row + j, s);
    }
  }

  static std::vector<float> padded_bias(const float* bias, std::int64_t n) {
    std::vector<float> padded(static_cast<std::size_t>(round_up(n, group_width)), 0.0f);
    if (bias) std::copy(bias, bias + n, padded.begin());
    return padded;
  }

  /// c[rows][cols] = a b + bias for rows of `b`'s depth floats at a, on every column group: in float32, or on
  /// int8 where `quantized` holds the weights (its uint8 rows staged in `staged`).
  static void linear_rows(const packed_matrix& b, const quantized_matrix& quantized, const float* a, std::int64_t rows,
                          const std::vector<float>& bias, std::uint8_t* staged, float* c, std::int64_t ldc) {
    if (!quantized.empty()) {
      quantized.stage(a, rows, quantized.depth(), staged);
      for (int g = 0; g < quantized.layout().groups(); ++g) {
        const std::int64_t col0 = quantized.layout().group_col0(g);
        quantized.product(staged, quantized.staged_stride(), rows, g, bias.data() + col0, c + col0, ldc);
      }
      return;
    }
    const panel_layout& l = b.layout();
    const float* base = a;
    for (int g = 0; g < l.groups(); ++g) {
      gemm_group({&base, 1, l.depth, l.depth}, rows, b.panel(g), l.packets(g), bias.data() + l.group_col0(g), 0,
                 c + l.group_col0(g), ldc);
    }
  }

  static void gather_channels(const S* src, std::int64_t stride, std::int64_t c, float* dst) {
    if (stride == 1) {
      to_floats(src, dst, c);
    } else {
      for (std::int64_t ch = 0; ch < c; ++ch) dst[ch] = to_float(src[ch * stride]);
    }
  }

  static void scatter_add_channels(const float* src, std::int64_t stride, std::int64_t c, S* dst) {
    if (stride == 1) {
      add_floats(src, dst, c);
    } else {
      for (std::int64_t ch = 0; ch < c; ++ch) dst[ch * stride] = from_float<S>(to_float(dst[ch * stride]) + src[ch]);
    }
  }

  /// Brings the shared tables up to date for the plan and, when the dense bias changed, lays it out like the
  /// scores (rows padded to 16, columns to 48, zeros in the padding).
  void update_caches(const ops::window_plan& plan, bool masked) {
    if (!tables_.update(plan, masked).bias) return;
    const int t = plan.tokens();
    const std::int64_t rows = round_up(t, max_micro_rows), ld = round_up(t, group_width);
    const std::vector<float>& dense = tables_.bias();
    bias_.assign(static_cast<std::size_t>(w_.heads * rows * ld), 0.0f);
    for (std::int64_t h = 0; h < w_.heads; ++h)
      for (std::int64_t i = 0; i < t; ++i) {
        std::copy_n(dense.data() + (h * t + i) * t, t, bias_.data() + (h * rows + i) * ld);
      }
  }

  context& ctx_;
  ops::window_attention_weights w_;
  packed_matrix qkv_, proj_;
  quantized_matrix qkv_int8_, proj_int8_;    ///< int8 paths (a quantized input); empty otherwise
  std::vector<float> qkv_bias_, proj_bias_;  ///< zero padded to whole column groups (zero when absent)
  ops::window_bias_cache tables_;            ///< dense bias and region ids of the last plan

  /// The cached dense relative bias, [heads][round_up(t, 16) rows][round_up(t, 48) columns], zero padded: the
  /// scores' starting value, laid out like the scores.
  std::vector<float> bias_;
  std::vector<std::vector<std::int64_t>> token_offsets_;  ///< per worker: element offset of each token, -1 for pad
};

}  // namespace swinfer::cpu

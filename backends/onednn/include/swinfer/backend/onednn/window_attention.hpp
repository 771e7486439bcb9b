// swinfer oneDNN backend: (shifted-)window multi-head self-attention of a Swin block, x += attn(y).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "swinfer/backend/onednn/context.hpp"
#include "swinfer/backend/onednn/linear.hpp"
#include "swinfer/backend/onednn/memory.hpp"
#include "swinfer/core/tensor.hpp"
#include "swinfer/ops/window_attention.hpp"
#include "swinfer/ops/window_bias_cache.hpp"
#include "swinfer/ops/window_plan.hpp"

namespace swinfer::onednn {

/// \brief x += WindowAttention(y) on token volumes (N, C, D, H, W) of either layout (y and x must not alias).
///
/// Windows (over the whole batch, window order as MONAI's) are processed m at a time, t tokens each:
///   1. gather (host loop): window tokens of y on the rolled, zero-padded grid via ops::window_token_source
///      -> tokens (m*t, C); pad tokens are exact zeros and take part in attention, as in MONAI.
///   2. matmul qkv: (m*t, C) . Wqkv^T + b, post-op binary_mul by hd^-0.5 on the q columns (q is scaled in
///      f32 before q.k^T, as MONAI does) -> (m*t, 3C) laid out [window][token][q|k|v][head][hd].
///   3. reorder -> dense [q|k|v][window][head][token][hd]: oneDNN's batched matmul has fast kernels only
///      for dense batches (strided q/k/v views fall back to gemm:jit).
///   4. batched matmul q.k^T: (m, H, t, hd) x (m, H, hd, t) -> f32 scores (m, H, t, t), post-ops binary_add of
///      the dense relative bias (m, H, t, t) then, for shifted blocks, of the -100 region mask (m, 1, t, t).
///      oneDNN 2.6 fuses only these broadcast shapes without falling back to its reference matmul, hence the
///      bias replicated over m (built per run: ~1% of the run, and no memory held between runs) and the mask
///      filled per step.
///   5. softmax_v2_forward (accurate, max-subtracted) over the last axis, f32 in -> probabilities in S.
///   6. batched matmul p.v: (m, H, t, t) x (m, H, t, hd) -> (m, t, H*hd), heads concatenated by the dst strides.
///   7. matmul proj: (m*t, C) . Wproj^T + b -> f32 (m*t, C).
///   8. scatter (host loop): x[token] += proj for real tokens only (pad tokens are cropped), rounded once.
/// Clamped windows (t < configured) use MONAI's truncated index[:t, :t] through ops::dense_relative_bias; the dense
/// bias and the region ids come from ops::window_bias_cache, rebuilt when the plan changes.
template <class S>
class window_attention {
 public:
  window_attention(context& ctx, const ops::window_attention_weights& w)
      : ctx_(ctx),
        w_(checked(w)),
        channels_(w.channels),
        heads_(w.heads),
        head_dim_(w.head_dim()),
        tables_(w),
        qkv_(ctx, data_type_of<S>(), channels_, 3 * channels_, w.qkv_weight, w.qkv_bias,
             matmul_epilogue{q_scale(w), false, false, dt::undef}, w.qkv_int8),
        proj_(ctx, data_type_of<S>(), channels_, channels_, w.proj_weight, w.proj_bias,
              matmul_epilogue{{}, false, false, dt::f32}, w.proj_int8) {
    // Packed by the matmuls and copied into tables_: the op must not depend on the checkpoint's lifetime.
    w_.qkv_weight = w_.qkv_bias = w_.proj_weight = w_.proj_bias = w_.bias_table = nullptr;
    w_.relative_index = nullptr;
  }

  void run(const tensor<S>& y, const ops::window_plan& plan, bool shifted, tensor<S>& x) {
    w_.check(y.shape(), x.shape(), plan);
    const shape5& s = y.shape();
    const int t = plan.tokens();
    const std::int64_t per_sample = plan.num_windows(), total = s.n * per_sample;
    if (total == 0) return;
    const bool masked = shifted && plan.has_shift();
    tables_.update(plan, masked);
    const std::int64_t window_bytes = std::int64_t{heads_} * t * t * static_cast<std::int64_t>(sizeof(float));
    const std::int64_t step = std::clamp<std::int64_t>(step_bytes / window_bytes, 1, total);
    const dnnl::memory bias = replicated_bias(step);

    const std::int64_t rows = step * t, C = channels_;
    const dt sdt = data_type_of<S>();
    auto tokens = scratch(sdt, rows * C), qkv = scratch(sdt, rows * 3 * C), split = scratch(sdt, rows * 3 * C),
         scores = scratch(dt::f32, step * heads_ * t * t), probs = scratch(sdt, step * heads_ * t * t),
         att = scratch(sdt, rows * C), out = scratch(dt::f32, rows * C),
         mask = scratch(dt::f32, masked ? step * t * t : 1);
    std::vector<std::int64_t> x_offset(static_cast<std::size_t>(rows));

    for (std::int64_t g0 = 0; g0 < total; g0 += step) {
      const std::int64_t m = std::min(step, total - g0);
      gather(y, x, plan, shifted, g0, m, ptr<S>(tokens), x_offset.data());
      qkv_.run(ptr<S>(tokens), m * t, ptr<S>(qkv));
      split_heads(m, t, qkv, split);
      if (masked) fill_mask(tables_.regions(), per_sample, g0, m, t, ptr<float>(mask));
      attention(m, t, masked, split, bias, mask, scores, probs, att);
      proj_.run(ptr<S>(att), m * t, ptr<float>(out));
      scatter_add(x, m * t, ptr<float>(out), x_offset.data());
    }
  }

 private:
  /// Windows per step: the step's f32 scores stay near 16 MiB (its scratch, with probabilities and replicated
  /// bias, near 48 MiB whatever the volume), while each primitive still gets several windows to spread over
  /// its threads.
  static constexpr std::int64_t step_bytes = std::int64_t{16} << 20;

  static const ops::window_attention_weights& checked(const ops::window_attention_weights& w) {
    w.check();
    return w;
  }

  static std::vector<float> q_scale(const ops::window_attention_weights& w) {
    std::vector<float> scale(static_cast<std::size_t>(3 * w.channels), 1.0f);
    std::fill(scale.begin(), scale.begin() + w.channels, w.scale());
    return scale;
  }

  dnnl::memory scratch(dt type, std::int64_t count) { return dnnl::memory({{count}, type, tag::a}, ctx_.engine()); }
  template <class T>
  static T* ptr(const dnnl::memory& m) {
    return static_cast<T*>(m.get_data_handle());
  }

  /// The cached dense relative bias [H][t][t] repeated for `step` windows.
  dnnl::memory replicated_bias(std::int64_t step) {
    const std::vector<float>& one = tables_.bias();
    const auto size = static_cast<std::int64_t>(one.size());
    dnnl::memory bias = scratch(dt::f32, step * size);
    for (std::int64_t k = 0; k < step; ++k) std::copy(one.begin(), one.end(), ptr<float>(bias) + k * size);
    return bias;
  }

  /// Step 1: window tokens of y (zero rows for pad tokens), and where each token lives in x (-1: pad token).
  void gather(const tensor<S>& y, const tensor<S>& x, const ops::window_plan& plan, bool shifted, std::int64_t g0,
              std::int64_t m, S* tokens, std::int64_t* x_offset) const {
    const int t = plan.tokens();
    const std::int64_t per_sample = plan.num_windows(), C = channels_;
    const auto& ys = y.strides();
    const auto& xs = x.strides();
    SWINFER_ONEDNN_PARALLEL_FOR
    for (std::int64_t r = 0; r < m * t; ++r) {
      const std::int64_t g = g0 + r / t, n = g / per_sample;
      std::array<std::int64_t, 3> src{};
      S* row = tokens + r * C;
      if (ops::window_token_source(plan, shifted, g % per_sample, static_cast<int>(r % t), src)) {
        x_offset[r] = n * xs[0] + src[0] * xs[2] + src[1] * xs[3] + src[2] * xs[4];
        const S* p = y.data() + n * ys[0] + src[0] * ys[2] + src[1] * ys[3] + src[2] * ys[4];
        for (std::int64_t c = 0; c < C; ++c) row[c] = p[c * ys[1]];
      } else {
        x_offset[r] = -1;
        std::fill(row, row + C, from_float<S>(0.0f));
      }
    }
  }

  /// Step 3: (m, t, 3, H, hd) -> dense (3, m, H, t, hd).
  void split_heads(std::int64_t m, int t, const dnnl::memory& qkv, const dnnl::memory& split) {
    const std::int64_t C = channels_, H = heads_, hd = head_dim_;
    const dnnl::memory::dims dims{3, m, H, t, hd};
    const auto from = strided_md<S>(dims, {C, t * 3 * C, hd, 3 * C, 1});
    const dnnl::memory::desc to(dims, data_type_of<S>(), tag::abcde);
    ctx_.reorder(wrap(ctx_, from, qkv.get_data_handle()), wrap(ctx_, to, split.get_data_handle()));
  }

  /// The -100 / 0 mask of windows g0 .. g0+m-1: tokens of different shift regions do not attend.
  static void fill_mask(const std::vector<std::uint8_t>& regions, std::int64_t per_sample, std::int64_t g0,
                        std::int64_t m, int t, float* mask) {
    SWINFER_ONEDNN_PARALLEL_FOR
    for (std::int64_t k = 0; k < m; ++k) {
      const std::uint8_t* id = regions.data() + ((g0 + k) % per_sample) * t;
      float* mk = mask + k * t * t;
      for (int i = 0; i < t; ++i)
        for (int j = 0; j < t; ++j) mk[i * t + j] = id[i] == id[j] ? 0.0f : ops::shift_mask_value;
    }
  }

  /// Steps 4-6 on m windows: scores = q.k^T + bias [+ mask], softmax, att = p.v with heads concatenated.
  void attention(std::int64_t m, int t, bool masked, const dnnl::memory& split, const dnnl::memory& bias,
                 const dnnl::memory& mask, const dnnl::memory& scores, const dnnl::memory& probs,
                 const dnnl::memory& att) {
    const std::int64_t C = channels_, H = heads_, hd = head_dim_, block = m * H * t * hd;
    const dt sdt = data_type_of<S>();
    const dnnl::memory::desc q_md({m, H, t, hd}, sdt, tag::abcd), kt_md({m, H, hd, t}, sdt, tag::abdc);
    const dnnl::memory::desc scores_md({m, H, t, t}, dt::f32, tag::abcd), probs_md({m, H, t, t}, sdt, tag::abcd);
    const dnnl::memory::desc mask_md({m, 1, t, t}, dt::f32, tag::abcd);
    const auto att_md = strided_md<S>({m, H, t, hd}, {t * C, hd, C, 1});
    const auto key = cache_key(m, t, H, hd, static_cast<int>(sdt), masked);

    const auto& qk = ctx_.cached<dnnl::matmul>(cache_key("window_attention.qk", key), [&] {
      dnnl::post_ops po;
      po.append_binary(dnnl::algorithm::binary_add, scores_md);
      if (masked) po.append_binary(dnnl::algorithm::binary_add, mask_md);
      auto attr = context::strict_attr();
      attr.set_post_ops(po);
      const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(q_md, kt_md, scores_md), attr, ctx_.engine());
      return dnnl::matmul(pd);
    });
    const auto& softmax = ctx_.cached<dnnl::softmax_v2_forward>(cache_key("window_attention.softmax", key), [&] {
      const dnnl::softmax_v2_forward::desc desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::softmax_accurate,
                                                scores_md, probs_md, 3);
      return dnnl::softmax_v2_forward(
          dnnl::softmax_v2_forward::primitive_desc(desc, context::strict_attr(), ctx_.engine()));
    });
    const auto& pv = ctx_.cached<dnnl::matmul>(cache_key("window_attention.pv", key), [&] {
      const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(probs_md, q_md, att_md), context::strict_attr(),
                                            ctx_.engine());
      return dnnl::matmul(pd);
    });

    S* qkv = ptr<S>(split);
    std::unordered_map<int, dnnl::memory> qk_args{
        {DNNL_ARG_SRC, wrap(ctx_, q_md, qkv)},
        {DNNL_ARG_WEIGHTS, wrap(ctx_, kt_md, qkv + block)},
        {DNNL_ARG_DST, wrap(ctx_, scores_md, scores.get_data_handle())},
        {DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, wrap(ctx_, scores_md, bias.get_data_handle())}};
    if (masked)
      qk_args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(1) | DNNL_ARG_SRC_1] = wrap(ctx_, mask_md, mask.get_data_handle());
    ctx_.execute(qk, qk_args);
    ctx_.execute(softmax, {{DNNL_ARG_SRC, wrap(ctx_, scores_md, scores.get_data_handle())},
                           {DNNL_ARG_DST, wrap(ctx_, probs_md, probs.get_data_handle())}});
    ctx_.execute(pv, {{DNNL_ARG_SRC, wrap(ctx_, probs_md, probs.get_data_handle())},
                      {DNNL_ARG_WEIGHTS, wrap(ctx_, q_md, qkv + 2 * block)},
                      {DNNL_ARG_DST, wrap(ctx_, att_md, att.get_data_handle())}});
  }

  /// Step 8: x[token] += out row, real tokens only; each real token is in exactly one window (no races).
  void scatter_add(tensor<S>& x, std::int64_t rows, const float* out, const std::int64_t* x_offset) const {
    const std::int64_t C = channels_, cs = x.strides()[1];
    S* base = x.data();
    SWINFER_ONEDNN_PARALLEL_FOR
    for (std::int64_t r = 0; r < rows; ++r) {
      if (x_offset[r] < 0) continue;
      S* p = base + x_offset[r];
      const float* o = out + r * C;
      for (std::int64_t c = 0; c < C; ++c) p[c * cs] = from_float<S>(to_float(p[c * cs]) + o[c]);
    }
  }

  context& ctx_;
  ops::window_attention_weights w_;  ///< sizes and configured window (its pointers cleared after construction)
  int channels_, heads_, head_dim_;
  ops::window_bias_cache tables_;  ///< dense bias and region ids of the last plan
  matmul_layer qkv_, proj_;
};

}  // namespace swinfer::onednn

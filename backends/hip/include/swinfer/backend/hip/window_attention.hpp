// swinfer hip backend: fused (shifted-)window multi-head self-attention of a Swin block, x += attn(y), and the form
// with the LayerNorm before it applied as the tokens are gathered.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "swinfer/backend/hip/api.hpp"
#include "swinfer/backend/hip/context.hpp"
#include "swinfer/backend/hip/device_tensor.hpp"
#include "swinfer/backend/hip/gemm_weights.hpp"
#include "swinfer/backend/hip/layer_norm.hpp"
#include "swinfer/backend/hip/weight_packing.hpp"
#include "swinfer/core/error.hpp"
#include "swinfer/ops/window_attention.hpp"
#include "swinfer/ops/window_bias_cache.hpp"
#include "swinfer/ops/window_plan.hpp"

namespace swinfer::hip {

/// \brief x += WindowAttention(y) on device token tensors of S (any layout, one for both): qkv and proj weights
/// stored in S at construction (int8 where precision::int8 quantizes their inputs). The dense relative bias of the
/// plan's clamped window and the region ids of its shifted grid come from ops::window_bias_cache on the host and
/// are uploaded when the plan changes them (once per stage in the model), the bias transposed as the kernels read
/// it. See src/attention.cu for the kernels.
template <class S>
class window_attention {
 public:
  using volume = device_tensor<S>;

  window_attention(context& ctx, const ops::window_attention_weights& w) : ctx_(ctx), w_(w) {
    w.check();
    if (w.head_dim() > window_attention_max_head_dim()) {
      detail::fail("window_attention: head dim ", w.head_dim(), " exceeds the hip backend's ",
                   window_attention_max_head_dim());
    }
    const int c = w.channels;
    const std::vector<float> qkv = pack_linear_weight(c, 3 * c, w.qkv_weight);
    const std::vector<float> proj = pack_linear_weight(c, c, w.proj_weight);
    qkv_weight_ = gemm_weights<S>(ctx, "window_attention qkv", w.qkv_int8, qkv,
                                  [&] { return quantize_rows(qkv, 3 * c); });
    if (w.qkv_bias) qkv_bias_ = ctx.upload(w.qkv_bias, static_cast<std::size_t>(3 * c));
    proj_weight_ = gemm_weights<S>(ctx, "window_attention proj", w.proj_int8, proj,
                                   [&] { return quantize_rows(proj, c); });
    if (w.proj_bias) proj_bias_ = ctx.upload(w.proj_bias, static_cast<std::size_t>(c));
    tables_ = ops::window_bias_cache(w);
    // Uploaded above and copied into tables_: the op must not depend on the checkpoint's lifetime.
    w_.qkv_weight = w_.qkv_bias = w_.proj_weight = w_.proj_bias = w_.bias_table = nullptr;
    w_.relative_index = nullptr;
  }

  /// y, x: (N, C, D, H, W) device tokens of one shape and layout; x += attn(y). `shifted` for odd blocks.
  void run(const volume& y, const ops::window_plan& plan, bool shifted, volume& x) {
    launch(y, plan, shifted, x, nullptr);
  }
  /// x += attn(pre_norm(x)): the norm applied as the qkv GEMM gathers the shifted windows' tokens (norm, cyclic
  /// shift and window partition in one pass; the normalised tokens are never written).
  void run(const layer_norm<S>& pre_norm, volume& x, const ops::window_plan& plan, bool shifted) {
    w_.check_pre_norm(pre_norm.channels());
    const layer_norm_args args = pre_norm.args();
    launch(x, plan, shifted, x, &args);
  }

 private:
  void launch(const volume& y, const ops::window_plan& plan, bool shifted, volume& x,
              const layer_norm_args* pre_norm) {
    w_.check(y.shape(), x.shape(), plan);
    if (x.layout() != y.layout()) detail::fail("window_attention: y and x need one layout");
    const bool masked = shifted && plan.has_shift();
    update_tables(plan, masked);
    window_geometry g;
    g.grid = plan.grid;
    g.padded = plan.padded;
    g.windows = plan.windows;
    g.window = plan.window;
    g.shift = plan.shift;
    g.shifted = shifted;
    window_attention_args a;
    a.channels = w_.channels;
    a.heads = w_.heads;
    a.scale = w_.scale();
    a.qkv_weight = qkv_weight_.data();
    if (qkv_weight_.int8()) a.qkv_int8 = *qkv_weight_.int8();
    a.qkv_bias = static_cast<const float*>(qkv_bias_.get());
    a.proj_weight = proj_weight_.data();
    if (proj_weight_.int8()) a.proj_int8 = *proj_weight_.int8();
    a.proj_bias = static_cast<const float*>(proj_bias_.get());
    a.bias_t = static_cast<const float*>(bias_t_.get());
    a.regions = masked ? static_cast<const std::uint8_t*>(regions_.get()) : nullptr;
    void* scratch = ctx_.scratch(window_attention_scratch_bytes(y.shape().n, g, w_.channels));
    launch_window_attention(ctx_.env(), volume::type, y.data(), y.desc(), g, a, x.data(), x.desc(), scratch,
                            pre_norm);
  }

  /// Brings the shared host tables up to date for the plan and uploads what changed: the dense bias transposed
  /// ([h][i][j] -> [h][j][i], so consecutive query threads read consecutive addresses) and the region ids.
  void update_tables(const ops::window_plan& plan, bool masked) {
    const ops::window_bias_cache::changes changed = tables_.update(plan, masked);
    if (changed.bias) {
      const std::int64_t t = plan.tokens();
      const std::vector<float>& dense = tables_.bias();
      std::vector<float> transposed(dense.size());
      for (std::int64_t h = 0; h < w_.heads; ++h)
        for (std::int64_t i = 0; i < t; ++i)
          for (std::int64_t j = 0; j < t; ++j) transposed[(h * t + j) * t + i] = dense[(h * t + i) * t + j];
      bias_t_ = ctx_.upload(transposed);  // the old table is freed after the runs that read it
    }
    if (changed.regions) regions_ = ctx_.upload(tables_.regions());
  }

  context& ctx_;
  ops::window_attention_weights w_;  ///< sizes and configured window (its pointers cleared after construction)
  gemm_weights<S> qkv_weight_, proj_weight_;
  device_buffer qkv_bias_, proj_bias_;
  ops::window_bias_cache tables_;  ///< host dense bias and region ids of the last plan
  device_buffer bias_t_;           ///< tables_.bias() on the device as [h][j][i]
  device_buffer regions_;          ///< tables_.regions() on the device, [windows][t]
};

}  // namespace swinfer::hip

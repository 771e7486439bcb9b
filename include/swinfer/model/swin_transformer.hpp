// swinfer: MONAI's SwinTransformer encoder (swinViT): patch embedding, four Swin stages, normalised hidden states.
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "swinfer/core/backend.hpp"
#include "swinfer/model/backend_volume.hpp"
#include "swinfer/model/network_spec.hpp"
#include "swinfer/model/parameters.hpp"
#include "swinfer/model/res_block.hpp"
#include "swinfer/model/swin_unetr_config.hpp"
#include "swinfer/ops/conv3d.hpp"
#include "swinfer/ops/linear.hpp"
#include "swinfer/ops/patch_merging.hpp"
#include "swinfer/ops/window_attention.hpp"
#include "swinfer/ops/window_plan.hpp"

namespace swinfer::model {

/// Receives named intermediate outputs (float32, logical NCDHW) when a caller wants to inspect a forward pass.
using stage_observer = std::function<void(std::string_view name, const tensor<float>& value)>;

/// \brief One SwinTransformerBlock on token rows: x += attn(LN1(x)); x += MLP(LN2(x)).
template <class B, class P, class L>
class swin_block {
  using K = kernels<B, P, L>;
  using tokens = backend_volume_t<K>;

 public:
  /// Block `index` of `stage`.
  swin_block(typename K::context& ctx, const state_dict& sd, const swin_stage_spec& stage, int index,
             const std::int64_t* relative_index)
      : swin_block(ctx, sd, stage, index, stage.block_keys(index), relative_index) {}

  /// x: (N, C, D, H, W) tokens, channels-last. `shifted` for odd blocks (a no-op when the plan's shift is 0).
  void run(tokens& x, const ops::window_plan& plan, bool shifted) {
    const auto& s = x.shape();
    const std::int64_t rows = s.n * s.spatial();
    tokens h({s.n, hidden_, s.d, s.h, s.w}, layout_kind::ndhwc);
    if constexpr (fuses_layer_norm<K>) {
      attn_.run(norm1_, x, plan, shifted);
      fc1_.run(norm2_, x.data(), rows, h.data());
    } else {
      tokens y(s, layout_kind::ndhwc);
      norm1_.run(x.data(), rows, y.data());
      attn_.run(y, plan, shifted, x);
      norm2_.run(x.data(), rows, y.data());
      fc1_.run(y.data(), rows, h.data());
    }
    fc2_.run(h.data(), rows, x.data());
  }

 private:
  swin_block(typename K::context& ctx, const state_dict& sd, const swin_stage_spec& stage, int index,
             const swin_block_keys& k, const std::int64_t* relative_index)
      : norm1_(ctx, stage.channels, detail::param(sd, k.norm1_weight), detail::param(sd, k.norm1_bias), 1e-5f),
        attn_(ctx, attention_weights(sd, k, stage, index, relative_index)),
        norm2_(ctx, stage.channels, detail::param(sd, k.norm2_weight), detail::param(sd, k.norm2_bias), 1e-5f),
        fc1_(ctx, stage.mlp_in(index), detail::param(sd, k.mlp_in_weight), detail::param(sd, k.mlp_in_bias)),
        fc2_(ctx, stage.mlp_out(index), detail::param(sd, k.mlp_out_weight), detail::param(sd, k.mlp_out_bias)),
        hidden_(stage.hidden) {}

  static ops::window_attention_weights attention_weights(const state_dict& sd, const swin_block_keys& k,
                                                         const swin_stage_spec& stage, int index,
                                                         const std::int64_t* relative_index) {
    ops::window_attention_weights w;
    w.qkv_int8 = stage.qkv_int8(index);
    w.proj_int8 = stage.proj_int8(index);
    w.channels = stage.channels;
    w.heads = stage.heads;
    w.configured_window = stage.window;
    w.qkv_weight = detail::param(sd, k.qkv_weight);
    w.qkv_bias = detail::optional_param(sd, k.qkv_bias);
    w.proj_weight = detail::param(sd, k.proj_weight);
    w.proj_bias = detail::param(sd, k.proj_bias);
    w.bias_table = detail::param(sd, k.bias_table);
    const weight* idx = sd.find(k.relative_index);
    w.relative_index = idx ? idx->indices.data() : relative_index;
    return w;
  }

  typename K::layer_norm norm1_;
  typename K::window_attention attn_;
  typename K::layer_norm norm2_;
  typename K::linear fc1_, fc2_;
  int hidden_;
};

/// Hands a stage output to the observer as float32 NCDHW (only when one is set; on a device backend this is the
/// only place besides forward's result where data leaves the device).
template <class K>
void observe(const stage_observer* observer, typename K::context& ctx, std::string_view name,
             const backend_volume_t<K>& t) {
  if (!observer || !*observer) return;
  (*observer)(name, to_host<K>(ctx, t, layout_kind::ncdhw));
}

/// Re-lays a tensor out in `kind`; free when it already is.
template <class K>
backend_volume_t<K> relayout(typename K::context& ctx, backend_volume_t<K>&& t, layout_kind kind) {
  if (t.layout() == kind) return std::move(t);
  backend_volume_t<K> out(t.shape(), kind);
  K::convert(ctx, t, out);
  return out;
}

/// \brief The swinViT encoder. Stages consume the un-normalised x_i; only the hidden-state copies handed to the
/// decoder are normalised (parameter-free LayerNorm, when config.normalize).
template <class B, class P, class L>
class swin_transformer {
  using K = kernels<B, P, L>;
  using tensor_s = backend_volume_t<K>;

 public:
  swin_transformer(typename K::context& ctx, const state_dict& sd, const network_spec& spec)
      : config_(spec.config),
        computed_index_(ops::relative_position_index(spec.config.window_size)),
        patch_embed_(ctx, spec.patch_embed.problem, detail::param(sd, spec.patch_embed.weight_key()),
                     detail::param(sd, spec.patch_embed.bias_key())) {
    if (spec.patch_norm) {
      const std::string norm(keys::patch_norm);
      patch_norm_.emplace(ctx, spec.config.feature_size, detail::param(sd, norm + ".weight"),
                          detail::param(sd, norm + ".bias"), 1e-5f);
    }
    // Ops are built in place (reserved storage), never relocated: backends may keep pointers into them.
    hidden_norm_.reserve(5);
    merge_norm_.reserve(4);
    merge_reduce_.reserve(4);
    v2_blocks_.reserve(4);
    for (int s = 0; s < 5; ++s) hidden_norm_.emplace_back(ctx, spec.config.stage_channels(s), nullptr, nullptr, 1e-5f);
    for (const auto& stage : spec.stages) {
      std::vector<swin_block<B, P, L>> blocks;
      blocks.reserve(stage.depth);
      for (int b = 0; b < stage.depth; ++b) blocks.emplace_back(ctx, sd, stage, b, computed_index_.data());
      blocks_.push_back(std::move(blocks));
      const patch_merging_keys merge = stage.merge_keys();
      merge_norm_.emplace_back(ctx, 8 * stage.channels, detail::param(sd, merge.norm_weight),
                               detail::param(sd, merge.norm_bias), 1e-5f);
      merge_reduce_.emplace_back(ctx, stage.merge_reduction(), detail::param(sd, merge.reduction_weight), nullptr);
      if (auto block = stage.v2_block()) v2_blocks_.emplace_back(ctx, sd, *block);
    }
  }

  /// Returns hs[0..4] in layout L: (N, fs*2^i, D/2^(i+1), ...) for input (N, Cin, D, H, W).
  std::vector<tensor_s> run(typename K::context& ctx, const tensor_s& input, const stage_observer* observer) {
    tensor_s embedded(patch_embed_.problem_output(input.shape()), L::kind);
    patch_embed_.op.run(input, embedded);
    observe<K>(observer, ctx, "patch_embed", embedded);
    tensor_s x = relayout<K>(ctx, std::move(embedded), layout_kind::ndhwc);
    if (patch_norm_) {
      tensor_s normed(x.shape(), layout_kind::ndhwc);
      patch_norm_->run(x.data(), rows(x), normed.data());
      x = std::move(normed);
    }
    std::vector<tensor_s> hidden;
    hidden.push_back(hidden_state(ctx, x, 0));
    for (int s = 0; s < 4; ++s) {
      if (config_.use_v2) {
        tensor_s v = v2_blocks_[s].run(ctx, relayout<K>(ctx, std::move(x), L::kind));
        x = relayout<K>(ctx, std::move(v), layout_kind::ndhwc);
      }
      const auto plan = ops::make_window_plan({x.shape().d, x.shape().h, x.shape().w}, config_.window_size);
      for (std::size_t b = 0; b < blocks_[s].size(); ++b) blocks_[s][b].run(x, plan, b % 2 == 1);
      x = merge(ctx, x, s);
      observe<K>(observer, ctx, "x" + std::to_string(s + 1), x);
      hidden.push_back(hidden_state(ctx, x, s + 1));
    }
    for (int s = 0; s < 5; ++s) observe<K>(observer, ctx, "hs" + std::to_string(s), hidden[s]);
    return hidden;
  }

 private:
  /// Conv3d kernel = stride = patch_size, no padding, with bias, plus its output shape.
  struct patch_conv {
    ops::conv3d_problem problem;
    typename K::conv3d op;
    patch_conv(typename K::context& ctx, const ops::conv3d_problem& p, const float* w, const float* b)
        : problem(p), op(ctx, p, w, b) {}
    shape5 problem_output(const shape5& in) const { return problem.output_shape(in); }
  };
  static std::int64_t rows(const tensor_s& t) { return t.shape().n * t.shape().spatial(); }

  tensor_s hidden_state(typename K::context& ctx, const tensor_s& x, int s) {
    tensor_s h(x.shape(), layout_kind::ndhwc);
    if (config_.normalize) {
      hidden_norm_[s].run(x.data(), rows(x), h.data());
    } else {
      K::convert(ctx, x, h);
    }
    return relayout<K>(ctx, std::move(h), L::kind);
  }

  tensor_s merge(typename K::context& ctx, const tensor_s& x, int s) {
    tensor_s gathered(ops::patch_merge_shape(x.shape()), layout_kind::ndhwc);
    K::patch_merge_gather(ctx, x, config_.downsample, gathered);
    tensor_s normed(gathered.shape(), layout_kind::ndhwc);
    merge_norm_[s].run(gathered.data(), rows(gathered), normed.data());
    const auto& g = gathered.shape();
    tensor_s out({g.n, g.c / 4, g.d, g.h, g.w}, layout_kind::ndhwc);
    merge_reduce_[s].run(normed.data(), rows(normed), out.data());
    return out;
  }

  swin_unetr_config config_;
  std::vector<std::int64_t> computed_index_;  ///< used where a checkpoint lacks relative_position_index buffers
  patch_conv patch_embed_;
  std::optional<typename K::layer_norm> patch_norm_;
  std::vector<typename K::layer_norm> hidden_norm_;
  std::vector<std::vector<swin_block<B, P, L>>> blocks_;
  std::vector<typename K::layer_norm> merge_norm_;
  std::vector<typename K::linear> merge_reduce_;
  std::vector<res_block<B, P, L>> v2_blocks_;
};

}  // namespace swinfer::model

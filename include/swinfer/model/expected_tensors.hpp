// swinfer: every tensor a SwinUNETR-family configuration has in its state_dict, and the parameter count.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "swinfer/model/fusion_plan.hpp"
#include "swinfer/model/swin_unetr_config.hpp"
#include "swinfer/ops/window_plan.hpp"

namespace swinfer {

/// \brief One tensor a configuration expects in its state_dict.
struct expected_tensor {
  std::string key;
  std::vector<std::int64_t> shape;
  bool is_index = false;  ///< int64 relative_position_index buffer (not a parameter)
};

namespace detail {

/// MONAI UnetResBlock(cin, cout, k): conv1, conv2 and, when the width changes, the 1x1x1 projection conv3.
inline void add_res_block(std::vector<expected_tensor>& out, const std::string& prefix, int cin, int cout, int k = 3) {
  const std::int64_t i = cin, o = cout;
  out.push_back({prefix + ".conv1.conv.weight", {o, i, k, k, k}});
  out.push_back({prefix + ".conv2.conv.weight", {o, o, k, k, k}});
  if (cin != cout) out.push_back({prefix + ".conv3.conv.weight", {o, i, 1, 1, 1}});
}

}  // namespace detail

/// Every tensor a model with this configuration has, in MONAI's (or the Swin Fusion author's) state_dict order.
inline std::vector<expected_tensor> expected_tensors(const swin_unetr_config& c) {
  std::vector<expected_tensor> t;
  const std::int64_t fs = c.feature_size, ps = c.patch_size;
  t.push_back({"swinViT.patch_embed.proj.weight", {fs, c.in_channels, ps, ps, ps}});
  t.push_back({"swinViT.patch_embed.proj.bias", {fs}});
  if (c.patch_norm) {
    t.push_back({"swinViT.patch_embed.norm.weight", {fs}});
    t.push_back({"swinViT.patch_embed.norm.bias", {fs}});
  }
  const std::int64_t n = std::int64_t{c.window_size[0]} * c.window_size[1] * c.window_size[2];
  for (int s = 0; s < 4; ++s) {
    const std::int64_t C = c.stage_channels(s), hidden = c.mlp_hidden(s);
    const std::string layer = "swinViT.layers" + std::to_string(s + 1) + ".0.";
    for (int b = 0; b < c.depths[s]; ++b) {
      const std::string p = layer + "blocks." + std::to_string(b) + ".";
      t.push_back({p + "norm1.weight", {C}});
      t.push_back({p + "norm1.bias", {C}});
      t.push_back({p + "attn.relative_position_bias_table", {ops::relative_bias_table_rows(c.window_size), c.num_heads[s]}});
      t.push_back({p + "attn.relative_position_index", {n, n}, true});
      t.push_back({p + "attn.qkv.weight", {3 * C, C}});
      if (c.qkv_bias) t.push_back({p + "attn.qkv.bias", {3 * C}});
      t.push_back({p + "attn.proj.weight", {C, C}});
      t.push_back({p + "attn.proj.bias", {C}});
      t.push_back({p + "norm2.weight", {C}});
      t.push_back({p + "norm2.bias", {C}});
      t.push_back({p + "mlp.linear1.weight", {hidden, C}});
      t.push_back({p + "mlp.linear1.bias", {hidden}});
      t.push_back({p + "mlp.linear2.weight", {C, hidden}});
      t.push_back({p + "mlp.linear2.bias", {C}});
    }
    t.push_back({layer + "downsample.reduction.weight", {2 * C, 8 * C}});
    t.push_back({layer + "downsample.norm.weight", {8 * C}});
    t.push_back({layer + "downsample.norm.bias", {8 * C}});
    if (c.use_v2) detail::add_res_block(t, "swinViT.layers" + std::to_string(s + 1) + "c.0.layer", C, C);
  }
  const skip_plan plan = make_skip_plan(c);
  detail::add_res_block(t, "encoder1.layer", c.in_channels, c.feature_size);
  if (plan.vanilla_encoders) {
    detail::add_res_block(t, "encoder2.layer", c.feature_size, c.feature_size);
    detail::add_res_block(t, "encoder3.layer", 2 * c.feature_size, 2 * c.feature_size);
    detail::add_res_block(t, "encoder4.layer", 4 * c.feature_size, 4 * c.feature_size);
    detail::add_res_block(t, "encoder10.layer", 16 * c.feature_size, 16 * c.feature_size);
  }
  for (int level = 5; level >= 1; --level) {
    // decoder5 takes 16fs -> 8fs, decoder4 8fs -> 4fs, ... decoder2 2fs -> fs, decoder1 fs -> fs.
    const int cout = level == 1 ? c.feature_size : c.feature_size << (level - 2);
    const int cin = level == 1 ? c.feature_size : 2 * cout;
    const std::string p = "decoder" + std::to_string(level);
    t.push_back({p + ".transp_conv.conv.weight", {cin, cout, 2, 2, 2}});
    detail::add_res_block(t, p + ".conv_block", 2 * cout, cout);
  }
  for (const auto& level : plan.fused) {  // highest level first, as the author's module order has them
    for (const auto& src : level.sources)
      if (src.branch_channels) {
        detail::add_res_block(t, level.branch_prefix(src), src.channels, src.branch_channels);
      }
    detail::add_res_block(t, level.final_prefix(), level.concat_channels(), level.channels, level.final_kernel);
  }
  t.push_back({"out.conv.conv.weight", {c.out_channels, c.feature_size, 1, 1, 1}});
  t.push_back({"out.conv.conv.bias", {c.out_channels}});
  return t;
}

/// Trainable parameters (the relative_position_index buffers are not parameters), as PyTorch counts them.
inline std::int64_t parameter_count(const swin_unetr_config& c) {
  std::int64_t total = 0;
  for (const auto& e : expected_tensors(c)) {
    if (e.is_index) continue;
    std::int64_t n = 1;
    for (auto d : e.shape) n *= d;
    total += n;
  }
  return total;
}

}  // namespace swinfer

// swinfer: SwinUNETR's constructor options (MONAI's argument names), read from JSON or inferred from weights.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "swinfer/core/error.hpp"
#include "swinfer/core/shape.hpp"
#include "swinfer/io/state_dict.hpp"
#include "swinfer/ops/patch_merging.hpp"
#include "swinfer/ops/window_plan.hpp"

namespace swinfer {

/// \brief MONAI SwinUNETR constructor options that change inference (MONAI 1.5 names and defaults).
/// Options without effect in eval mode (dropout rates, use_checkpoint, img_size) are accepted and ignored.
struct swin_unetr_config {
  int in_channels = 1;
  int out_channels = 2;
  int feature_size = 24;
  int patch_size = 2;
  std::array<int, 4> depths{2, 2, 2, 2};
  std::array<int, 4> num_heads{3, 6, 12, 24};
  std::array<int, 3> window_size{7, 7, 7};
  bool qkv_bias = true;
  double mlp_ratio = 4.0;
  bool normalize = true;
  bool patch_norm = false;
  bool use_v2 = false;
  /// Nothing in a checkpoint records the merging order: MONAI <= 1.4 checkpoints need merging_legacy.
  ops::merge_order downsample = ops::merge_order::merging;

  /// Channels of Swin stage s (0..3) and of the bottleneck (s = 4).
  int stage_channels(int s) const { return feature_size << s; }
  int mlp_hidden(int s) const { return static_cast<int>(stage_channels(s) * mlp_ratio); }

  /// Throws an error naming the first inconsistent option.
  void validate() const {
    auto positive = [](int v, const char* name) {
      if (v <= 0) detail::fail("config: ", name, " must be positive, got ", v);
    };
    positive(in_channels, "in_channels");
    positive(out_channels, "out_channels");
    positive(feature_size, "feature_size");
    positive(patch_size, "patch_size");
    for (int s = 0; s < 4; ++s) {
      positive(depths[s], "depths[i]");
      positive(num_heads[s], "num_heads[i]");
      if (stage_channels(s) % num_heads[s]) {
        detail::fail("config: stage ", s + 1, " has ", stage_channels(s), " channels, not divisible by num_heads ",
                     num_heads[s]);
      }
    }
    for (int a = 0; a < 3; ++a) positive(window_size[a], "window_size");
    if (!(mlp_ratio > 0)) detail::fail("config: mlp_ratio must be positive");
  }

  /// Checks an input shape the way MONAI's forward does, with the fix spelled out.
  void check_input(const shape5& s) const {
    if (s.c != in_channels) {
      detail::fail("input has ", s.c, " channels but the model takes in_channels=", in_channels, " (input shape ",
                   s.str(), ")");
    }
    std::int64_t multiple = 1;
    for (int i = 0; i < 5; ++i) multiple *= patch_size;
    for (std::int64_t e : {s.d, s.h, s.w}) {
      if (e <= 0 || e % multiple) {
        detail::fail("input spatial size ", s.d, "x", s.h, "x", s.w, " is not divisible by patch_size^5 = ", multiple,
                     "; pad or crop the volume (or run it through sliding-window inference with a valid roi)");
      }
    }
    if (s.spatial() / (multiple * multiple * multiple) <= 1) {
      detail::fail("input spatial size ", s.d, "x", s.h, "x", s.w, " leaves a single bottleneck voxel, where ",
                   "InstanceNorm is undefined; use at least ", multiple, "x", multiple, "x", 2 * multiple);
    }
  }

  nlohmann::json to_json() const {
    return {{"in_channels", in_channels},
            {"out_channels", out_channels},
            {"feature_size", feature_size},
            {"patch_size", patch_size},
            {"depths", depths},
            {"num_heads", num_heads},
            {"window_size", window_size},
            {"qkv_bias", qkv_bias},
            {"mlp_ratio", mlp_ratio},
            {"normalize", normalize},
            {"patch_norm", patch_norm},
            {"use_v2", use_v2},
            {"downsample", std::string(ops::merge_order_name(downsample))}};
  }
};

/// \brief One tensor a configuration expects in its state_dict.
struct expected_tensor {
  std::string key;
  std::vector<std::int64_t> shape;
  bool is_index = false;  ///< int64 relative_position_index buffer (not a parameter)
};

namespace detail {

inline void add_res_block(std::vector<expected_tensor>& out, const std::string& prefix, int cin, int cout) {
  const std::int64_t i = cin, o = cout;
  out.push_back({prefix + ".conv1.conv.weight", {o, i, 3, 3, 3}});
  out.push_back({prefix + ".conv2.conv.weight", {o, o, 3, 3, 3}});
  if (cin != cout) out.push_back({prefix + ".conv3.conv.weight", {o, i, 1, 1, 1}});
}

}  // namespace detail

/// Every tensor a SwinUNETR with this configuration has, in MONAI's state_dict order.
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
  detail::add_res_block(t, "encoder1.layer", c.in_channels, c.feature_size);
  detail::add_res_block(t, "encoder2.layer", c.feature_size, c.feature_size);
  detail::add_res_block(t, "encoder3.layer", 2 * c.feature_size, 2 * c.feature_size);
  detail::add_res_block(t, "encoder4.layer", 4 * c.feature_size, 4 * c.feature_size);
  detail::add_res_block(t, "encoder10.layer", 16 * c.feature_size, 16 * c.feature_size);
  for (int level = 5; level >= 1; --level) {
    // decoder5 takes 16fs -> 8fs, decoder4 8fs -> 4fs, ... decoder2 2fs -> fs, decoder1 fs -> fs.
    const int cout = level == 1 ? c.feature_size : c.feature_size << (level - 2);
    const int cin = level == 1 ? c.feature_size : 2 * cout;
    const std::string p = "decoder" + std::to_string(level);
    t.push_back({p + ".transp_conv.conv.weight", {cin, cout, 2, 2, 2}});
    detail::add_res_block(t, p + ".conv_block", 2 * cout, cout);
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

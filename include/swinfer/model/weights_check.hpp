// swinfer: what a checkpoint's tensors say about the architecture, and whether they match a configuration.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "swinfer/core/error.hpp"
#include "swinfer/io/state_dict.hpp"
#include "swinfer/model/expected_tensors.hpp"
#include "swinfer/model/network_spec.hpp"

namespace swinfer {

namespace detail {

/// The window whose bias table has `rows` rows and, when the checkpoint has one, whose relative_position_index
/// equals the stored buffer. Non-cubic windows are told apart by that buffer; with none, an ambiguous table
/// keeps `fallback` (check_weights then reports any mismatch against the config).
inline std::array<int, 3> infer_window(const state_dict& sd, const std::string& index_key, std::int64_t rows,
                                       const std::array<int, 3>& fallback) {
  const weight* index = sd.find(index_key);
  std::vector<std::array<int, 3>> found;
  for (int a = 1; 2 * a - 1 <= rows; ++a)
    for (int b = 1; std::int64_t{2 * a - 1} * (2 * b - 1) <= rows; ++b)
      for (int c = 1; std::int64_t{2 * a - 1} * (2 * b - 1) * (2 * c - 1) <= rows; ++c) {
        if (std::int64_t{2 * a - 1} * (2 * b - 1) * (2 * c - 1) != rows) continue;
        if (index && index->indices != ops::relative_position_index({a, b, c})) continue;
        found.push_back({a, b, c});
      }
  return found.size() == 1 ? found[0] : fallback;
}

/// conv1's weight key in the final block of a fused level, and in the branch block of one of its sources.
inline std::string fused_final_key(int level) {
  fused_level f;
  f.level = level;
  return f.final_block().conv1().weight_key();
}
inline std::string fused_branch_key(int level, int source_level) {
  fused_level f;
  f.level = level;
  model::res_block_spec branch;
  branch.prefix = f.branch_prefix(source_level);
  return branch.conv1().weight_key();
}

/// Reads the Swin Fusion options the poolskip tensors determine (variant, branch widths, final kernel, and maxavg
/// pooling where it doubles a concatenation); max vs avg pooling leaves no trace and keeps c's value.
inline void infer_fusion(const state_dict& sd, swin_unetr_config& c) {
  using model::bottleneck_level;
  auto out_channels = [&](const std::string& key) { return static_cast<int>(sd.at(key).shape.at(0)); };
  auto in_channels = [&](const std::string& key) { return static_cast<int>(sd.at(key).shape.at(1)); };
  if (c.arch != model_arch::swin_fusion_unetr) c.downsample = ops::merge_order::merging_legacy;
  c.arch = model_arch::swin_fusion_unetr;
  const std::string level2_final = fused_final_key(2);
  c.fusion.final_kernel_size = static_cast<int>(sd.at(level2_final).shape.at(2));
  const int fs = c.feature_size;
  if (sd.contains(fused_final_key(bottleneck_level))) {  // a fused bottleneck: od
    swin_unetr_config natural = c;
    natural.fusion = {};
    c.fusion.variant = fusion_variant::od;
    for (int source = model::input_level; source < bottleneck_level; ++source) {
      c.fusion.branch_channels[source - 1] = out_channels(fused_branch_key(bottleneck_level, source));
    }
    if (c.fusion.branch_channels != natural.branch_channels()) c.fusion.variant = fusion_variant::od_large;
  } else if (sd.contains(fused_branch_key(2, 1))) {  // branch blocks without a fused bottleneck
    c.fusion.variant = fusion_variant::v2_2;
    for (int source = model::input_level; source <= 4; ++source) {
      c.fusion.branch_channels[source - 1] = out_channels(fused_branch_key(source + 1, source));
    }
  } else {  // pooled skips only: level 3 pools enc1 (1_v1) or x_in and enc1 (2_v1)
    const int pooled = in_channels(fused_final_key(3)) - 2 * fs;
    c.fusion.variant = pooled == fs || pooled == 2 * fs ? fusion_variant::v1_1 : fusion_variant::v1_2;
    if (pooled == 2 * fs || pooled == 2 * (fs + c.in_channels)) c.fusion.pool = skip_pool::maxavg;
  }
  if (c.fusion.variant != fusion_variant::v1_1 && c.fusion.variant != fusion_variant::v1_2) {
    const int pooled = in_channels(level2_final) - fs;  // level 2 pools the x_in branch alone
    if (pooled == 2 * c.fusion.branch_channels[0]) c.fusion.pool = skip_pool::maxavg;
  }
}

}  // namespace detail

/// \brief Infers every option the tensors determine (channels, feature_size, patch_size, depths, num_heads,
/// window_size, qkv_bias, mlp_ratio, use_v2, patch_norm; for Swin Fusion weights the architecture, variant,
/// branch widths, final kernel and maxavg pooling). normalize and downsample leave no trace in the weights, so
/// they keep `base`'s values (MONAI 1.5 defaults unless given; merging_legacy for fusion weights); so does a
/// window that the tables leave ambiguous.
inline swin_unetr_config infer_config(const state_dict& sd, swin_unetr_config base = {}) {
  swin_unetr_config c = base;
  const std::string embed_key = model::conv_spec{std::string(model::keys::patch_embed), {}}.weight_key();
  const weight& pe = sd.at(embed_key);
  if (pe.shape.size() != 5) detail::fail(embed_key, " has shape ", shape_string(pe.shape), ", expected 5-D");
  c.feature_size = static_cast<int>(pe.shape[0]);
  c.in_channels = static_cast<int>(pe.shape[1]);
  c.patch_size = static_cast<int>(pe.shape[2]);
  const weight& head = sd.at(model::conv_spec{std::string(model::keys::head), {}}.weight_key());
  c.out_channels = static_cast<int>(head.shape.at(0));
  for (int s = 0; s < 4; ++s) {
    model::swin_stage_spec stage;
    stage.stage = s;
    int depth = 0;
    while (sd.contains(stage.block_keys(depth).norm1_weight)) ++depth;
    const model::swin_block_keys first = stage.block_keys(0);
    if (depth == 0) detail::fail("checkpoint has no Swin blocks for stage ", s + 1, " (no key ", first.norm1_weight, ")");
    c.depths[s] = depth;
    const weight& table = sd.at(first.bias_table);
    if (table.shape.size() != 2) detail::fail(first.bias_table, " is not 2-D");
    c.num_heads[s] = static_cast<int>(table.shape[1]);
    if (s == 0) {
      c.window_size = detail::infer_window(sd, first.relative_index, table.shape[0], c.window_size);
      c.qkv_bias = sd.contains(first.qkv_bias);
      const weight& l1 = sd.at(first.mlp_in_weight);
      c.mlp_ratio = static_cast<double>(l1.shape.at(0)) / c.feature_size;
      stage.v2 = true;
      c.use_v2 = sd.contains(stage.v2_block()->conv1().weight_key());
    }
  }
  c.patch_norm = sd.contains(std::string(model::keys::patch_norm) + ".weight");
  if (sd.contains(detail::fused_final_key(2))) {
    detail::infer_fusion(sd, c);
  } else {
    c.arch = model_arch::swin_unetr;
  }
  c.validate();
  return c;
}

/// \brief Checks every key and shape of a checkpoint against a configuration. Throws one error listing each
/// missing, unexpected or mis-shaped tensor with both shapes. relative_position_index buffers may be absent
/// (they are recomputed); when present they must hold valid table rows.
inline void check_weights(const swin_unetr_config& c, const state_dict& sd, const std::string& source) {
  std::vector<std::string> problems;
  std::vector<std::string> expected_keys;
  for (const auto& e : expected_tensors(c)) {
    expected_keys.push_back(e.key);
    const weight* w = sd.find(e.key);
    if (!w) {
      if (!e.is_index) problems.push_back("missing tensor '" + e.key + "' of shape " + shape_string(e.shape));
      continue;
    }
    if (w->shape != e.shape) {
      problems.push_back("tensor '" + e.key + "' has shape " + shape_string(w->shape) + " but the configuration expects " +
                         shape_string(e.shape));
    } else if (e.is_index == is_floating(w->source)) {
      problems.push_back("tensor '" + e.key + "' has type " + dtype_name(w->source) + ", expected " +
                         (e.is_index ? "an integer type" : "a floating type"));
    } else if (e.is_index) {
      const auto rows = ops::relative_bias_table_rows(c.window_size);
      for (auto v : w->indices) {
        if (v < 0 || v >= rows) {
          problems.push_back("tensor '" + e.key + "' holds index " + std::to_string(v) + " outside the bias table's " +
                             std::to_string(rows) + " rows");
          break;
        }
      }
    }
  }
  std::sort(expected_keys.begin(), expected_keys.end());
  for (const auto& k : sd.keys()) {
    if (!std::binary_search(expected_keys.begin(), expected_keys.end(), k)) {
      problems.push_back("unexpected tensor '" + k + "' of shape " + shape_string(sd.at(k).shape));
    }
  }
  if (problems.empty()) return;
  std::string msg = source + " does not match the " + std::string(model_arch_name(c.arch)) + " configuration (" + std::to_string(problems.size()) + " problem" +
                    (problems.size() > 1 ? "s" : "") + "):";
  const std::size_t shown = std::min<std::size_t>(problems.size(), 12);
  for (std::size_t i = 0; i < shown; ++i) msg += "\n  - " + problems[i];
  if (shown < problems.size()) msg += "\n  - ... and " + std::to_string(problems.size() - shown) + " more";
  throw error(msg);
}

}  // namespace swinfer

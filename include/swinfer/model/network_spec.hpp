// swinfer: the SwinUNETR family's module tree, described once from a configuration. The model is built from it;
// the expected state_dict, the parameter count and the MAC count are read off it.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "swinfer/core/shape.hpp"
#include "swinfer/model/block_specs.hpp"
#include "swinfer/model/fusion_plan.hpp"
#include "swinfer/model/levels.hpp"
#include "swinfer/model/swin_unetr_config.hpp"

namespace swinfer::model {

/// \brief Every module of one configuration, in the order the forward pass runs them (levels: model/levels.hpp).
struct network_spec {
  swin_unetr_config config;
  conv_spec patch_embed;                  ///< kernel = stride = patch_size, with bias: x_in -> level 2
  bool patch_norm = false;                ///< LayerNorm `keys::patch_norm` after it
  std::array<swin_stage_spec, 4> stages;  ///< Swin stages 0..3
  res_block_spec encoder1;                ///< x_in -> enc0 at level 1
  /// MONAI's one-to-one skip blocks: encoder2..4 on hs0..hs2 (levels 2..4) and encoder10 on hs4 (level 6); level 5's
  /// skip is hs3 itself. None in the od variants.
  std::vector<res_block_spec> skip_encoders;
  skip_plan skips;                     ///< the Swin Fusion fused skips (none for SwinUNETR)
  std::vector<up_block_spec> decoders;  ///< decoder5 (level 6 -> 5) .. decoder1 (level 2 -> 1)
  conv_spec head;                       ///< 1x1x1 with bias: level 1's decoder output -> logits

  /// Calls f(spec) for every block's spec in MONAI's (or the Swin Fusion author's) module order: conv_spec,
  /// swin_stage_spec, res_block_spec and up_block_spec alike; after_patch_embed() right after the patch embedding.
  template <class F, class G>
  void for_each_block(F&& f, G&& after_patch_embed) const {
    f(patch_embed);
    after_patch_embed();
    for (const auto& s : stages) f(s);
    f(encoder1);
    for (const auto& e : skip_encoders) f(e);
    for (const auto& d : decoders) f(d);
    for (const auto& fused : skips.fused) {
      for (const auto& s : fused.sources)
        if (s.branch_channels) f(fused.branch(s));
      f(fused.final_block());
    }
    f(head);
  }

  /// Every tensor of the state_dict, in MONAI's (or the Swin Fusion author's) module order.
  std::vector<expected_tensor> tensors() const {
    std::vector<expected_tensor> t;
    for_each_block([&](const auto& block) { block.add_tensors(t); },
                   [&] {
                     if (!patch_norm) return;
                     t.push_back({std::string(keys::patch_norm) + ".weight", {config.feature_size}});
                     t.push_back({std::string(keys::patch_norm) + ".bias", {config.feature_size}});
                   });
    return t;
  }

  /// Every product int8 can quantize (docs/int8.md): each Conv3d, Linear and ConvTranspose3d, with its point.
  std::vector<int8_product> int8_products() const {
    std::vector<int8_product> p;
    for_each_block([&](const auto& block) { block.add_int8_products(p); }, [] {});
    return p;
  }

  /// Multiply-accumulates of every Conv3d / ConvTranspose3d / Linear plus the two attention products (element-wise
  /// work is not counted), for the whole batch.
  double macs(const shape5& input) const {
    const double full = double(input.d) * input.h * input.w;
    std::array<std::int64_t, 3> grid{input.d / config.patch_size, input.h / config.patch_size,
                                     input.w / config.patch_size};
    double total = double(grid[0]) * grid[1] * grid[2] * patch_embed.macs_per_output_voxel();
    for (const auto& s : stages) {
      total += s.macs(grid);
      for (auto& e : grid) e /= 2;
    }
    total += encoder1.macs(full);
    for (const auto& e : skip_encoders) total += e.macs(full);
    for (const auto& f : skips.fused) {
      for (const auto& s : f.sources)
        if (s.branch_channels) total += f.branch(s).macs(full);
      total += f.final_block().macs(full);
    }
    for (const auto& d : decoders) total += d.macs(full);
    total += full * head.macs_per_output_voxel();
    return total * input.n;
  }
};

/// The module tree of a configuration (it does not validate `c`; swin_unetr_config::validate does). Under
/// precision::int8 every product `int8` quantizes carries its input scale (or is dynamic); its calibration must
/// outlive the spec.
inline network_spec describe_network(const swin_unetr_config& c, const int8_source& int8 = {}) {
  network_spec n;
  n.config = c;
  ops::conv3d_problem pe;
  pe.cin = c.in_channels;
  pe.cout = c.feature_size;
  pe.kernel = pe.stride = {c.patch_size, c.patch_size, c.patch_size};
  pe.pad = {0, 0, 0};
  pe.bias = true;
  n.patch_embed = conv_spec::quantized(std::string(keys::patch_embed), pe, int8);
  n.patch_norm = c.patch_norm;
  for (int s = 0; s < 4; ++s) {
    n.stages[s] = {s, c.stage_channels(s), c.num_heads[s], c.mlp_hidden(s), c.depths[s], c.window_size, c.qkv_bias,
                   c.use_v2, int8};
  }
  n.encoder1 = {"encoder1.layer", c.in_channels, c.feature_size, 3, input_level, "enc0", int8};
  n.skips = make_skip_plan(c);
  for (auto& f : n.skips.fused) f.int8 = int8;
  if (n.skips.vanilla_encoders) {
    for (int level : {2, 3, 4, bottleneck_level}) {
      const int width = encoder_width(c, level);
      const bool bottleneck = level == bottleneck_level;
      n.skip_encoders.push_back({"encoder" + std::to_string(bottleneck ? 10 : level) + ".layer", width, width, 3,
                                 level, bottleneck ? "dec4" : "enc" + std::to_string(level - 1), int8});
    }
  }
  for (int level = bottleneck_level - 1; level >= input_level; --level) {
    n.decoders.push_back({"decoder" + std::to_string(level), decoder_width(c, level + 1), decoder_width(c, level),
                          level, level == input_level ? "out" : "dec" + std::to_string(level - 2), int8});
  }
  ops::conv3d_problem head = same_conv(c.feature_size, c.out_channels, 1);
  head.bias = true;
  n.head = conv_spec::quantized(std::string(keys::head), head, int8);
  return n;
}

}  // namespace swinfer::model

// swinfer: where each decoder level's skip comes from: SwinUNETR's one-to-one skips, or a Swin Fusion variant's
// fused ones (pooled higher-resolution maps concatenated with the level's own map, then a residual block).
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "swinfer/model/block_specs.hpp"
#include "swinfer/model/levels.hpp"
#include "swinfer/model/swin_unetr_config.hpp"

namespace swinfer {

/// \brief One pooled input of a fused skip, at a level above the fused one (model/levels.hpp: 1 = x_in, 2..6 =
/// hs0..hs4).
struct fused_source {
  int level = 1;
  int channels = 1;         ///< width of the source tensor
  int branch_channels = 0;  ///< width of its dedicated UnetResBlock(channels -> this, 3); 0: pooled as it is
  int pool_kernel = 2;      ///< kernel = stride = 2^(fused level - source level)
  int pooled_channels(skip_pool p) const {
    const int c = branch_channels ? branch_channels : channels;
    return p == skip_pool::maxavg ? 2 * c : c;
  }
};

/// \brief The fused skip of decoder level `level` (2..6):
/// final(concat(pool(branch(source)) for each source, highest resolution first; own map last)).
struct fused_level {
  int level = 2;
  int channels = 0;      ///< c_L, the level's (and the final block's output) width
  skip_pool pool = skip_pool::max;
  int final_kernel = 1;
  std::vector<fused_source> sources;
  model::int8_source int8;

  int concat_channels() const {
    int total = channels;
    for (const auto& s : sources) total += s.pooled_channels(pool);
    return total;
  }
  /// The author's module names: poolskip{L-1}, whose convN is the branch of the source N levels above.
  std::string module() const { return "poolskip" + std::to_string(level - 1); }
  std::string branch_prefix(int source_level) const { return module() + ".conv" + std::to_string(level - source_level); }
  std::string final_prefix() const { return module() + ".conv_final"; }
  std::string observed() const { return "fuse" + std::to_string(level); }

  /// The source's branch block, on the source's grid (only when s.branch_channels).
  model::res_block_spec branch(const fused_source& s) const {
    return {branch_prefix(s.level), s.channels, s.branch_channels, 3, s.level, {}, int8};
  }
  /// The final block on the concatenation, on the level's grid.
  model::res_block_spec final_block() const {
    return {final_prefix(), concat_channels(), channels, final_kernel, level, {}, int8};
  }
};

/// \brief How a configuration builds its five decoder skips (levels 2..5) and its bottleneck (level 6).
struct skip_plan {
  /// encoder2/3/4/10 exist (SwinUNETR, 2_v2, v1); od drops them and fuses the bottleneck instead.
  bool vanilla_encoders = true;
  /// Sources are the vanilla skips (x_in, enc1, enc2, enc3: v1) rather than raw x_in / hidden states.
  bool sources_are_skips = false;
  /// The own map is the raw hidden state hs_{L-2} (od) rather than the vanilla skip of the level.
  bool own_is_raw = false;
  std::vector<fused_level> fused;  ///< highest level first; empty for SwinUNETR
};

inline skip_plan make_skip_plan(const swin_unetr_config& c) {
  skip_plan plan;
  if (!c.is_fusion()) return plan;
  const auto variant = c.fusion.variant;
  const bool od = variant == fusion_variant::od || variant == fusion_variant::od_large;
  const bool v1 = variant == fusion_variant::v1_1 || variant == fusion_variant::v1_2;
  plan.vanilla_encoders = !od;
  plan.sources_are_skips = v1;
  plan.own_is_raw = od;
  const int top = od ? model::bottleneck_level : 5, levels_above = od ? 5 : variant == fusion_variant::v1_1 ? 1 : 2;
  const auto branch = c.branch_channels();
  for (int level = top; level >= 2; --level) {
    fused_level f;
    f.level = level;
    f.channels = model::encoder_width(c, level);
    f.pool = c.fusion.pool;
    f.final_kernel = c.fusion.final_kernel_size;
    for (int source = std::max(model::input_level, level - levels_above); source < level; ++source) {
      f.sources.push_back({source, model::encoder_width(c, source), v1 ? 0 : branch[source - 1], 1 << (level - source)});
    }
    plan.fused.push_back(f);
  }
  return plan;
}

}  // namespace swinfer

// swinfer: the SwinUNETR family's constructor options (MONAI's argument names plus the Swin Fusion choices).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "swinfer/core/error.hpp"
#include "swinfer/core/shape.hpp"
#include "swinfer/model/fusion_options.hpp"
#include "swinfer/ops/patch_merging.hpp"
#include "swinfer/ops/window_plan.hpp"

namespace swinfer {

/// \brief MONAI SwinUNETR constructor options that change inference (MONAI 1.5 names and defaults), and for
/// arch == swin_fusion_unetr the fused-skip options. Options without effect in eval mode (dropout rates,
/// use_checkpoint, img_size) are accepted and ignored. JSON: model/config_json.hpp.
struct swin_unetr_config {
  model_arch arch = model_arch::swin_unetr;
  fusion_options fusion;  ///< used when arch == swin_fusion_unetr
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
    if (arch == model_arch::swin_fusion_unetr) {
      if (fusion.final_kernel_size <= 0 || fusion.final_kernel_size % 2 == 0) {
        detail::fail("config: final_kernel_size must be a positive odd number, got ", fusion.final_kernel_size);
      }
      for (int b : fusion.branch_channels)
        if (b < 0) detail::fail("config: branch_channels must be positive (or 0 for the variant's default), got ", b);
    }
  }

  bool is_fusion() const { return arch == model_arch::swin_fusion_unetr; }

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

  /// Branch-block output widths of source levels 1..5 (x_in, hs0..hs3) with the variant's defaults filled in.
  std::array<int, 5> branch_channels() const {
    std::array<int, 5> natural{in_channels, feature_size, 2 * feature_size, 4 * feature_size, 8 * feature_size};
    if (fusion.variant == fusion_variant::od_large) natural = {feature_size, feature_size, 3 * feature_size,
                                                                4 * feature_size, 8 * feature_size};
    for (int j = 0; j < 5; ++j)
      if (fusion.branch_channels[j] > 0) natural[j] = fusion.branch_channels[j];
    return natural;
  }
};

}  // namespace swinfer

// swinfer: the SwinUNETR family's constructor options (MONAI's argument names plus the Swin Fusion choices).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "swinfer/core/checked.hpp"
#include "swinfer/core/error.hpp"
#include "swinfer/core/shape.hpp"
#include "swinfer/core/value_range.hpp"
#include "swinfer/model/fusion_options.hpp"
#include "swinfer/ops/patch_merging.hpp"
#include "swinfer/ops/window_plan.hpp"

namespace swinfer {

/// \brief The values each configuration option may take, checked when a configuration is read (config_json.hpp names
/// the JSON key) and by swin_unetr_config::validate. Wide enough for every published SwinUNETR and Swin Fusion model;
/// past them the network cannot run on any machine, and channel widths and input sizes overflow.
struct config_ranges {
  static constexpr value_range<int> channels{1, 1024};      ///< in_channels, out_channels
  static constexpr value_range<int> feature_size{1, 1024};  ///< the bottleneck has 16 x feature_size channels
  static constexpr value_range<int> patch_size{1, 8};       ///< inputs are multiples of patch_size^5
  static constexpr value_range<int> depth{1, 64};           ///< Swin blocks per stage
  static constexpr value_range<int> heads{1, 1024};
  static constexpr value_range<int> window{1, 32};  ///< attention is quadratic in the window's volume
  static constexpr value_range<double> mlp_ratio{0.125, 64.0};
  static constexpr value_range<int> final_kernel_size{1, 15};
  static constexpr value_range<int> branch_channels{0, 4096};  ///< 0: the variant's default
};

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
  int mlp_hidden(int s) const {
    return detail::checked_integer_cast<int>(stage_channels(s) * mlp_ratio, "config: mlp_ratio ", mlp_ratio);
  }

  /// Throws an error naming the first option outside its range (config_ranges) or inconsistent with another;
  /// `where` (a file name) prefixes the message.
  void validate(std::string_view where = "config") const {
    using detail::require_in_range;
    using r = config_ranges;
    require_in_range(in_channels, r::channels, where, "in_channels");
    require_in_range(out_channels, r::channels, where, "out_channels");
    require_in_range(feature_size, r::feature_size, where, "feature_size");
    require_in_range(patch_size, r::patch_size, where, "patch_size");
    for (int s = 0; s < 4; ++s) {
      require_in_range(depths[s], r::depth, where, "depths");
      require_in_range(num_heads[s], r::heads, where, "num_heads");
      if (stage_channels(s) % num_heads[s]) {
        detail::fail(where, ": stage ", s + 1, " has ", stage_channels(s), " channels, not divisible by num_heads ",
                     num_heads[s]);
      }
    }
    for (int a = 0; a < 3; ++a) require_in_range(window_size[a], r::window, where, "window_size");
    require_in_range(mlp_ratio, r::mlp_ratio, where, "mlp_ratio");
    if (mlp_hidden(0) < 1) {
      detail::fail(where, ": mlp_ratio ", mlp_ratio, " leaves the first stage's MLP (", stage_channels(0),
                   " channels) with no hidden units");
    }
    if (arch == model_arch::swin_fusion_unetr) {
      require_in_range(fusion.final_kernel_size, r::final_kernel_size, where, "final_kernel_size");
      if (fusion.final_kernel_size % 2 == 0) {
        detail::fail(where, ": 'final_kernel_size' must be a positive odd number, got ", fusion.final_kernel_size);
      }
      for (int b : fusion.branch_channels) {
        require_in_range(b, r::branch_channels, where, "branch_channels", " (0: the variant's default)");
      }
    }
  }

  bool is_fusion() const { return arch == model_arch::swin_fusion_unetr; }

  /// Checks an input shape the way MONAI's forward does, with the fix spelled out.
  void check_input(const shape5& s) const {
    if (s.c != in_channels) {
      detail::fail("input has ", s.c, " channels but the model takes in_channels=", in_channels, " (input shape ",
                   s.str(), ")");
    }
    // Checked: a configuration that skipped validate() may hold any patch_size.
    std::int64_t multiple = 1;
    for (int i = 0; i < 5; ++i) {
      multiple = detail::checked_mul(multiple, patch_size, "config: patch_size^5 for patch_size ", patch_size);
    }
    for (std::int64_t e : {s.d, s.h, s.w}) {
      if (e <= 0 || e % multiple) {
        detail::fail("input spatial size ", s.d, "x", s.h, "x", s.w, " is not divisible by patch_size^5 = ", multiple,
                     "; pad or crop the volume (or run it through sliding-window inference with a valid roi)");
      }
    }
    const std::int64_t bottleneck_voxels = (s.d / multiple) * (s.h / multiple) * (s.w / multiple);
    if (bottleneck_voxels <= 1) {
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

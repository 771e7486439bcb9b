// swinfer: the options that turn SwinUNETR into a Swin Fusion UNETR variant (fused multi-scale skips).
#pragma once

#include <array>
#include <string>
#include <string_view>

#include "swinfer/core/error.hpp"

namespace swinfer {

/// Which network a configuration describes.
enum class model_arch { swin_unetr, swin_fusion_unetr };

/// \brief The Swin Fusion UNETR variants (docs/swin-fusion.md says which details are exact and which inferred).
/// od: the author's published "overdrive" model; od_large: od with widened branch blocks; v2_2 ("2_v2"): vanilla
/// encoders kept, levels 2..5 fuse the two stages above through branch blocks; v1_1 / v1_2 ("1_v1" / "2_v1"):
/// the existing skips of the one / two stages above are pooled without branch blocks.
enum class fusion_variant { od, od_large, v2_2, v1_1, v1_2 };

/// How branch outputs are brought to a level's grid: MaxPool3d, AvgPool3d, or both concatenated [max, avg].
enum class skip_pool { max, avg, maxavg };

struct fusion_options {
  fusion_variant variant = fusion_variant::od;
  skip_pool pool = skip_pool::max;
  /// Kernel of each level's final UnetResBlock (1 in the author's code; 3 gives the thesis's "2_v2*").
  int final_kernel_size = 1;
  /// Output channels of the branch blocks of source levels 1..5 (x_in, hs0, hs1, hs2, hs3) at every level they
  /// feed; 0 keeps the variant's default (the source's own width; od_large: [fs, fs, 3fs, 4fs, 8fs]).
  std::array<int, 5> branch_channels{};
};

inline std::string_view model_arch_name(model_arch a) {
  return a == model_arch::swin_unetr ? "SwinUNETR" : "SwinFusionUNETR";
}

inline std::string_view fusion_variant_name(fusion_variant v) {
  switch (v) {
    case fusion_variant::od: return "od";
    case fusion_variant::od_large: return "od_large";
    case fusion_variant::v2_2: return "2_v2";
    case fusion_variant::v1_1: return "1_v1";
    case fusion_variant::v1_2: return "2_v1";
  }
  return "?";
}

inline std::string_view skip_pool_name(skip_pool p) {
  return p == skip_pool::max ? "max" : p == skip_pool::avg ? "avg" : "maxavg";
}

}  // namespace swinfer

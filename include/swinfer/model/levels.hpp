// swinfer: the one numbering of the network's resolutions, used by every part of the model description.
#pragma once

#include <cstdint>

#include "swinfer/model/swin_unetr_config.hpp"

namespace swinfer::model {

/// \brief Level l = 1..6 holds maps on the input grid divided by 2^(l-1).
/// Level 1 is the input (x_in; MONAI's encoder1 and decoder1), levels 2..6 hold the Swin hidden states hs0..hs4
/// (level 6, hs4, is the bottleneck). This is the Swin Fusion thesis's stage numbering and MONAI's decoder
/// numbering (decoderL outputs level L). Swin stage s = 0..3 (MONAI's `layers{s+1}`, the index of depths and
/// num_heads) reads level s+2 and emits level s+3; MONAI names level 6's skip block encoder10.
inline constexpr int input_level = 1;
inline constexpr int bottleneck_level = 6;

/// Index into the encoder's hidden states (hs0..hs4) of level 2..6.
constexpr int hidden_index(int level) { return level - 2; }

/// The Swin stage (0..3) that reads level 2..5.
constexpr int swin_stage_at(int level) { return level - 2; }

/// Width of the encoder's map at a level: x_in's channels at 1, hs_{l-2}'s above.
inline int encoder_width(const swin_unetr_config& c, int level) {
  return level == input_level ? c.in_channels : c.stage_channels(hidden_index(level));
}

/// Width of the decoder's skip (and of its output) at a level: enc0 = feature_size at 1, as the encoder above.
inline int decoder_width(const swin_unetr_config& c, int level) {
  return level == input_level ? c.feature_size : encoder_width(c, level);
}

/// Voxels of a level's grid for `input_voxels` at level 1.
inline double level_voxels(double input_voxels, int level) {
  return input_voxels / double(std::int64_t{1} << (3 * (level - 1)));
}

}  // namespace swinfer::model

// swinfer: multiply-accumulates of one SwinUNETR-family forward pass, counted the way the spec counts them
// (section 5), so benchmarks can report achieved GFLOP/s.
#pragma once

#include <cstdint>

#include "swinfer/core/shape.hpp"
#include "swinfer/model/fusion_plan.hpp"
#include "swinfer/ops/window_plan.hpp"

namespace swinfer {

/// MACs of one window attention over `plan`'s padded grid with C channels, per sample: the qkv and proj linears
/// (4 C^2 per token) and the two attention products (2 t C per token, t tokens per window).
inline double window_attention_macs(const ops::window_plan& plan, double channels) {
  const double padded = double(plan.padded[0]) * plan.padded[1] * plan.padded[2];
  return padded * 4 * channels * channels + 2 * padded * plan.tokens() * channels;
}

/// MACs of every Conv3d / ConvTranspose3d / Linear plus the two attention products. The attention linears run on
/// the padded grid, the MLP on the real one; element-wise work is not counted. GFLOP = 2 x MACs / 1e9.
inline double forward_macs(const swin_unetr_config& c, const shape5& input) {
  const double fs = c.feature_size;
  auto res_block = [](double voxels, double cin, double cout, double k = 3) {
    return voxels * (k * k * k * (cin * cout + cout * cout) + (cin != cout ? cin * cout : 0));
  };
  double macs = 0;
  std::int64_t d = input.d / c.patch_size, h = input.h / c.patch_size, w = input.w / c.patch_size;
  const double cin = input.c;
  macs += double(d) * h * w * fs * cin * c.patch_size * c.patch_size * c.patch_size;
  for (int s = 0; s < 4; ++s) {
    const double C = c.stage_channels(s), hidden = c.mlp_hidden(s);
    const auto plan = ops::make_window_plan({d, h, w}, c.window_size);
    const double real = double(d) * h * w;
    if (c.use_v2) macs += res_block(real, C, C);
    const double per_block = window_attention_macs(plan, C) + 2 * real * C * hidden;
    macs += c.depths[s] * per_block;
    macs += real * 2 * C * C;  // merging: real/8 voxels x 8C in x 2C out
    d /= 2, h /= 2, w /= 2;
  }
  const double full = double(input.d) * input.h * input.w;
  auto voxels = [&](int level) { return full / double(std::int64_t{1} << (3 * level)); };
  const skip_plan plan = make_skip_plan(c);
  macs += res_block(voxels(0), cin, fs);            // encoder1
  if (plan.vanilla_encoders) {
    macs += res_block(voxels(1), fs, fs);           // encoder2
    macs += res_block(voxels(2), 2 * fs, 2 * fs);   // encoder3
    macs += res_block(voxels(3), 4 * fs, 4 * fs);   // encoder4
    macs += res_block(voxels(5), 16 * fs, 16 * fs); // encoder10
  }
  for (const auto& level : plan.fused) {  // branch blocks at their source's grid, the final block at the level's
    for (const auto& s : level.sources)
      if (s.branch_channels) macs += res_block(voxels(s.stage - 1), s.channels, s.branch_channels);
    macs += res_block(voxels(level.level - 1), level.concat_channels(), level.channels, level.final_kernel);
  }
  for (int level = 5; level >= 1; --level) {      // decoder5 .. decoder1
    const double out = level == 1 ? fs : fs * double(1 << (level - 2)), in = level == 1 ? fs : 2 * out;
    macs += voxels(level) * in * out * 8 + res_block(voxels(level - 1), 2 * out, out);
  }
  macs += full * fs * c.out_channels;  // output head
  return macs * input.n;
}

}  // namespace swinfer

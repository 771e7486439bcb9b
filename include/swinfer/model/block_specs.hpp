// swinfer: the description of each kind of block: its state_dict keys and shapes, its op problems, its MACs.
// The blocks are built from these, and the expected state_dict and the MAC count are read off them.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "swinfer/model/int8_calibration.hpp"
#include "swinfer/model/levels.hpp"
#include "swinfer/model/swin_unetr_config.hpp"
#include "swinfer/ops/conv3d.hpp"
#include "swinfer/ops/conv_transpose3d.hpp"
#include "swinfer/ops/linear.hpp"
#include "swinfer/ops/window_attention.hpp"
#include "swinfer/ops/window_plan.hpp"

namespace swinfer {

/// \brief One tensor a configuration expects in its state_dict.
struct expected_tensor {
  std::string key;
  std::vector<std::int64_t> shape;
  bool is_index = false;  ///< int64 relative_position_index buffer (not a parameter)
  /// A Conv3d's, Linear's or ConvTranspose3d's weights: how the product's input is quantized. Where
  /// int8.quantized(), the weights are quantized per output channel (docs/int8.md; `swinfer quantize` stores them so).
  ops::int8_input int8 = {};
  /// The weights' output-channel axis: 0 (Conv3d, Linear) or 1 (ConvTranspose3d: (cin, cout, 2, 2, 2)).
  int channel_axis = 0;
};

/// \brief One int8 quantization point (docs/int8.md): the product whose input calibration observes and scales,
/// named as the calibration file names it (its module's key prefix), with what it computes.
struct int8_product {
  std::string point;
  std::variant<ops::conv3d_problem, ops::linear_problem, ops::conv_transpose3d_problem> problem;
  std::string weight_key;
  std::string bias_key;  ///< empty: no bias
};

}  // namespace swinfer

namespace swinfer::model {

/// Key prefixes of the modules that occur once.
namespace keys {
inline constexpr std::string_view patch_embed = "swinViT.patch_embed.proj";
inline constexpr std::string_view patch_norm = "swinViT.patch_embed.norm";
inline constexpr std::string_view head = "out.conv.conv";
}  // namespace keys

/// \brief Where a spec's products get their int8 input scales (precision::int8): a calibration, or each product's
/// own input (dynamic, --int8-dynamic); neither: float. A product's point is its module's key prefix: a Conv3d's
/// "encoder1.layer.conv1.conv", a Linear's "swinViT.layers1.0.blocks.0.mlp.linear1", a ConvTranspose3d's
/// "decoder5.transp_conv.conv".
struct int8_source {
  const int8_calibration* calibration = nullptr;
  bool dynamic = false;

  /// The product at `point`: named for calibration, with its scale when the calibration quantizes it; dynamic for
  /// every one when dynamic (a convolution's scale per input tensor, a linear's per row: ops::int8_input).
  ops::int8_input input(const std::string& point) const {
    if (dynamic) return {point, 0, true};
    return calibration ? calibration->input(point) : ops::int8_input{point, 0};
  }
  /// The Linear whose weight is `weight_key` ("<point>.weight").
  ops::int8_input input_of_weight(const std::string& weight_key) const {
    constexpr std::string_view suffix = ".weight";
    return input(weight_key.substr(0, weight_key.size() - suffix.size()));
  }
};

/// \brief A Conv3d: `<prefix>.weight` (cout, cin, kd, kh, kw) and, when problem.bias, `<prefix>.bias` (cout).
struct conv_spec {
  std::string prefix;
  ops::conv3d_problem problem;

  /// The convolution `problem` under `prefix`, its input quantized as `int8` says.
  static conv_spec quantized(std::string prefix, ops::conv3d_problem problem, const int8_source& int8) {
    problem.int8 = int8.input(prefix);
    return {std::move(prefix), std::move(problem)};
  }

  std::string weight_key() const { return prefix + ".weight"; }
  std::string bias_key() const { return prefix + ".bias"; }
  void add_tensors(std::vector<expected_tensor>& out) const {
    const auto& p = problem;
    out.push_back({weight_key(), {p.cout, p.cin, p.kernel[0], p.kernel[1], p.kernel[2]}, false, p.int8});
    if (p.bias) out.push_back({bias_key(), {p.cout}});
  }
  void add_int8_products(std::vector<int8_product>& out) const {
    out.push_back({prefix, problem, weight_key(), problem.bias ? bias_key() : ""});
  }
  double macs_per_output_voxel() const { return double(problem.weight_count()); }
};

/// A k^3 convolution with stride 1 and 'same' padding, without bias (every UNet convolution).
inline ops::conv3d_problem same_conv(int cin, int cout, int k) {
  ops::conv3d_problem p;
  p.cin = cin;
  p.cout = cout;
  p.kernel = {k, k, k};
  p.pad = {k / 2, k / 2, k / 2};
  return p;
}

/// \brief MONAI's UnetResBlock (cin -> cout, k^3) on one level: `<prefix>.conv1.conv`, `.conv2.conv` and, when
/// the width changes, the 1x1x1 projection `.conv3.conv`.
struct res_block_spec {
  std::string prefix;
  int cin = 0, cout = 0, kernel = 3;
  int level = input_level;  ///< the grid it runs on
  std::string observed;     ///< the stage name observers receive its output under; empty for inner blocks
  int8_source int8;

  bool projects() const { return cin != cout; }
  conv_spec conv1() const { return conv_spec::quantized(prefix + ".conv1.conv", same_conv(cin, cout, kernel), int8); }
  conv_spec conv2() const { return conv_spec::quantized(prefix + ".conv2.conv", same_conv(cout, cout, kernel), int8); }
  conv_spec conv3() const { return conv_spec::quantized(prefix + ".conv3.conv", same_conv(cin, cout, 1), int8); }

  void add_tensors(std::vector<expected_tensor>& out) const {
    conv1().add_tensors(out);
    conv2().add_tensors(out);
    if (projects()) conv3().add_tensors(out);
  }
  void add_int8_products(std::vector<int8_product>& out) const {
    conv1().add_int8_products(out);
    conv2().add_int8_products(out);
    if (projects()) conv3().add_int8_products(out);
  }
  double macs_per_voxel() const {
    return conv1().macs_per_output_voxel() + conv2().macs_per_output_voxel() +
           (projects() ? conv3().macs_per_output_voxel() : 0);
  }
  double macs(double input_voxels) const { return level_voxels(input_voxels, level) * macs_per_voxel(); }
};

/// \brief MONAI's UnetrUpBlock producing level L: `<prefix>.transp_conv.conv.weight` (cin, cout, 2, 2, 2) brings
/// level L+1 up to L, then `<prefix>.conv_block` runs on [upsampled, skip] (2 cout -> cout).
struct up_block_spec {
  std::string prefix;
  int cin = 0, cout = 0;
  int level = input_level;  ///< the output's level
  std::string observed;
  int8_source int8;

  std::string transposed_key() const { return prefix + ".transp_conv.conv.weight"; }
  ops::conv_transpose3d_problem transposed() const {
    return {cin, cout, int8.input(prefix + ".transp_conv.conv")};
  }
  res_block_spec block() const { return {prefix + ".conv_block", 2 * cout, cout, 3, level, {}, int8}; }

  void add_tensors(std::vector<expected_tensor>& out) const {
    out.push_back({transposed_key(), {cin, cout, 2, 2, 2}, false, transposed().int8, 1});
    block().add_tensors(out);
  }
  void add_int8_products(std::vector<int8_product>& out) const {
    const ops::conv_transpose3d_problem p = transposed();
    out.push_back({p.int8.point, p, transposed_key(), ""});
    block().add_int8_products(out);
  }
  double macs(double input_voxels) const {
    return level_voxels(input_voxels, level + 1) * cin * cout * 8 + block().macs(input_voxels);
  }
};

/// \brief The keys of one SwinTransformerBlock under `prefix` (ending in '.').
struct swin_block_keys {
  std::string norm1_weight, norm1_bias, bias_table, relative_index, qkv_weight, qkv_bias, proj_weight, proj_bias,
      norm2_weight, norm2_bias, mlp_in_weight, mlp_in_bias, mlp_out_weight, mlp_out_bias;
  explicit swin_block_keys(const std::string& p)
      : norm1_weight(p + "norm1.weight"),
        norm1_bias(p + "norm1.bias"),
        bias_table(p + "attn.relative_position_bias_table"),
        relative_index(p + "attn.relative_position_index"),
        qkv_weight(p + "attn.qkv.weight"),
        qkv_bias(p + "attn.qkv.bias"),
        proj_weight(p + "attn.proj.weight"),
        proj_bias(p + "attn.proj.bias"),
        norm2_weight(p + "norm2.weight"),
        norm2_bias(p + "norm2.bias"),
        mlp_in_weight(p + "mlp.linear1.weight"),
        mlp_in_bias(p + "mlp.linear1.bias"),
        mlp_out_weight(p + "mlp.linear2.weight"),
        mlp_out_bias(p + "mlp.linear2.bias") {}
};

/// \brief The keys of a stage's patch merging under `prefix` (ending in '.').
struct patch_merging_keys {
  std::string norm_weight, norm_bias, reduction_weight;
  explicit patch_merging_keys(const std::string& p)
      : norm_weight(p + "norm.weight"), norm_bias(p + "norm.bias"), reduction_weight(p + "reduction.weight") {}
};

/// \brief Swin stage s = 0..3 (MONAI's `swinViT.layers{s+1}`): `depth` SwinTransformerBlocks on level s+2, then
/// patch merging (LayerNorm over 8C, Linear 8C -> 2C) to level s+3; with use_v2, a res block
/// `swinViT.layers{s+1}c.0.layer` first.
struct swin_stage_spec {
  int stage = 0;
  int channels = 0, heads = 0, hidden = 0, depth = 0;
  std::array<int, 3> window{};
  bool qkv_bias = true;
  bool v2 = false;
  int8_source int8;

  static std::string layer(int stage) { return "swinViT.layers" + std::to_string(stage + 1); }
  static std::string block_prefix(int stage, int block) {
    return layer(stage) + ".0.blocks." + std::to_string(block) + ".";
  }
  swin_block_keys block_keys(int block) const { return swin_block_keys(block_prefix(stage, block)); }
  patch_merging_keys merge_keys() const { return patch_merging_keys(layer(stage) + ".0.downsample."); }
  int level() const { return stage + 2; }
  std::optional<res_block_spec> v2_block() const {
    if (!v2) return std::nullopt;
    return res_block_spec{layer(stage) + "c.0.layer", channels, channels, 3, level(), {}, int8};
  }

  /// Block `block`'s MLP linear1 (GELU) and linear2 (added to the residual stream), and the patch merging's
  /// reduction, each with its int8 input.
  ops::linear_problem mlp_in(int block) const {
    return {channels, hidden, true, true, false, int8.input_of_weight(block_keys(block).mlp_in_weight)};
  }
  ops::linear_problem mlp_out(int block) const {
    return {hidden, channels, true, false, true, int8.input_of_weight(block_keys(block).mlp_out_weight)};
  }
  ops::linear_problem merge_reduction() const {
    return {8 * channels, 2 * channels, false, false, false, int8.input_of_weight(merge_keys().reduction_weight)};
  }
  /// Block `block`'s attention qkv and proj inputs.
  ops::int8_input qkv_int8(int block) const { return int8.input_of_weight(block_keys(block).qkv_weight); }
  ops::int8_input proj_int8(int block) const { return int8.input_of_weight(block_keys(block).proj_weight); }

  void add_tensors(std::vector<expected_tensor>& out) const {
    const std::int64_t C = channels, tokens = std::int64_t{window[0]} * window[1] * window[2];
    for (int b = 0; b < depth; ++b) {
      const swin_block_keys k = block_keys(b);
      out.push_back({k.norm1_weight, {C}});
      out.push_back({k.norm1_bias, {C}});
      out.push_back({k.bias_table, {ops::relative_bias_table_rows(window), heads}});
      out.push_back({k.relative_index, {tokens, tokens}, true});
      out.push_back({k.qkv_weight, {3 * C, C}, false, qkv_int8(b)});
      if (qkv_bias) out.push_back({k.qkv_bias, {3 * C}});
      out.push_back({k.proj_weight, {C, C}, false, proj_int8(b)});
      out.push_back({k.proj_bias, {C}});
      out.push_back({k.norm2_weight, {C}});
      out.push_back({k.norm2_bias, {C}});
      out.push_back({k.mlp_in_weight, {hidden, C}, false, mlp_in(b).int8});
      out.push_back({k.mlp_in_bias, {hidden}});
      out.push_back({k.mlp_out_weight, {C, hidden}, false, mlp_out(b).int8});
      out.push_back({k.mlp_out_bias, {C}});
    }
    const patch_merging_keys m = merge_keys();
    out.push_back({m.reduction_weight, {2 * C, 8 * C}, false, merge_reduction().int8});
    out.push_back({m.norm_weight, {8 * C}});
    out.push_back({m.norm_bias, {8 * C}});
    if (auto block = v2_block()) block->add_tensors(out);
  }

  void add_int8_products(std::vector<int8_product>& out) const {
    for (int b = 0; b < depth; ++b) {
      const swin_block_keys k = block_keys(b);
      const ops::linear_problem qkv{channels, 3 * channels, qkv_bias, false, false, qkv_int8(b)};
      const ops::linear_problem proj{channels, channels, true, false, false, proj_int8(b)};
      out.push_back({qkv.int8.point, qkv, k.qkv_weight, qkv_bias ? k.qkv_bias : ""});
      out.push_back({proj.int8.point, proj, k.proj_weight, k.proj_bias});
      out.push_back({mlp_in(b).int8.point, mlp_in(b), k.mlp_in_weight, k.mlp_in_bias});
      out.push_back({mlp_out(b).int8.point, mlp_out(b), k.mlp_out_weight, k.mlp_out_bias});
    }
    out.push_back({merge_reduction().int8.point, merge_reduction(), merge_keys().reduction_weight, ""});
    if (auto block = v2_block()) block->add_int8_products(out);
  }

  /// Per sample, on a grid of `extent` voxels: attention on the padded window grid, the MLP on the real one.
  double macs(const std::array<std::int64_t, 3>& extent) const {
    const double real = double(extent[0]) * extent[1] * extent[2];
    const double per_block =
        ops::window_attention_macs(ops::make_window_plan(extent, window), channels) + 2 * real * channels * hidden;
    const auto block = v2_block();
    return (block ? real * block->macs_per_voxel() : 0) + depth * per_block + real * 2 * channels * channels;  // merging: real/8 x 8C x 2C
  }
};

}  // namespace swinfer::model

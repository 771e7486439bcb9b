// swinfer: the SwinUNETR family on one backend: MONAI's SwinUNETR and the Swin Fusion UNETR variants, composed
// from the Swin encoder, UNETR blocks and (for the variants) fused skips.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "swinfer/core/backend.hpp"
#include "swinfer/core/options.hpp"
#include "swinfer/core/tensor.hpp"
#include "swinfer/io/state_dict.hpp"
#include "swinfer/model/backend_volume.hpp"
#include "swinfer/model/fused_skip.hpp"
#include "swinfer/model/fusion_plan.hpp"
#include "swinfer/model/res_block.hpp"
#include "swinfer/model/swin_transformer.hpp"
#include "swinfer/model/swin_unetr_config.hpp"
#include "swinfer/model/up_block.hpp"
#include "swinfer/model/weights_check.hpp"

namespace swinfer {

/// \brief SwinUNETR-family inference on one backend, precision and layout, all fixed at compile time.
///
/// config.arch picks MONAI's SwinUNETR or a Swin Fusion UNETR variant; both share every block but the skips.
/// Weights are checked against the configuration and packed for the backend once, in the constructor.
/// \tparam Backend   backend::cpu (default, header-only), backend::onednn or backend::hip (include its header;
///                   hip keeps every intermediate on the GPU: forward uploads the input and downloads the logits once)
/// \tparam Precision precision::fp32, bf16 or fp16 (storage; compute is float32)
/// \tparam Layout    layout::ndhwc or layout::ncdhw: how activations are stored; the API is always logical NCDHW
template <class Backend = backend::cpu, class Precision = precision::fp32, class Layout = layout::ndhwc>
class swin_unetr {
  static_assert(is_supported_v<Backend, Precision, Layout>,
                "swinfer: this backend does not implement the requested precision/layout (or its header "
                "<swinfer/backend/NAME.hpp> is not included); see the support matrix in README.md");
  using K = kernels<Backend, Precision, Layout>;
  using volume = backend_volume_t<K>;  // tensor<S> on host backends, device-resident on hip

 public:
  using backend_type = Backend;
  using precision_type = Precision;
  using layout_type = Layout;

  /// Checks every key and shape of `weights` against `config` (an error names each mismatch), then packs them.
  swin_unetr(const swin_unetr_config& config, const state_dict& weights, const engine_options& options = {},
             const std::string& weights_name = "checkpoint")
      : config_(checked(config, weights, weights_name)),
        ctx_(std::make_unique<typename K::context>(options)),
        encoder_(*ctx_, weights, config_),
        plan_(make_skip_plan(config_)),
        encoder1_(*ctx_, weights, "encoder1.layer", config_.in_channels, config_.feature_size),
        decoder5_(*ctx_, weights, "decoder5", 16 * config_.feature_size, 8 * config_.feature_size),
        decoder4_(*ctx_, weights, "decoder4", 8 * config_.feature_size, 4 * config_.feature_size),
        decoder3_(*ctx_, weights, "decoder3", 4 * config_.feature_size, 2 * config_.feature_size),
        decoder2_(*ctx_, weights, "decoder2", 2 * config_.feature_size, config_.feature_size),
        decoder1_(*ctx_, weights, "decoder1", config_.feature_size, config_.feature_size),
        head_problem_{config_.feature_size, config_.out_channels, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, true},
        head_(*ctx_, head_problem_, detail::param(weights, "out.conv.conv.weight"),
              detail::param(weights, "out.conv.conv.bias")) {
    if (plan_.vanilla_encoders) {
      // encoder2, 3, 4 make the skips of levels 2..4 (level 5's is hs3 itself); encoder10 the bottleneck.
      for (int level : {2, 3, 4, 6}) {
        const int width = stage_width(config_, level);
        const std::string name = "encoder" + std::to_string(level == 6 ? 10 : level) + ".layer";
        vanilla_encoders_[level] = std::make_unique<model::res_block<Backend, Precision, Layout>>(*ctx_, weights, name,
                                                                                                width, width);
      }
    }
    for (const auto& level : plan_.fused) {
      fused_.push_back(std::make_unique<model::fused_skip<Backend, Precision, Layout>>(*ctx_, weights, level));
    }
  }

  const swin_unetr_config& config() const { return config_; }

  /// Sets a callback that receives every named stage output (patch_embed, x1..x4, hs0..hs4, enc0..enc3, dec4 where
  /// the model has them, fuse2..fuse6 for fused skips, dec3..dec0, out, logits) of later forward passes, as float32;
  /// pass {} to stop.
  void set_observer(model::stage_observer observer) { observer_ = std::move(observer); }

  /// Runs the network on (N, in_channels, D, H, W) float32 input in any layout; returns (N, out_channels, D, H, W)
  /// float32 logits in the input's layout. D, H, W must be multiples of patch_size^5 (an error says so otherwise).
  tensor<float> forward(const tensor<float>& input) {
    config_.check_input(input.shape());
    volume logits = run(model::to_volume<K>(*ctx_, input, Layout::kind));  // the one upload on a device backend
    return model::to_host<K>(*ctx_, logits, input.layout());                // the one download on a device backend
  }

  /// The forward pass on float32 input already where the backend keeps its data (a host tensor on cpu and onednn,
  /// a hip::device_tensor<float> on hip), in any layout: logits in the model's storage type and layout, left there.
  /// The sliding window runs windows through this without leaving the device.
  volume forward_resident(const backend_tensor_t<K, float>& input) {
    config_.check_input(input.shape());
    volume x(input.shape(), Layout::kind);
    K::convert(*ctx_, input, x);
    return run(std::move(x));
  }

  /// The backend's execution context (the device and stream on hip).
  typename K::context& context() { return *ctx_; }
  const typename K::context& context() const { return *ctx_; }

 private:
  volume run(volume x) {
    auto& ctx = *ctx_;
    const model::stage_observer* obs = observer_ ? &observer_ : nullptr;
    std::vector<volume> hs = encoder_.run(ctx, x, obs);
    volume enc0 = encoder1_.run(ctx, x);
    model::observe<K>(obs, ctx, "enc0", enc0);
    // skip[L]: decoder level L's skip (L = 2..5) and the bottleneck (L = 6), SwinUNETR's one-to-one ones first.
    std::array<volume, 7> owned;
    std::array<const volume*, 7> skip{};
    skip[5] = &hs[3];
    for (int level : {2, 3, 4, 6}) {
      if (!vanilla_encoders_[level]) continue;
      owned[level] = vanilla_encoders_[level]->run(ctx, hs[level == 6 ? 4 : level - 2]);
      model::observe<K>(obs, ctx, level == 6 ? "dec4" : vanilla_names[level], owned[level]);
      skip[level] = &owned[level];
    }
    // Fused skips read the one-to-one ones (v1), so all of them are computed before any is replaced.
    std::array<volume, 7> fused;
    for (auto& f : fused_) {
      const fused_level& plan = f->plan();
      std::vector<const volume*> sources;
      for (const auto& s : plan.sources) {
        sources.push_back(s.stage == 1 ? &x : plan_.sources_are_skips ? skip[s.stage] : &hs[s.stage - 2]);
      }
      fused[plan.level] = f->run(ctx, sources, plan_.own_is_raw ? hs[plan.level - 2] : *skip[plan.level]);
      model::observe<K>(obs, ctx, fused_names[plan.level], fused[plan.level]);
    }
    for (int level = 2; level <= 6; ++level)
      if (fused[level].size()) skip[level] = &fused[level];
    volume dec = decoder5_.run(ctx, *skip[6], *skip[5]);
    model::observe<K>(obs, ctx, "dec3", dec);
    dec = decoder4_.run(ctx, dec, *skip[4]);
    model::observe<K>(obs, ctx, "dec2", dec);
    dec = decoder3_.run(ctx, dec, *skip[3]);
    model::observe<K>(obs, ctx, "dec1", dec);
    dec = decoder2_.run(ctx, dec, *skip[2]);
    model::observe<K>(obs, ctx, "dec0", dec);
    dec = decoder1_.run(ctx, dec, enc0);
    model::observe<K>(obs, ctx, "out", dec);
    volume logits(head_problem_.output_shape(dec.shape()), Layout::kind);
    head_.run(dec, logits);
    model::observe<K>(obs, ctx, "logits", logits);
    return logits;
  }

  static swin_unetr_config checked(const swin_unetr_config& c, const state_dict& w, const std::string& name) {
    c.validate();
    check_weights(c, w, name);
    return c;
  }

  swin_unetr_config config_;
  std::unique_ptr<typename K::context> ctx_;  // ops keep a reference to it: its address must not change
  model::swin_transformer<Backend, Precision, Layout> encoder_;
  static constexpr const char* vanilla_names[7] = {"", "", "enc1", "enc2", "enc3", "", ""};
  static constexpr const char* fused_names[7] = {"", "", "fuse2", "fuse3", "fuse4", "fuse5", "fuse6"};

  skip_plan plan_;
  model::res_block<Backend, Precision, Layout> encoder1_;
  /// encoder2/3/4 at levels 2..4 and encoder10 at 6 (null where the variant has none).
  std::array<std::unique_ptr<model::res_block<Backend, Precision, Layout>>, 7> vanilla_encoders_;
  std::vector<std::unique_ptr<model::fused_skip<Backend, Precision, Layout>>> fused_;
  model::up_block<Backend, Precision, Layout> decoder5_, decoder4_, decoder3_, decoder2_, decoder1_;
  ops::conv3d_problem head_problem_;
  typename K::conv3d head_;
  model::stage_observer observer_;
};

}  // namespace swinfer

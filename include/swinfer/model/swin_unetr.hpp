// swinfer: the SwinUNETR network (MONAI 1.5), composed from the Swin encoder and UNETR blocks on one backend.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "swinfer/core/backend.hpp"
#include "swinfer/core/options.hpp"
#include "swinfer/core/tensor.hpp"
#include "swinfer/io/state_dict.hpp"
#include "swinfer/model/res_block.hpp"
#include "swinfer/model/swin_transformer.hpp"
#include "swinfer/model/swin_unetr_config.hpp"
#include "swinfer/model/up_block.hpp"
#include "swinfer/model/weights_check.hpp"

namespace swinfer {

/// \brief SwinUNETR inference on one backend, precision and layout, all fixed at compile time.
///
/// Weights are checked against the configuration and packed for the backend once, in the constructor.
/// \tparam Backend   backend::cpu (default, header-only) or backend::onednn (include its header)
/// \tparam Precision precision::fp32, bf16 or fp16 (storage; compute is float32)
/// \tparam Layout    layout::ndhwc or layout::ncdhw: how activations are stored; the API is always logical NCDHW
template <class Backend = backend::cpu, class Precision = precision::fp32, class Layout = layout::ndhwc>
class swin_unetr {
  static_assert(is_supported_v<Backend, Precision, Layout>,
                "swinfer: this backend does not implement the requested precision/layout (or its header "
                "<swinfer/backend/NAME.hpp> is not included); see the support matrix in README.md");
  using K = kernels<Backend, Precision, Layout>;
  using S = storage_t<Precision>;
  using volume = tensor<S>;

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
        encoder1_(*ctx_, weights, "encoder1.layer", config_.in_channels, config_.feature_size),
        encoder2_(*ctx_, weights, "encoder2.layer", config_.feature_size, config_.feature_size),
        encoder3_(*ctx_, weights, "encoder3.layer", 2 * config_.feature_size, 2 * config_.feature_size),
        encoder4_(*ctx_, weights, "encoder4.layer", 4 * config_.feature_size, 4 * config_.feature_size),
        encoder10_(*ctx_, weights, "encoder10.layer", 16 * config_.feature_size, 16 * config_.feature_size),
        decoder5_(*ctx_, weights, "decoder5", 16 * config_.feature_size, 8 * config_.feature_size),
        decoder4_(*ctx_, weights, "decoder4", 8 * config_.feature_size, 4 * config_.feature_size),
        decoder3_(*ctx_, weights, "decoder3", 4 * config_.feature_size, 2 * config_.feature_size),
        decoder2_(*ctx_, weights, "decoder2", 2 * config_.feature_size, config_.feature_size),
        decoder1_(*ctx_, weights, "decoder1", config_.feature_size, config_.feature_size),
        head_problem_{config_.feature_size, config_.out_channels, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, true},
        head_(*ctx_, head_problem_, detail::param(weights, "out.conv.conv.weight"),
              detail::param(weights, "out.conv.conv.bias")) {}

  const swin_unetr_config& config() const { return config_; }

  /// Sets a callback that receives every named stage output (patch_embed, x1..x4, hs0..hs4, enc0..enc3, dec4..dec0,
  /// out, logits) of later forward passes, as float32; pass {} to stop.
  void set_observer(model::stage_observer observer) { observer_ = std::move(observer); }

  /// Runs the network on (N, in_channels, D, H, W) float32 input in any layout; returns (N, out_channels, D, H, W)
  /// float32 logits in the input's layout. D, H, W must be multiples of patch_size^5 (an error says so otherwise).
  tensor<float> forward(const tensor<float>& input) {
    config_.check_input(input.shape());
    auto& ctx = *ctx_;
    const model::stage_observer* obs = observer_ ? &observer_ : nullptr;
    volume x(input.shape(), Layout::kind);
    K::convert(ctx, input, x);
    std::vector<volume> hs = encoder_.run(ctx, x, obs);
    volume enc0 = encoder1_.run(ctx, x);
    model::observe<K>(obs, ctx, "enc0", enc0);
    volume enc1 = encoder2_.run(ctx, hs[0]);
    model::observe<K>(obs, ctx, "enc1", enc1);
    volume enc2 = encoder3_.run(ctx, hs[1]);
    model::observe<K>(obs, ctx, "enc2", enc2);
    volume enc3 = encoder4_.run(ctx, hs[2]);
    model::observe<K>(obs, ctx, "enc3", enc3);
    volume dec = encoder10_.run(ctx, hs[4]);
    model::observe<K>(obs, ctx, "dec4", dec);
    dec = decoder5_.run(ctx, dec, hs[3]);
    model::observe<K>(obs, ctx, "dec3", dec);
    dec = decoder4_.run(ctx, dec, enc3);
    model::observe<K>(obs, ctx, "dec2", dec);
    dec = decoder3_.run(ctx, dec, enc2);
    model::observe<K>(obs, ctx, "dec1", dec);
    dec = decoder2_.run(ctx, dec, enc1);
    model::observe<K>(obs, ctx, "dec0", dec);
    dec = decoder1_.run(ctx, dec, enc0);
    model::observe<K>(obs, ctx, "out", dec);
    volume logits(head_problem_.output_shape(dec.shape()), Layout::kind);
    head_.run(dec, logits);
    model::observe<K>(obs, ctx, "logits", logits);
    tensor<float> result(logits.shape(), input.layout());
    K::convert(ctx, logits, result);
    return result;
  }

 private:
  static swin_unetr_config checked(const swin_unetr_config& c, const state_dict& w, const std::string& name) {
    c.validate();
    check_weights(c, w, name);
    return c;
  }

  swin_unetr_config config_;
  std::unique_ptr<typename K::context> ctx_;  // ops keep a reference to it: its address must not change
  model::swin_transformer<Backend, Precision, Layout> encoder_;
  model::res_block<Backend, Precision, Layout> encoder1_, encoder2_, encoder3_, encoder4_, encoder10_;
  model::up_block<Backend, Precision, Layout> decoder5_, decoder4_, decoder3_, decoder2_, decoder1_;
  ops::conv3d_problem head_problem_;
  typename K::conv3d head_;
  model::stage_observer observer_;
};

}  // namespace swinfer

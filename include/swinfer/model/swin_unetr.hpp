// swinfer: the SwinUNETR family on one backend: MONAI's SwinUNETR and the Swin Fusion UNETR variants, composed
// from the Swin encoder, UNETR blocks and (for the variants) fused skips.
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "swinfer/backend/contract.hpp"
#include "swinfer/core/backend.hpp"
#include "swinfer/core/options.hpp"
#include "swinfer/core/tensor.hpp"
#include "swinfer/io/state_dict.hpp"
#include "swinfer/model/backend_volume.hpp"
#include "swinfer/model/fused_skip.hpp"
#include "swinfer/model/fusion_plan.hpp"
#include "swinfer/model/int8_calibration.hpp"
#include "swinfer/model/levels.hpp"
#include "swinfer/model/network_spec.hpp"
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
/// \tparam Precision precision::fp32, bf16 or fp16 (storage; compute is float32), or int8 (int8 convolutions with
///                   the scales of engine_options::calibration, or dynamic ones: int8_dynamic; docs/int8.md)
/// \tparam Layout    layout::ndhwc or layout::ncdhw: how activations are stored; the API is always logical NCDHW
template <class Backend = backend::cpu, class Precision = precision::fp32, class Layout = layout::ndhwc>
class swin_unetr {
  static_assert(supported_kernels<Backend, Precision, Layout>,
                "swinfer: this backend does not implement the requested precision/layout (or its header "
                "<swinfer/backend/NAME.hpp> is not included; see the support matrix in README.md), or its kernels "
                "do not satisfy swinfer::backend_kernels (swinfer/backend/contract.hpp)");
  using K = kernels<Backend, Precision, Layout>;
  using volume = backend_volume_t<K>;  // tensor<S> on host backends, device-resident on hip

 public:
  using backend_type = Backend;
  using precision_type = Precision;
  using layout_type = Layout;

  /// Checks every key and shape of `weights` against `config` (an error names each mismatch), and for int8 the
  /// calibration against the weights, then packs them.
  /// `options`: the backend's (backend_options<Backend>; an engine_options converts to it, the backend's own settings
  /// at their defaults).
  swin_unetr(const swin_unetr_config& config, const state_dict& weights,
             const context_options_t<typename K::context>& options = {}, const std::string& weights_name = "checkpoint")
      : calibration_(calibration_for(options, weights, weights_name)),
        spec_(model::describe_network(checked(config, weights, weights_name), int8_source_for(options))),
        ctx_(std::make_unique<typename K::context>(options)),
        encoder_(*ctx_, weights, spec_),
        encoder1_(*ctx_, weights, spec_.encoder1),
        head_(*ctx_, spec_.head.problem, detail::param(weights, spec_.head.weight_key()),
              detail::param(weights, spec_.head.bias_key())) {
    // Blocks are built in place (reserved storage), never relocated: backends may keep pointers into them.
    skip_encoders_.reserve(spec_.skip_encoders.size());
    for (const auto& e : spec_.skip_encoders) skip_encoders_.emplace_back(*ctx_, weights, e);
    for (const auto& level : spec_.skips.fused) {
      fused_.push_back(std::make_unique<model::fused_skip<Backend, Precision, Layout>>(*ctx_, weights, level));
    }
    decoders_.reserve(spec_.decoders.size());
    for (const auto& d : spec_.decoders) decoders_.emplace_back(*ctx_, weights, d);
  }

  const swin_unetr_config& config() const { return spec_.config; }
  /// The module tree the model was built from.
  const model::network_spec& spec() const { return spec_; }

  /// Sets a callback that receives every named stage output (patch_embed, x1..x4, hs0..hs4, enc0..enc3, dec4 where
  /// the model has them, fuse2..fuse6 for fused skips, dec3..dec0, out, logits) of later forward passes, as float32;
  /// pass {} to stop.
  void set_observer(model::stage_observer observer) { observer_ = std::move(observer); }

  /// Runs the network on (N, in_channels, D, H, W) float32 input in any layout; returns (N, out_channels, D, H, W)
  /// float32 logits in the input's layout. D, H, W must be multiples of patch_size^5 (an error says so otherwise).
  tensor<float> forward(const tensor<float>& input) {
    spec_.config.check_input(input.shape());
    volume logits = run(model::to_volume<K>(*ctx_, input, Layout::kind));  // the one upload on a device backend
    return model::to_host<K>(*ctx_, logits, input.layout());                // the one download on a device backend
  }

  /// The forward pass on float32 input already where the backend keeps its data (a host tensor on cpu and onednn,
  /// a hip::device_tensor<float> on hip), in any layout: logits in the model's storage type and layout, left there.
  /// The sliding window runs windows through this without leaving the device.
  volume forward_resident(const backend_tensor_t<K, float>& input) {
    spec_.config.check_input(input.shape());
    volume x(input.shape(), Layout::kind);
    K::convert(*ctx_, input, x);
    return run(std::move(x));
  }

  /// For benchmarks: a forward pass whose input and logits stay where the backend keeps its data, as a framework's
  /// per-window time is measured for tensors already on its device. `input` is copied there once (one upload on
  /// hip); each call of the returned function runs forward_resident on it and waits until the device is done. The
  /// function refers to this model: call it while the model lives.
  std::function<void()> resident_forward(const tensor<float>& input) {
    spec_.config.check_input(input.shape());
    std::shared_ptr<backend_tensor_t<K, float>> resident;
    if constexpr (device_resident<K>) {
      resident = std::make_shared<backend_tensor_t<K, float>>(backend_tensor_t<K, float>::upload(*ctx_, input));
    } else {
      resident = std::make_shared<tensor<float>>(input.clone());
    }
    return [this, resident] {
      [[maybe_unused]] volume logits = forward_resident(*resident);  // freed after the wait
      if constexpr (requires(typename K::context& c) { c.synchronize(); }) ctx_->synchronize();
    };
  }

  /// The backend's execution context (the device and stream on hip).
  typename K::context& context() { return *ctx_; }
  const typename K::context& context() const { return *ctx_; }

 private:
  /// Levels as model/levels.hpp numbers them: skip[L] is the map decoder L (or the first decoder, at L = 6)
  /// reads; SwinUNETR's one-to-one skips first, replaced by the fused ones where the variant has them.
  volume run(volume x) {
    auto& ctx = *ctx_;
    const model::stage_observer* obs = observer_ ? &observer_ : nullptr;
    std::vector<volume> hs = encoder_.run(ctx, x, obs);
    volume enc0 = encoder1_.run(ctx, x);
    model::observe<K>(obs, ctx, spec_.encoder1.observed, enc0);
    std::array<volume, model::bottleneck_level + 1> owned;
    std::array<const volume*, model::bottleneck_level + 1> skip{};
    for (int level = 2; level <= model::bottleneck_level; ++level) skip[level] = &hs[model::hidden_index(level)];
    for (std::size_t i = 0; i < skip_encoders_.size(); ++i) {
      const auto& e = spec_.skip_encoders[i];
      owned[e.level] = skip_encoders_[i].run(ctx, *skip[e.level]);
      model::observe<K>(obs, ctx, e.observed, owned[e.level]);
      skip[e.level] = &owned[e.level];
    }
    // Fused skips read the one-to-one ones (v1), so all of them are computed before any is replaced.
    std::array<volume, model::bottleneck_level + 1> fused;
    for (auto& f : fused_) {
      const fused_level& plan = f->plan();
      std::vector<const volume*> sources;
      for (const auto& s : plan.sources) {
        sources.push_back(s.level == model::input_level ? &x
                          : spec_.skips.sources_are_skips ? skip[s.level]
                                                          : &hs[model::hidden_index(s.level)]);
      }
      const volume& own = spec_.skips.own_is_raw ? hs[model::hidden_index(plan.level)] : *skip[plan.level];
      fused[plan.level] = f->run(ctx, sources, own);
      model::observe<K>(obs, ctx, plan.observed(), fused[plan.level]);
    }
    for (int level = 2; level <= model::bottleneck_level; ++level)
      if (fused[level].size()) skip[level] = &fused[level];
    skip[model::input_level] = &enc0;
    volume dec;
    for (std::size_t i = 0; i < decoders_.size(); ++i) {
      const auto& d = spec_.decoders[i];
      dec = decoders_[i].run(ctx, i == 0 ? *skip[d.level + 1] : dec, *skip[d.level]);
      model::observe<K>(obs, ctx, d.observed, dec);
    }
    volume logits(spec_.head.problem.output_shape(dec.shape()), Layout::kind);
    head_.run(dec, logits);
    model::observe<K>(obs, ctx, "logits", logits);
    return logits;
  }

  /// int8: the options' calibration, which must exist and belong to `weights`, or none with dynamic scales; float
  /// precisions: none.
  static std::shared_ptr<const int8_calibration> calibration_for(const engine_options& o, const state_dict& w,
                                                                 const std::string& name) {
    if constexpr (!precision_traits<Precision>::is_quantized) {
      return nullptr;
    } else {
      if (o.int8_dynamic) {
        if (o.calibration) {
          detail::fail("precision int8 takes a calibration or dynamic scales (engine_options::int8_dynamic, ",
                       "--int8-dynamic), not both");
        }
        return nullptr;
      }
      if (!o.calibration) {
        detail::fail("precision int8 needs a calibration (engine_options::calibration; on the command line "
                     "--calibration FILE): make one with `swinfer calibrate --model ",
                     name, " --input <volumes> --output <file>`, or use dynamic scales (--int8-dynamic)");
      }
      check_calibration_matches(*o.calibration, w, name, "calibration");
      return o.calibration;
    }
  }

  /// Where the products' int8 scales come from: the calibration, or their inputs (int8_dynamic); float: nowhere.
  model::int8_source int8_source_for(const engine_options& o) const {
    return {calibration_.get(), precision_traits<Precision>::is_quantized && o.int8_dynamic};
  }

  static swin_unetr_config checked(const swin_unetr_config& c, const state_dict& w, const std::string& name) {
    c.validate();
    check_weights(c, w, name);
    return c;
  }

  std::shared_ptr<const int8_calibration> calibration_;  ///< spec_'s products point into it
  model::network_spec spec_;
  std::unique_ptr<typename K::context> ctx_;  // ops keep a reference to it: its address must not change
  model::swin_transformer<Backend, Precision, Layout> encoder_;
  model::res_block<Backend, Precision, Layout> encoder1_;
  std::vector<model::res_block<Backend, Precision, Layout>> skip_encoders_;  ///< spec_.skip_encoders' blocks
  std::vector<std::unique_ptr<model::fused_skip<Backend, Precision, Layout>>> fused_;
  std::vector<model::up_block<Backend, Precision, Layout>> decoders_;  ///< spec_.decoders' blocks
  typename K::conv3d head_;
  model::stage_observer observer_;
};

}  // namespace swinfer

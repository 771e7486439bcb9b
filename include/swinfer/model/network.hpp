// swinfer: choosing backend, precision and layout at run time (for tools) over the compile-time models.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "swinfer/core/backend.hpp"
#include "swinfer/core/error.hpp"
#include "swinfer/core/tag_list.hpp"
#include "swinfer/inference/model_sliding_window.hpp"
#include "swinfer/model/swin_unetr.hpp"
#include "swinfer/ops/quantization.hpp"

namespace swinfer {

/// \brief A SwinUNETR whose backend, precision and layout were picked at run time.
/// Embedders who know their configuration use swin_unetr<B, P, L> directly; tools parse flags into this.
class network {
 public:
  virtual ~network() = default;
  virtual tensor<float> forward(const tensor<float>& input) = 0;
  /// Whole-volume logits by MONAI's sliding window (swinfer::sliding_window_inference on the model).
  virtual tensor<float> infer_volume(const tensor<float>& image, const sliding_window_options& options,
                                     const progress_callback& progress) = 0;
  /// Softmax-argmax labels of the whole-volume logits (swinfer::sliding_window_segment); `logits` optional.
  virtual tensor<std::uint8_t> segment_volume(const tensor<float>& image, const sliding_window_options& options,
                                              const progress_callback& progress, tensor<float>* logits) = 0;
  /// For benchmarks: a forward on `input` copied once to where the backend keeps its data, its logits left there
  /// (swin_unetr::resident_forward); each call waits for the device.
  virtual std::function<void()> resident_forward(const tensor<float>& input) = 0;
  virtual void set_observer(model::stage_observer observer) = 0;
  /// Int8 calibration: every product's float32 input at its calibration point; {} stops. Only a float32 model on the
  /// cpu backend observes them; any other refuses.
  virtual void set_input_observer(ops::calibration_observer observer) = 0;
  virtual const swin_unetr_config& config() const = 0;
  /// "cpu/fp32/ndhwc" style description of what runs.
  virtual std::string description() const = 0;
  /// Where it runs (the backend context's describe_device()): the CPU's brand and instruction sets, or the GPU's
  /// name, architecture and whether the matrix cores are used.
  virtual std::string device() const = 0;
};

/// Run-time names of a configuration, as the command line spells them.
struct network_choice {
  std::string backend{tag_name<swinfer::backend::cpu>()};
  std::string precision{tag_name<swinfer::precision::fp32>()};
  std::string layout{tag_name<swinfer::layout::ndhwc>()};
};

namespace detail {

template <class B, class P, class L>
class network_impl final : public network {
 public:
  network_impl(const swin_unetr_config& c, const state_dict& w, const backend_options<B>& o, const std::string& name)
      : model_(c, w, o, name) {}
  tensor<float> forward(const tensor<float>& input) override { return model_.forward(input); }
  tensor<float> infer_volume(const tensor<float>& image, const sliding_window_options& options,
                             const progress_callback& progress) override {
    return sliding_window_inference(model_, image, options, progress);
  }
  tensor<std::uint8_t> segment_volume(const tensor<float>& image, const sliding_window_options& options,
                                      const progress_callback& progress, tensor<float>* logits) override {
    return sliding_window_segment(model_, image, options, progress, logits);
  }
  std::function<void()> resident_forward(const tensor<float>& input) override {
    return model_.resident_forward(input);
  }
  void set_observer(model::stage_observer observer) override { model_.set_observer(std::move(observer)); }
  void set_input_observer(ops::calibration_observer observer) override {
    if constexpr (std::is_same_v<P, precision::fp32> &&
                  requires { model_.context().set_input_observer(std::move(observer)); }) {
      model_.context().set_input_observer(std::move(observer));
    } else {
      fail("int8 calibration observes a float32 model on the cpu backend, not ", description());
    }
  }
  const swin_unetr_config& config() const override { return model_.config(); }
  std::string description() const override {
    return concat(B::name, "/", precision_traits<P>::name, "/", L::name);
  }
  std::string device() const override { return model_.context().describe_device(); }

 private:
  swin_unetr<B, P, L> model_;
};

template <class B, class P>
std::unique_ptr<network> make_network_pl(const network_choice& c, const swin_unetr_config& cfg, const state_dict& w,
                                         const backend_options<B>& o, const std::string& name) {
  std::unique_ptr<network> made;
  const bool known = layout_tags::visit(c.layout, [&]<class L>(L) {
    if constexpr (is_supported_v<B, P, L>) {
      made = std::make_unique<network_impl<B, P, L>>(cfg, w, o, name);
    } else {
      fail("backend ", B::name, " does not implement precision ", precision_traits<P>::name, " with layout ", L::name);
    }
  });
  if (!known) fail("unknown layout '", c.layout, "' (use ", layout_tags::joined(), ")");
  return made;
}

}  // namespace detail

/// \brief The model swin_unetr<B, P, L> behind the run-time interface, instantiating only that configuration.
template <class B, class P, class L>
std::unique_ptr<network> make_network(const swin_unetr_config& config, const state_dict& weights,
                                      const backend_options<B>& options = {},
                                      const std::string& weights_name = "checkpoint") {
  return std::make_unique<detail::network_impl<B, P, L>>(config, weights, options, weights_name);
}

/// \brief Builds the model for backend B with the precision and layout named in `choice`.
/// Combinations B does not implement are a run-time error here (and a compile-time error in swin_unetr<>).
template <class B>
std::unique_ptr<network> make_network(const network_choice& choice, const swin_unetr_config& config,
                                      const state_dict& weights, const backend_options<B>& options = {},
                                      const std::string& weights_name = "checkpoint") {
  std::unique_ptr<network> made;
  const bool known = precision_tags::visit(choice.precision, [&]<class P>(P) {
    made = detail::make_network_pl<B, P>(choice, config, weights, options, weights_name);
  });
  if (known) return made;
  detail::fail("unknown precision '", choice.precision, "' (use ", precision_tags::joined(), ")");
}

}  // namespace swinfer

// swinfer: a model's whole-volume inference by MONAI's sliding window, where the backend keeps its data: on host
// backends the window batches and the blended sum are host tensors; on a device backend (hip) the padded image goes
// up once, and windows, predictions, blending and normalisation stay on the device until the result comes back.
#pragma once

#include <cstdint>
#include <vector>

#include "swinfer/core/memory.hpp"
#include "swinfer/core/tensor.hpp"
#include "swinfer/inference/postprocess.hpp"
#include "swinfer/inference/sliding_window.hpp"
#include "swinfer/model/backend_volume.hpp"
#include "swinfer/model/swin_unetr.hpp"

namespace swinfer {

namespace detail {

/// The sliding window's volume operations for kernels K: K::window_ops on device backends, the host's otherwise.
template <class K>
auto make_window_ops(typename K::context& ctx, int threads) {
  if constexpr (device_resident<K>) {
    return typename K::window_ops(ctx);
  } else {
    (void)ctx;
    return host_window_ops{threads};
  }
}

/// Runs the sliding window of `model` over `image`; returns the blended logits where the backend keeps them, with
/// the window operations that made them (a device result is read back through them).
template <class B, class P, class L, class Finish>
auto run_model_windows(swin_unetr<B, P, L>& model, const tensor<float>& image, const sliding_window_options& options,
                       const progress_callback& progress, Finish&& finish) {
  using K = kernels<B, P, L>;
  if constexpr (!device_resident<K>) {  // refused before the first window runs (a device checks its own memory)
    const shape5& s = image.shape();
    const auto grid = padded_grid(s, options);
    require_memory(4.0 * double(s.n) * double(model.config().out_channels) * double(grid[0]) * double(grid[1]) *
                       double(grid[2]),
                   concat("sliding_window_inference: the blended logits of a ", s, " image"),
                   "; use a smaller roi, or crop or resample the image");
  }
  auto ops = make_window_ops<K>(model.context(), options.threads);
  auto logits = run_sliding_window(
      ops, {&image}, options,
      [&](const auto& batches) {
        if constexpr (device_resident<K>) {
          return model.forward_resident(batches[0]);  // logits stay on the device, in the model's storage
        } else {
          return model.forward(batches[0]);  // float32 in the image's layout, as the predictor overload gets
        }
      },
      progress);
  return finish(ops, std::move(logits));
}

}  // namespace detail

/// \brief MONAI's sliding_window_inference of `model` over a (N, in_channels, D, H, W) float32 image in either
/// layout: (N, out_channels, D, H, W) float32 logits in the image's layout. Identical to the predictor overload with
/// `model.forward` on host backends; on the hip backend nothing but the image and the logits crosses to the host.
template <class B, class P, class L>
tensor<float> sliding_window_inference(swin_unetr<B, P, L>& model, const tensor<float>& image,
                                       const sliding_window_options& options, const progress_callback& progress = {}) {
  using K = kernels<B, P, L>;
  return detail::run_model_windows(model, image, options, progress, [&](auto& ops, auto logits) {
    (void)ops;
    if constexpr (device_resident<K>) {
      return logits.download(model.context());
    } else {
      return logits;
    }
  });
}

/// \brief Labels (N, 1, D, H, W) uint8 in the image's layout: the argmax of the softmax of the sliding-window logits
/// (MONAI's Activations(softmax) then AsDiscrete(argmax) on the network grid), taken on the device on the hip
/// backend. `logits`, when given, also receives the float32 logits (one more download on hip).
template <class B, class P, class L>
tensor<std::uint8_t> sliding_window_segment(swin_unetr<B, P, L>& model, const tensor<float>& image,
                                            const sliding_window_options& options,
                                            const progress_callback& progress = {}, tensor<float>* logits = nullptr) {
  using K = kernels<B, P, L>;
  return detail::run_model_windows(model, image, options, progress, [&](auto& ops, auto blended) {
    if constexpr (device_resident<K>) {
      if (logits) *logits = blended.download(model.context());
      return ops.softmax_argmax(blended);
    } else {
      (void)ops;
      auto labels = argmax_channels<std::uint8_t>(softmax_channels(blended, options.threads), options.threads);
      if (logits) *logits = std::move(blended);
      return labels;
    }
  });
}

}  // namespace swinfer

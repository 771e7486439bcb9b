// swinfer hip backend: LayerNorm over the channels of device token rows (affine, or parameter-free for proj_out).
#pragma once

#include <cstddef>
#include <cstdint>

#include "swinfer/backend/hip/api.hpp"
#include "swinfer/backend/hip/context.hpp"
#include "swinfer/backend/hip/device_tensor.hpp"
#include "swinfer/ops/layer_norm.hpp"

namespace swinfer::hip {

/// \brief y[r] = LayerNorm(x[r]) [* gamma] [+ beta] over device rows of `channels` values of S (src/norm.cu);
/// gamma/beta uploaded in float32 at construction. linear and window_attention also take it as their pre-norm.
template <class S>
class layer_norm {
 public:
  layer_norm(context& ctx, int channels, const float* gamma, const float* beta, float eps)
      : ctx_(ctx), channels_(channels), eps_(eps) {
    ops::check_layer_norm(channels);
    if (gamma) gamma_ = ctx.upload(gamma, static_cast<std::size_t>(channels));
    if (beta) beta_ = ctx.upload(beta, static_cast<std::size_t>(channels));
  }
  /// x, y: (rows, channels) device pointers; may alias.
  void run(const S* x, std::int64_t rows, S* y) {
    ops::check_layer_norm(channels_, rows);
    launch_layer_norm(ctx_.env(), dtype_of<S>(), x, rows, channels_, static_cast<const float*>(gamma_.get()),
                      static_cast<const float*>(beta_.get()), eps_, y);
  }

  int channels() const { return channels_; }
  /// The norm as the GEMMs that apply it on load take it.
  layer_norm_args args() const {
    return {static_cast<const float*>(gamma_.get()), static_cast<const float*>(beta_.get()), eps_};
  }

 private:
  context& ctx_;
  int channels_;
  float eps_;
  device_buffer gamma_, beta_;
};

}  // namespace swinfer::hip

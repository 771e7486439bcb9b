// swinfer hip backend: InstanceNorm (no affine, batch statistics) with the residual add and LeakyReLU after it.
#pragma once

#include "swinfer/backend/hip/api.hpp"
#include "swinfer/backend/hip/context.hpp"
#include "swinfer/backend/hip/device_tensor.hpp"
#include "swinfer/ops/instance_norm.hpp"

namespace swinfer::hip {

/// x = act(InstanceNorm(x) [+ residual]) in place on a device volume of S (src/norm.cu): float32 statistics per
/// chunk merged in float64.
template <class S>
void instance_norm(context& ctx, device_tensor<S>& x, const device_tensor<S>* residual,
                   const ops::instance_norm_epilogue& e) {
  ops::check_instance_norm(x.shape(), residual ? &residual->shape() : nullptr);
  void* scratch = ctx.scratch(instance_norm_scratch_bytes(x.desc()));
  launch_instance_norm(ctx.env(), dtype_of<S>(), x.data(), x.desc(), residual ? residual->data() : nullptr,
                       residual ? residual->desc() : x.desc(), e.eps, e.negative_slope.has_value(),
                       e.negative_slope.value_or(0.0f), scratch);
}

}  // namespace swinfer::hip

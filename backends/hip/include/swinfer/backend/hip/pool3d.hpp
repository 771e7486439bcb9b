// swinfer hip backend: max / average pooling with kernel = stride (the Swin Fusion skips' downsampling).
#pragma once

#include "swinfer/backend/hip/api.hpp"
#include "swinfer/backend/hip/context.hpp"
#include "swinfer/backend/hip/device_tensor.hpp"
#include "swinfer/ops/pool3d.hpp"

namespace swinfer::hip {

/// out (N, C, D/k, H/k, W/k) = max or mean of each k^3 block of in, one layout, no padding, floor mode
/// (src/data_movement.cu).
template <class S>
void pool3d(context& ctx, const device_tensor<S>& in, const ops::pool3d_problem& p, device_tensor<S>& out) {
  p.check(in.shape(), out.shape());
  require_same_layout("pool3d", in, out);
  launch_pool3d(ctx.env(), dtype_of<S>(), in.data(), in.desc(), p.mode == ops::pool_mode::max, p.kernel, out.data(),
                out.desc());
}

}  // namespace swinfer::hip

// swinfer hip backend: kernels that only move and convert data on the device: type/layout conversion, the
// decoder's channel concatenation and the patch-merging gather (src/data_movement.cu).
#pragma once

#include <cstdint>
#include <vector>

#include "swinfer/backend/hip/api.hpp"
#include "swinfer/backend/hip/context.hpp"
#include "swinfer/backend/hip/device_tensor.hpp"
#include "swinfer/core/error.hpp"
#include "swinfer/ops/concat.hpp"
#include "swinfer/ops/convert.hpp"
#include "swinfer/ops/patch_merging.hpp"

namespace swinfer::hip {

/// out = [parts[0], parts[1], ...] along channels, all in one layout: one copy kernel per part into its channels.
template <class S>
void concat_channels(context& ctx, const std::vector<const device_tensor<S>*>& parts, device_tensor<S>& out) {
  for (const auto* p : parts) {
    if (p->layout() != out.layout()) detail::fail("concat: all tensors need one layout");
  }
  ops::check_concat_channels(parts, out.shape());
  std::int64_t first = 0;
  for (const auto* p : parts) {
    launch_copy(ctx.env(), dtype_of<S>(), p->data(), p->desc(), dtype_of<S>(), out.data(), out.desc(), first);
    first += p->shape().c;
  }
}

/// out[n, k*C + c, z, y, x] = x[n, c, 2z + a_k, 2y + b_k, 2x + c_k] for the 8 offsets of `order`, one layout.
template <class S>
void patch_merge_gather(context& ctx, const device_tensor<S>& x, ops::merge_order order, device_tensor<S>& out) {
  ops::check_patch_merge(x.shape(), out.shape());
  require_same_layout("patch_merge_gather", x, out);
  launch_patch_merge_gather(ctx.env(), dtype_of<S>(), x.data(), x.desc(), ops::merge_offsets(order), out.data(),
                            out.desc());
}

/// dst = src element by element, converting the element type and the layout.
template <class A, class B>
void convert(context& ctx, const device_tensor<A>& src, device_tensor<B>& dst) {
  ops::check_convert(src.shape(), dst.shape());
  launch_copy(ctx.env(), dtype_of<A>(), src.data(), src.desc(), dtype_of<B>(), dst.data(), dst.desc(), 0);
}

}  // namespace swinfer::hip

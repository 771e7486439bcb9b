// swinfer oneDNN backend: the 2x2x2 gather of Swin patch merging, in any of MONAI's channel orders.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include "swinfer/backend/onednn/context.hpp"
#include "swinfer/backend/onednn/memory.hpp"
#include "swinfer/core/tensor.hpp"
#include "swinfer/ops/patch_merging.hpp"

namespace swinfer::onednn {

/// \brief out (N, 8C, D/2, H/2, W/2): channel block k = x[:, :, a::2, b::2, c::2] for the k-th (a, b, c) of
/// `order`; x and out of any layouts.
/// Primitive: one reorder between strided views, run 8 times: from the sub-grid of x at offset (a, b, c)
/// (strides doubled) into channels [kC, (k+1)C) of out. The 8 runs differ only in their data pointers.
template <class S>
void patch_merge_gather(context& ctx, const tensor<S>& x, ops::merge_order order, tensor<S>& out) {
  ops::check_patch_merge(x.shape(), out.shape());
  const shape5& os = out.shape();
  if (os.numel() == 0) return;
  const auto& xs = x.strides();
  const auto& ost = out.strides();
  const dnnl::memory::dims dims{os.n, x.shape().c, os.d, os.h, os.w};
  const auto from = strided_md<S>(dims, {xs[0], xs[1], 2 * xs[2], 2 * xs[3], 2 * xs[4]});
  const auto to = strided_md<S>(dims, {ost[0], ost[1], ost[2], ost[3], ost[4]});
  const auto offsets = ops::merge_offsets(order);
  for (int k = 0; k < 8; ++k) {
    const auto& [a, b, c] = offsets[k];
    ctx.reorder(wrap(ctx, from, x.data() + a * xs[2] + b * xs[3] + c * xs[4]),
                wrap(ctx, to, out.data() + k * x.shape().c * ost[1]));
  }
}

}  // namespace swinfer::onednn

// swinfer oneDNN backend: tensor conversion between storage types and layouts.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include "swinfer/backend/onednn/context.hpp"
#include "swinfer/backend/onednn/memory.hpp"
#include "swinfer/core/tensor.hpp"
#include "swinfer/ops/convert.hpp"

namespace swinfer::onednn {

/// \brief dst = src converted: any of float / Eigen::bfloat16 to any, ncdhw or ndhwc to either.
/// Primitive: one reorder (f32 -> bf16 rounds to nearest even, as Eigen does; every other direction is exact).
template <class A, class B>
void convert(context& ctx, const tensor<A>& src, tensor<B>& dst) {
  ops::check_convert(src.shape(), dst.shape());
  if (src.size() == 0) return;
  ctx.reorder(wrap_volume(ctx, src), wrap_volume(ctx, dst));
}

}  // namespace swinfer::onednn

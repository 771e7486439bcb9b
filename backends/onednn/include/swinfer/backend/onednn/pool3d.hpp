// swinfer oneDNN backend: max / average pooling with kernel = stride (the Swin Fusion skips' downsampling).
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include "swinfer/backend/onednn/context.hpp"
#include "swinfer/backend/onednn/memory.hpp"
#include "swinfer/core/tensor.hpp"
#include "swinfer/ops/pool3d.hpp"

namespace swinfer::onednn {

/// \brief out (N, C, D/k, H/k, W/k) = max or mean of each k^3 block of in (N, C, D, H, W), any layouts.
/// Primitive: pooling_forward (inference), kernel = stride = k, no padding, so pooling_avg_exclude_padding is the
/// plain mean; f32 accumulation inside oneDNN.
template <class S>
void pool3d(context& ctx, const tensor<S>& in, const ops::pool3d_problem& p, tensor<S>& out) {
  p.check(in.shape(), out.shape());
  if (out.shape().numel() == 0) return;
  const dnnl::memory im = wrap_volume(ctx, in), om = wrap_volume(ctx, out);
  const auto alg = p.mode == ops::pool_mode::max ? dnnl::algorithm::pooling_max
                                                 : dnnl::algorithm::pooling_avg_exclude_padding;
  const dnnl::memory::dims k{p.kernel, p.kernel, p.kernel}, zero{0, 0, 0};
  const auto& prim = ctx.cached<dnnl::pooling_forward>(
      cache_key("pool3d", ops::pool_mode_name(p.mode), p.kernel, context::desc_key(im.get_desc()),
                context::desc_key(om.get_desc())),
      [&] {
        const dnnl::pooling_forward::desc d(dnnl::prop_kind::forward_inference, alg, im.get_desc(), om.get_desc(), k,
                                            k, zero, zero);
        return dnnl::pooling_forward(dnnl::pooling_forward::primitive_desc(d, ctx.engine()));
      });
  ctx.execute(prim, {{DNNL_ARG_SRC, im}, {DNNL_ARG_DST, om}});
}

}  // namespace swinfer::onednn

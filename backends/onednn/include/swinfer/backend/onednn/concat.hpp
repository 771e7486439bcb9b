// swinfer oneDNN backend: channel concatenation [a, b] of the UNETR decoder (upsampled first, skip second).
#pragma once

#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "swinfer/backend/onednn/context.hpp"
#include "swinfer/backend/onednn/memory.hpp"
#include "swinfer/core/tensor.hpp"
#include "swinfer/ops/concat.hpp"

namespace swinfer::detail::onednn {

/// \brief out (N, Ca+Cb, D, H, W) = [a (N, Ca, ...), b (N, Cb, ...)] along channels, any layouts.
/// Primitive: concat on axis 1 over the tensors' own memory (no staging copies).
template <class S>
void concat_channels(context& ctx, const tensor<S>& a, const tensor<S>& b, tensor<S>& out) {
  const shape5 s = ops::concat_channels_shape(a.shape(), b.shape());
  if (!(out.shape() == s)) fail("concat output shape ", out.shape().str(), " should be ", s.str());
  if (s.numel() == 0) return;
  const dnnl::memory am = wrap_volume(ctx, a), bm = wrap_volume(ctx, b), om = wrap_volume(ctx, out);
  const auto& prim = ctx.cached<dnnl::concat>(
      cache_key("concat", context::desc_key(am.get_desc()), context::desc_key(bm.get_desc()),
                context::desc_key(om.get_desc())),
      [&] {
        const std::vector<dnnl::memory::desc> srcs{am.get_desc(), bm.get_desc()};
        return dnnl::concat(dnnl::concat::primitive_desc(om.get_desc(), 1, srcs, ctx.engine()));
      });
  ctx.execute(prim, {{DNNL_ARG_MULTIPLE_SRC, am}, {DNNL_ARG_MULTIPLE_SRC + 1, bm}, {DNNL_ARG_DST, om}});
}

}  // namespace swinfer::detail::onednn

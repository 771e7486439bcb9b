// swinfer oneDNN backend: channel concatenation [parts...] (decoder: upsampled first, skip second).
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "swinfer/backend/onednn/context.hpp"
#include "swinfer/backend/onednn/memory.hpp"
#include "swinfer/core/tensor.hpp"
#include "swinfer/ops/concat.hpp"

namespace swinfer::onednn {

/// \brief out (N, sum C_i, D, H, W) = [parts...] along channels, any layouts.
/// Primitive: concat on axis 1 over the tensors' own memory (no staging copies).
template <class S>
void concat_channels(context& ctx, const std::vector<const tensor<S>*>& parts, tensor<S>& out) {
  ops::check_concat_channels(parts, out.shape());
  if (out.shape().numel() == 0) return;
  std::vector<dnnl::memory> srcs;
  std::vector<dnnl::memory::desc> descs;
  std::string key = "concat";
  for (const auto* p : parts) {
    srcs.push_back(wrap_volume(ctx, *p));
    descs.push_back(srcs.back().get_desc());
    key += cache_key("", context::desc_key(descs.back()));
  }
  const dnnl::memory om = wrap_volume(ctx, out);
  key += cache_key("", context::desc_key(om.get_desc()));
  const auto& prim = ctx.cached<dnnl::concat>(key, [&] {
    return dnnl::concat(dnnl::concat::primitive_desc(om.get_desc(), 1, descs, ctx.engine()));
  });
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_DST, om}};
  for (std::size_t i = 0; i < srcs.size(); ++i) args.emplace(DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i), srcs[i]);
  ctx.execute(prim, args);
}

}  // namespace swinfer::onednn

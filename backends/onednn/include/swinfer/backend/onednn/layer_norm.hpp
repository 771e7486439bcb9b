// swinfer oneDNN backend: LayerNorm over the channels of token rows (affine, or parameter-free for hidden states).
#pragma once

#include <cstdint>
#include <unordered_map>

#include <oneapi/dnnl/dnnl.hpp>

#include "swinfer/backend/onednn/context.hpp"
#include "swinfer/backend/onednn/memory.hpp"
#include "swinfer/ops/layer_norm.hpp"

namespace swinfer::onednn {

/// \brief y (rows, C) = (x - mean) / sqrt(biased var + eps) [* gamma] [+ beta], per row; x and y may alias.
///
/// Primitive: layer_normalization_forward (forward_inference, statistics computed by oneDNN per row in f32,
/// two-pass: mean, then centred variance), flags use_scale / use_shift for whichever of gamma and beta exist
/// (both absent for MONAI's proj_out). Scale and shift stay f32 for bf16 data.
template <class S>
class layer_norm {
 public:
  layer_norm(context& ctx, int channels, const float* gamma_or_null, const float* beta_or_null, float eps)
      : ctx_(ctx), channels_(channels), eps_(eps) {
    ops::check_layer_norm(channels);
    if (gamma_or_null) gamma_ = f32_memory(ctx, {channels}, gamma_or_null);
    if (beta_or_null) beta_ = f32_memory(ctx, {channels}, beta_or_null);
  }

  void run(const S* x, std::int64_t rows, S* y) {
    ops::check_layer_norm(channels_, rows);
    if (rows == 0) return;
    const auto md = rows_md<S>(rows, channels_);
    const bool scale = static_cast<bool>(gamma_), shift = static_cast<bool>(beta_);
    const auto& e = ctx_.cached<entry>(cache_key("layer_norm", context::desc_key(md), eps_, scale, shift), [&] {
      auto flags = dnnl::normalization_flags::none;
      if (scale) flags |= dnnl::normalization_flags::use_scale;
      if (shift) flags |= dnnl::normalization_flags::use_shift;
      const dnnl::layer_normalization_forward::desc desc(dnnl::prop_kind::forward_inference, md, eps_, flags);
      const dnnl::layer_normalization_forward::primitive_desc pd(desc, context::strict_attr(), ctx_.engine());
      return entry{pd, dnnl::layer_normalization_forward(pd)};
    });
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, wrap(ctx_, md, x)}, {DNNL_ARG_DST, wrap(ctx_, md, y)}};
    if (scale) args[DNNL_ARG_SCALE] = gamma_;
    if (shift) args[DNNL_ARG_SHIFT] = beta_;
    ctx_.execute(e.prim, args);
  }

 private:
  struct entry {
    dnnl::layer_normalization_forward::primitive_desc pd;
    dnnl::layer_normalization_forward prim;
  };

  context& ctx_;
  int channels_;
  float eps_;
  dnnl::memory gamma_, beta_;
};

}  // namespace swinfer::onednn

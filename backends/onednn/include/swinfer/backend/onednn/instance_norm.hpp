// swinfer oneDNN backend: InstanceNorm (no affine, batch statistics) fused with the residual add and LeakyReLU.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "swinfer/backend/onednn/context.hpp"
#include "swinfer/backend/onednn/memory.hpp"
#include "swinfer/core/tensor.hpp"
#include "swinfer/ops/instance_norm.hpp"

namespace swinfer::onednn {

/// Sums (x - centre[c]) or its square over the spatial positions of one sample, per channel, in double.
/// Positions are cut into fixed blocks summed in a fixed order, so results do not depend on the thread count.
template <bool Squared, class S>
void sum_per_channel(const S* sample, std::int64_t channels, std::int64_t spatial, bool channels_first,
                     const double* centre, double* out) {
  constexpr std::int64_t block = 4096;
  const std::int64_t blocks = (spatial + block - 1) / block;
  std::vector<double> part(static_cast<std::size_t>(blocks * channels), 0.0);
  SWINFER_ONEDNN_PARALLEL_FOR
  for (std::int64_t b = 0; b < blocks; ++b) {
    double* acc = part.data() + b * channels;
    const std::int64_t s0 = b * block, s1 = std::min(spatial, s0 + block);
    auto term = [&](S v, std::int64_t c) {
      const double d = static_cast<double>(to_float(v)) - (Squared ? centre[c] : 0.0);
      return Squared ? d * d : d;
    };
    if (channels_first) {
      for (std::int64_t c = 0; c < channels; ++c)
        for (std::int64_t s = s0; s < s1; ++s) acc[c] += term(sample[c * spatial + s], c);
    } else {
      for (std::int64_t s = s0; s < s1; ++s)
        for (std::int64_t c = 0; c < channels; ++c) acc[c] += term(sample[s * channels + c], c);
    }
  }
  std::fill(out, out + channels, 0.0);
  for (std::int64_t b = 0; b < blocks; ++b)
    for (std::int64_t c = 0; c < channels; ++c) out[c] += part[b * channels + c];
}

/// \brief x = act(IN(x) [+ residual]) in place, on a volume (N, C, D, H, W) of either layout.
///
/// oneDNN's batch_normalization_forward computes its statistics in f32: on a 96^3 volume its variance is off by
/// ~3e-4 relative and the output by ~2.5e-4 already at mean 0 (9e-3 at mean 1000), so the mean and biased
/// variance are computed here in double (two passes, as ops::ref does). Normalising with an f32 mean would still
/// cost up to |mean| * 2^-24 / std (1e-4 at mean 1000, std 0.58), so the mean is passed as an f32 pair hi + lo.
/// Primitive, once per sample: binary_sub(x, mean_hi) with post-ops binary_sub(mean_lo), binary_mul(1/std)
/// (per-channel f32 {1, C, 1, 1, 1}), [binary_add(residual)], [eltwise_relu with alpha = LeakyReLU slope];
/// all in f32 registers and rounded to the storage type once, written in place.
template <class S>
void instance_norm(context& ctx, tensor<S>& x, const tensor<S>* residual, const ops::instance_norm_epilogue& e) {
  const shape5& s = x.shape();
  ops::check_instance_norm(s, residual ? &residual->shape() : nullptr);
  if (s.numel() == 0) return;
  const shape5 one{1, s.c, s.d, s.h, s.w};
  const auto x_md = volume_md<S>(one, x.layout());
  const auto r_md = residual ? volume_md<S>(one, residual->layout()) : dnnl::memory::desc();
  const dnnl::memory::desc chan_md({1, s.c, 1, 1, 1}, dt::f32, tag::abcde);
  const auto& prim = ctx.cached<dnnl::binary>(
      cache_key("instance_norm", context::desc_key(x_md), residual ? context::desc_key(r_md) : std::string("-"),
                e.negative_slope ? std::to_string(*e.negative_slope) : std::string("-")),
      [&] {
        dnnl::post_ops po;
        po.append_binary(dnnl::algorithm::binary_sub, chan_md);
        po.append_binary(dnnl::algorithm::binary_mul, chan_md);
        if (residual) po.append_binary(dnnl::algorithm::binary_add, r_md);
        if (e.negative_slope) po.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, *e.negative_slope, 0.0f);
        auto attr = context::strict_attr();
        attr.set_post_ops(po);
        const dnnl::binary::desc desc(dnnl::algorithm::binary_sub, x_md, chan_md, x_md);
        return dnnl::binary(dnnl::binary::primitive_desc(desc, attr, ctx.engine()));
      });

  const std::int64_t sample = one.numel(), spatial = s.spatial();
  const bool channels_first = x.layout() == layout_kind::ncdhw;
  std::vector<double> mean(static_cast<std::size_t>(s.c)), sq(static_cast<std::size_t>(s.c));
  dnnl::memory mean_hi(chan_md, ctx.engine()), mean_lo(chan_md, ctx.engine()), inv_std(chan_md, ctx.engine());
  for (std::int64_t n = 0; n < s.n; ++n) {
    S* xn = x.data() + n * sample;
    sum_per_channel<false>(xn, s.c, spatial, channels_first, nullptr, mean.data());
    for (auto& m : mean) m /= static_cast<double>(spatial);
    sum_per_channel<true>(xn, s.c, spatial, channels_first, mean.data(), sq.data());
    auto* hi = static_cast<float*>(mean_hi.get_data_handle());
    auto* lo = static_cast<float*>(mean_lo.get_data_handle());
    auto* inv = static_cast<float*>(inv_std.get_data_handle());
    for (std::int64_t c = 0; c < s.c; ++c) {
      hi[c] = static_cast<float>(mean[c]);
      lo[c] = static_cast<float>(mean[c] - hi[c]);
      inv[c] = static_cast<float>(1.0 / std::sqrt(sq[c] / static_cast<double>(spatial) + double{e.eps}));
    }
    const dnnl::memory xm = wrap(ctx, x_md, xn);
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC_0, xm},
                                               {DNNL_ARG_SRC_1, mean_hi},
                                               {DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, mean_lo},
                                               {DNNL_ARG_ATTR_MULTIPLE_POST_OP(1) | DNNL_ARG_SRC_1, inv_std},
                                               {DNNL_ARG_DST, xm}};
    if (residual) {
      args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(2) | DNNL_ARG_SRC_1] = wrap(ctx, r_md, residual->data() + n * sample);
    }
    ctx.execute(prim, args);
  }
}

}  // namespace swinfer::onednn

// swinfer oneDNN backend: 3-D convolution (patch embedding, UNet 3x3x3 and 1x1x1 convs, output head).
#pragma once

#include <memory>
#include <optional>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include <oneapi/dnnl/dnnl.hpp>

#include "swinfer/backend/onednn/context.hpp"
#include "swinfer/backend/onednn/int8_convolution.hpp"
#include "swinfer/backend/onednn/memory.hpp"
#include "swinfer/core/tensor.hpp"
#include "swinfer/ops/conv3d.hpp"

namespace swinfer::onednn {

/// \brief Conv3d: volume (N, cin, D, H, W) -> (N, cout, D', H', W'), either layout, zero padding, optional bias.
///
/// Primitive: convolution_forward (direct, forward_inference, f32 bias, f32 accumulation) with src, weights and
/// dst in format_tag::any. oneDNN picks channels-last for them, so channels-last volumes are used in place and
/// channels-first ones are reordered in and out (its channels-first convolution is the slower gemm-based one).
/// Weight (cout, cin, kd, kh, kw) as PyTorch stores it, reordered once per primitive weight layout.
/// A quantized problem (precision::int8, p.int8.quantized()) runs as int8_convolution instead.
template <class S>
class conv3d {
 public:
  conv3d(context& ctx, const ops::conv3d_problem& p, const float* weight_oidhw, const float* bias_or_null)
      : ctx_(ctx), p_(checked(p, weight_oidhw, bias_or_null)) {
    context::require_kernels_for<S>();
    if (p.int8.quantized()) {
      if constexpr (!std::is_same_v<S, float>) detail::fail("conv3d: int8 products read and write float32 volumes");
      int8_ = std::make_unique<int8_convolution<int8_conv3d_geometry>>(
          ctx, int8_conv3d_geometry{p},
          ops::channel_quantized_weights::quantize(weight_oidhw, p.cout, p.weight_count() / p.cout), bias_or_null);
      return;
    }
    weights_.emplace(ctx, dnnl::memory::dims{p.cout, p.cin, p.kernel[0], p.kernel[1], p.kernel[2]}, tag::oidhw,
                     data_type_of<S>(), weight_oidhw);
    if (p.bias) bias_ = f32_memory(ctx, {p.cout}, bias_or_null);
  }

  void run(const tensor<S>& in, tensor<S>& out) {
    p_.check(in.shape(), out.shape());
    if constexpr (std::is_same_v<S, float>) {
      if (int8_) {
        int8_->run(in, out);
        return;
      }
    }
    const dnnl::memory src = wrap_volume(ctx_, in), dst = wrap_volume(ctx_, out);
    const bool has_bias = static_cast<bool>(bias_);
    const auto& e = ctx_.cached<entry>(
        cache_key("conv3d", context::desc_key(src.get_desc()), context::desc_key(dst.get_desc()), p_.kernel[0],
                  p_.kernel[1], p_.kernel[2], p_.stride[0], p_.stride[1], p_.stride[2], p_.pad[0], p_.pad[1], p_.pad[2],
                  has_bias),
        [&] {
          const dnnl::memory::dims k{p_.kernel[0], p_.kernel[1], p_.kernel[2]};
          const dnnl::memory::dims stride{p_.stride[0], p_.stride[1], p_.stride[2]};
          const dnnl::memory::dims pad{p_.pad[0], p_.pad[1], p_.pad[2]};
          const dnnl::memory::desc src_any(src.get_desc().dims(), data_type_of<S>(), tag::any);
          const dnnl::memory::desc dst_any(dst.get_desc().dims(), data_type_of<S>(), tag::any);
          const dnnl::memory::desc wei_any({p_.cout, p_.cin, k[0], k[1], k[2]}, data_type_of<S>(), tag::any);
          const auto desc =
              has_bias ? dnnl::convolution_forward::desc(
                             dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src_any, wei_any,
                             dnnl::memory::desc({p_.cout}, dt::f32, tag::a), dst_any, stride, pad, pad)
                       : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                                         dnnl::algorithm::convolution_direct, src_any, wei_any, dst_any,
                                                         stride, pad, pad);
          const dnnl::convolution_forward::primitive_desc pd(desc, context::strict_attr(), ctx_.engine());
          return entry{pd, dnnl::convolution_forward(pd)};
        });
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_WEIGHTS, weights_->get(e.pd.weights_desc())}};
    if (has_bias) args[DNNL_ARG_BIAS] = bias_;
    execute_on_volumes(ctx_, e.prim, e.pd, src, dst, std::move(args));
  }

 private:
  struct entry {
    dnnl::convolution_forward::primitive_desc pd;
    dnnl::convolution_forward prim;
  };

  static const ops::conv3d_problem& checked(const ops::conv3d_problem& p, const float* weight, const float* bias) {
    p.check_parameters(weight, bias);
    return p;
  }

  context& ctx_;
  ops::conv3d_problem p_;
  std::optional<weights_store> weights_;  ///< float path
  dnnl::memory bias_;
  std::unique_ptr<int8_convolution<int8_conv3d_geometry>> int8_;  ///< int8 path (a quantized problem)
};

}  // namespace swinfer::onednn

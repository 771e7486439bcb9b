// swinfer oneDNN backend: the kernel-2, stride-2 transposed convolution of the UNETR up-blocks.
#pragma once

#include <memory>
#include <optional>
#include <type_traits>

#include <oneapi/dnnl/dnnl.hpp>

#include "swinfer/backend/onednn/context.hpp"
#include "swinfer/backend/onednn/int8_convolution.hpp"
#include "swinfer/backend/onednn/memory.hpp"
#include "swinfer/core/tensor.hpp"
#include "swinfer/ops/conv_transpose3d.hpp"

namespace swinfer::onednn {

/// \brief ConvTranspose3d k2 s2, no bias: volume (N, cin, D, H, W) -> (N, cout, 2D, 2H, 2W), either layout.
///
/// Primitive: deconvolution_forward (direct, forward_inference), src/weights/dst in format_tag::any, with the
/// same in-place-or-reorder handling of the volumes as conv3d. oneDNN's deconvolution weights are (cout, cin, k...)
/// while PyTorch stores (cin, cout, 2, 2, 2): that memory order is oneDNN's iodhw tag, so the array is read as is.
/// oneDNN's deconvolution is the adjoint of its convolution, which is PyTorch's definition (no kernel flip).
/// A quantized problem (precision::int8, p.int8.quantized()) runs as int8_convolution instead, its weights quantized
/// per output channel over the input channels and the 8 offsets.
template <class S>
class conv_transpose3d {
 public:
  conv_transpose3d(context& ctx, const ops::conv_transpose3d_problem& p, const float* weight_io222)
      : ctx_(ctx), p_(checked(p, weight_io222)) {
    if (p.int8.quantized()) {
      if constexpr (!std::is_same_v<S, float>) {
        detail::fail("conv_transpose3d: int8 products read and write float32 volumes");
      }
      int8_ = std::make_unique<int8_convolution<int8_conv_transpose3d_geometry>>(
          ctx, int8_conv_transpose3d_geometry{p}, ops::quantized_transposed_weights(p, weight_io222), nullptr);
      return;
    }
    weights_.emplace(ctx, dnnl::memory::dims{p.cout, p.cin, 2, 2, 2}, tag::iodhw, data_type_of<S>(), weight_io222);
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
    const auto& e = ctx_.cached<entry>(
        cache_key("conv_transpose3d", context::desc_key(src.get_desc()), context::desc_key(dst.get_desc())), [&] {
          const dnnl::memory::desc src_any(src.get_desc().dims(), data_type_of<S>(), tag::any);
          const dnnl::memory::desc dst_any(dst.get_desc().dims(), data_type_of<S>(), tag::any);
          const dnnl::memory::desc wei_any({p_.cout, p_.cin, 2, 2, 2}, data_type_of<S>(), tag::any);
          const dnnl::deconvolution_forward::desc desc(dnnl::prop_kind::forward_inference,
                                                       dnnl::algorithm::deconvolution_direct, src_any, wei_any, dst_any,
                                                       {2, 2, 2}, {0, 0, 0}, {0, 0, 0});
          const dnnl::deconvolution_forward::primitive_desc pd(desc, context::strict_attr(), ctx_.engine());
          return entry{pd, dnnl::deconvolution_forward(pd)};
        });
    execute_on_volumes(ctx_, e.prim, e.pd, src, dst, {{DNNL_ARG_WEIGHTS, weights_->get(e.pd.weights_desc())}});
  }

 private:
  struct entry {
    dnnl::deconvolution_forward::primitive_desc pd;
    dnnl::deconvolution_forward prim;
  };

  static ops::conv_transpose3d_problem checked(const ops::conv_transpose3d_problem& p, const float* weight) {
    p.check_parameters(weight);
    return p;
  }

  context& ctx_;
  ops::conv_transpose3d_problem p_;
  std::optional<weights_store> weights_;  ///< float path
  std::unique_ptr<int8_convolution<int8_conv_transpose3d_geometry>> int8_;  ///< int8 path (a quantized problem)
};

}  // namespace swinfer::onednn

// swinfer hip backend: the kernel-2 stride-2 transposed convolution of the UNETR up-blocks.
#pragma once

#include "swinfer/backend/hip/api.hpp"
#include "swinfer/backend/hip/context.hpp"
#include "swinfer/backend/hip/device_tensor.hpp"
#include "swinfer/backend/hip/gemm_weights.hpp"
#include "swinfer/backend/hip/weight_packing.hpp"
#include "swinfer/ops/conv_transpose3d.hpp"

namespace swinfer::hip {

/// \brief out (N, cout, 2D, 2H, 2W) = ConvTranspose3d k2 s2 (no bias) of in (N, cin, D, H, W), one layout, storage
/// S: one GEMM with a scattering epilogue (src/conv_transpose3d.cu); weights packed (8*cout, cin) in S at
/// construction (int8 where precision::int8 quantizes the input; a dynamic scale reduced from each input on the
/// device first).
template <class S>
class conv_transpose3d {
 public:
  using volume = device_tensor<S>;

  conv_transpose3d(context& ctx, const ops::conv_transpose3d_problem& p, const float* weight) : ctx_(ctx), p_(p) {
    p_.check_parameters(weight);
    weight_ = gemm_weights<S>(ctx, "conv_transpose3d", p.int8, pack_conv_transpose3d_weight(p.cin, p.cout, weight),
                              [&] { return pack_conv_transpose3d_int8(p, weight); });
  }
  void run(const volume& in, volume& out) {
    p_.check(in.shape(), out.shape());
    require_same_layout("conv_transpose3d", in, out);
    auto* scratch = static_cast<unsigned char*>(ctx_.scratch(weight_.dynamic_scale_bytes()));
    int8_product launch_int8;
    const int8_product* int8 =
        weight_.int8_for(ctx_, in.data(), in.desc(), nullptr, nullptr, nullptr, scratch, launch_int8);
    launch_conv_transpose3d(ctx_.env(), volume::type, in.data(), in.desc(), p_.cout, weight_.data(), out.data(),
                            out.desc(), int8);
  }

 private:
  context& ctx_;
  ops::conv_transpose3d_problem p_;
  gemm_weights<S> weight_;
};

}  // namespace swinfer::hip

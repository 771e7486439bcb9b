// swinfer hip backend: 3-D convolution as an implicit GEMM (3x3x3 UNet convs, 1x1x1 projections and head, k2s2
// patch embedding), plain, with the InstanceNorm before it applied on load, or on a concatenation read in place.
#pragma once

#include "swinfer/backend/hip/api.hpp"
#include "swinfer/backend/hip/context.hpp"
#include "swinfer/backend/hip/device_tensor.hpp"
#include "swinfer/backend/hip/gemm_weights.hpp"
#include "swinfer/backend/hip/weight_packing.hpp"
#include "swinfer/core/shape.hpp"
#include "swinfer/ops/conv3d.hpp"
#include "swinfer/ops/instance_norm.hpp"

namespace swinfer::hip {

/// \brief out = conv(in): volumes (N, cin, D, H, W) -> (N, cout, D', H', W') of one layout, storage S, float32
/// accumulation; weights packed (cout, K) in S at construction (int8 where precision::int8 quantizes the input,
/// always on the tiled GEMM; with a dynamic scale, taken on the device from each input as the convolution reads it:
/// launch_int8_input_scale), the bias in float32 (src/gemm.cu).
template <class S>
class conv3d {
 public:
  using volume = device_tensor<S>;

  conv3d(context& ctx, const ops::conv3d_problem& p, const float* weight, const float* bias) : ctx_(ctx), p_(p) {
    p.check_parameters(weight, bias);
    const std::vector<float> packed = pack_conv3d_weight(p, weight);
    weight_ = gemm_weights<S>(ctx, "conv3d", p.int8, packed, [&] { return quantize_rows(packed, p.cout); });
    if (p.bias) bias_ = ctx.upload(bias, static_cast<std::size_t>(p.cout));
  }
  void run(const volume& in, volume& out) { launch(in, nullptr, out, nullptr); }
  /// out = conv(act(InstanceNorm(in))): the statistics of `in` taken, then the norm and LeakyReLU applied as the
  /// convolution loads its input (the normalised tensor is never written; `in` is left as it was).
  void run(const volume& in, const ops::instance_norm_epilogue& in_norm, volume& out) {
    p_.check(in.shape(), out.shape());
    const std::size_t statistics = instance_norm_scratch_bytes(in.desc());
    auto* scratch = static_cast<unsigned char*>(ctx_.scratch(statistics + weight_.dynamic_scale_bytes()));
    const instance_norm_args args{
        launch_instance_norm_statistics(ctx_.env(), volume::type, in.data(), in.desc(), in_norm.eps, scratch),
        in_norm.negative_slope.has_value(), in_norm.negative_slope.value_or(0.0f)};
    launch(in, nullptr, out, &args, scratch + statistics);
  }
  /// out = conv(concat_channels(first, second)), each part read where it is (the concatenation is never written).
  void run(const volume& first, const volume& second, volume& out) { launch(first, &second, out, nullptr); }

 private:
  /// `scratch` (gemm_weights::dynamic_scale_bytes()) for a dynamic scale, taken from the op's own scratch where null.
  void launch(const volume& in, const volume* second, volume& out, const instance_norm_args* in_norm,
              unsigned char* scratch = nullptr) {
    if (second) {
      p_.check(in.shape(), second->shape(), out.shape());
      require_same_layout("conv3d", in, *second);
    } else {
      p_.check(in.shape(), out.shape());
    }
    require_same_layout("conv3d", in, out);
    const conv_geometry g{p_.cin, p_.cout, p_.kernel, p_.stride, p_.pad};
    const strided5 second_desc = second ? second->desc() : strided5{};
    const void* second_data = second ? second->data() : nullptr;
    const strided5* second_strides = second ? &second_desc : nullptr;
    if (!scratch) scratch = static_cast<unsigned char*>(ctx_.scratch(weight_.dynamic_scale_bytes()));
    int8_product launch_int8;
    const int8_product* int8 = weight_.int8_for(ctx_, in.data(), in.desc(), in_norm, second_data, second_strides,
                                                scratch, launch_int8);
    launch_conv3d(ctx_.env(), volume::type, in.data(), in.desc(), g, weight_.data(),
                  static_cast<const float*>(bias_.get()), out.data(), out.desc(), in_norm, second_data,
                  second_strides, int8);
  }

  context& ctx_;
  ops::conv3d_problem p_;
  gemm_weights<S> weight_;
  device_buffer bias_;
};

}  // namespace swinfer::hip

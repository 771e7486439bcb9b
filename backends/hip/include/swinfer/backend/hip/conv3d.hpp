// swinfer hip backend: 3-D convolution as an implicit GEMM (3x3x3 UNet convs, 1x1x1 projections and head, k2s2
// patch embedding), plain, with the InstanceNorm before it applied on load, or on a concatenation read in place.
#pragma once

#include <array>
#include <string>
#include <type_traits>

#include "swinfer/backend/hip/api.hpp"
#include "swinfer/backend/hip/context.hpp"
#include "swinfer/backend/hip/device_tensor.hpp"
#include "swinfer/backend/hip/gemm_weights.hpp"
#include "swinfer/backend/hip/instance_norm.hpp"
#include "swinfer/backend/hip/weight_packing.hpp"
#include "swinfer/core/error.hpp"
#include "swinfer/core/shape.hpp"
#include "swinfer/ops/conv3d.hpp"
#include "swinfer/ops/instance_norm.hpp"

namespace swinfer::hip {

/// \brief out = conv(in): volumes (N, cin, D, H, W) -> (N, cout, D', H', W') of one layout, storage S, float32
/// accumulation; weights packed (cout, K) in S at construction (int8 where precision::int8 quantizes the input,
/// always on the tiled GEMM; with a dynamic scale, taken on the device from each input as the convolution reads it:
/// launch_int8_input_scale), the bias in float32 (src/conv3d.cu).
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
  /// The same, leaving out's InstanceNorm moments in `moments` (gathered as the box kernels store out).
  void run(const volume& in, volume& out, channel_moments& moments) { launch(in, nullptr, out, nullptr, &moments); }
  /// out = conv(act(InstanceNorm(in))): the statistics of `in` taken, then the norm and LeakyReLU applied as the
  /// convolution loads its input (the normalised tensor is never written; `in` is left as it was).
  void run(const volume& in, const ops::instance_norm_epilogue& in_norm, volume& out) {
    p_.check(in.shape(), out.shape());
    const std::size_t statistics = instance_norm_scratch_bytes(in.desc());
    auto* scratch = static_cast<unsigned char*>(ctx_.scratch(statistics + weight_.dynamic_scale_bytes()));
    launch_normalised(
        in, launch_instance_norm_statistics(ctx_.env(), volume::type, in.data(), in.desc(), in_norm.eps, scratch),
        in_norm, out, nullptr, scratch + statistics);
  }
  /// The same with in's moments given (gathered by the convolution that stored it: `in` is not read for them),
  /// leaving out's in `moments`.
  void run(const volume& in, const channel_moments& in_moments, const ops::instance_norm_epilogue& in_norm,
           volume& out, channel_moments& moments) {
    p_.check(in.shape(), out.shape());
    in_moments.check_for(in.shape(), "conv3d");
    if (&in_moments == &moments) detail::fail("conv3d: the input's and the output's moments must be two objects");
    launch_normalised(in, in_moments.statistics(ctx_, in_norm.eps), in_norm, out, &moments);
  }
  /// out = conv(concat_channels(first, second)), each part read where it is (the concatenation is never written).
  void run(const volume& first, const volume& second, volume& out) { launch(first, &second, out, nullptr); }
  /// The same, leaving out's InstanceNorm moments in `moments`.
  void run(const volume& first, const volume& second, volume& out, channel_moments& moments) {
    launch(first, &second, out, nullptr, &moments);
  }
  /// The kernel the last run used (halo, wgmma or gemm; automatic before the first run).
  conv_kernel_choice last_kernel() const { return kernel_; }

 private:
  /// out = conv(act(InstanceNorm(in))) with in's statistics `stats` on the device.
  void launch_normalised(const volume& in, const float* stats, const ops::instance_norm_epilogue& in_norm,
                         volume& out, channel_moments* moments, unsigned char* scratch = nullptr) {
    const instance_norm_args args{stats, in_norm.negative_slope.has_value(), in_norm.negative_slope.value_or(0.0f)};
    launch(in, nullptr, out, &args, moments, scratch);
  }

  /// `scratch` (gemm_weights::dynamic_scale_bytes()) for a dynamic scale, taken from the op's own scratch where null.
  void launch(const volume& in, const volume* second, volume& out, const instance_norm_args* in_norm,
              channel_moments* moments = nullptr, unsigned char* scratch = nullptr) {
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
    moment_sink sink;
    if (moments) sink = moments->prepare(out.shape(), out.desc());
    launch_env env = ctx_.env();
    const auto run = [&](const launch_env& e) {
      return launch_conv3d(e, volume::type, in.data(), in.desc(), g, weight_.data(),
                           static_cast<const float*>(bias_.get()), out.data(), out.desc(), in_norm, second_data,
                           second_strides, int8, moments ? &sink : nullptr);
    };
    if (!int8 && tunable(env)) {
      env.kernels.conv = ctx_.tuning().conv3d(tuning_key(in, second, out, in_norm, moments != nullptr), env, run);
    }
    kernel_ = run(env);
    if (moments) moments->gathered(sink);
  }

  /// Whether several kernels can run this convolution, so kernel tuning has a choice to make: a 3x3x3 stride-1
  /// convolution of a 16-bit model on matrix cores, the choice left automatic.
  bool tunable(const launch_env& env) const {
    return env.kernels.conv == conv_kernel_choice::automatic && !std::is_same_v<S, float> && env.matrix_cores &&
           p_.kernel == std::array<int, 3>{3, 3, 3} && p_.stride == std::array<int, 3>{1, 1, 1};
  }

  /// What the kernels' speed depends on: precision, channels (both parts of a concatenation), output extents,
  /// padding, layout, whether an InstanceNorm is applied on load and whether the output's moments are gathered.
  std::string tuning_key(const volume& in, const volume* second, const volume& out, const instance_norm_args* in_norm,
                         bool gathers_moments) const {
    const shape5& o = out.shape();
    std::string key = detail::concat("conv3d ", volume::type == dtype::f16 ? "fp16 " : "bf16 ", p_.cin);
    if (second) key += detail::concat(" (", in.shape().c, "+", second->shape().c, ")");
    key += detail::concat("->", p_.cout, " n", o.n, " ", o.d, "x", o.h, "x", o.w, " pad ", p_.pad[0], ",",
                          p_.pad[1], ",", p_.pad[2], in.desc().stride[1] == 1 ? " channels-last" : " channels-first");
    if (in_norm) key += " +norm on load";
    if (gathers_moments) key += " +moments";
    return key;
  }

  context& ctx_;
  ops::conv3d_problem p_;
  conv_kernel_choice kernel_ = conv_kernel_choice::automatic;
  gemm_weights<S> weight_;
  device_buffer bias_;
};

}  // namespace swinfer::hip

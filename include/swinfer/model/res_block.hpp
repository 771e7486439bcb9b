// swinfer: MONAI's UnetResBlock (two k^3 convs with InstanceNorm and LeakyReLU, residual or 1x1x1 projection).
#pragma once

#include <optional>
#include <string>

#include "swinfer/core/backend.hpp"
#include "swinfer/core/error.hpp"
#include "swinfer/io/state_dict.hpp"
#include "swinfer/model/backend_volume.hpp"
#include "swinfer/model/block_specs.hpp"
#include "swinfer/model/parameters.hpp"
#include "swinfer/ops/conv3d.hpp"
#include "swinfer/ops/instance_norm.hpp"

namespace swinfer::model {

/// \brief out = lrelu(IN(conv2(lrelu(IN(conv1(x))))) + r), r = x or IN(conv3(x)) when the width changes
/// (res_block_spec names the keys). No biases, no affine.
/// Where the backend fuses the InstanceNorm (fuses_instance_norm), conv2 reads conv1's raw output and applies its norm
/// on load. Where the convolutions also gather their outputs' moments (gathers_instance_norm_moments), no norm reads a
/// tensor for its statistics, and conv3's raw output is normalised as it is added (instance_norm_sum).
template <class B, class P, class L>
class res_block {
  using K = kernels<B, P, L>;
  using volume = backend_volume_t<K>;

 public:
  res_block(typename K::context& ctx, const state_dict& sd, const res_block_spec& spec)
      : cout_(spec.cout), conv1_(make_conv(ctx, sd, spec.conv1())), conv2_(make_conv(ctx, sd, spec.conv2())) {
    if (spec.projects()) {
      const conv_spec projection = spec.conv3();
      conv3_.emplace(ctx, projection.problem, detail::param(sd, projection.weight_key()), nullptr);
    }
  }

  volume run(typename K::context& ctx, const volume& x) {
    return run_from(
        ctx, x.shape(), [&](typename K::conv3d& conv, volume& out, auto&... moments) { conv.run(x, out, moments...); },
        &x);
  }

  /// The block on the channel concatenation [first, second], each read where it is (backends with
  /// fuses_concat): a decoder's upsampled map and its skip. The block must change the width (its residual is
  /// conv3's projection of the same concatenation).
  volume run(typename K::context& ctx, const volume& first, const volume& second) {
    if (!conv3_) detail::fail("res_block: a two-input block needs the 1x1x1 projection (cin != cout)");
    shape5 joined = first.shape();
    joined.c += second.shape().c;
    return run_from(
        ctx, joined,
        [&](typename K::conv3d& conv, volume& out, auto&... moments) { conv.run(first, second, out, moments...); },
        nullptr);
  }

 private:
  static constexpr ops::instance_norm_epilogue norm_lrelu{1e-5f, 0.01f}, norm_only{1e-5f, std::nullopt};

  /// `read(conv, out[, moments])` runs conv1 or conv3 on the block's input of shape `in` (gathering out's moments);
  /// `x` is that input as one tensor, for the identity residual (null when the block projects it).
  template <class Read>
  volume run_from(typename K::context& ctx, const shape5& in, const Read& read, const volume* x) {
    volume h(out_shape(in), L::kind);
    volume out(out_shape(in), L::kind);
    if constexpr (gathers_instance_norm_moments<K>) {
      typename K::channel_moments h_moments, out_moments;
      read(conv1_, h, h_moments);
      conv2_.run(h, h_moments, norm_lrelu, out, out_moments);
      if (conv3_) {
        read(*conv3_, h, h_moments);  // reuse h's storage for the projected residual
        K::instance_norm_sum(ctx, out, out_moments, h, h_moments, norm_lrelu);
      } else {
        K::instance_norm(ctx, out, out_moments, x, norm_lrelu);
      }
    } else {
      read(conv1_, h);
      if constexpr (fuses_instance_norm<K>) {
        conv2_.run(h, norm_lrelu, out);
      } else {
        K::instance_norm(ctx, h, nullptr, norm_lrelu);
        conv2_.run(h, out);
      }
      if (conv3_) {
        read(*conv3_, h);  // reuse h's storage for the projected residual
        K::instance_norm(ctx, h, nullptr, norm_only);
        K::instance_norm(ctx, out, &h, norm_lrelu);
      } else {
        K::instance_norm(ctx, out, x, norm_lrelu);
      }
    }
    return out;
  }

  static typename K::conv3d make_conv(typename K::context& ctx, const state_dict& sd, const conv_spec& c) {
    return {ctx, c.problem, detail::param(sd, c.weight_key()), nullptr};
  }
  shape5 out_shape(const shape5& in) const { return {in.n, cout_, in.d, in.h, in.w}; }

  int cout_;
  typename K::conv3d conv1_, conv2_;
  std::optional<typename K::conv3d> conv3_;
};

}  // namespace swinfer::model

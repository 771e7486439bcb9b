// swinfer: MONAI's UnetResBlock (two k^3 convs with InstanceNorm and LeakyReLU, residual or 1x1x1 projection).
#pragma once

#include <optional>
#include <string>

#include "swinfer/core/backend.hpp"
#include "swinfer/io/state_dict.hpp"
#include "swinfer/model/backend_volume.hpp"
#include "swinfer/model/parameters.hpp"
#include "swinfer/ops/conv3d.hpp"
#include "swinfer/ops/instance_norm.hpp"

namespace swinfer::model {

/// \brief out = lrelu(IN(conv2(lrelu(IN(conv1(x))))) + r), r = x or IN(conv3(x)) when the width changes.
/// Keys: <prefix>.conv1.conv.weight, .conv2.conv.weight, .conv3.conv.weight (cin != cout). No biases, no affine.
template <class B, class P, class L>
class res_block {
  using K = kernels<B, P, L>;
  using volume = backend_volume_t<K>;

 public:
  /// kernel: 3 everywhere in SwinUNETR; the Swin Fusion final blocks use 1 (or 3).
  res_block(typename K::context& ctx, const state_dict& sd, const std::string& prefix, int cin, int cout, int kernel = 3)
      : cout_(cout),
        conv1_(ctx, conv(cin, cout, kernel), detail::param(sd, prefix + ".conv1.conv.weight"), nullptr),
        conv2_(ctx, conv(cout, cout, kernel), detail::param(sd, prefix + ".conv2.conv.weight"), nullptr) {
    if (cin != cout) conv3_.emplace(ctx, conv(cin, cout, 1), detail::param(sd, prefix + ".conv3.conv.weight"), nullptr);
  }

  volume run(typename K::context& ctx, const volume& x) {
    constexpr ops::instance_norm_epilogue norm_lrelu{1e-5f, 0.01f}, norm_only{1e-5f, std::nullopt};
    volume h(out_shape(x), L::kind);
    conv1_.run(x, h);
    volume out(out_shape(x), L::kind);
    if constexpr (fuses_norms_v<K>) {
      conv2_.run(h, norm_lrelu, out);
    } else {
      K::instance_norm(ctx, h, nullptr, norm_lrelu);
      conv2_.run(h, out);
    }
    if (conv3_) {
      conv3_->run(x, h);  // reuse h's storage for the projected residual
      K::instance_norm(ctx, h, nullptr, norm_only);
      K::instance_norm(ctx, out, &h, norm_lrelu);
    } else {
      K::instance_norm(ctx, out, &x, norm_lrelu);
    }
    return out;
  }

 private:
  static ops::conv3d_problem conv(int cin, int cout, int k) {
    ops::conv3d_problem p;
    p.cin = cin;
    p.cout = cout;
    p.kernel = {k, k, k};
    p.pad = {k / 2, k / 2, k / 2};
    return p;
  }
  shape5 out_shape(const volume& x) const { return {x.shape().n, cout_, x.shape().d, x.shape().h, x.shape().w}; }

  int cout_;
  typename K::conv3d conv1_, conv2_;
  std::optional<typename K::conv3d> conv3_;
};

}  // namespace swinfer::model

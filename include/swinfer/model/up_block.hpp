// swinfer: MONAI's UnetrUpBlock: k2s2 transposed conv, concat [upsampled, skip], UnetResBlock.
#pragma once

#include <string>
#include <utility>

#include "swinfer/core/backend.hpp"
#include "swinfer/model/backend_volume.hpp"
#include "swinfer/model/res_block.hpp"
#include "swinfer/ops/concat.hpp"
#include "swinfer/ops/conv_transpose3d.hpp"

namespace swinfer::model {

/// \brief Keys: <prefix>.transp_conv.conv.weight (cin, cout, 2, 2, 2) and <prefix>.conv_block.* (2cout -> cout).
template <class B, class P, class L>
class up_block {
  using K = kernels<B, P, L>;
  using volume = backend_volume_t<K>;

 public:
  up_block(typename K::context& ctx, const state_dict& sd, const std::string& prefix, int cin, int cout)
      : cin_(cin),
        cout_(cout),
        up_(ctx, cin, cout, detail::param(sd, prefix + ".transp_conv.conv.weight")),
        block_(ctx, sd, prefix + ".conv_block", 2 * cout, cout) {}

  /// Where the backend reads concatenations in place (fuses_concat_v), the block's convolutions read the
  /// upsampled map and the skip where they are; otherwise the two are concatenated first.
  volume run(typename K::context& ctx, const volume& x, const volume& skip) {
    volume upsampled(ops::conv_transpose3d_output_shape(x.shape(), cin_, cout_), L::kind);
    up_.run(x, upsampled);
    if constexpr (fuses_concat_v<K>) {
      return block_.run(ctx, upsampled, skip);
    } else {
      return block_.run(ctx, joined(ctx, std::move(upsampled), skip));
    }
  }

 private:
  /// [upsampled, skip] along channels; `upsampled` dies here, before the block runs.
  static volume joined(typename K::context& ctx, volume upsampled, const volume& skip) {
    volume out(ops::concat_channels_shape({upsampled.shape(), skip.shape()}), L::kind);
    K::concat_channels(ctx, {&upsampled, &skip}, out);
    return out;
  }

  int cin_, cout_;
  typename K::conv_transpose3d up_;
  res_block<B, P, L> block_;
};

}  // namespace swinfer::model

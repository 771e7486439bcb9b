// swinfer: MONAI's UnetrUpBlock: k2s2 transposed conv, concat [upsampled, skip], UnetResBlock.
#pragma once

#include <utility>

#include "swinfer/core/backend.hpp"
#include "swinfer/model/backend_volume.hpp"
#include "swinfer/model/block_specs.hpp"
#include "swinfer/model/res_block.hpp"
#include "swinfer/ops/concat.hpp"
#include "swinfer/ops/conv_transpose3d.hpp"

namespace swinfer::model {

/// \brief The k2s2 transposed conv and the res block on [upsampled, skip] that up_block_spec describes.
template <class B, class P, class L>
class up_block {
  using K = kernels<B, P, L>;
  using volume = backend_volume_t<K>;

 public:
  up_block(typename K::context& ctx, const state_dict& sd, const up_block_spec& spec)
      : cin_(spec.cin),
        cout_(spec.cout),
        up_(ctx, spec.transposed(), detail::param(sd, spec.transposed_key())),
        block_(ctx, sd, spec.block()) {}

  /// Where the backend reads concatenations in place (fuses_concat), the block's convolutions read the
  /// upsampled map and the skip where they are; otherwise the two are concatenated first.
  volume run(typename K::context& ctx, const volume& x, const volume& skip) {
    volume upsampled(ops::conv_transpose3d_output_shape(x.shape(), cin_, cout_), L::kind);
    up_.run(x, upsampled);
    if constexpr (fuses_concat<K>) {
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

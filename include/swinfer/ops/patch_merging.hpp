// swinfer: the 2x2x2 gather of Swin patch merging, in each of MONAI's channel orders.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "swinfer/core/error.hpp"
#include "swinfer/core/tensor.hpp"

namespace swinfer::ops {

/// Channel order of the 8 concatenated sub-voxels. Nothing in a checkpoint records it, so the user chooses.
enum class merge_order {
  merging,         ///< MONAI >= 1.5 "merging": 000,100,010,001,110,101,011,111
  merging_legacy,  ///< MONAI 0.9-1.4 "merging" (every published checkpoint): 000,100,010,001,101,010,001,111
  mergingv2,       ///< MONAI >= 1.0 "mergingv2": lexicographic in (d, h, w)
};

inline constexpr std::string_view merge_order_name(merge_order m) {
  switch (m) {
    case merge_order::merging: return "merging";
    case merge_order::merging_legacy: return "merging_legacy";
    case merge_order::mergingv2: return "mergingv2";
  }
  return "?";
}

/// (d, h, w) offsets of the 8 channel blocks, in concatenation order.
inline constexpr std::array<std::array<int, 3>, 8> merge_offsets(merge_order m) {
  switch (m) {
    case merge_order::merging:
      return {{{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {1, 1, 0}, {1, 0, 1}, {0, 1, 1}, {1, 1, 1}}};
    case merge_order::merging_legacy:  // blocks 5 and 6 repeat 010 and 001: sub-voxels 110 and 011 are never used
      return {{{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {1, 0, 1}, {0, 1, 0}, {0, 0, 1}, {1, 1, 1}}};
    case merge_order::mergingv2:
      return {{{0, 0, 0}, {0, 0, 1}, {0, 1, 0}, {0, 1, 1}, {1, 0, 0}, {1, 0, 1}, {1, 1, 0}, {1, 1, 1}}};
  }
  return {};
}

/// Shape after the gather: spatial halves, channels x8. Odd extents cannot occur for valid inputs.
inline shape5 patch_merge_shape(const shape5& s) {
  if (s.d % 2 || s.h % 2 || s.w % 2) detail::fail("patch merging needs even spatial extents, got ", s.str());
  return {s.n, 8 * s.c, s.d / 2, s.h / 2, s.w / 2};
}

/// Whether the gather runs from an input of shape `in` into an output of shape `out` (patch_merge_shape(in)).
inline void check_patch_merge(const shape5& in, const shape5& out) {
  const shape5 os = patch_merge_shape(in);
  if (!(out == os)) detail::fail("patch merge output shape ", out.str(), " should be ", os.str());
}

namespace ref {

template <class T>
void patch_merge_gather(const tensor<T>& x, merge_order order, tensor<T>& out) {
  check_patch_merge(x.shape(), out.shape());
  const shape5& os = out.shape();
  const auto offs = merge_offsets(order);
  const std::int64_t c0 = x.shape().c;
  for (std::int64_t n = 0; n < os.n; ++n)
    for (int k = 0; k < 8; ++k)
      for (std::int64_t c = 0; c < c0; ++c)
        for (std::int64_t z = 0; z < os.d; ++z)
          for (std::int64_t y = 0; y < os.h; ++y)
            for (std::int64_t w = 0; w < os.w; ++w)
              out(n, k * c0 + c, z, y, w) = x(n, c, 2 * z + offs[k][0], 2 * y + offs[k][1], 2 * w + offs[k][2]);
}

}  // namespace ref
}  // namespace swinfer::ops

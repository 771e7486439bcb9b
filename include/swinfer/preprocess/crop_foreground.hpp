// swinfer: MONAI's CropForeground: crop to the bounding box of positive voxels (plus margin), and its inverse.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>

#include "swinfer/core/checked.hpp"
#include "swinfer/core/error.hpp"
#include "swinfer/core/value_range.hpp"
#include "swinfer/preprocess/affine.hpp"
#include "swinfer/preprocess/image.hpp"

namespace swinfer {

/// \brief CropForeground's arguments (MONAI's names; select_fn is MONAI's default, value > 0 in any channel).
struct crop_foreground_options {
  extent3 margin{0, 0, 0};      ///< voxels added on both sides of the box, per axis
  bool allow_smaller = false;   ///< true: the box stops at the image edges; false (MONAI >= 1.5): it may reach past
                                ///< them and the outside is padded with zeros
  extent3 k_divisible{1, 1, 1};  ///< grow each side of the box to a multiple of k, centred
};

/// The values CropForeground's options may take. A margin or k_divisible past these grows the box by thousands of
/// voxels per side: never what a pipeline means, and the products of such extents overflow.
inline constexpr value_range<std::int64_t> crop_margin_range{0, 4096};
inline constexpr value_range<std::int64_t> crop_k_divisible_range{0, 4096};
inline constexpr std::string_view crop_k_divisible_note = " (0 and 1 leave the box's size as it is)";

/// Checks every option against its range; the error names `where`, the key, the value and the range.
inline void check_crop_foreground_options(const crop_foreground_options& o, std::string_view where) {
  for (std::size_t a = 0; a < 3; ++a) {
    detail::require_in_range(o.margin[a], crop_margin_range, where, "margin");
    detail::require_in_range(o.k_divisible[a], crop_k_divisible_range, where, "k_divisible", crop_k_divisible_note);
  }
}

/// The half-open box [start, end) CropForeground cuts, per spatial axis; it may reach outside the image.
struct crop_box {
  extent3 start{}, end{};

  extent3 shape() const { return {end[0] - start[0], end[1] - start[1], end[2] - start[2]}; }
};

/// \brief The box CropForeground cuts (MONAI's generate_spatial_bounding_box, then k_divisible). An image without a
/// positive voxel gives an empty box at the origin, as in MONAI.
inline crop_box foreground_box(const tensor<float>& data, const crop_foreground_options& o) {
  detail::require_one_image(data, "CropForeground");
  check_crop_foreground_options(o, "CropForeground");
  const auto& s = data.shape();
  const extent3 shape{s.d, s.h, s.w};
  const auto v = data.view();
  extent3 first{s.d, s.h, s.w}, last{-1, -1, -1};
  // One pass over the rows: the first and last positive voxel of each row bound the box along the last axis.
  for (std::int64_t d = 0; d < s.d; ++d) {
    for (std::int64_t h = 0; h < s.h; ++h) {
      auto positive = [&](std::int64_t w) {
        for (std::int64_t c = 0; c < s.c; ++c) {
          if (v(0, c, d, h, w) > 0.0f) return true;
        }
        return false;
      };
      std::int64_t lo = 0;
      while (lo < s.w && !positive(lo)) ++lo;
      if (lo == s.w) continue;
      std::int64_t hi = s.w - 1;
      while (!positive(hi)) --hi;
      first = {std::min(first[0], d), std::min(first[1], h), std::min(first[2], lo)};
      last = {std::max(last[0], d), std::max(last[1], h), std::max(last[2], hi)};
    }
  }
  crop_box box;
  if (last[0] < 0) return box;
  for (std::size_t a = 0; a < 3; ++a) {
    box.start[a] = detail::checked_add(first[a], -o.margin[a], "CropForeground: margin ", o.margin[a]);
    box.end[a] = detail::checked_add(last[a] + 1, o.margin[a], "CropForeground: margin ", o.margin[a]);
    if (o.allow_smaller) {
      box.start[a] = std::max<std::int64_t>(box.start[a], 0);
      box.end[a] = std::min(box.end[a], shape[a]);
    }
    // compute_divisible_spatial_size, then centre the growth (floor division leaves the odd voxel at the end)
    const std::int64_t size = box.end[a] - box.start[a], k = o.k_divisible[a] > 0 ? o.k_divisible[a] : 1;
    const std::int64_t grown =
        detail::checked_mul(detail::checked_add(size, k - 1, "CropForeground: k_divisible ", k) / k, k,
                            "CropForeground: k_divisible ", k);
    box.start[a] -= (grown - size) / 2;
    box.end[a] = box.start[a] + grown;
  }
  return box;
}

namespace detail {

/// Where a box meets an image: image voxels [image_start, image_end) sit at box_offset inside the box.
struct box_overlap {
  extent3 image_start{}, image_end{}, box_offset{};
};

inline box_overlap overlap(const crop_box& box, const extent3& image_shape) {
  box_overlap o;
  for (std::size_t a = 0; a < 3; ++a) {
    o.image_start[a] = std::clamp<std::int64_t>(box.start[a], 0, image_shape[a]);
    o.image_end[a] = std::clamp(box.end[a], o.image_start[a], image_shape[a]);
    o.box_offset[a] = std::max<std::int64_t>(-box.start[a], 0);
  }
  return o;
}

inline extent3 negated(const extent3& e) { return {-e[0], -e[1], -e[2]}; }

/// Copies the overlap from the box-shaped volume to the image-shaped one, or the other way round.
inline void copy_overlap(const tensor<float>& from, tensor<float>& to, const box_overlap& o, bool from_image) {
  auto corner = [&](const tensor<float>& t, bool image) {
    const auto s = volume_strides(t);
    const extent3& at = image ? o.image_start : o.box_offset;
    return at[0] * s[1] + at[1] * s[2] + at[2] * s[3];
  };
  copy_block(from.data() + corner(from, from_image), volume_strides(from), to.data() + corner(to, !from_image),
             volume_strides(to),
             {from.shape().c, o.image_end[0] - o.image_start[0], o.image_end[1] - o.image_start[1],
              o.image_end[2] - o.image_start[2]});
}

}  // namespace detail

/// \brief CropForeground's crop_pad: the part of the image inside `box`, zeros where the box reaches past the image.
/// The affine moves with the first voxel as MONAI records it (a crop, then a pad).
inline spatial_image crop_to_box(const spatial_image& in, const crop_box& box) {
  const auto o = detail::overlap(box, in.spatial_shape());
  spatial_image out{detail::new_volume(in.channels(), box.shape(), in.data.layout()),
                    detail::compose(detail::compose(in.affine, detail::voxel_translation(o.image_start)),
                                    detail::voxel_translation(detail::negated(o.box_offset)))};
  out.data.fill(0.0f);
  detail::copy_overlap(in.data, out.data, o, true);
  return out;
}

/// \brief MONAI's CropForeground: crop_to_box(foreground_box(...)).
inline spatial_image crop_foreground(const spatial_image& in, const crop_foreground_options& options) {
  return crop_to_box(in, foreground_box(in.data, options));
}

/// \brief CropForeground's inverse as Invertd runs it: remove the padding, then pad back to `original_shape` with
/// zeros (MONAI's BorderPad default, whatever the values mean), moving the affine back the same two steps.
inline spatial_image uncrop(const spatial_image& cropped, const crop_box& box, const extent3& original_shape) {
  const extent3 box_shape = box.shape();
  if (cropped.spatial_shape() != box_shape) {
    detail::fail("CropForeground inverse: expected spatial shape ", detail::spatial_text(box_shape), ", got ",
                 detail::spatial_text(cropped.spatial_shape()));
  }
  const auto o = detail::overlap(box, original_shape);
  spatial_image out{detail::new_volume(cropped.channels(), original_shape, cropped.data.layout()),
                    detail::compose(detail::compose(cropped.affine, detail::voxel_translation(o.box_offset)),
                                    detail::voxel_translation(detail::negated(o.image_start)))};
  out.data.fill(0.0f);
  detail::copy_overlap(cropped.data, out.data, o, false);
  return out;
}

}  // namespace swinfer

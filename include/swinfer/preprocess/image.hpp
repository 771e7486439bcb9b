// swinfer: a channel-first volume placed in world space by its voxel-to-world affine; what every preprocessing step maps.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <Eigen/Core>
#include <xtensor/xadapt.hpp>
#include <xtensor/xview.hpp>

#include "swinfer/core/error.hpp"
#include "swinfer/core/tensor.hpp"
#include "swinfer/core/value_range.hpp"

namespace swinfer {

/// Voxel (i, j, k, 1) to world (x, y, z, 1): nibabel's img.affine, MONAI's MetaTensor.affine.
using affine4 = Eigen::Matrix4d;

/// An affine from its rows (as io/nifti.hpp's nifti_affine holds nibabel's img.affine).
inline affine4 affine_from_rows(const std::array<std::array<double, 4>, 4>& rows) {
  affine4 a;
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) a(r, c) = rows[static_cast<std::size_t>(r)][static_cast<std::size_t>(c)];
  return a;
}

/// An affine's rows, for writing it back to a NIfTI header.
inline std::array<std::array<double, 4>, 4> affine_rows(const affine4& a) {
  std::array<std::array<double, 4>, 4> rows{};
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) rows[static_cast<std::size_t>(r)][static_cast<std::size_t>(c)] = a(r, c);
  return rows;
}

/// \brief The values an intensity option (ScaleIntensityRange's a_min..b_max, NormalizeIntensity's subtrahend and
/// divisor) may take: they are applied in float32, and converting a double past float's range is undefined.
inline constexpr value_range<double> intensity_value_range{-1e30, 1e30};

/// Extents (or indices) along the three spatial axes, NIfTI's i, j, k.
using extent3 = std::array<std::int64_t, 3>;

/// \brief A volume with its affine, as MONAI holds an image after LoadImage and EnsureChannelFirst.
struct spatial_image {
  tensor<float> data;  ///< logical (1, C, I, J, K) in either layout; spatial axis 0 is NIfTI's i
  affine4 affine = affine4::Identity();

  extent3 spatial_shape() const { return {data.shape().d, data.shape().h, data.shape().w}; }
  std::int64_t channels() const { return data.shape().c; }
  spatial_image clone() const { return {data.clone(), affine}; }
};

namespace detail {

/// "(I, J, K)" for messages (streamed: GCC 12 warns falsely about string concatenation inlined at -O3).
inline std::string spatial_text(const extent3& e) { return concat("(", e[0], ", ", e[1], ", ", e[2], ")"); }

/// MONAI transforms one channel-first image at a time; a batch dimension other than 1 is a caller's mistake.
inline void require_one_image(const tensor<float>& t, std::string_view step) {
  if (t.shape().n != 1) fail(step, ": expected one image of shape (1, C, I, J, K), got a batch of ", t.shape().n);
}

/// A new tensor of `channels` x `spatial` in `layout` (preprocessing keeps the caller's layout).
inline tensor<float> new_volume(std::int64_t channels, const extent3& spatial, layout_kind layout) {
  return tensor<float>(shape5{1, channels, spatial[0], spatial[1], spatial[2]}, layout);
}

/// The (C, I, J, K) strides of a tensor, in elements.
inline std::array<std::int64_t, 4> volume_strides(const tensor<float>& t) {
  const auto& s = t.strides();
  return {s[1], s[2], s[3], s[4]};
}

/// Copies a (C, I, J, K) block between strided storage (strides may be negative), walking the destination in its
/// memory order. Reorienting and cropping copy this way: xtensor's assignment between differently strided views
/// steps through every index generically and is several times slower.
inline void copy_block(const float* src, const std::array<std::int64_t, 4>& src_strides, float* dst,
                       const std::array<std::int64_t, 4>& dst_strides, const std::array<std::int64_t, 4>& shape) {
  std::array<std::size_t, 4> order{0, 1, 2, 3};
  std::sort(order.begin(), order.end(), [&](auto a, auto b) { return dst_strides[a] > dst_strides[b]; });
  const auto [a0, a1, a2, a3] = order;
  for (std::int64_t i0 = 0; i0 < shape[a0]; ++i0) {
    for (std::int64_t i1 = 0; i1 < shape[a1]; ++i1) {
      for (std::int64_t i2 = 0; i2 < shape[a2]; ++i2) {
        const float* s = src + i0 * src_strides[a0] + i1 * src_strides[a1] + i2 * src_strides[a2];
        float* d = dst + i0 * dst_strides[a0] + i1 * dst_strides[a1] + i2 * dst_strides[a2];
        for (std::int64_t i3 = 0; i3 < shape[a3]; ++i3) d[i3 * dst_strides[a3]] = s[i3 * src_strides[a3]];
      }
    }
  }
}

/// Every element as one flat xtensor, for element-wise steps where the layout does not matter.
inline auto flat_view(tensor<float>& t) {
  const auto n = static_cast<std::size_t>(t.size());
  return xt::adapt(t.data(), n, xt::no_ownership(), std::array<std::size_t, 1>{n});
}

/// One channel's values as a 1-D view, in storage order (statistics and element-wise maps need no other order).
inline auto channel_values(tensor<float>& t, std::int64_t c) {
  const std::int64_t voxels = t.shape().spatial(), channels = t.shape().c;
  return t.layout() == layout_kind::ncdhw ? xt::view(flat_view(t), xt::range(c * voxels, (c + 1) * voxels, 1))
                                          : xt::view(flat_view(t), xt::range(c, voxels * channels, channels));
}

}  // namespace detail
}  // namespace swinfer

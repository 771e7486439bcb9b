// swinfer: MONAI's Spacing / SpatialResample: resample to new voxel sizes as torch grid_sample does, in float64.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string_view>

#include <Eigen/Core>

#include "swinfer/core/checked.hpp"
#include "swinfer/core/error.hpp"
#include "swinfer/core/value_range.hpp"
#include "swinfer/preprocess/affine.hpp"
#include "swinfer/detail/parallel_for.hpp"
#include "swinfer/preprocess/image.hpp"

namespace swinfer {

/// grid_sample's mode: trilinear ("bilinear" in torch and MONAI) for images and probabilities, nearest for labels.
enum class interpolation { bilinear, nearest };

/// grid_sample's padding_mode: what a sample outside the input reads. MONAI's Spacing uses border.
enum class grid_padding { border, zeros };

/// \brief Spacing's arguments. The other MONAI arguments keep their defaults: diagonal=False, align_corners=False,
/// scale_extent=False, recompute_affine=False, dtype=float64 (the resampling arithmetic; the output is float32).
struct spacing_options {
  std::array<double, 3> pixdim{1.0, 1.0, 1.0};  ///< output voxel size per array axis; <= 0 keeps the input's
  interpolation mode = interpolation::bilinear;
  grid_padding padding = grid_padding::border;
};

/// \brief The voxel sizes Spacing may ask for, in mm (a pixdim of 0 or less keeps the input's): below a micrometre or
/// above a metre the output grid is absurd, and its size overflows.
inline constexpr value_range<double> spacing_pixdim_range{1e-3, 1e3};

/// Checks every positive pixdim against spacing_pixdim_range; `where` prefixes the message.
inline void check_spacing_options(const spacing_options& o, std::string_view where) {
  for (double v : o.pixdim) {
    if (!(v <= 0.0)) {
      detail::require_in_range(v, spacing_pixdim_range, where, "pixdim", " (0 or less keeps the input's spacing)");
    }
  }
}

/// Where a resampled image lies: its affine and spatial shape.
struct resample_target {
  affine4 affine = affine4::Identity();
  extent3 shape{};
};

namespace detail {

/// MONAI's AFFINE_TOL: spacings and affines this close count as equal.
inline constexpr double affine_tolerance = 1e-3;

/// np.allclose(a, b, rtol=1e-5, atol).
inline bool all_close(const affine4& a, const affine4& b, double atol) {
  return ((a - b).array().abs() <= atol + 1e-5 * b.array().abs()).all();
}

/// monai.data.utils.zoom_affine(affine, scale, diagonal=False): the affine's rotation (shear removed by a Cholesky
/// factorisation) with the new voxel sizes and no translation.
inline affine4 zoom_affine(const affine4& affine, Eigen::Vector3d scale) {
  const Eigen::Vector3d spacing = affine_spacing(affine);
  for (int a = 0; a < 3; ++a) {
    if (!(scale[a] > 0.0)) scale[a] = spacing[a];
  }
  const Eigen::Matrix3d rzs = affine.topLeftCorner<3, 3>();
  const Eigen::Matrix3d zs = lapack_cholesky(matmul(Eigen::Matrix3d(rzs.transpose()), rzs), "the affine's Gram matrix")
                                 .transpose();
  const Eigen::Matrix3d rotation =
      matmul(rzs, lapack_solve(zs, Eigen::Matrix3d(Eigen::Matrix3d::Identity()), "the affine's zoom-shear factor"));
  Eigen::Matrix3d zoom = Eigen::Matrix3d::Zero();
  for (int a = 0; a < 3; ++a) zoom(a, a) = (zs(a, a) < 0 ? -1.0 : 1.0) * std::abs(scale[a]);
  affine4 out = affine4::Identity();
  out.topLeftCorner<3, 3>() = matmul(rotation, zoom);
  return out;
}

/// monai.data.utils.compute_shape_offset(scale_extent=False): the output shape that covers the input's voxel centres,
/// and the world position of the output's first voxel: the input corner that is minimal along every output axis, or
/// failing that (oblique grids) the position that puts both volumes' centres at the same world point. An extent that is
/// not a finite 64-bit integer (absurd voxel sizes or affine entries) is an error naming `pixdim`.
inline resample_target shape_and_offset(const extent3& in_shape, const affine4& in_affine, const affine4& out_affine,
                                        const Eigen::Vector3d& pixdim) {
  Eigen::Matrix<double, 4, 8> corners;
  for (int c = 0; c < 8; ++c) {  // np.meshgrid(indexing="ij") order: the last axis varies fastest
    corners(0, c) = (c & 4) ? static_cast<double>(in_shape[0] - 1) : 0.0;
    corners(1, c) = (c & 2) ? static_cast<double>(in_shape[1] - 1) : 0.0;
    corners(2, c) = (c & 1) ? static_cast<double>(in_shape[2] - 1) : 0.0;
    corners(3, c) = 1.0;
  }
  const Eigen::Matrix<double, 4, 8> out_corners =
      matmul(lapack_solve(out_affine, in_affine, "the output affine"), corners);
  const Eigen::Matrix<double, 4, 8> world_corners = matmul(in_affine, corners);

  resample_target t;
  Eigen::Vector3d out_extent;
  for (int a = 0; a < 3; ++a) {
    const auto row = out_corners.row(a).array() / out_corners.row(3).array();
    // np.round rounds halves to even, as nearbyint does in the default rounding mode
    out_extent[a] = std::nearbyint(row.maxCoeff() - row.minCoeff() + 1.0);
    t.shape[static_cast<std::size_t>(a)] = checked_integer_cast<std::int64_t>(
        out_extent[a], "Spacing: the output extent on axis ", a, " for pixdim ", pixdim[a], " mm");
  }
  for (int i = 0; i < 8; ++i) {
    bool minimal = true;
    for (int a = 0; a < 3 && minimal; ++a) {
      minimal = std::abs((out_corners.row(a).array() - out_corners(a, i)).minCoeff()) <= 1e-8;
    }
    if (minimal) {
      t.affine = out_affine;
      t.affine.topRightCorner<3, 1>() = world_corners.col(i).head<3>();
      return t;
    }
  }
  Eigen::Vector3d in_half, out_half;
  for (int a = 0; a < 3; ++a) {
    in_half[a] = static_cast<double>(in_shape[static_cast<std::size_t>(a)]) / 2.0;
    out_half[a] = out_extent[a] / 2.0;
  }
  const Eigen::Matrix3d in_rzs = in_affine.topLeftCorner<3, 3>(), out_rzs = out_affine.topLeftCorner<3, 3>();
  t.affine = out_affine;
  t.affine.topRightCorner<3, 1>() = Eigen::Vector3d(matmul(in_rzs, Eigen::Matrix<double, 3, 1>(in_half)) +
                                                    in_affine.topRightCorner<3, 1>() -
                                                    matmul(out_rzs, Eigen::Matrix<double, 3, 1>(out_half)));
  return t;
}

/// grid_sampler_compute_source_index for align_corners=False, after unnormalisation: border clips into [0, n-1].
/// Zeros padding keeps the coordinate, clamped into [-2, n + 1]: every tap outside that range reads padding anyway,
/// and turning a far-off (or NaN, from a broken affine) coordinate into an integer index would be undefined.
inline double padded_coordinate(double x, std::int64_t n, grid_padding padding) {
  if (padding == grid_padding::border) return std::min(static_cast<double>(n - 1), std::max(x, 0.0));
  return x >= -2.0 ? std::min(x, static_cast<double>(n + 1)) : -2.0;
}

/// One output voxel's taps: element offsets into a channel (-1 where the tap falls outside) and torch's weights.
struct voxel_taps {
  std::array<std::int64_t, 8> offset{};
  std::array<double, 8> weight{};
};

/// torch's trilinear taps for source coordinates (z, y, x) = (array axes 0, 1, 2), in its order and arithmetic:
/// tnw, tne, tsw, tse, bnw, bne, bsw, bse, each weight a product of three distances taken left to right.
inline voxel_taps trilinear_taps(const std::array<double, 3>& position, const extent3& shape,
                                 const std::array<std::int64_t, 3>& stride) {
  std::array<std::int64_t, 3> lo{};
  std::array<std::array<double, 2>, 3> distance{};  // [axis][0]: to the high neighbour, [1]: from the low one
  std::array<std::array<std::int64_t, 2>, 3> part{};  // [axis][lo/hi]: offset contribution, -1 when outside
  for (std::size_t a = 0; a < 3; ++a) {
    lo[a] = static_cast<std::int64_t>(std::floor(position[a]));
    distance[a] = {static_cast<double>(lo[a] + 1) - position[a], position[a] - static_cast<double>(lo[a])};
    for (std::int64_t side = 0; side < 2; ++side) {
      const std::int64_t i = lo[a] + side;
      part[a][static_cast<std::size_t>(side)] = i >= 0 && i < shape[a] ? i * stride[a] : -1;
    }
  }
  voxel_taps t;
  for (std::size_t corner = 0; corner < 8; ++corner) {
    const std::size_t bx = corner & 1, by = (corner >> 1) & 1, bz = (corner >> 2) & 1;
    t.weight[corner] = distance[2][bx] * distance[1][by] * distance[0][bz];
    const bool inside = part[0][bz] >= 0 && part[1][by] >= 0 && part[2][bx] >= 0;
    t.offset[corner] = inside ? part[0][bz] + part[1][by] + part[2][bx] : -1;
  }
  return t;
}

}  // namespace detail

/// \brief Where Spacing(pixdim) puts the output: MONAI keeps an input spacing within 1e-3 of the request, keeps the
/// rotation, rounds the extent that covers the input's voxel centres and anchors the output at the input corner.
inline resample_target spacing_target(const affine4& affine, const extent3& shape, const std::array<double, 3>& pixdim) {
  const Eigen::Vector3d current = detail::affine_spacing(affine);
  Eigen::Vector3d wanted;
  for (int a = 0; a < 3; ++a) {
    const double target = pixdim[static_cast<std::size_t>(a)];
    const bool close = target - detail::affine_tolerance <= current[a] && current[a] <= target + detail::affine_tolerance;
    wanted[a] = close ? current[a] : target;
  }
  return detail::shape_and_offset(shape, affine, detail::zoom_affine(affine, wanted), wanted);
}

/// \brief MONAI's SpatialResample (align_corners=False, float64 arithmetic): the image resampled onto `target`.
/// When the target is the input's grid (within MONAI's 1e-3 tolerance) the input is returned unchanged, affine included.
inline spatial_image resample(const spatial_image& in, const resample_target& target, interpolation mode,
                              grid_padding padding) {
  detail::require_one_image(in.data, "Spacing");
  const extent3 in_shape = in.spatial_shape();
  // xform maps output voxel indices to input voxel indices (np.linalg.solve(src_affine, dst_affine)).
  const affine4 xform = detail::lapack_solve(in.affine, target.affine, "the image's affine");
  if (target.shape == in_shape && (detail::all_close(in.affine, target.affine, detail::affine_tolerance) ||
                                   detail::all_close(xform, affine4::Identity(), detail::affine_tolerance))) {
    return in.clone();
  }
  for (auto n : target.shape) {
    if (n <= 0) detail::fail("Spacing: the output would be empty (shape ", n, ")");
  }
  spatial_image out{detail::new_volume(in.channels(), target.shape, in.data.layout()),
                    detail::compose(in.affine, xform)};

  const float* src = in.data.data();
  float* dst = out.data.data();
  const auto& is = in.data.strides();
  const auto& os = out.data.strides();
  const std::array<std::int64_t, 3> in_stride{is[2], is[3], is[4]};
  const std::int64_t channels = in.channels();
  // Named copies, not a structured binding: the lambda below captures them, which clang < 16 rejects.
  const std::int64_t od = target.shape[0], oh = target.shape[1], ow = target.shape[2];
  // Output slices are independent.
  detail::parallel_for(od, detail::loop_threads(0, od, oh * ow), [&](std::int64_t d0, std::int64_t d1) {
    for (std::int64_t d = d0; d < d1; ++d) {
      for (std::int64_t h = 0; h < oh; ++h) {
        std::array<double, 3> row{};  // the (d, h) part of each source coordinate
        for (int a = 0; a < 3; ++a) {
          row[static_cast<std::size_t>(a)] = xform(a, 0) * static_cast<double>(d) + xform(a, 1) * static_cast<double>(h);
        }
        for (std::int64_t w = 0; w < ow; ++w) {
          std::array<double, 3> position{};
          for (int a = 0; a < 3; ++a) {
            const auto ua = static_cast<std::size_t>(a);
            position[ua] = detail::padded_coordinate(row[ua] + xform(a, 2) * static_cast<double>(w) + xform(a, 3),
                                                     in_shape[ua], padding);
          }
          float* out_voxel = dst + d * os[2] + h * os[3] + w * os[4];
          if (mode == interpolation::nearest) {
            // torch >= 2.1 rounds half to even (std::nearbyint); out of range reads zero
            std::int64_t offset = 0;
            for (std::size_t a = 0; a < 3 && offset >= 0; ++a) {
              const auto i = static_cast<std::int64_t>(std::nearbyint(position[a]));
              offset = i >= 0 && i < in_shape[a] ? offset + i * in_stride[a] : -1;
            }
            for (std::int64_t c = 0; c < channels; ++c) out_voxel[c * os[1]] = offset >= 0 ? src[c * is[1] + offset] : 0.0f;
            continue;
          }
          const auto taps = detail::trilinear_taps(position, in_shape, in_stride);
          for (std::int64_t c = 0; c < channels; ++c) {
            const float* channel = src + c * is[1];
            double sum = 0.0;
            for (std::size_t t = 0; t < 8; ++t) {
              if (taps.offset[t] >= 0) sum += static_cast<double>(channel[taps.offset[t]]) * taps.weight[t];
            }
            out_voxel[c * os[1]] = static_cast<float>(sum);
          }
        }
      }
    }
  });
  return out;
}

/// \brief MONAI's Spacing(pixdim, mode, padding_mode): the image resampled to the requested voxel sizes.
inline spatial_image respace(const spatial_image& in, const spacing_options& options) {
  check_spacing_options(options, "Spacing");
  return resample(in, spacing_target(in.affine, in.spatial_shape(), options.pixdim), options.mode, options.padding);
}

}  // namespace swinfer

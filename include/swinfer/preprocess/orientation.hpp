// swinfer: MONAI's Orientation: flip and permute the spatial axes to given axis codes (e.g. "RAS"), updating the affine.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include <Eigen/SVD>

#include "swinfer/core/error.hpp"
#include "swinfer/preprocess/affine.hpp"
#include "swinfer/preprocess/image.hpp"

namespace swinfer {

/// \brief Orientation's arguments. Codes use MONAI's default labels (L, R), (P, A), (I, S): "RAS" makes array axis 0
/// run towards Right, axis 1 towards Anterior and axis 2 towards Superior.
struct orientation_options {
  std::string axcodes = "RAS";
};

namespace detail {

/// A nibabel orientation: for each array axis, the world axis it runs along and its direction (+1 or -1).
struct axis_orientation {
  std::array<int, 3> world_axis{};
  std::array<int, 3> direction{};
};

inline constexpr std::array<std::array<char, 2>, 3> axis_labels{{{'L', 'R'}, {'P', 'A'}, {'I', 'S'}}};

/// nibabel.orientations.io_orientation: each array axis's closest world axis, taken from the polar decomposition of the
/// affine's column-normalised 3x3 part, resolving ties greedily in array-axis order as nibabel does.
inline axis_orientation io_orientation(const affine4& affine) {
  const Eigen::Matrix3d rzs = affine.topLeftCorner<3, 3>();
  Eigen::Matrix3d rs = rzs;
  for (int j = 0; j < 3; ++j) {
    const double zoom = rzs.col(j).norm();
    if (zoom != 0.0) rs.col(j) /= zoom;
  }
  const Eigen::JacobiSVD<Eigen::Matrix3d> svd(rs, Eigen::ComputeFullU | Eigen::ComputeFullV);
  const Eigen::Vector3d s = svd.singularValues();
  const double tol = s.maxCoeff() * 3 * Eigen::NumTraits<double>::epsilon();
  Eigen::Matrix3d r = Eigen::Matrix3d::Zero();
  for (int k = 0; k < 3; ++k) {
    if (s[k] > tol) r += svd.matrixU().col(k) * svd.matrixV().col(k).transpose();
  }
  axis_orientation o;
  for (int in_axis = 0; in_axis < 3; ++in_axis) {
    if ((r.col(in_axis).array().abs() <= 1e-8).all()) {
      fail("the affine's voxel axis ", in_axis, " has no direction in world space (singular affine)");
    }
    int out_axis = 0;
    r.col(in_axis).cwiseAbs().maxCoeff(&out_axis);
    o.world_axis[static_cast<std::size_t>(in_axis)] = out_axis;
    o.direction[static_cast<std::size_t>(in_axis)] = r(out_axis, in_axis) < 0 ? -1 : 1;
    r.row(out_axis).setZero();  // each world axis is taken once
  }
  return o;
}

/// nibabel.orientations.axcodes2ornt with MONAI's default labels; codes must name three distinct world axes.
inline axis_orientation axcodes_to_orientation(std::string_view axcodes) {
  auto invalid = [&](const char* why) {
    fail("orientation axcodes '", axcodes, "' ", why, " (use three letters, one from each of L/R, P/A, I/S, e.g. RAS)");
  };
  if (axcodes.size() != 3) invalid("must have three letters");
  axis_orientation o;
  std::array<bool, 3> taken{};
  for (std::size_t a = 0; a < 3; ++a) {
    bool found = false;
    for (std::size_t w = 0; w < 3 && !found; ++w) {
      for (std::size_t end = 0; end < 2 && !found; ++end) {
        if (axcodes[a] != axis_labels[w][end]) continue;
        if (taken[w]) invalid("name the same axis twice");
        taken[w] = found = true;
        o.world_axis[a] = static_cast<int>(w);
        o.direction[a] = end == 0 ? -1 : 1;
      }
    }
    if (!found) invalid("hold a letter outside L, R, P, A, I, S");
  }
  return o;
}

/// nibabel.orientations.ornt2axcodes with MONAI's default labels.
inline std::string orientation_to_axcodes(const axis_orientation& o) {
  std::string codes;
  for (std::size_t a = 0; a < 3; ++a) {
    codes += axis_labels[static_cast<std::size_t>(o.world_axis[a])][o.direction[a] < 0 ? 0 : 1];
  }
  return codes;
}

/// nibabel.orientations.ornt_transform: for each current array axis, the target array axis it moves to and whether it
/// is reversed (-1).
inline axis_orientation orientation_transform(const axis_orientation& from, const axis_orientation& to) {
  axis_orientation t;
  for (std::size_t target = 0; target < 3; ++target) {
    for (std::size_t current = 0; current < 3; ++current) {
      if (from.world_axis[current] != to.world_axis[target]) continue;
      t.world_axis[current] = static_cast<int>(target);
      t.direction[current] = from.direction[current] == to.direction[target] ? 1 : -1;
    }
  }
  return t;
}

/// nibabel.orientations.inv_ornt_aff: the voxel transform from the reoriented array's indices to the current ones.
inline affine4 orientation_voxel_transform(const axis_orientation& t, const extent3& shape) {
  affine4 x = affine4::Zero();
  x(3, 3) = 1.0;
  for (std::size_t a = 0; a < 3; ++a) {
    x(static_cast<int>(a), t.world_axis[a]) = t.direction[a];
    x(static_cast<int>(a), 3) = t.direction[a] < 0 ? static_cast<double>(shape[a] - 1) : 0.0;
  }
  return x;
}

/// Where Orientation puts an image: the axis transform, and the output's shape and affine.
struct reorientation {
  axis_orientation transform;
  extent3 shape{};
  affine4 affine;
};

inline reorientation plan_reorientation(const affine4& affine, const extent3& shape, std::string_view axcodes) {
  reorientation r{orientation_transform(io_orientation(affine), axcodes_to_orientation(axcodes)), {}, {}};
  for (std::size_t a = 0; a < 3; ++a) r.shape[static_cast<std::size_t>(r.transform.world_axis[a])] = shape[a];
  r.affine = compose(affine, orientation_voxel_transform(r.transform, shape));
  return r;
}

}  // namespace detail

/// nibabel.aff2axcodes: the axis codes an affine's voxel axes run along, e.g. "LAS".
inline std::string axcodes_of(const affine4& affine) {
  return detail::orientation_to_axcodes(detail::io_orientation(affine));
}

/// \brief MONAI's Orientation(axcodes): the image with its axes flipped and permuted to `axcodes`, and its affine
/// updated so every voxel keeps its world position. Values are copied, not interpolated.
inline spatial_image reorient(const spatial_image& in, std::string_view axcodes) {
  detail::require_one_image(in.data, "Orientation");
  const extent3 in_shape = in.spatial_shape();
  const auto plan = detail::plan_reorientation(in.affine, in_shape, axcodes);
  const auto& t = plan.transform;
  const extent3& out_shape = plan.shape;

  // Output axis t.world_axis[a] reads input axis a, backwards where it is flipped (MONAI flips, then permutes).
  const auto in_strides = detail::volume_strides(in.data);
  std::array<std::int64_t, 4> read_strides{in_strides[0], 0, 0, 0};
  const float* first = in.data.data();
  for (std::size_t a = 0; a < 3; ++a) {
    const auto to = static_cast<std::size_t>(t.world_axis[a]);
    read_strides[to + 1] = t.direction[a] < 0 ? -in_strides[a + 1] : in_strides[a + 1];
    if (t.direction[a] < 0) first += (in_shape[a] - 1) * in_strides[a + 1];
  }
  spatial_image out{detail::new_volume(in.channels(), out_shape, in.data.layout()), plan.affine};
  detail::copy_block(first, read_strides, out.data.data(), detail::volume_strides(out.data),
                     {in.channels(), out_shape[0], out_shape[1], out_shape[2]});
  return out;
}

}  // namespace swinfer

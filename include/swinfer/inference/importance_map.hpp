// swinfer: the per-window blending weights of MONAI's compute_importance_map, and their sum over a window grid.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string_view>
#include <vector>

#include "swinfer/core/error.hpp"
#include "swinfer/core/tensor.hpp"
#include "swinfer/inference/window_grid.hpp"

namespace swinfer {

/// How overlapping window outputs are weighted: equally, or by a Gaussian centred on each window.
enum class blend_mode { constant, gaussian };

inline constexpr std::string_view blend_mode_name(blend_mode m) {
  return m == blend_mode::gaussian ? "gaussian" : "constant";
}

/// The blend mode named `name` (MONAI's `mode`: constant or gaussian); an error listing both otherwise.
inline blend_mode parse_blend_mode(std::string_view name) {
  for (const blend_mode m : {blend_mode::constant, blend_mode::gaussian}) {
    if (blend_mode_name(m) == name) return m;
  }
  detail::fail("unknown blend mode '", name, "' (use constant or gaussian)");
}

/// \brief MONAI's compute_importance_map (1.2 and later) for a window of `roi` voxels: (1, 1, rd, rh, rw) float32.
/// Constant: all ones. Gaussian: per axis of length r, x_k = -(r-1)/2 + k and exp(x^2 / (-2 sigma^2)) with
/// sigma = sigma_scale * r, multiplied out axis by axis. It is not normalised (the peak is below 1 for even r);
/// values are clamped from below at max(min, 1e-3) so far corners still count.
inline tensor<float> importance_map(const std::array<std::int64_t, 3>& roi, blend_mode mode,
                                    const std::array<double, 3>& sigma_scale = {0.125, 0.125, 0.125}) {
  for (std::size_t a = 0; a < 3; ++a)
    if (roi[a] < 1) detail::fail("importance_map: roi axis ", a, " is ", roi[a], "; it must be at least 1");
  tensor<float> map({1, 1, roi[0], roi[1], roi[2]}, layout_kind::ncdhw);
  if (mode == blend_mode::constant) {
    map.fill(1.0f);
    return map;
  }
  std::array<std::vector<float>, 3> profile;
  for (std::size_t a = 0; a < 3; ++a) {
    if (!(sigma_scale[a] > 0.0) || !std::isfinite(sigma_scale[a]))
      detail::fail("importance_map: sigma_scale ", sigma_scale[a], " on axis ", a, " must be positive and finite");
    // The arithmetic follows the PyTorch expression step by step: sigma and -2 sigma^2 in double (Python floats),
    // then the division and exp in float32, so the weights match MONAI's to the last bit or one.
    const double sigma = static_cast<double>(roi[a]) * sigma_scale[a];
    const auto denominator = static_cast<float>(-2.0 * (sigma * sigma));
    const double first = -static_cast<double>(roi[a] - 1) / 2.0;
    for (std::int64_t k = 0; k < roi[a]; ++k) {
      const auto x = static_cast<float>(first + static_cast<double>(k));
      profile[a].push_back(std::exp(x * x / denominator));
    }
  }
  float* out = map.data();
  for (std::int64_t z = 0; z < roi[0]; ++z)
    for (std::int64_t y = 0; y < roi[1]; ++y) {
      const float zy = profile[0][static_cast<std::size_t>(z)] * profile[1][static_cast<std::size_t>(y)];
      for (std::int64_t x = 0; x < roi[2]; ++x) *out++ = zy * profile[2][static_cast<std::size_t>(x)];
    }
  const float floor = std::max(*std::min_element(map.data(), map.data() + map.size()), 1e-3f);
  std::for_each(map.data(), map.data() + map.size(), [floor](float& v) { v = std::max(v, floor); });
  return map;
}

namespace detail {

/// The importance map summed over every window of `grid` that covers voxels (z, y, x_begin .. x_end - 1), written to
/// `row`. Windows are visited in MONAI's order, so each voxel's float32 sum is bit-identical to MONAI's count map
/// (which adds the whole map once per window) without holding a volume-sized buffer.
inline void importance_count_row(const window_grid& grid, const float* importance, std::int64_t z, std::int64_t y,
                                 std::int64_t x_begin, std::int64_t x_end, float* row) {
  const auto [rd, rh, rw] = grid.roi;
  std::fill(row, row + (x_end - x_begin), 0.0f);
  for (const auto sz : grid.starts[0]) {
    if (z < sz || z >= sz + rd) continue;
    for (const auto sy : grid.starts[1]) {
      if (y < sy || y >= sy + rh) continue;
      const float* plane_row = importance + ((z - sz) * rh + (y - sy)) * rw;
      for (const auto sx : grid.starts[2]) {
        const std::int64_t lo = std::max(x_begin, sx), hi = std::min(x_end, sx + rw);
        for (std::int64_t x = lo; x < hi; ++x) row[x - x_begin] += plane_row[x - sx];
      }
    }
  }
}

}  // namespace detail

/// \brief MONAI's count map: the sum of `importance` ((1, 1, roi) ncdhw, as importance_map returns) over every
/// window of `grid`, as a (1, 1, D, H, W) tensor. sliding_window_inference divides the blended sum by this.
inline tensor<float> importance_count(const window_grid& grid, const tensor<float>& importance) {
  if (!(importance.shape() == shape5{1, 1, grid.roi[0], grid.roi[1], grid.roi[2]}) ||
      !importance.view().is_packed(layout_kind::ncdhw))
    detail::fail("importance_count: the importance map has shape ", importance.shape().str(),
                 "; expected a packed ncdhw (1, 1, ", grid.roi[0], ", ", grid.roi[1], ", ", grid.roi[2], ")");
  tensor<float> count({1, 1, grid.size[0], grid.size[1], grid.size[2]}, layout_kind::ncdhw);
  for (std::int64_t z = 0; z < grid.size[0]; ++z)
    for (std::int64_t y = 0; y < grid.size[1]; ++y)
      detail::importance_count_row(grid, importance.data(), z, y, 0, grid.size[2], &count(0, 0, z, y, 0));
  return count;
}

}  // namespace swinfer

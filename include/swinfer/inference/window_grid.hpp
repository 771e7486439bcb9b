// swinfer: where sliding windows go, exactly as MONAI's _get_scan_interval and dense_patch_slices place them.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "swinfer/core/error.hpp"

namespace swinfer {

/// \brief MONAI's scan interval on one axis: the roi when it spans the whole axis, else int(roi * (1 - overlap))
/// truncated in double precision and at least 1. So 96 @ 0.7 gives 28 and 100 @ 0.9 gives 9 (100 * 0.1 is 9.99...).
inline std::int64_t scan_interval(std::int64_t size, std::int64_t roi, double overlap) {
  if (roi == size) return roi;
  const auto interval = static_cast<std::int64_t>(static_cast<double>(roi) * (1.0 - overlap));
  return interval > 0 ? interval : 1;
}

/// \brief Start of every window along one axis of `size` voxels (size >= roi): i * interval, for as many windows as
/// it takes to reach the end, with the last one moved back flush to the end (it may overlap more than asked).
inline std::vector<std::int64_t> window_starts(std::int64_t size, std::int64_t roi, std::int64_t interval) {
  if (roi < 1 || roi > size || interval < 1)
    detail::fail("window_starts: need 1 <= roi <= size and interval >= 1, got size ", size, ", roi ", roi,
                 ", interval ", interval);
  // dense_patch_slices: the first d in [0, ceil(size / interval)) whose window reaches the end; one window if none.
  const std::int64_t candidates = (size + interval - 1) / interval;
  std::int64_t count = 1;
  for (std::int64_t d = 0; d < candidates; ++d)
    if (d * interval + roi >= size) {
      count = d + 1;
      break;
    }
  std::vector<std::int64_t> starts;
  starts.reserve(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) {
    const std::int64_t start = i * interval;
    starts.push_back(start + roi > size ? size - roi : start);
  }
  return starts;
}

/// \brief Every window position over a (padded) volume: per-axis start lists whose Cartesian product, first axis
/// slowest, is MONAI's window order.
struct window_grid {
  std::array<std::int64_t, 3> size{};  ///< the (padded) volume, D, H, W
  std::array<std::int64_t, 3> roi{};
  std::array<std::vector<std::int64_t>, 3> starts;

  std::int64_t count() const {
    return static_cast<std::int64_t>(starts[0].size() * starts[1].size() * starts[2].size());
  }
  /// Start (D, H, W) of window `w` in MONAI's order.
  std::array<std::int64_t, 3> start(std::int64_t w) const {
    const auto nh = static_cast<std::int64_t>(starts[1].size()), nw = static_cast<std::int64_t>(starts[2].size());
    return {starts[0][static_cast<std::size_t>(w / (nh * nw))], starts[1][static_cast<std::size_t>(w / nw % nh)],
            starts[2][static_cast<std::size_t>(w % nw)]};
  }
};

/// The grid for a volume of `size` (each axis >= roi) with per-axis overlap in [0, 1).
inline window_grid make_window_grid(const std::array<std::int64_t, 3>& size, const std::array<std::int64_t, 3>& roi,
                                    const std::array<double, 3>& overlap) {
  window_grid g{size, roi, {}};
  for (std::size_t a = 0; a < 3; ++a)
    g.starts[a] = window_starts(size[a], roi[a], scan_interval(size[a], roi[a], overlap[a]));
  return g;
}

}  // namespace swinfer

// swinfer: Swin window geometry for one stage: clamped window and shift, padded grid, masks, bias index.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace swinfer::ops {

/// \brief Window geometry of one stage, following MONAI's get_window_size and compute_mask.
struct window_plan {
  std::array<std::int64_t, 3> grid{};     ///< token grid (D, H, W) of the stage
  std::array<int, 3> window{};            ///< window after clamping
  std::array<int, 3> shift{};             ///< shift used by odd blocks after clamping (0 on clamped axes)
  std::array<std::int64_t, 3> padded{};   ///< grid zero-padded at the high end to a multiple of the window
  std::array<std::int64_t, 3> windows{};  ///< windows per axis

  int tokens() const { return window[0] * window[1] * window[2]; }
  std::int64_t num_windows() const { return windows[0] * windows[1] * windows[2]; }
  bool has_shift() const { return shift[0] || shift[1] || shift[2]; }
};

/// On an axis whose extent is <= the window (note: less-or-equal) the window shrinks to the extent and the shift
/// becomes 0; other axes keep (w, w // 2).
inline window_plan make_window_plan(const std::array<std::int64_t, 3>& grid, const std::array<int, 3>& configured) {
  window_plan p;
  p.grid = grid;
  for (int a = 0; a < 3; ++a) {
    if (grid[a] <= configured[a]) {
      p.window[a] = static_cast<int>(grid[a]);
      p.shift[a] = 0;
    } else {
      p.window[a] = configured[a];
      p.shift[a] = configured[a] / 2;
    }
    p.windows[a] = (grid[a] + p.window[a] - 1) / p.window[a];
    p.padded[a] = p.windows[a] * p.window[a];
  }
  return p;
}

/// Number of rows of the relative-position bias table for a configured window: (2w0-1)(2w1-1)(2w2-1).
inline std::int64_t relative_bias_table_rows(const std::array<int, 3>& w) {
  return std::int64_t{2 * w[0] - 1} * (2 * w[1] - 1) * (2 * w[2] - 1);
}

/// MONAI's relative_position_index for the *configured* window: n x n, n = w0*w1*w2, row-major token ids.
inline std::vector<std::int64_t> relative_position_index(const std::array<int, 3>& w) {
  const int n = w[0] * w[1] * w[2];
  std::vector<std::int64_t> index(static_cast<std::size_t>(n) * n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      const int zi = i / (w[1] * w[2]), yi = (i / w[2]) % w[1], xi = i % w[2];
      const int zj = j / (w[1] * w[2]), yj = (j / w[2]) % w[1], xj = j % w[2];
      index[static_cast<std::size_t>(i) * n + j] = std::int64_t{zi - zj + w[0] - 1} * (2 * w[1] - 1) * (2 * w[2] - 1) +
                                                   std::int64_t{yi - yj + w[1] - 1} * (2 * w[2] - 1) +
                                                   (xi - xj + w[2] - 1);
    }
  return index;
}

/// Dense bias [heads][t][t] for a clamped window of t tokens. MONAI slices index[:t, :t] of the configured
/// window's index, so small-window token ids are decoded as if they lived in the configured grid: reproduce it.
/// `index` is the configured n x n index (from the checkpoint), `table` is (rows, heads) row-major.
inline std::vector<float> dense_relative_bias(const float* table, int heads, const std::int64_t* index, int n,
                                              int t) {
  std::vector<float> bias(static_cast<std::size_t>(heads) * t * t);
  for (int h = 0; h < heads; ++h)
    for (int i = 0; i < t; ++i)
      for (int j = 0; j < t; ++j)
        bias[(static_cast<std::size_t>(h) * t + i) * t + j] = table[index[static_cast<std::size_t>(i) * n + j] * heads + h];
  return bias;
}

/// Region id (0..26) of every token of every window on the rolled, padded grid: tokens i and j of a window
/// attend unmasked iff their ids are equal (otherwise the mask adds -100). Layout [window][token].
inline std::vector<std::uint8_t> shift_region_ids(const window_plan& p) {
  auto band = [&](int a, std::int64_t pos) -> int {
    if (p.shift[a] == 0) return 0;
    if (pos < p.padded[a] - p.window[a]) return 0;
    if (pos < p.padded[a] - p.shift[a]) return 1;
    return 2;
  };
  const int t = p.tokens();
  std::vector<std::uint8_t> ids(static_cast<std::size_t>(p.num_windows()) * t);
  std::size_t k = 0;
  for (std::int64_t bz = 0; bz < p.windows[0]; ++bz)
    for (std::int64_t by = 0; by < p.windows[1]; ++by)
      for (std::int64_t bx = 0; bx < p.windows[2]; ++bx)
        for (int tz = 0; tz < p.window[0]; ++tz)
          for (int ty = 0; ty < p.window[1]; ++ty)
            for (int tx = 0; tx < p.window[2]; ++tx)
              ids[k++] = static_cast<std::uint8_t>(band(0, bz * p.window[0] + tz) * 9 + band(1, by * p.window[1] + ty) * 3 +
                                                   band(2, bx * p.window[2] + tx));
  return ids;
}

/// The mask value MONAI adds between tokens of different regions (not -inf).
inline constexpr float shift_mask_value = -100.0f;

}  // namespace swinfer::ops

// swinfer: comparing label maps: Dice per label against a reference mask, and the fraction of voxels that agree.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>

#include "swinfer/core/error.hpp"
#include "swinfer/core/tensor.hpp"

namespace swinfer {

/// \brief Dice, 2 |A and B| / (|A| + |B|), of every non-zero label present in either map; voxels are matched by
/// logical index, whatever the layouts. `truth` holds labels as floats (as a NIfTI mask reads) and is rounded to
/// the nearest integer. Label 0 is background and gets no score; a label in only one map scores 0.
/// \throws swinfer::error naming both shapes when the maps are not on the same grid.
inline std::map<int, double> dice_per_label(const tensor<std::uint8_t>& labels, const tensor<float>& truth) {
  const shape5& s = labels.shape();
  if (!(truth.shape() == s)) {
    detail::fail("Dice needs both label maps on one grid: the labels have shape ", s.str(), ", the truth ",
                 truth.shape().str());
  }
  struct voxel_counts {
    double both = 0, labels = 0, truth = 0;
  };
  std::map<int, voxel_counts> counts;
  for (std::int64_t n = 0; n < s.n; ++n)
    for (std::int64_t c = 0; c < s.c; ++c)
      for (std::int64_t z = 0; z < s.d; ++z)
        for (std::int64_t y = 0; y < s.h; ++y)
          for (std::int64_t x = 0; x < s.w; ++x) {
            const int m = labels(n, c, z, y, x), t = static_cast<int>(std::lround(truth(n, c, z, y, x)));
            if (m) counts[m].labels += 1;
            if (t) counts[t].truth += 1;
            if (m && m == t) counts[m].both += 1;
          }
  std::map<int, double> dice;
  for (const auto& [label, k] : counts) dice[label] = 2.0 * k.both / (k.labels + k.truth);
  return dice;
}

/// \brief Fraction of voxels with the same label in both maps, matched by logical index whatever the layouts
/// (1 for empty maps: no voxel disagrees).
/// \throws swinfer::error naming both shapes when the maps are not on the same grid.
inline double label_agreement(const tensor<std::uint8_t>& a, const tensor<std::uint8_t>& b) {
  const shape5& s = a.shape();
  if (!(b.shape() == s)) {
    detail::fail("label agreement needs both label maps on one grid: shapes ", s.str(), " and ", b.shape().str());
  }
  if (s.numel() == 0) return 1.0;
  std::int64_t same = 0;
  for (std::int64_t n = 0; n < s.n; ++n)
    for (std::int64_t c = 0; c < s.c; ++c)
      for (std::int64_t z = 0; z < s.d; ++z)
        for (std::int64_t y = 0; y < s.h; ++y)
          for (std::int64_t x = 0; x < s.w; ++x) same += a(n, c, z, y, x) == b(n, c, z, y, x);
  return static_cast<double>(same) / static_cast<double>(s.numel());
}

}  // namespace swinfer

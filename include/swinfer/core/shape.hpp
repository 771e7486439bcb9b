// swinfer: the logical 5-D shape (N, C, D, H, W) every tensor is described by.
#pragma once

#include <cstdint>
#include <string>

namespace swinfer {

/// \brief Logical extents: batch, channels, then spatial axes 0, 1, 2 (NIfTI i, j, k).
struct shape5 {
  std::int64_t n = 0, c = 0, d = 0, h = 0, w = 0;

  constexpr std::int64_t spatial() const { return d * h * w; }
  constexpr std::int64_t numel() const { return n * c * d * h * w; }
  constexpr bool operator==(const shape5&) const = default;

  std::string str() const {
    return "(" + std::to_string(n) + ", " + std::to_string(c) + ", " + std::to_string(d) + ", " +
           std::to_string(h) + ", " + std::to_string(w) + ")";
  }
};

}  // namespace swinfer

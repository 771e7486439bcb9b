// swinfer: the logical 5-D shape (N, C, D, H, W) every tensor is described by.
#pragma once

#include <cstdint>
#include <ostream>
#include <sstream>
#include <string>

namespace swinfer {

/// \brief Logical extents: batch, channels, then spatial axes 0, 1, 2 (NIfTI i, j, k).
struct shape5 {
  std::int64_t n = 0, c = 0, d = 0, h = 0, w = 0;

  constexpr std::int64_t spatial() const { return d * h * w; }
  constexpr std::int64_t numel() const { return n * c * d * h * w; }
  constexpr bool operator==(const shape5&) const = default;

  /// Streams "(n, c, d, h, w)": lets an error message name a shape without building a string unless it fails.
  friend std::ostream& operator<<(std::ostream& out, const shape5& s) {
    return out << "(" << s.n << ", " << s.c << ", " << s.d << ", " << s.h << ", " << s.w << ")";
  }
  // A stream, not operator+ chains: GCC 12 at -O3 reports a false -Wrestrict on the latter.
  std::string str() const {
    std::ostringstream s;
    s << *this;
    return s.str();
  }
};

}  // namespace swinfer

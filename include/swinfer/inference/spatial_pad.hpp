// swinfer: torch.nn.functional.pad over the three spatial axes (constant, reflect, replicate, circular).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "swinfer/core/error.hpp"
#include "swinfer/core/tensor.hpp"
#include "swinfer/detail/parallel_for.hpp"

namespace swinfer {

/// Padding modes, with torch.nn.functional.pad's semantics.
enum class pad_mode {
  constant,   ///< the fill value
  reflect,    ///< mirrored without repeating the edge voxel: needs pad < size
  replicate,  ///< the edge voxel repeated
  circular,   ///< wrapped around: needs pad <= size
};

inline constexpr std::string_view pad_mode_name(pad_mode m) {
  switch (m) {
    case pad_mode::constant: return "constant";
    case pad_mode::reflect: return "reflect";
    case pad_mode::replicate: return "replicate";
    case pad_mode::circular: return "circular";
  }
  return "?";
}

/// The padding mode named `name` (pad_mode_name's spelling, as torch and MONAI spell it); an error listing the
/// names otherwise.
inline pad_mode parse_pad_mode(std::string_view name) {
  for (const pad_mode m : {pad_mode::constant, pad_mode::reflect, pad_mode::replicate, pad_mode::circular}) {
    if (pad_mode_name(m) == name) return m;
  }
  detail::fail("unknown padding mode '", name, "' (use constant, reflect, replicate or circular)");
}

namespace detail {

/// For each padded coordinate on one axis, the source coordinate it copies, or -1 for the constant fill.
inline std::vector<std::int64_t> pad_source_index(std::int64_t size, std::int64_t low, std::int64_t high, pad_mode mode,
                                                  std::size_t axis) {
  if ((mode == pad_mode::reflect && (low >= size || high >= size)) ||
      (mode == pad_mode::circular && (low > size || high > size)))
    fail("pad_spatial: ", pad_mode_name(mode), " padding of (", low, ", ", high, ") on spatial axis ", axis,
         " of size ", size, " is not possible (torch requires pad ", mode == pad_mode::reflect ? "<" : "<=",
         " size); use replicate or constant padding");
  std::vector<std::int64_t> source(static_cast<std::size_t>(low + size + high));
  for (std::int64_t p = 0; p < static_cast<std::int64_t>(source.size()); ++p) {
    const std::int64_t i = p - low;
    std::int64_t s = i;
    if (i < 0 || i >= size) {
      switch (mode) {
        case pad_mode::constant: s = -1; break;
        case pad_mode::replicate: s = std::clamp<std::int64_t>(i, 0, size - 1); break;
        case pad_mode::reflect: s = i < 0 ? -i : 2 * (size - 1) - i; break;
        case pad_mode::circular: s = (i % size + size) % size; break;
      }
    }
    source[static_cast<std::size_t>(p)] = s;
  }
  return source;
}

}  // namespace detail

/// \brief Pads spatial axis a with low[a] voxels before and high[a] after (all non-negative), like
/// torch.nn.functional.pad(x, [low_w, high_w, low_h, high_h, low_d, high_d], mode, value=cval). Keeps the layout.
inline tensor<float> pad_spatial(const tensor<float>& input, const std::array<std::int64_t, 3>& low,
                                 const std::array<std::int64_t, 3>& high, pad_mode mode, float cval = 0.0f,
                                 int threads = 0) {
  const shape5& s = input.shape();
  const std::array<std::int64_t, 3> size{s.d, s.h, s.w};
  std::array<std::vector<std::int64_t>, 3> source;
  for (std::size_t a = 0; a < 3; ++a) {
    if (low[a] < 0 || high[a] < 0)
      detail::fail("pad_spatial: negative padding (", low[a], ", ", high[a], ") on spatial axis ", a);
    source[a] = detail::pad_source_index(size[a], low[a], high[a], mode, a);
  }
  tensor<float> out({s.n, s.c, static_cast<std::int64_t>(source[0].size()), static_cast<std::int64_t>(source[1].size()),
                     static_cast<std::int64_t>(source[2].size())},
                    input.layout());
  const shape5& o = out.shape();
  const std::int64_t rows = o.n * o.d * o.h;
  detail::parallel_for(rows, detail::loop_threads(threads, rows, o.w * o.c), [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t r = begin; r < end; ++r) {
      const std::int64_t n = r / (o.d * o.h), z = r / o.h % o.d, y = r % o.h;
      const std::int64_t sz = source[0][static_cast<std::size_t>(z)], sy = source[1][static_cast<std::size_t>(y)];
      for (std::int64_t c = 0; c < o.c; ++c)
        for (std::int64_t x = 0; x < o.w; ++x) {
          const std::int64_t sx = source[2][static_cast<std::size_t>(x)];
          out(n, c, z, y, x) = sz < 0 || sy < 0 || sx < 0 ? cval : input(n, c, sz, sy, sx);
        }
    }
  });
  return out;
}

}  // namespace swinfer

// swinfer: memory-layout tags. Shapes are always logical (N, C, D, H, W); a layout only decides the strides.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "swinfer/core/checked.hpp"
#include "swinfer/core/shape.hpp"

namespace swinfer {

enum class layout_kind : std::uint8_t { ncdhw, ndhwc };

namespace layout {

/// Channels-first: W fastest, then H, D, C, N (PyTorch's default).
struct ncdhw {
  static constexpr layout_kind kind = layout_kind::ncdhw;
  static constexpr std::string_view name = "ncdhw";
};

/// Channels-last: C fastest, then W, H, D, N (the transformer's token order).
struct ndhwc {
  static constexpr layout_kind kind = layout_kind::ndhwc;
  static constexpr std::string_view name = "ndhwc";
};

}  // namespace layout

inline constexpr std::string_view layout_name(layout_kind k) {
  return k == layout_kind::ncdhw ? layout::ncdhw::name : layout::ndhwc::name;
}

/// Packed strides (in elements) of a logical (N, C, D, H, W) shape, indexed in that logical order. A shape whose
/// element count overflows int64 is an error naming it (shapes come from files and options).
inline constexpr std::array<std::int64_t, 5> packed_strides(const shape5& s, layout_kind k) {
  const auto mul = [&s](std::int64_t a, std::int64_t b) { return detail::checked_mul(a, b, "tensor shape ", s); };
  const std::int64_t hw = mul(s.h, s.w), dhw = mul(s.d, hw), cdhw = mul(s.c, dhw);
  mul(s.n, cdhw);  // the element count itself must be addressable too
  if (k == layout_kind::ncdhw) return {cdhw, dhw, hw, s.w, 1};
  return {cdhw, 1, mul(hw, s.c), mul(s.w, s.c), s.c};
}

}  // namespace swinfer

// swinfer cpu backend: int8 products on Intel AMX tiles (int8_dot.hpp's amx path). One tdpbusd multiplies a tile of
// 16 rows of uint8 activations by a tile of int8 weights in quads and adds 16 x 16 int32 sums exactly (by Intel's
// figures 1024 multiply-adds per cycle and core, 8x vpdpbusd on two ports; unmeasured here, no CPU with AMX has run
// it): the same integers as the other int8 paths, from the same packed weights
// (the vnni layout, [segment][quad][group columns][4]: a B tile is 16 of its columns over `chunk` quads, read with
// the group's row stride). The kernel is written against a tile unit (the hardware's, below, or the tests' software
// model), so its blocking is checked on every CPU; only the unit's instructions need one with AMX-INT8.
#pragma once

#include <cstdint>

#include "swinfer/backend/cpu/amx_tiles.hpp"

namespace swinfer::cpu::amx {

/// Quads (4 depth values) per tile product: the largest divisor of a segment's quads up to 16, so that the products
/// of one segment never read the next segment's weights (a B tile's rows are all this segment's).
inline int int8_chunk(std::int64_t quads_per_segment) {
  for (int chunk = 16; chunk > 1; --chunk) {
    if (quads_per_segment % chunk == 0) return chunk;
  }
  return 1;
}

/// The smallest chunk the amx path is chosen at: below it a product multiplies little per tile load (half a tile's
/// depth; a choice, not yet timed against vpdpbusd on a CPU with AMX).
inline constexpr int int8_min_chunk = 8;

/// Tiles of the int8 kernel: 0-2 C (16 rows x 16 int32), 3 A (16 rows x `chunk` quads of uint8), 4-6 B (`chunk`
/// quads x 16 columns of int8 quads).
inline tile_shapes int8_tile_shapes(int chunk) {
  tile_shapes shapes{};
  for (int t = 0; t < 3; ++t) shapes[t] = {tile_rows, tile_row_bytes};
  shapes[3] = {tile_rows, 4 * chunk};
  for (int t = 4; t < 7; ++t) shapes[t] = {chunk, tile_row_bytes};
  return shapes;
}

/// Columns per C tile (int32) and per B tile (int8 quads).
inline constexpr int int8_tile_columns = tile_row_bytes / 4;

/// C[rows][0 .. 16*Packets) (row stride ldc int32) = A * B for one column group on a tile unit configured with
/// int8_tile_shapes(chunk), rows in blocks of 16 (callers provide the slack rows). A row r of segment s is the uint8
/// run at seg[s] + r * stride, quads_per_segment quads; B is the group's panel in the vnni layout, Packets * 16
/// columns wide. Each block's sums stay in the C tiles over the whole depth.
///
/// Unit: zero<T>(), load<T>(const void*, stride bytes), store<T>(void*, stride bytes) const, dot<C, A, B>() (C += A B,
/// uint8 x int8 quads into int32).
template <int Packets, class Unit>
inline void int8_gemm_rows(Unit& unit, const std::uint8_t* const* seg, int segments, std::int64_t stride,
                           std::int64_t rows, const std::int8_t* panel, std::int64_t quads_per_segment, int chunk,
                           std::int32_t* c, std::int64_t ldc) {
  static_assert(Packets >= 1 && Packets <= 3, "a column group is one to three tiles wide");
  constexpr std::int64_t width = Packets * int8_tile_columns;  // the panel's columns
  const std::int64_t b_stride = width * 4;
  for (std::int64_t r0 = 0; r0 < rows; r0 += tile_rows) {
    unit.template zero<0>();
    if constexpr (Packets > 1) unit.template zero<1>();
    if constexpr (Packets > 2) unit.template zero<2>();
    const std::int8_t* b = panel;
    for (int s = 0; s < segments; ++s) {
      for (std::int64_t q0 = 0; q0 < quads_per_segment; q0 += chunk, b += chunk * b_stride) {
        unit.template load<3>(seg[s] + r0 * stride + q0 * 4, stride);
        unit.template load<4>(b, b_stride);
        if constexpr (Packets > 1) unit.template load<5>(b + int8_tile_columns * 4, b_stride);
        if constexpr (Packets > 2) unit.template load<6>(b + 2 * int8_tile_columns * 4, b_stride);
        unit.template dot<0, 3, 4>();
        if constexpr (Packets > 1) unit.template dot<1, 3, 5>();
        if constexpr (Packets > 2) unit.template dot<2, 3, 6>();
      }
    }
    std::int32_t* out = c + r0 * ldc;
    unit.template store<0>(out, ldc * 4);
    if constexpr (Packets > 1) unit.template store<1>(out + int8_tile_columns, ldc * 4);
    if constexpr (Packets > 2) unit.template store<2>(out + 2 * int8_tile_columns, ldc * 4);
  }
}

#if defined(SWINFER_CPU_AMX_TILES) && defined(__AMX_INT8__)
#define SWINFER_CPU_AMX_INT8 1

/// The hardware's tile unit, configured for one chunk while it lives. The intrinsics name a tile by a literal (GCC
/// pastes it into the instruction), hence one call per tile the kernel uses.
class int8_tiles {
 public:
  explicit int8_tiles(int chunk) : scope_(int8_tile_shapes(chunk)) {}
  template <int T>
  void zero() {
    static_assert(T >= 0 && T <= 2, "C tiles are 0-2");
    if constexpr (T == 0) {
      _tile_zero(0);
    } else if constexpr (T == 1) {
      _tile_zero(1);
    } else {
      _tile_zero(2);
    }
  }
  template <int T>
  void load(const void* p, std::int64_t stride) {
    static_assert(T >= 3 && T <= 6, "A is tile 3, B tiles are 4-6");
    if constexpr (T == 3) {
      _tile_loadd(3, p, stride);
    } else if constexpr (T == 4) {
      _tile_loadd(4, p, stride);
    } else if constexpr (T == 5) {
      _tile_loadd(5, p, stride);
    } else {
      _tile_loadd(6, p, stride);
    }
  }
  template <int T>
  void store(void* p, std::int64_t stride) const {
    static_assert(T >= 0 && T <= 2, "C tiles are 0-2");
    if constexpr (T == 0) {
      _tile_stored(0, p, stride);
    } else if constexpr (T == 1) {
      _tile_stored(1, p, stride);
    } else {
      _tile_stored(2, p, stride);
    }
  }
  template <int C, int A, int B>
  void dot() {
    static_assert(A == 3 && B == C + 4 && C >= 0 && C <= 2, "the kernel multiplies A (3) by B tile C + 4 into C");
    if constexpr (C == 0) {
      _tile_dpbusd(0, 3, 4);
    } else if constexpr (C == 1) {
      _tile_dpbusd(1, 3, 5);
    } else {
      _tile_dpbusd(2, 3, 6);
    }
  }

 private:
  tile_scope scope_;
};
#endif

}  // namespace swinfer::cpu::amx

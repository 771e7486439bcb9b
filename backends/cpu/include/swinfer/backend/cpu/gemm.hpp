// swinfer cpu backend: the register-blocked float32 micro-kernel behind the backend's matrix products
// (convolutions, linears, attention; bf16 convolutions on AMX hardware use amx.hpp instead), and the packed
// right-hand-side panels it streams.
//
// C[rows x cols] = init + A * B. A is read in place: row r of "segment" s is a contiguous run of `run` floats at
// seg[s] + r * row_stride, and the segments are concatenated along the depth. That lets a convolution use its
// zero-padded input planes directly as A (one segment per (kz, ky) tap row, kw * Cin contiguous floats each),
// without an im2col copy. B is packed once into column groups of up to three SIMD packets.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "swinfer/backend/cpu/simd.hpp"

namespace swinfer::cpu {

/// Micro-tile rows for a group of `Packets` packets: accumulators + B packets + one broadcast fill the register
/// file (AVX-512: 8 x 3, 8 x 2, 16 x 1 tiles). Every value divides max_micro_rows.
template <int Packets>
inline constexpr int micro_rows = simd_registers >= 32 ? (Packets == 1 ? 16 : 8) : (Packets == 1 ? 8 : 4);
inline constexpr int max_micro_rows = micro_rows<1>;
inline constexpr int max_group_packets = 3;
/// Columns of a full group: 48 with AVX-512.
inline constexpr int group_width = max_group_packets * packet_size;

/// Rounds n up to a multiple of m.
inline constexpr std::int64_t round_up(std::int64_t n, std::int64_t m) { return (n + m - 1) / m * m; }

/// \brief Where each column group of a packed B (depth x cols) lives. Group g covers columns
/// [g * group_width, ...) as a row-major [depth][packets(g) * packet_size] panel, zero padded past `cols`.
struct panel_layout {
  std::int64_t depth = 0, cols = 0;

  int groups() const { return static_cast<int>((cols + group_width - 1) / group_width); }
  std::int64_t group_col0(int g) const { return std::int64_t{g} * group_width; }
  int group_cols(int g) const { return static_cast<int>(std::min<std::int64_t>(group_width, cols - group_col0(g))); }
  int packets(int g) const { return (group_cols(g) + packet_size - 1) / packet_size; }
  std::int64_t offset(int g) const { return std::int64_t{g} * depth * group_width; }
  std::int64_t size() const { return groups() * depth * group_width; }
  std::int64_t group_bytes() const { return depth * group_width * static_cast<std::int64_t>(sizeof(float)); }

  /// Packs element(k, n) -> float into dst (size() floats, packet aligned).
  template <class Element>
  void pack(Element&& element, float* dst) const {
    for (int g = 0; g < groups(); ++g) {
      const int width = packets(g) * packet_size, valid = group_cols(g);
      const std::int64_t col0 = group_col0(g);
      float* panel = dst + offset(g);
      for (std::int64_t k = 0; k < depth; ++k)
        for (int c = 0; c < width; ++c) panel[k * width + c] = c < valid ? element(k, col0 + c) : 0.0f;
    }
  }
};

/// \brief A weight matrix packed once at construction, owned.
class packed_matrix {
 public:
  packed_matrix() = default;
  template <class Element>
  packed_matrix(std::int64_t depth, std::int64_t cols, Element&& element)
      : layout_{depth, cols}, data_(static_cast<std::size_t>(layout_.size())) {
    layout_.pack(element, data_.data());
  }
  const panel_layout& layout() const { return layout_; }
  const float* panel(int g) const { return data_.data() + layout_.offset(g); }

 private:
  panel_layout layout_;
  std::vector<float, Eigen::aligned_allocator<float>> data_;
};

/// \brief The operand A of one product: segments of `run` floats per row, rows `row_stride` apart.
struct row_segments {
  const float* const* base = nullptr;
  int count = 1;
  std::int64_t run = 0;
  std::int64_t row_stride = 0;
};

/// Calls kernel(std::integral_constant<int, P>{}) for P = packets (1, 2, or max_group_packets for anything else):
/// the one switch from a column group's run-time width to the micro-kernels' compile-time one.
template <class Kernel>
inline void with_group_packets(int packets, Kernel&& kernel) {
  static_assert(max_group_packets == 3, "the switch below lists the widths a group can have");
  switch (packets) {
    case 1:
      kernel(std::integral_constant<int, 1>{});
      break;
    case 2:
      kernel(std::integral_constant<int, 2>{});
      break;
    default:
      kernel(std::integral_constant<int, 3>{});
      break;
  }
}

namespace internal {

/// Depth of B streamed per pass over a block's rows: an 18 KiB [depth x group] slice of B stays in L1 while every
/// row tile of the block reuses it (a whole 3x3x3 panel, 0.5 MiB at Cin 96, would come from L2 for every tile).
template <int Packets>
inline constexpr std::int64_t depth_block = 4608 / (Packets * packet_size);

/// One Rows x Packets tile over `depth` steps: c[r][..] = start[r][..] + sum_k a[r * stride + k] * b[k][..], where
/// start is init (rows init_ld apart; 0 repeats one row) or zero. Accumulators stay in registers; each step loads
/// Packets B packets and broadcasts one A value per row, so the loop is FMA-bound.
template <int Rows, int Packets>
inline void micro_tile(const float* a, std::int64_t stride, std::int64_t depth, const float* b, const float* init,
                       std::int64_t init_ld, float* c, std::int64_t ldc) {
  using namespace Eigen::internal;
  packet acc[Rows][Packets];
#pragma GCC unroll 16
  for (int r = 0; r < Rows; ++r)
#pragma GCC unroll 4
    for (int j = 0; j < Packets; ++j) {
      acc[r][j] = init ? ploadu<packet>(init + r * init_ld + j * packet_size) : pset1<packet>(0.0f);
    }
  for (std::int64_t k = 0; k < depth; ++k, ++a, b += Packets * packet_size) {
    packet bk[Packets];
#pragma GCC unroll 4
    for (int j = 0; j < Packets; ++j) {
      bk[j] = pload<packet>(b + j * packet_size);
      keep_in_register(bk[j]);
    }
#pragma GCC unroll 16
    for (int r = 0; r < Rows; ++r) {
      const packet av = pset1<packet>(a[r * stride]);
#pragma GCC unroll 4
      for (int j = 0; j < Packets; ++j) acc[r][j] = pmadd(av, bk[j], acc[r][j]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < Rows; ++r)
#pragma GCC unroll 4
    for (int j = 0; j < Packets; ++j) pstoreu(c + r * ldc + j * packet_size, acc[r][j]);
}

/// Walks the depth (segment by segment, depth_block at a time) in the outer loop and the row tiles in the inner
/// one; after the first pass the tiles restart from their partial sums in C.
template <int Packets>
inline void gemm_group_rows(const row_segments& a, std::int64_t rows, const float* panel, const float* init,
                            std::int64_t init_ld, float* c, std::int64_t ldc) {
  constexpr int tile = micro_rows<Packets>;
  bool first = true;
  for (int s = 0; s < a.count; ++s) {
    for (std::int64_t k0 = 0; k0 < a.run; k0 += depth_block<Packets>) {
      const std::int64_t depth = std::min(depth_block<Packets>, a.run - k0);
      for (std::int64_t r0 = 0; r0 < rows; r0 += tile) {
        const float* start = first ? (init ? init + r0 * init_ld : nullptr) : c + r0 * ldc;
        micro_tile<tile, Packets>(a.base[s] + r0 * a.row_stride + k0, a.row_stride, depth, panel, start,
                                  first ? init_ld : ldc, c + r0 * ldc, ldc);
      }
      panel += depth * Packets * packet_size;
      first = false;
    }
  }
}

}  // namespace internal

/// C = init + A * B for one column group of B (`packets` wide, panel from panel_layout) and rows [0, rows).
/// Rows are processed in micro tiles, so rows up to round_up(rows, max_micro_rows) of A are read and of C written:
/// callers allocate that slack (A slack must be initialised memory; its results are never used).
/// `init` holds the accumulators' start, packets wide: one row for every C row (init_ld = 0, a bias) or one per C
/// row (init_ld floats apart, e.g. attention's relative bias); null starts from zero. C rows are ldc floats apart.
inline void gemm_group(const row_segments& a, std::int64_t rows, const float* panel, int packets, const float* init,
                       std::int64_t init_ld, float* c, std::int64_t ldc) {
  with_group_packets(packets, [&](auto p) {
    internal::gemm_group_rows<decltype(p)::value>(a, rows, panel, init, init_ld, c, ldc);
  });
}

}  // namespace swinfer::cpu

// swinfer cpu backend: Intel AMX (tile matrix multiply) for bf16 convolutions and linears. AMX multiplies bf16 pairs
// exactly and accumulates in float32 at ~15x the AVX-512 float32 FMA peak. bf16 activations are used as stored; each
// float32 weight is split into bf16 hi + lo parts (16 significant bits, relative error ~2^-17) and both are multiplied,
// so the path adds no rounding beyond the activations' own storage, like the float32 path, at half the tile rate
// (measured: ~3x the float32 conv). With rounded bf16 weights (bf16_weight_mode::rounded) only hi is kept: one product
// per multiply, as PyTorch autocast and OpenVINO run them. Compiled in only when the target has AMX-TILE and AMX-BF16
// (e.g. -march=native on Sapphire Rapids); used only when Linux grants the tile state. Define SWINFER_CPU_DISABLE_AMX
// to keep bf16 on the float32 path.
#pragma once

#include "swinfer/backend/cpu/amx_tiles.hpp"

#if defined(SWINFER_CPU_AMX_TILES) && defined(__AMX_BF16__)
#define SWINFER_CPU_AMX 1

#include <Eigen/Core>
#include <algorithm>
#include <cstdint>
#include <vector>

#include "swinfer/backend/cpu/gemm.hpp"

namespace swinfer::cpu::amx {

/// bf16 values per A tile row and per B tile (16 rows of 16 channel pairs).
inline constexpr int tile_depth = 32;
inline constexpr int tile_channels = 16;
inline constexpr int b_tile_elements = tile_depth * tile_channels;

/// \brief B (depth x cols) in AMX layout, per 48-column group: [segment][32-deep chunk][hi, lo][16-column tile]
/// [16 pairs][16 columns][2] bf16, hi + lo = the float32 weight to 16 significant bits; hi alone (the weight rounded
/// to bf16) when not `exact`. Each segment's run is zero padded to whole chunks, so a chunk may read A past the run
/// (into the next voxel or slack): zero weights cancel those finite values.
class packed_bf16 {
 public:
  packed_bf16() = default;
  template <class Element>
  packed_bf16(int segments, std::int64_t run, std::int64_t cols, bool exact, Element&& element)
      : cols_(cols), chunks_((run + tile_depth - 1) / tile_depth), parts_(exact ? 2 : 1) {
    const int group_cols = 3 * tile_channels;
    groups_ = static_cast<int>((cols + group_cols - 1) / group_cols);
    group_size_ = std::int64_t{segments} * chunks_ * parts_ * 3 * b_tile_elements;
    data_.assign(static_cast<std::size_t>(groups_ * group_size_), Eigen::bfloat16(0.0f));
    for (int g = 0; g < groups_; ++g) {
      const int tiles = tiles_in_group(g);
      Eigen::bfloat16* panel = data_.data() + g * group_size_;
      for (int s = 0; s < segments; ++s)
        for (std::int64_t chunk = 0; chunk < chunks_; ++chunk, panel += parts_ * tiles * b_tile_elements)
          for (int j = 0; j < tiles; ++j)
            for (int k = 0; k < tile_depth; ++k) {
              const std::int64_t depth = chunk * tile_depth + k;
              if (depth >= run) continue;
              for (int n = 0; n < tile_channels; ++n) {
                const std::int64_t col = std::int64_t{g} * group_cols + j * tile_channels + n;
                if (col >= cols) continue;
                const float w = element(s * run + depth, col);
                const Eigen::bfloat16 hi(w);
                const std::int64_t at = j * b_tile_elements + (k / 2) * 2 * tile_channels + 2 * n + k % 2;
                panel[at] = hi;
                if (exact) panel[tiles * b_tile_elements + at] = Eigen::bfloat16(w - static_cast<float>(hi));
              }
            }
    }
  }
  int groups() const { return groups_; }
  int tiles_in_group(int g) const {
    const std::int64_t left = cols_ - std::int64_t{g} * 3 * tile_channels;
    return static_cast<int>(std::min<std::int64_t>(3, (left + tile_channels - 1) / tile_channels));
  }
  std::int64_t chunks() const { return chunks_; }
  /// Whether each weight is hi + lo (else hi alone, rounded to bf16).
  bool exact() const { return parts_ == 2; }
  /// Bytes of one group's panel.
  std::int64_t group_bytes() const { return group_size_ * static_cast<std::int64_t>(sizeof(Eigen::bfloat16)); }
  const Eigen::bfloat16* panel(int g) const { return data_.data() + g * group_size_; }

 private:
  std::int64_t cols_ = 0, chunks_ = 0;
  int parts_ = 2;
  int groups_ = 0;
  std::int64_t group_size_ = 0;
  std::vector<Eigen::bfloat16, Eigen::aligned_allocator<Eigen::bfloat16>> data_;
};

/// C[rows][0 .. 16*Tiles) (row stride ldc floats) = start + A * B for one column group, rows in blocks of 16
/// (callers provide the slack rows). A row r of segment s is the bf16 run at seg[s] + r * stride; start is one
/// [16][ldc] block of repeated bias rows, or zero; B is packed hi + lo (Exact) or hi alone. Must run inside a
/// tile_scope of full_tiles(): tiles 0-2 are C (16 voxels x 16 channels, float32), 3 is A (16 voxels x 32 bf16 of
/// depth), 4-7 are B (16 depth pairs x 16 channels).
template <int Tiles, bool Exact>
inline void gemm_group_rows(const Eigen::bfloat16* const* seg, int segments, std::int64_t chunks, std::int64_t stride,
                            std::int64_t rows, const Eigen::bfloat16* panel, const float* bias_block, float* c,
                            std::int64_t ldc) {
  const std::int64_t a_stride_bytes = stride * 2, c_stride_bytes = ldc * 4;
  for (std::int64_t r0 = 0; r0 < rows; r0 += tile_rows) {
    if (bias_block) {
      _tile_loadd(0, bias_block, c_stride_bytes);
      if constexpr (Tiles > 1) _tile_loadd(1, bias_block + 16, c_stride_bytes);
      if constexpr (Tiles > 2) _tile_loadd(2, bias_block + 32, c_stride_bytes);
    } else {
      _tile_zero(0);
      if constexpr (Tiles > 1) _tile_zero(1);
      if constexpr (Tiles > 2) _tile_zero(2);
    }
    const Eigen::bfloat16* b = panel;
    for (int s = 0; s < segments; ++s) {
      const Eigen::bfloat16* a = seg[s] + r0 * stride;
      constexpr int parts = Exact ? 2 : 1;
      for (std::int64_t chunk = 0; chunk < chunks; ++chunk, a += tile_depth, b += parts * Tiles * b_tile_elements) {
        // hi tiles in 4-6, lo tiles through 7, 4, 5: each reload waits on a product issued two or more earlier.
        _tile_loadd(3, a, a_stride_bytes);
        _tile_loadd(4, b, 64);
        if constexpr (Tiles > 1) _tile_loadd(5, b + b_tile_elements, 64);
        if constexpr (Tiles > 2) _tile_loadd(6, b + 2 * b_tile_elements, 64);
        if constexpr (Exact) _tile_loadd(7, b + Tiles * b_tile_elements, 64);
        _tile_dpbf16ps(0, 3, 4);
        if constexpr (Tiles > 1) _tile_dpbf16ps(1, 3, 5);
        if constexpr (Tiles > 2) _tile_dpbf16ps(2, 3, 6);
        if constexpr (Exact) {
          const Eigen::bfloat16* lo = b + Tiles * b_tile_elements;
          _tile_dpbf16ps(0, 3, 7);
          if constexpr (Tiles > 1) {
            _tile_loadd(4, lo + b_tile_elements, 64);
            _tile_dpbf16ps(1, 3, 4);
          }
          if constexpr (Tiles > 2) {
            _tile_loadd(5, lo + 2 * b_tile_elements, 64);
            _tile_dpbf16ps(2, 3, 5);
          }
        }
      }
    }
    float* out = c + r0 * ldc;
    _tile_stored(0, out, c_stride_bytes);
    if constexpr (Tiles > 1) _tile_stored(1, out + 16, c_stride_bytes);
    if constexpr (Tiles > 2) _tile_stored(2, out + 32, c_stride_bytes);
  }
}

/// The bias as gemm_group's start blocks: per 48-column group a [16][48] block of its columns' bias repeated on
/// every row (`bias` zero padded to whole groups; empty: no bias, no blocks).
inline std::vector<float> repeated_bias_rows(const std::vector<float>& bias) {
  std::vector<float> blocks;
  const auto groups = static_cast<std::int64_t>(bias.size()) / (3 * tile_channels);
  blocks.reserve(static_cast<std::size_t>(groups * tile_rows * 3 * tile_channels));
  for (std::int64_t g = 0; g < groups; ++g)
    for (int r = 0; r < tile_rows; ++r) {
      blocks.insert(blocks.end(), bias.begin() + g * 3 * tile_channels, bias.begin() + (g + 1) * 3 * tile_channels);
    }
  return blocks;
}

/// gemm_group_rows for group g of b.
inline void gemm_group(const Eigen::bfloat16* const* seg, int segments, std::int64_t stride, std::int64_t rows,
                       const packed_bf16& b, int g, const float* bias_block, float* c, std::int64_t ldc) {
  with_group_packets(b.tiles_in_group(g), [&](auto t) {
    constexpr int tiles = decltype(t)::value;
    if (b.exact()) {
      gemm_group_rows<tiles, true>(seg, segments, b.chunks(), stride, rows, b.panel(g), bias_block, c, ldc);
    } else {
      gemm_group_rows<tiles, false>(seg, segments, b.chunks(), stride, rows, b.panel(g), bias_block, c, ldc);
    }
  });
}

}  // namespace swinfer::cpu::amx

#endif

// swinfer cpu backend: int8 matrix products for precision::int8 (docs/int8.md): uint8 activations (int8 + zero
// point 128) times int8 weights, summed exactly in int32. On CPUs with AVX-512 VNNI one vpdpbusd multiplies 16
// lanes of four u8 x s8 pairs and adds them to int32 accumulators: four times the multiply-adds of a float32 FMA.
// Elsewhere a portable kernel computes the same integers (the compiler vectorises it for the target). Both give
// bit-identical int32 sums; the epilogue subtracts the zero point's contribution (128 x the column's weight sum)
// and scales to float.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#if defined(__AVX512VNNI__) && defined(__AVX512BW__) && !defined(SWINFER_CPU_DISABLE_AVX512_VNNI)
#define SWINFER_CPU_AVX512_VNNI 1
#include <immintrin.h>
#endif

#include "swinfer/backend/cpu/cpu_features.hpp"
#include "swinfer/backend/cpu/gemm.hpp"
#include "swinfer/ops/quantization.hpp"

namespace swinfer::cpu::int8_dot {

/// uint8 activations (and int8 weights) per depth step: one quad per int32 lane.
inline constexpr int quad = 4;
/// Columns per packet of a packed group, as the float32 kernels have them: the float packet's lanes (16 with AVX-512,
/// 8 with AVX2, 4 with SSE or NEON), so the int32 tiles line up with the float32 panels' groups.
inline constexpr int lanes = packet_size;
#ifdef SWINFER_CPU_AVX512_VNNI
static_assert(lanes == 16, "vpdpbusd fills 16 int32 lanes: the float packets must be AVX-512's");
#endif

/// Whether this build and this CPU run vpdpbusd; otherwise the portable kernel runs.
inline bool vnni_available() {
#ifdef SWINFER_CPU_AVX512_VNNI
  return host_cpu().avx512_vnni;
#else
  return false;
#endif
}

/// The path name reports print: "avx512 vnni int8" or "portable int8".
inline const char* path_name() { return vnni_available() ? "avx512 vnni int8" : "portable int8"; }

/// \brief B (segments x run, cols) as int8 quads, per 48-column group: [segment][run / 4 quads][groups' columns
/// in 16-lane packets][4], each run zero padded to whole quads (a quad may then read A up to three values past the
/// run: the zero weights cancel them). Also each column's zero-point compensation, 128 x its weight sum.
class packed_quads {
 public:
  packed_quads() = default;
  /// element(k, col) is the int8 weight at depth k = segment * run + position.
  template <class Element>
  packed_quads(int segments, std::int64_t run, std::int64_t cols, Element&& element)
      : layout_{std::int64_t{segments} * ((run + quad - 1) / quad), cols}, quads_per_segment_((run + quad - 1) / quad) {
    data_.assign(static_cast<std::size_t>(layout_.size() * quad), 0);
    compensation_.assign(static_cast<std::size_t>(round_up(cols, group_width)), 0);
    for (int g = 0; g < layout_.groups(); ++g) {
      const int width = layout_.packets(g) * lanes, valid = layout_.group_cols(g);
      std::int8_t* panel = data_.data() + layout_.offset(g) * quad;
      for (int s = 0; s < segments; ++s)
        for (std::int64_t q = 0; q < quads_per_segment_; ++q)
          for (int c = 0; c < valid; ++c)
            for (int i = 0; i < quad; ++i) {
              const std::int64_t k = q * quad + i;
              if (k >= run) continue;
              const std::int8_t w = element(s * run + k, layout_.group_col0(g) + c);
              panel[((s * quads_per_segment_ + q) * width + c) * quad + i] = w;
              compensation_[static_cast<std::size_t>(layout_.group_col0(g) + c)] +=
                  ops::activation_zero_point * std::int32_t{w};
            }
    }
  }
  /// Groups and their widths as the float32 panels have them (depth counted in quads).
  const panel_layout& layout() const { return layout_; }
  std::int64_t quads_per_segment() const { return quads_per_segment_; }
  const std::int8_t* panel(int g) const { return data_.data() + layout_.offset(g) * quad; }
  /// 128 x the column's weight sum, zero padded to whole groups.
  const std::int32_t* compensation() const { return compensation_.data(); }

 private:
  panel_layout layout_;
  std::int64_t quads_per_segment_ = 0;
  std::vector<std::int8_t, Eigen::aligned_allocator<std::int8_t>> data_;
  std::vector<std::int32_t> compensation_;
};

namespace internal {

/// Quads of B streamed per pass over a block's rows: the same 18 KiB L1 slice as the float32 kernel.
template <int Packets>
inline constexpr std::int64_t depth_block = 4608 / (Packets * lanes);

/// Rows of a portable tile: small enough for the accumulators to stay in registers on AVX2.
inline constexpr int portable_rows = 4;

#ifdef SWINFER_CPU_AVX512_VNNI
/// One Rows x Packets tile over `quads` steps: c[r][..] = start[r][..] + sum_q a[r * stride + 4q .. +3] . b[q][..]
/// in int32, start being c itself (accumulate) or zero. Per step: Packets loads of B, one broadcast of an A quad
/// per row, Rows x Packets vpdpbusd into register accumulators.
template <int Rows, int Packets>
inline void micro_tile(const std::uint8_t* a, std::int64_t stride, std::int64_t quads, const std::int8_t* b,
                       bool accumulate, std::int32_t* c, std::int64_t ldc) {
  __m512i acc[Rows][Packets];
#pragma GCC unroll 16
  for (int r = 0; r < Rows; ++r)
#pragma GCC unroll 4
    for (int j = 0; j < Packets; ++j)
      acc[r][j] = accumulate ? _mm512_loadu_si512(c + r * ldc + j * lanes) : _mm512_setzero_si512();
  for (std::int64_t q = 0; q < quads; ++q, a += quad, b += Packets * lanes * quad) {
    __m512i bk[Packets];
#pragma GCC unroll 4
    for (int j = 0; j < Packets; ++j) bk[j] = _mm512_load_si512(b + j * lanes * quad);
#pragma GCC unroll 16
    for (int r = 0; r < Rows; ++r) {
      std::int32_t four;
      std::memcpy(&four, a + r * stride, sizeof four);
      const __m512i av = _mm512_set1_epi32(four);
#pragma GCC unroll 4
      for (int j = 0; j < Packets; ++j) acc[r][j] = _mm512_dpbusd_epi32(acc[r][j], av, bk[j]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < Rows; ++r)
#pragma GCC unroll 4
    for (int j = 0; j < Packets; ++j) _mm512_storeu_si512(c + r * ldc + j * lanes, acc[r][j]);
}
#endif

/// The portable tile: the same integers as micro_tile, in plain C++ the compiler vectorises over the columns.
template <int Rows, int Packets>
inline void portable_tile(const std::uint8_t* a, std::int64_t stride, std::int64_t quads, const std::int8_t* b,
                          bool accumulate, std::int32_t* c, std::int64_t ldc) {
  constexpr int width = Packets * lanes;
  for (int r = 0; r < Rows; ++r) {
    std::int32_t acc[width];
    for (int j = 0; j < width; ++j) acc[j] = accumulate ? c[r * ldc + j] : 0;
    const std::uint8_t* ar = a + r * stride;
    const std::int8_t* bq = b;
    for (std::int64_t q = 0; q < quads; ++q, ar += quad, bq += width * quad) {
      const std::int32_t a0 = ar[0], a1 = ar[1], a2 = ar[2], a3 = ar[3];
      for (int j = 0; j < width; ++j) {
        acc[j] += a0 * bq[j * quad] + a1 * bq[j * quad + 1] + a2 * bq[j * quad + 2] + a3 * bq[j * quad + 3];
      }
    }
    for (int j = 0; j < width; ++j) c[r * ldc + j] = acc[j];
  }
}

template <int Packets>
inline void gemm_group_rows(const std::uint8_t* const* seg, int segments, std::int64_t quads_per_segment,
                            std::int64_t stride, std::int64_t rows, const std::int8_t* panel, std::int32_t* c,
                            std::int64_t ldc, bool vnni) {
  bool first = true;
  for (int s = 0; s < segments; ++s) {
    for (std::int64_t q0 = 0; q0 < quads_per_segment; q0 += depth_block<Packets>) {
      const std::int64_t quads = std::min(depth_block<Packets>, quads_per_segment - q0);
#ifdef SWINFER_CPU_AVX512_VNNI
      if (vnni) {
        constexpr int tile = micro_rows<Packets>;
        for (std::int64_t r0 = 0; r0 < rows; r0 += tile)
          micro_tile<tile, Packets>(seg[s] + r0 * stride + q0 * quad, stride, quads, panel, !first, c + r0 * ldc, ldc);
      }
#endif
      if (!vnni) {
        for (std::int64_t r0 = 0; r0 < rows; r0 += portable_rows)
          portable_tile<portable_rows, Packets>(seg[s] + r0 * stride + q0 * quad, stride, quads, panel, !first,
                                                c + r0 * ldc, ldc);
      }
      panel += quads * Packets * lanes * quad;
      first = false;
    }
  }
}

/// gemm_group on the named path (vnni only where vnni_available()); tests compare the two.
inline void gemm_group_rows_any(const std::uint8_t* const* seg, int segments, std::int64_t quads_per_segment,
                                std::int64_t stride, std::int64_t rows, const std::int8_t* panel, int packets,
                                std::int32_t* c, std::int64_t ldc, bool vnni) {
  with_group_packets(packets, [&](auto p) {
    gemm_group_rows<decltype(p)::value>(seg, segments, quads_per_segment, stride, rows, panel, c, ldc, vnni);
  });
}

}  // namespace internal

/// C = A * B in int32 for one column group (`packets` wide): rows of segment s are uint8 runs at
/// seg[s] + r * stride. Rows go in micro tiles, so callers provide the slack rows of A and C (as for gemm_group).
inline void gemm_group(const std::uint8_t* const* seg, int segments, std::int64_t quads_per_segment,
                       std::int64_t stride, std::int64_t rows, const std::int8_t* panel, int packets, std::int32_t* c,
                       std::int64_t ldc) {
  internal::gemm_group_rows_any(seg, segments, quads_per_segment, stride, rows, panel, packets, c, ldc,
                                vnni_available());
}

/// The epilogue, in place over a [rows][ldc] tile: float(acc - compensation[c]) * scale[c] + bias[c] for the
/// group's `cols` columns (bias null: none). The tile's memory holds the int32 sums before and the floats after.
inline void dequantize_tile(void* tile, std::int64_t rows, int cols, std::int64_t ldc, const std::int32_t* compensation,
                            const float* scale, const float* bias) {
  for (std::int64_t r = 0; r < rows; ++r) {
    auto* row = static_cast<unsigned char*>(tile) + r * ldc * 4;
    for (int c = 0; c < cols; ++c) {
      std::int32_t acc;
      std::memcpy(&acc, row + c * 4, 4);
      const float v = static_cast<float>(acc - compensation[c]) * scale[c] + (bias ? bias[c] : 0.0f);
      std::memcpy(row + c * 4, &v, 4);
    }
  }
}

/// Quantizes n values to uint8 (int8 + 128) with 1 / scale = `inverse_scale`.
template <class S>
inline void quantize_run(const S* src, std::uint8_t* dst, std::int64_t n, float inverse_scale) {
  for (std::int64_t i = 0; i < n; ++i) {
    dst[i] = static_cast<std::uint8_t>(ops::quantize_activation(static_cast<float>(src[i]), inverse_scale) +
                                       ops::activation_zero_point);
  }
}

}  // namespace swinfer::cpu::int8_dot

// swinfer cpu backend: bf16 convolutions and linears on the AVX-512 BF16 pair dot product (vdpbf16ps), for CPUs that have it
// but no AMX (AMD Zen 4 and later; Intel Cooper Lake). One instruction multiplies 16 lanes of bf16 pairs exactly and
// adds both products to float32 accumulators: twice the multiply-adds of a float32 FMA. The activations are used
// as stored (bf16); the weights are rounded to bf16 once when packed, the one rounding this path adds beyond the
// activations' storage (AMX and the float32 path keep 16 or 24 weight bits), so the kernels use it only when the
// engine was asked for rounded bf16 weights (bf16_weight_mode::rounded). Compiled in when the target has
// AVX512_BF16 (e.g. -march=native on such a CPU) and used when the CPU reports it; define
// SWINFER_CPU_DISABLE_AVX512_BF16 to keep bf16 convolutions on the float32 path.
#pragma once

#if defined(__AVX512BF16__) && !defined(SWINFER_CPU_DISABLE_AVX512_BF16)
#define SWINFER_CPU_AVX512_BF16 1

#include <immintrin.h>

#include <Eigen/Core>
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "swinfer/backend/cpu/cpu_features.hpp"
#include "swinfer/backend/cpu/gemm.hpp"

namespace swinfer::cpu::bf16_dot {

static_assert(packet_size == 16, "the pair layout assumes 16 float lanes (AVX-512)");

/// Whether this CPU executes vdpbf16ps.
inline bool available() { return host_cpu().avx512_bf16; }

/// Whether the pair dot product beats float32 FMAs here: on CPUs without AMX (AMD Zen 4: 467 against 232 GFLOP/s
/// on 2 threads, bench_peak). Intel's cores with AMX issue it at half their FMA rate (a 2-core Xeon: 239 against
/// 438), so there rounded weights go to the AMX convolutions and the rest stays on float32 FMAs.
inline bool pays() { return available() && !host_cpu().amx_bf16; }

/// bf16 values per depth step: one pair per lane.
inline constexpr int pair = 2;

/// \brief Packs B (segments x run, cols) for the pair dot product into `layout` (depth: segments x the run's pairs):
/// per 48-column group [segment][run / 2 pairs][packets(g) x 16 columns][2] bf16, each run zero padded to whole pairs
/// (a pair may then read A one value past the run: the zero weight cancels that finite value), and every column past
/// `cols` zero. element(k, n) gives B's value at depth k of the concatenated runs, rounded to bf16 to nearest even.
template <class Element>
void pack_pairs(const panel_layout& layout, int segments, std::int64_t run, Element&& element, Eigen::bfloat16* dst) {
  const std::int64_t pairs_per_segment = (run + 1) / pair;
  for (int g = 0; g < layout.groups(); ++g) {
    const int width = layout.packets(g) * packet_size, valid = layout.group_cols(g);
    Eigen::bfloat16* panel = dst + layout.offset(g) * pair;
    for (int s = 0; s < segments; ++s)
      for (std::int64_t p = 0; p < pairs_per_segment; ++p, panel += width * pair)
        for (int c = 0; c < width; ++c)
          for (int half = 0; half < pair; ++half) {
            const std::int64_t k = p * pair + half;
            const bool inside = c < valid && k < run;
            panel[c * pair + half] =
                inside ? Eigen::bfloat16(element(s * run + k, layout.group_col0(g) + c)) : Eigen::bfloat16(0.0f);
          }
  }
}

/// The panel layout of a (segments x run, cols) B packed in pairs (depth counted in pairs).
inline panel_layout pair_layout(int segments, std::int64_t run, std::int64_t cols) {
  return {std::int64_t{segments} * ((run + 1) / pair), cols};
}

/// pack_pairs for a bf16 B stored with its depth contiguous, B(k, n) = src[rows[n] * ld + k] (the attention's K^T,
/// k being its rows, rows[n] the row that holds key n): each pair is one 32-bit word of the source, so the panels
/// are a word transpose.
inline void pack_pairs_of_columns(const panel_layout& layout, const Eigen::bfloat16* src, std::int64_t ld,
                                  const int* rows, std::int64_t depth, Eigen::bfloat16* dst) {
  static_assert(sizeof(Eigen::bfloat16) * pair == sizeof(std::uint32_t));
  const std::int64_t full = depth / pair, pairs = (depth + 1) / pair;
  for (int g = 0; g < layout.groups(); ++g) {
    const int width = layout.packets(g) * packet_size, valid = layout.group_cols(g);
    auto* panel = reinterpret_cast<std::uint32_t*>(dst + layout.offset(g) * pair);
    for (int c = 0; c < valid; ++c) {
      const Eigen::bfloat16* column = src + rows[layout.group_col0(g) + c] * ld;
      for (std::int64_t p = 0; p < full; ++p) {
        std::memcpy(panel + p * width + c, column + p * pair, sizeof(std::uint32_t));
      }
      if (full < pairs) {  // an odd depth: the last value with a zero partner
        const Eigen::bfloat16 last[pair] = {column[depth - 1], Eigen::bfloat16(0.0f)};
        std::memcpy(panel + full * width + c, last, sizeof(std::uint32_t));
      }
    }
    for (std::int64_t p = 0; p < pairs; ++p) std::fill(panel + p * width + valid, panel + (p + 1) * width, 0u);
  }
}

/// pack_pairs for a bf16 B stored row by row, B(k, n) = src[rows[k] * ld + n] (the attention's V, rows[k] the row
/// that holds key k): pair p interleaves depths 2p and 2p + 1, a zero row standing in past an odd depth.
inline void pack_pairs_of_rows(const panel_layout& layout, const Eigen::bfloat16* src, std::int64_t ld,
                               const int* rows, std::int64_t depth, Eigen::bfloat16* dst) {
  const std::int64_t pairs = (depth + 1) / pair;
  for (int g = 0; g < layout.groups(); ++g) {
    const int width = layout.packets(g) * packet_size, valid = layout.group_cols(g);
    Eigen::bfloat16* panel = dst + layout.offset(g) * pair;
    for (std::int64_t p = 0; p < pairs; ++p, panel += width * pair) {
      const Eigen::bfloat16* columns = src + layout.group_col0(g);
      const Eigen::bfloat16* even = columns + rows[p * pair] * ld;
      const Eigen::bfloat16* odd = p * pair + 1 < depth ? columns + rows[p * pair + 1] * ld : nullptr;
      for (int c = 0; c < valid; ++c) {
        panel[c * pair] = even[c];
        panel[c * pair + 1] = odd ? odd[c] : Eigen::bfloat16(0.0f);
      }
      std::fill(panel + valid * pair, panel + width * pair, Eigen::bfloat16(0.0f));
    }
  }
}

/// \brief B packed once for the pair dot product (pack_pairs), owned.
class packed_pairs {
 public:
  packed_pairs() = default;
  template <class Element>
  packed_pairs(int segments, std::int64_t run, std::int64_t cols, Element&& element)
      : layout_(pair_layout(segments, run, cols)), pairs_per_segment_((run + 1) / pair) {
    data_.resize(static_cast<std::size_t>(layout_.size() * pair));
    pack_pairs(layout_, segments, run, element, data_.data());
  }
  /// Groups and their widths as the float32 panels have them (depth counted in pairs).
  const panel_layout& layout() const { return layout_; }
  std::int64_t pairs_per_segment() const { return pairs_per_segment_; }
  const Eigen::bfloat16* panel(int g) const { return data_.data() + layout_.offset(g) * pair; }
  std::int64_t group_bytes() const { return layout_.group_bytes(); }  // 4 bytes per pair, as per float

 private:
  panel_layout layout_;
  std::int64_t pairs_per_segment_ = 0;
  std::vector<Eigen::bfloat16, Eigen::aligned_allocator<Eigen::bfloat16>> data_;
};

/// dst[i] = bf16(src[i]) for i < n, to nearest even, 32 values per vcvtne2ps2bf16 (which flushes subnormals to
/// zero: values below 1.2e-38, nothing next to the operands this rounds, the attention's q, k, P and v).
inline void round_to_bf16(const float* src, Eigen::bfloat16* dst, std::int64_t n) {
  std::int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512bh both = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(src + i + 16), _mm512_loadu_ps(src + i));
    _mm512_storeu_si512(dst + i, (__m512i)both);
  }
  for (; i < n; ++i) dst[i] = Eigen::bfloat16(src[i]);
}

namespace internal {

/// Pairs of B streamed per pass over a block's rows: the same 18 KiB L1 slice as the float32 kernel.
template <int Packets>
inline constexpr std::int64_t depth_block = 4608 / (Packets * packet_size);

/// One Rows x Packets tile over `pairs` steps: c[r][..] = start[r][..] + sum_p a[r * stride + 2p .. +1] . b[p][..],
/// start being init (init_ld apart, 0 repeats a row) or zero. Per step: Packets loads of B, one broadcast of an A
/// pair per row, Rows x Packets vdpbf16ps into register accumulators.
template <int Rows, int Packets>
inline void micro_tile(const Eigen::bfloat16* a, std::int64_t stride, std::int64_t pairs, const Eigen::bfloat16* b,
                       const float* init, std::int64_t init_ld, float* c, std::int64_t ldc) {
  __m512 acc[Rows][Packets];
#pragma GCC unroll 16
  for (int r = 0; r < Rows; ++r)
#pragma GCC unroll 4
    for (int j = 0; j < Packets; ++j)
      acc[r][j] = init ? _mm512_loadu_ps(init + r * init_ld + j * 16) : _mm512_setzero_ps();
  for (std::int64_t p = 0; p < pairs; ++p, a += pair, b += Packets * 16 * pair) {
    __m512bh bk[Packets];
#pragma GCC unroll 4
    for (int j = 0; j < Packets; ++j) bk[j] = (__m512bh)_mm512_load_si512(b + j * 16 * pair);
#pragma GCC unroll 16
    for (int r = 0; r < Rows; ++r) {
      std::int32_t both;
      std::memcpy(&both, a + r * stride, sizeof both);
      const __m512bh av = (__m512bh)_mm512_set1_epi32(both);
#pragma GCC unroll 4
      for (int j = 0; j < Packets; ++j) acc[r][j] = _mm512_dpbf16_ps(acc[r][j], av, bk[j]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < Rows; ++r)
#pragma GCC unroll 4
    for (int j = 0; j < Packets; ++j) _mm512_storeu_ps(c + r * ldc + j * 16, acc[r][j]);
}

template <int Packets>
inline void gemm_group_rows(const Eigen::bfloat16* const* seg, int segments, std::int64_t pairs_per_segment,
                            std::int64_t stride, std::int64_t rows, const Eigen::bfloat16* panel, const float* init,
                            float* c, std::int64_t ldc) {
  constexpr int tile = micro_rows<Packets>;
  bool first = true;
  for (int s = 0; s < segments; ++s) {
    for (std::int64_t p0 = 0; p0 < pairs_per_segment; p0 += depth_block<Packets>) {
      const std::int64_t pairs = std::min(depth_block<Packets>, pairs_per_segment - p0);
      for (std::int64_t r0 = 0; r0 < rows; r0 += tile) {
        const float* start = first ? init : c + r0 * ldc;
        micro_tile<tile, Packets>(seg[s] + r0 * stride + p0 * pair, stride, pairs, panel, start, first ? 0 : ldc,
                                  c + r0 * ldc, ldc);
      }
      panel += pairs * Packets * 16 * pair;
      first = false;
    }
  }
}

}  // namespace internal

/// C = bias + A * B for one column group (`packets` wide): rows of segment s are bf16 runs at seg[s] + r * stride.
/// Rows go in micro tiles, so callers provide the slack rows of A and C (as for gemm_group); `bias` is one row of
/// the group's columns or null.
inline void gemm_group(const Eigen::bfloat16* const* seg, int segments, std::int64_t pairs_per_segment,
                       std::int64_t stride, std::int64_t rows, const Eigen::bfloat16* panel, int packets,
                       const float* bias, float* c, std::int64_t ldc) {
  with_group_packets(packets, [&](auto p) {
    internal::gemm_group_rows<decltype(p)::value>(seg, segments, pairs_per_segment, stride, rows, panel, bias, c, ldc);
  });
}

}  // namespace swinfer::cpu::bf16_dot

#endif

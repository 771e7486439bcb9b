// swinfer cpu backend: int8 matrix products for precision::int8 (docs/int8.md): uint8 activations (int8 + zero
// point 128) times int8 weights, summed exactly in int32, on one of four paths that give bit-identical sums:
// - amx: on CPUs with AMX-INT8 (Intel Sapphire Rapids and later) tile products, 16 x 16 sums at a time
//   (amx_int8.hpp), where a segment's depth splits into products of at least 8 quads;
// - vnni: on CPUs with AVX-512 VNNI one vpdpbusd multiplies 16 lanes of four u8 x s8 pairs and adds them to int32
//   accumulators, four times the multiply-adds of a float32 FMA;
// - madd (AVX2, or AVX-512BW without VNNI): a byte shuffle widens a quad of activations to two int16 pairs, and
//   vpmaddwd multiplies them with the weights widened to int16 once at packing, adding each pair into an int32
//   lane (exact: two products of at most 255 x 127). vpmaddubsw would multiply twice the pairs per instruction, but
//   its int16 pair sums saturate (255 x 127 x 2 > 32767), so the exact form costs two of them;
// - portable: plain C++ the compiler vectorises, on every other CPU.
// The epilogue subtracts the zero point's contribution (128 x the column's weight sum) and scales to float.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <type_traits>
#include <vector>

#if defined(__AVX512VNNI__) && defined(__AVX512BW__) && !defined(SWINFER_CPU_DISABLE_AVX512_VNNI)
#define SWINFER_CPU_AVX512_VNNI 1
#endif
#if (defined(__AVX512BW__) || (defined(__AVX2__) && !defined(__AVX512F__))) && !defined(SWINFER_CPU_DISABLE_INT8_MADD)
#define SWINFER_CPU_INT8_MADD 1
#endif
#if defined(SWINFER_CPU_AVX512_VNNI) || defined(SWINFER_CPU_INT8_MADD) || defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "swinfer/backend/cpu/amx_int8.hpp"
#include "swinfer/backend/cpu/cpu_features.hpp"
#include "swinfer/backend/cpu/gemm.hpp"
#include "swinfer/core/error.hpp"
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
#ifdef SWINFER_CPU_AMX_INT8
static_assert(lanes == amx::int8_tile_columns, "the AMX kernel reads the packed groups as 16-column tiles: build AMX "
                                               "with AVX-512 (-march=sapphirerapids)");
#endif

/// The kernels that compute the int32 sums (bit-identical to each other); automatic: the fastest for the shape.
enum class int8_path { portable, madd, vnni, amx, automatic };

/// Whether this build and this CPU run vpdpbusd.
inline bool vnni_available() {
#ifdef SWINFER_CPU_AVX512_VNNI
  return host_cpu().avx512_vnni;
#else
  return false;
#endif
}

/// Whether this build and this CPU run AMX-INT8 tiles (and Linux grants their state).
inline bool amx_available() {
#ifdef SWINFER_CPU_AMX_INT8
  return host_cpu().amx_int8 && amx::available();
#else
  return false;
#endif
}

/// Whether this build has the madd kernel (its instructions are the build's own: AVX2 or AVX-512BW).
inline constexpr bool madd_compiled() {
#ifdef SWINFER_CPU_INT8_MADD
  return true;
#else
  return false;
#endif
}

/// The fastest vector path this build runs on this CPU: vnni, else madd, else portable.
inline int8_path best_path() {
  if (vnni_available()) return int8_path::vnni;
  return madd_compiled() ? int8_path::madd : int8_path::portable;
}

/// The fastest path for segments of `quads_per_segment` quads: amx where its products are deep enough, else
/// best_path().
inline int8_path best_path(std::int64_t quads_per_segment) {
  if (amx_available() && amx::int8_chunk(quads_per_segment) >= amx::int8_min_chunk) return int8_path::amx;
  return best_path();
}

/// Every path this build runs on this CPU (the tests compare them).
inline std::vector<int8_path> available_paths() {
  std::vector<int8_path> paths{int8_path::portable};
  if (madd_compiled()) paths.push_back(int8_path::madd);
  if (vnni_available()) paths.push_back(int8_path::vnni);
  if (amx_available()) paths.push_back(int8_path::amx);
  return paths;
}

/// The path name reports print: "amx int8", "avx512 vnni int8", "avx2 madd int8", "avx512 madd int8" or
/// "portable int8".
inline const char* path_name(int8_path path) {
  switch (path) {
    case int8_path::amx: return "amx int8";
    case int8_path::vnni: return "avx512 vnni int8";
    case int8_path::madd: return lanes == 16 ? "avx512 madd int8" : "avx2 madd int8";
    case int8_path::portable:
    case int8_path::automatic: break;
  }
  return "portable int8";
}
inline const char* path_name() { return path_name(best_path()); }

/// \brief B (segments x run, cols) in int8 for one path, per 48-column group (packets of `lanes` columns), each run
/// zero padded to whole quads (a quad may then read A up to three values past the run: the zero weights cancel
/// them). The amx, vnni and portable paths read [segment][run / 4 quads][group columns][4] int8; the madd path reads
/// [segment][quad][packet][two pairs][lanes][2] int16, pair 0 the quad's values 0 and 1, pair 1 values 2 and 3. Also
/// each column's zero-point compensation, 128 x its weight sum.
class packed_quads {
 public:
  packed_quads() = default;
  /// element(k, col) is the int8 weight at depth k = segment * run + position.
  template <class Element>
  packed_quads(int segments, std::int64_t run, std::int64_t cols, Element&& element,
               int8_path path = int8_path::automatic)
      : layout_{std::int64_t{segments} * ((run + quad - 1) / quad), cols},
        quads_per_segment_((run + quad - 1) / quad),
        path_(path == int8_path::automatic ? best_path(quads_per_segment_) : path) {
    const auto paths = available_paths();
    if (std::find(paths.begin(), paths.end(), path_) == paths.end()) {
      detail::fail("int8 weights packed for the ", path_name(path_), " path, which this build or CPU does not run");
    }
    std::vector<std::int8_t> quads(static_cast<std::size_t>(layout_.size() * quad), 0);
    compensation_.assign(static_cast<std::size_t>(round_up(cols, group_width)), 0);
    for (int g = 0; g < layout_.groups(); ++g) {
      const int width = layout_.packets(g) * lanes, valid = layout_.group_cols(g);
      std::int8_t* panel = quads.data() + layout_.offset(g) * quad;
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
    if (path_ != int8_path::madd) {
      data_.assign(quads.begin(), quads.end());
      return;
    }
    pairs_.assign(quads.size(), 0);
    for (int g = 0; g < layout_.groups(); ++g) {
      const std::int64_t base = layout_.offset(g) * quad, width = layout_.packets(g) * lanes;
      for (std::int64_t d = 0; d < layout_.depth; ++d)
        for (std::int64_t c = 0; c < width; ++c)
          for (int i = 0; i < quad; ++i) {
            const std::int64_t packet = c / lanes, lane = c % lanes, pair = i / 2;
            pairs_[static_cast<std::size_t>(base + ((d * width / lanes + packet) * 2 + pair) * lanes * 2 + lane * 2 +
                                            i % 2)] = quads[static_cast<std::size_t>(base + (d * width + c) * quad + i)];
          }
    }
  }
  /// Groups and their widths as the float32 panels have them (depth counted in quads).
  const panel_layout& layout() const { return layout_; }
  std::int64_t quads_per_segment() const { return quads_per_segment_; }
  int8_path path() const { return path_; }
  /// Bytes of one full group's weights (int16 on the madd path).
  std::int64_t group_bytes() const { return layout_.group_bytes() * (path_ == int8_path::madd ? 2 : 1); }
  const std::int8_t* panel(int g) const { return data_.data() + layout_.offset(g) * quad; }
  const std::int16_t* pair_panel(int g) const { return pairs_.data() + layout_.offset(g) * quad; }
  /// 128 x the column's weight sum, zero padded to whole groups.
  const std::int32_t* compensation() const { return compensation_.data(); }

 private:
  panel_layout layout_;
  std::int64_t quads_per_segment_ = 0;
  int8_path path_ = int8_path::portable;
  std::vector<std::int8_t, Eigen::aligned_allocator<std::int8_t>> data_;     ///< vnni and portable paths
  std::vector<std::int16_t, Eigen::aligned_allocator<std::int16_t>> pairs_;  ///< madd path
  std::vector<std::int32_t> compensation_;
};

namespace internal {

/// Quads of B streamed per pass over a block's rows: the same 18 KiB L1 slice as the float32 kernel (half the quads
/// on the madd path, whose weights are int16).
template <int Packets>
inline constexpr std::int64_t depth_block = 4608 / (Packets * lanes);
template <int Packets>
inline constexpr std::int64_t madd_depth_block = depth_block<Packets> / 2;

/// Rows of a portable tile: small enough for the accumulators to stay in registers on AVX2.
inline constexpr int portable_rows = 4;

#if defined(SWINFER_CPU_AVX512_VNNI) || defined(SWINFER_CPU_INT8_MADD)
/// The int32 vector of `lanes` lanes the vnni and madd kernels accumulate in (AVX-512BW, which VNNI implies, or
/// AVX2) and the operations they need.
#if defined(__AVX512BW__)
using wide = __m512i;
inline wide wide_zero() { return _mm512_setzero_si512(); }
inline wide wide_set1(std::int32_t v) { return _mm512_set1_epi32(v); }
inline wide wide_loadu(const void* p) { return _mm512_loadu_si512(p); }
inline void wide_storeu(void* p, wide v) { _mm512_storeu_si512(p, v); }
inline wide wide_shuffle_bytes(wide v, wide index) { return _mm512_shuffle_epi8(v, index); }
inline wide wide_madd(wide a, const std::int16_t* b) { return _mm512_madd_epi16(a, _mm512_load_si512(b)); }
inline wide wide_add(wide a, wide b) { return _mm512_add_epi32(a, b); }
#else
using wide = __m256i;
inline wide wide_zero() { return _mm256_setzero_si256(); }
inline wide wide_set1(std::int32_t v) { return _mm256_set1_epi32(v); }
inline wide wide_loadu(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
inline void wide_storeu(void* p, wide v) { _mm256_storeu_si256(static_cast<__m256i*>(p), v); }
inline wide wide_shuffle_bytes(wide v, wide index) { return _mm256_shuffle_epi8(v, index); }
inline wide wide_madd(wide a, const std::int16_t* b) {
  return _mm256_madd_epi16(a, _mm256_load_si256(reinterpret_cast<const __m256i*>(b)));
}
inline wide wide_add(wide a, wide b) { return _mm256_add_epi32(a, b); }
#endif
static_assert(sizeof(wide) == lanes * 4, "the int8 kernels' int32 lanes must be the float packets'");

/// A Rows x Packets tile's accumulators: c's partial sums (accumulate) or zero.
template <int Rows, int Packets>
inline void load_accumulators(wide (&acc)[Rows][Packets], bool accumulate, const std::int32_t* c, std::int64_t ldc) {
#pragma GCC unroll 16
  for (int r = 0; r < Rows; ++r)
#pragma GCC unroll 4
    for (int j = 0; j < Packets; ++j) acc[r][j] = accumulate ? wide_loadu(c + r * ldc + j * lanes) : wide_zero();
}

/// The accumulators back into c.
template <int Rows, int Packets>
inline void store_accumulators(const wide (&acc)[Rows][Packets], std::int32_t* c, std::int64_t ldc) {
#pragma GCC unroll 16
  for (int r = 0; r < Rows; ++r)
#pragma GCC unroll 4
    for (int j = 0; j < Packets; ++j) wide_storeu(c + r * ldc + j * lanes, acc[r][j]);
}
#endif

#ifdef SWINFER_CPU_AVX512_VNNI
/// One Rows x Packets tile over `quads` steps: c[r][..] = start[r][..] + sum_q a[r * stride + 4q .. +3] . b[q][..]
/// in int32, start being c itself (accumulate) or zero. Per step: Packets loads of B, one broadcast of an A quad
/// per row, Rows x Packets vpdpbusd into register accumulators.
template <int Rows, int Packets>
inline void micro_tile(const std::uint8_t* a, std::int64_t stride, std::int64_t quads, const std::int8_t* b,
                       bool accumulate, std::int32_t* c, std::int64_t ldc) {
  wide acc[Rows][Packets];
  load_accumulators(acc, accumulate, c, ldc);
  for (std::int64_t q = 0; q < quads; ++q, a += quad, b += Packets * lanes * quad) {
    __m512i bk[Packets];
#pragma GCC unroll 4
    for (int j = 0; j < Packets; ++j) bk[j] = _mm512_load_si512(b + j * lanes * quad);
#pragma GCC unroll 16
    for (int r = 0; r < Rows; ++r) {
      std::int32_t four;
      std::memcpy(&four, a + r * stride, sizeof four);
      const wide av = wide_set1(four);
#pragma GCC unroll 4
      for (int j = 0; j < Packets; ++j) acc[r][j] = _mm512_dpbusd_epi32(acc[r][j], av, bk[j]);
    }
  }
  store_accumulators(acc, c, ldc);
}
#endif

#ifdef SWINFER_CPU_INT8_MADD
/// The byte shuffle that turns a broadcast quad (a0 a1 a2 a3 in every 32-bit lane) into the zero-extended int16 pair
/// (a_first, a_first+1) in every lane (index 0x80 writes a zero byte).
inline wide quad_pair(int first) {
  return wide_set1(static_cast<std::int32_t>(0x80008000u | static_cast<unsigned>(first) |
                                             static_cast<unsigned>(first + 1) << 16));
}

/// madd's Rows x Packets tile over `quads` steps, the same sums as micro_tile: per step and row, one broadcast of an
/// A quad and two shuffles into int16 pairs; per packet two vpmaddwd against B in memory and two vpaddd.
template <int Rows, int Packets>
inline void madd_tile(const std::uint8_t* a, std::int64_t stride, std::int64_t quads, const std::int16_t* b,
                      bool accumulate, std::int32_t* c, std::int64_t ldc) {
  wide acc[Rows][Packets];
  load_accumulators(acc, accumulate, c, ldc);
  const wide low = quad_pair(0), high = quad_pair(2);
  for (std::int64_t q = 0; q < quads; ++q, a += quad, b += Packets * lanes * quad) {
#pragma GCC unroll 16
    for (int r = 0; r < Rows; ++r) {
      std::int32_t four;
      std::memcpy(&four, a + r * stride, sizeof four);
      const wide av = wide_set1(four);
      const wide a01 = wide_shuffle_bytes(av, low), a23 = wide_shuffle_bytes(av, high);
#pragma GCC unroll 4
      for (int j = 0; j < Packets; ++j) {
        const std::int16_t* bj = b + j * lanes * quad;
        acc[r][j] = wide_add(acc[r][j], wide_add(wide_madd(a01, bj), wide_madd(a23, bj + 2 * lanes)));
      }
    }
  }
  store_accumulators(acc, c, ldc);
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

/// Walks the depth (segment by segment, a depth block at a time) in the outer loop and the row tiles in the inner
/// one on b's path; after the first pass the tiles restart from their partial sums in C.
template <int Packets>
inline void gemm_group_rows(const std::uint8_t* const* seg, int segments, std::int64_t stride, std::int64_t rows,
                            const packed_quads& b, int g, std::int32_t* c, std::int64_t ldc) {
  const std::int64_t quads_per_segment = b.quads_per_segment();
  const bool madd = b.path() == int8_path::madd;
  const std::int64_t block = madd ? madd_depth_block<Packets> : depth_block<Packets>;
  std::int64_t done = 0;  // quads of the group's panel consumed
  bool first = true;
  for (int s = 0; s < segments; ++s) {
    for (std::int64_t q0 = 0; q0 < quads_per_segment; q0 += block, first = false) {
      const std::int64_t quads = std::min(block, quads_per_segment - q0);
      const std::uint8_t* a = seg[s] + q0 * quad;
      const std::int64_t offset = done * Packets * lanes * quad;
      done += quads;
      switch (b.path()) {
#ifdef SWINFER_CPU_AVX512_VNNI
        case int8_path::vnni:
          for (std::int64_t r0 = 0; r0 < rows; r0 += micro_rows<Packets>)
            micro_tile<micro_rows<Packets>, Packets>(a + r0 * stride, stride, quads, b.panel(g) + offset, !first,
                                                     c + r0 * ldc, ldc);
          break;
#endif
#ifdef SWINFER_CPU_INT8_MADD
        case int8_path::madd:
          for (std::int64_t r0 = 0; r0 < rows; r0 += micro_rows<Packets>)
            madd_tile<micro_rows<Packets>, Packets>(a + r0 * stride, stride, quads, b.pair_panel(g) + offset, !first,
                                                    c + r0 * ldc, ldc);
          break;
#endif
        default:
          for (std::int64_t r0 = 0; r0 < rows; r0 += portable_rows)
            portable_tile<portable_rows, Packets>(a + r0 * stride, stride, quads, b.panel(g) + offset, !first,
                                                  c + r0 * ldc, ldc);
      }
    }
  }
}

}  // namespace internal

/// The tile configuration gemm_group loads for B's panels; none off the amx path. A caller of many products holds it
/// around them (amx::tile_scope), so that each product loads nothing.
inline std::optional<amx::tile_shapes> tile_shapes_for(const packed_quads& b) {
#ifdef SWINFER_CPU_AMX_INT8
  if (b.path() == int8_path::amx) return amx::int8_tile_shapes(amx::int8_chunk(b.quads_per_segment()));
#endif
  (void)b;
  return std::nullopt;
}

/// C = A * B in int32 for column group g of B, on B's path: rows of segment s are uint8 runs at seg[s] + r * stride.
/// Rows go in micro tiles, so callers provide the slack rows of A and C (as for gemm_group).
inline void gemm_group(const std::uint8_t* const* seg, int segments, std::int64_t stride, std::int64_t rows,
                       const packed_quads& b, int g, std::int32_t* c, std::int64_t ldc) {
#ifdef SWINFER_CPU_AMX_INT8
  if (b.path() == int8_path::amx) {
    const int chunk = amx::int8_chunk(b.quads_per_segment());
    amx::int8_tiles tiles(chunk);
    with_group_packets(b.layout().packets(g), [&](auto p) {
      amx::int8_gemm_rows<decltype(p)::value>(tiles, seg, segments, stride, rows, b.panel(g), b.quads_per_segment(),
                                              chunk, c, ldc);
    });
    return;
  }
#endif
  with_group_packets(b.layout().packets(g), [&](auto p) {
    internal::gemm_group_rows<decltype(p)::value>(seg, segments, stride, rows, b, g, c, ldc);
  });
}

// GCC 12 reports a false -Wmaybe-uninitialized inside its own _mm512_undefined_* for some of these intrinsics (as in
// simd.hpp); the pragma around their definitions is enough here.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

/// The epilogue, in place over a [rows][ldc] tile: float(acc - compensation[c]) * (row_scale[r] * scale[c]) + bias[c]
/// for the group's `cols` columns (bias null: none; row_scale null: 1). The tile's memory holds the int32 sums before
/// and the floats after. Sixteen columns at a time where AVX-512 is compiled in (the same float operations in the same
/// order; a multiply-add the compiler fuses in one form and not the other differs in the last bit).
inline void dequantize_tile(void* tile, std::int64_t rows, int cols, std::int64_t ldc, const std::int32_t* compensation,
                            const float* scale, const float* bias, const float* row_scale = nullptr) {
  for (std::int64_t r = 0; r < rows; ++r) {
    auto* row = static_cast<unsigned char*>(tile) + r * ldc * 4;
    const float row_factor = row_scale ? row_scale[r] : 1.0f;
    int c = 0;
#ifdef __AVX512F__
    const __m512 factor = _mm512_set1_ps(row_factor);
    for (; c + 16 <= cols; c += 16) {
      const __m512i acc = _mm512_sub_epi32(_mm512_loadu_si512(row + c * 4), _mm512_loadu_si512(compensation + c));
      __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(acc), _mm512_mul_ps(factor, _mm512_loadu_ps(scale + c)));
      v = _mm512_add_ps(v, bias ? _mm512_loadu_ps(bias + c) : _mm512_setzero_ps());
      _mm512_storeu_ps(reinterpret_cast<float*>(row + c * 4), v);
    }
#endif
    for (; c < cols; ++c) {
      std::int32_t acc;
      std::memcpy(&acc, row + c * 4, 4);
      const float v = static_cast<float>(acc - compensation[c]) * (row_factor * scale[c]) + (bias ? bias[c] : 0.0f);
      std::memcpy(row + c * 4, &v, 4);
    }
  }
}

/// ops::largest_magnitude (NaN skipped, the same value), sixteen float32 values at a time where AVX-512 is compiled
/// in: a dynamic scale per short row (a linear's token) without the generic loop's sixteen-lane reduction per call.
template <class S>
inline float largest_magnitude(const S* x, std::int64_t n) {
#ifdef __AVX512F__
  if constexpr (std::is_same_v<S, float>) {
    __m512 largest = _mm512_setzero_ps();
    std::int64_t i = 0;
    for (; i + 16 <= n; i += 16) largest = _mm512_max_ps(_mm512_abs_ps(_mm512_loadu_ps(x + i)), largest);
    if (i < n) {
      const __mmask16 tail = static_cast<__mmask16>((1u << (n - i)) - 1);
      largest = _mm512_max_ps(_mm512_abs_ps(_mm512_maskz_loadu_ps(tail, x + i)), largest);
    }
    return _mm512_reduce_max_ps(largest);
  }
#endif
  return ops::largest_magnitude(x, n);
}

/// Quantizes n values to uint8 (int8 + 128) with 1 / scale = `inverse_scale`: ops::quantize_activation's rounding
/// (half to even) and clamping, sixteen float32 values at a time where AVX-512 is compiled in.
template <class S>
inline void quantize_run(const S* src, std::uint8_t* dst, std::int64_t n, float inverse_scale) {
  std::int64_t i = 0;
#ifdef __AVX512F__
  if constexpr (std::is_same_v<S, float>) {
    const __m512 inverse = _mm512_set1_ps(inverse_scale);
    const __m512 lowest = _mm512_set1_ps(float(ops::activation_min));
    const __m512 highest = _mm512_set1_ps(float(ops::activation_max));
    const __m512i zero_point = _mm512_set1_epi32(ops::activation_zero_point);
    for (; i + 16 <= n; i += 16) {
      __m512 q = _mm512_roundscale_ps(_mm512_mul_ps(_mm512_loadu_ps(src + i), inverse),
                                      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      q = _mm512_min_ps(_mm512_max_ps(q, lowest), highest);
      const __m512i u = _mm512_add_epi32(_mm512_cvtps_epi32(q), zero_point);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), _mm512_cvtepi32_epi8(u));
    }
  }
#endif
  for (; i < n; ++i) {
    dst[i] = static_cast<std::uint8_t>(ops::quantize_activation(static_cast<float>(src[i]), inverse_scale) +
                                       ops::activation_zero_point);
  }
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

}  // namespace swinfer::cpu::int8_dot

// swinfer cpu backend: the SIMD packet the micro-kernels use (Eigen's, so any -m flags work) and the
// vectorised conversions between storage types and float32.
#pragma once

#include <Eigen/Core>
#if defined(__AVX512F__) || defined(__F16C__)
#include <immintrin.h>
#endif
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <unsupported/Eigen/SpecialFunctions>

namespace swinfer::cpu {

/// Eigen's widest float packet for the target: 16 lanes with AVX-512, 8 with AVX, 4 with SSE.
using packet = Eigen::internal::packet_traits<float>::type;
inline constexpr int packet_size = Eigen::internal::packet_traits<float>::size;
/// SIMD registers the target has (32 with AVX-512): decides the micro-kernel's register blocking.
inline constexpr int simd_registers = EIGEN_ARCH_DEFAULT_NUMBER_OF_REGISTERS;

/// Makes `p` opaque to the optimiser, so it stays in a register: the micro-kernels load each B packet once per depth
/// step and reuse it for every row, but GCC 12 folds such loads back into every FMA's memory operand (on AVX2 a
/// 4 x 3 tile then issues 12 B loads + 4 broadcasts per 12 FMAs and is load-bound at 65 % of the FMA peak; with B
/// in registers, 3 + 4 loads, it runs at 90 %).
inline void keep_in_register(packet& p) {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
  __asm__("" : "+v"(p));
#elif defined(__GNUC__) && defined(__aarch64__)
  __asm__("" : "+w"(p));
#else
  (void)p;
#endif
}

// Math and conversions on raw packets rather than Eigen array expressions: GCC 12 reports a false
// -Wmaybe-uninitialized inside its own _mm512_undefined_ps when Eigen's AVX-512 packet ops inline into a caller,
// and only a diagnostic pragma around the calling function silences it.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// unpacket_traits<packet> drops the vector attributes of the packet type (as Eigen's own math does): harmless.
#pragma GCC diagnostic ignored "-Wignored-attributes"
#endif

/// body(T{}, i) for i in [first, count): whole packets T = P, then packets of half as many lanes down to the
/// narrowest, then single floats T = float (16, 8, 4 and 1 lanes with AVX-512), each i the first of T's lanes: a loop
/// over channels that are not whole packets (12 is 8 + 4, not 12 scalar steps).
template <class P = packet, class Body>
inline void for_each_packet_stepping_down(std::int64_t first, std::int64_t count, Body&& body) {
  using traits = Eigen::internal::unpacket_traits<P>;
  std::int64_t i = first;
  for (; i + traits::size <= count; i += traits::size) body(P{}, i);
  using half = typename traits::half;
  if constexpr (static_cast<int>(Eigen::internal::unpacket_traits<half>::size) < static_cast<int>(traits::size)) {
    for_each_packet_stepping_down<half>(i, count, body);
  } else {
    for (; i < count; ++i) body(float{}, i);
  }
}

/// The sum over i in [first, count) of term(T{}, i), a T of the lanes from i, on the packets that
/// for_each_packet_stepping_down takes: each width keeps its own accumulator, reduced once at the end (a row of 12
/// channels is 2 horizontal sums, not 12 scalar adds).
template <class P = packet, class Term>
inline float sum_stepping_down(std::int64_t first, std::int64_t count, Term&& term) {
  using namespace Eigen::internal;
  using traits = unpacket_traits<P>;
  std::int64_t i = first;
  P sum = pset1<P>(0.0f);
  for (; i + traits::size <= count; i += traits::size) sum = padd(sum, term(P{}, i));
  float total = predux(sum);
  using half = typename traits::half;
  if constexpr (static_cast<int>(unpacket_traits<half>::size) < static_cast<int>(traits::size)) {
    total += sum_stepping_down<half>(i, count, term);
  } else {
    for (; i < count; ++i) total += term(float{}, i);
  }
  return total;
}

/// Whether Eigen casts half and bfloat16 packets to float ones: x86 with AVX or AVX-512 (Eigen 3.4's NEON code has
/// a bfloat16 packet as wide as float's but no cast between them).
#if defined(EIGEN_VECTORIZE_AVX)
inline constexpr bool casts_half_packets = true;
#else
inline constexpr bool casts_half_packets = false;
#endif

/// Eigen's packet of storage type S where it casts to `packet` lane for lane, else void: then widening is scalar.
template <class S>
using widening_packet =
    std::conditional_t<casts_half_packets && Eigen::internal::unpacket_traits<
                                                 typename Eigen::internal::packet_traits<S>::type>::size == packet_size,
                       typename Eigen::internal::packet_traits<S>::type, void>;

/// Half-precision values widened (or narrowed, rounding to nearest even) with the F16C instructions, 8 at a time,
/// where the target has them; returns how many were converted (a multiple of 8; the caller converts the rest).
/// Eigen 3.4.0 converts half packets in integer code under GCC: its F16C test, `!defined(EIGEN_COMP_CLANG) ||
/// EIGEN_COMP_CLANG >= 380`, fails where EIGEN_COMP_CLANG is defined as 0. 27 % of an fp16 forward was that widening
/// (2-core Zen 4).
inline std::int64_t widen_halves(const Eigen::half* src, float* dst, std::int64_t n) {
  std::int64_t i = 0;
#ifdef __F16C__
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
  }
#else
  (void)src, (void)dst, (void)n;
#endif
  return i;
}
inline std::int64_t narrow_halves(const float* src, Eigen::half* dst, std::int64_t n) {
  std::int64_t i = 0;
#ifdef __F16C__
  for (; i + 8 <= n; i += 8) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
#else
  (void)src, (void)dst, (void)n;
#endif
  return i;
}

/// dst[i] = float(src[i]); half/bfloat16 widening on Eigen's packet casts (F16C for half). Explicit packets: Eigen
/// 3.4's array cast<float>() of a half or bfloat16 map runs one value at a time (measured: bf16 InstanceNorm 1.4-2x
/// slower than float32's memory-bound pass, though it moves half the bytes).
template <class S>
inline void to_floats(const S* src, float* dst, std::int64_t n) {
  if constexpr (std::is_same_v<S, float>) {
    if (n > 0) std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(float));
  } else if constexpr (std::is_same_v<S, Eigen::half>) {
    for (std::int64_t i = widen_halves(src, dst, n); i < n; ++i) dst[i] = static_cast<float>(src[i]);
  } else {
    std::int64_t i = 0;
    if constexpr (!std::is_void_v<widening_packet<S>>) {
      using namespace Eigen::internal;
      for (; i + packet_size <= n; i += packet_size)
        pstoreu(dst + i, pcast<widening_packet<S>, packet>(ploadu<widening_packet<S>>(src + i)));
    }
    for (; i < n; ++i) dst[i] = static_cast<float>(src[i]);
  }
}

/// dst[i] = S(src[i]), rounding to nearest even.
template <class S>
inline void from_floats(const float* src, S* dst, std::int64_t n) {
  if constexpr (std::is_same_v<S, float>) {
    if (n > 0) std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(float));
  } else if constexpr (std::is_same_v<S, Eigen::half>) {
    for (std::int64_t i = narrow_halves(src, dst, n); i < n; ++i) dst[i] = Eigen::half(src[i]);
  } else {
    Eigen::Map<Eigen::Array<S, Eigen::Dynamic, 1>>(dst, n) =
        Eigen::Map<const Eigen::ArrayXf>(src, n).template cast<S>();
  }
}

// GCC 12's false -W(maybe-)uninitialized in its AVX-512 shift intrinsic (an undefined pass-through operand), inlined
// wherever this is.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
/// x rounded to the nearest bfloat16 (ties to even), in float32 lanes: Eigen's scalar rounding on integer lanes,
/// exact for every value, subnormals too (the AVX512-BF16 narrowing would flush them); NaN stays NaN.
inline packet rounded_to_bf16(const packet& x) {
#ifdef __AVX512F__
  // Eigen's generic select goes through a vector mask and back (twice the work of the rounding).
  const __m512i bits = _mm512_castps_si512(x);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_and_si512(_mm512_add_epi32(_mm512_add_epi32(bits, _mm512_set1_epi32(0x7fff)), lsb),
                                           _mm512_set1_epi32(static_cast<int>(0xffff0000u)));
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, x, _CMP_ORD_Q), x, _mm512_castsi512_ps(rounded));
#else
  using namespace Eigen::internal;
  using int_packet = unpacket_traits<packet>::integer_packet;
  static_assert(unpacket_traits<int_packet>::size == packet_size, "int and float packets of one width");
  const int_packet bits = preinterpret<int_packet>(x);
  const int_packet lsb = pand(plogical_shift_right<16>(bits), pset1<int_packet>(1));
  const int_packet rounded = pand(padd(bits, padd(pset1<int_packet>(0x7fff), lsb)),
                                  pset1<int_packet>(static_cast<int>(0xffff0000u)));
  return pselect(pcmp_eq(x, x), preinterpret<packet>(rounded), x);
#endif
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

/// The float32 values as storage S holds them: rounded_to_bf16 for bfloat16, the values themselves for float32.
template <class S>
inline packet as_stored(const packet& x) {
  static_assert(std::is_same_v<S, float> || std::is_same_v<S, Eigen::bfloat16>, "half: round_like_storage");
  if constexpr (std::is_same_v<S, Eigen::bfloat16>) {
    return rounded_to_bf16(x);
  } else {
    return x;
  }
}

/// v[i] = float(S(v[i])) in place: the values as from_floats stores them. bfloat16 on packets (rounded_to_bf16), half
/// through from_floats and back.
template <class S>
inline void round_like_storage(float* v, std::int64_t n) {
  if constexpr (std::is_same_v<S, Eigen::bfloat16>) {
    const std::int64_t full = n / packet_size * packet_size;
    for (std::int64_t i = 0; i < full; i += packet_size) {
      Eigen::internal::pstoreu(v + i, rounded_to_bf16(Eigen::internal::ploadu<packet>(v + i)));
    }
    for (std::int64_t i = full; i < n; ++i) v[i] = static_cast<float>(Eigen::bfloat16(v[i]));
  } else if constexpr (!std::is_same_v<S, float>) {
    constexpr std::int64_t chunk = 64;
    S stored[chunk];
    for (std::int64_t i = 0; i < n; i += chunk) {
      const std::int64_t m = std::min(chunk, n - i);
      from_floats(v + i, stored, m);
      to_floats(stored, v + i, m);
    }
  }
}

/// dst[i] = S(float(dst[i]) + src[i]): the residual add into a stored activation. Widened on packets, narrowed by
/// from_floats (whose rounding every storage write shares: the AVX512-BF16 packet narrowing would flush subnormals).
template <class S>
inline void add_floats(const float* src, S* dst, std::int64_t n) {
  if constexpr (std::is_same_v<S, float>) {
    Eigen::Map<Eigen::ArrayXf>(dst, n) += Eigen::Map<const Eigen::ArrayXf>(src, n);
  } else {
    constexpr std::int64_t step = 64;
    float sum[step];
    for (std::int64_t i = 0; i < n; i += step) {
      const std::int64_t m = std::min(step, n - i);
      to_floats(dst + i, sum, m);
      Eigen::Map<Eigen::ArrayXf>(sum, m) += Eigen::Map<const Eigen::ArrayXf>(src + i, m);
      from_floats(sum, dst + i, m);
    }
  }
}

/// Exact-erf GELU, 0.5 x (1 + erf(x / sqrt 2)), in place over n floats (Eigen's erf: a few-ulp rational fit).
inline void gelu_in_place(float* v, std::int64_t n) {
  using namespace Eigen::internal;
  const packet half = pset1<packet>(0.5f), one = pset1<packet>(1.0f), rsqrt2 = pset1<packet>(0.70710678118654752440f);
  std::int64_t i = 0;
  for (; i + packet_size <= n; i += packet_size) {
    const packet x = ploadu<packet>(v + i);
    pstoreu(v + i, pmul(pmul(half, x), padd(one, perf(pmul(x, rsqrt2)))));
  }
  for (; i < n; ++i) v[i] = 0.5f * v[i] * (1.0f + std::erf(v[i] * 0.70710678118654752440f));
}

/// Below this e^x counts as 0 in a softmax: e^-64 (1.6e-28) is 2^-69 of the row maximum's e^0, far under float32's
/// rounding of the sum, and every product of a value of at least it with v of at least 1e-10 stays a normal float.
/// Tiny terms did not: the shifted windows' -100 mask made P.v products denormal, a microcode assist each on Intel
/// cores (fs48 stage 1's shifted attention took 2.2x the unshifted one on a Xeon with AMX; same time on Zen 4).
inline constexpr float softmax_exp_cutoff = -64.0f;

/// e^x for x <= 0 (softmax after subtracting the row's max), with Eigen's pexp's range reduction and Cephes
/// polynomial (the same results for x >= softmax_exp_cutoff) at a fraction of its cost: no overflow handling, and
/// 2^m applied exactly (AVX-512's vscalefps, else written straight into the exponent bits); 0 below the cutoff.
inline packet exp_nonpositive(const packet& x_in) {
  using namespace Eigen::internal;
  const packet cutoff = pset1<packet>(softmax_exp_cutoff);
  const packet x = pmax(x_in, cutoff);
  const packet m = pfloor(pmadd(x, pset1<packet>(1.44269504088896341f), pset1<packet>(0.5f)));
  packet r = pmadd(m, pset1<packet>(-0.693359375f), x);
  r = pmadd(m, pset1<packet>(2.12194440e-4f), r);
  const packet r2 = pmul(r, r), r3 = pmul(r2, r);
  packet y = pmadd(pset1<packet>(1.9875691500E-4f), r, pset1<packet>(1.3981999507E-3f));
  packet y1 = pmadd(pset1<packet>(4.1665795894E-2f), r, pset1<packet>(1.6666665459E-1f));
  const packet y2 = padd(r, pset1<packet>(1.0f));
  y = pmadd(y, r, pset1<packet>(8.3334519073E-3f));
  y1 = pmadd(y1, r, pset1<packet>(5.0000001201E-1f));
  y = pmadd(y, r3, y1);
  y = pmadd(y, r2, y2);
#ifdef __AVX512F__
  const packet e = _mm512_scalef_ps(y, m);  // y 2^m, m in [-92, 0]: exact, as the exponent write
#else
  using integer_packet = typename unpacket_traits<packet>::integer_packet;
  const integer_packet biased = pcast<packet, integer_packet>(padd(m, pset1<packet>(127.0f)));  // m in [-92, 0]
  const packet e = pmul(y, preinterpret<packet>(plogical_shift_left<23>(biased)));
#endif
  return pselect(pcmp_lt(x_in, cutoff), pset1<packet>(0.0f), e);
}

/// Softmax numerators: store(i, exp(v[i..] - max)) for each packet of v's round_up(n, packet_size) finite floats
/// (the last packet whole, no scalar tail: its lanes past n are stored too); returns the sum over the first n.
template <class Store>
inline float exp_minus(const float* v, std::int64_t n, float max, Store&& store) {
  using namespace Eigen::internal;
  const std::int64_t full = n / packet_size * packet_size;
  const packet shift = pset1<packet>(max);
  packet sum = pset1<packet>(0.0f);
  for (std::int64_t i = 0; i < full; i += packet_size) {
    const packet e = exp_nonpositive(psub(ploadu<packet>(v + i), shift));
    store(i, e);
    sum = padd(sum, e);
  }
  float total = predux(sum);
  if (full < n) {
    const packet e = exp_nonpositive(psub(ploadu<packet>(v + full), shift));
    store(full, e);
    alignas(64) float tail[packet_size];
    pstore(tail, e);
    for (std::int64_t i = 0; i < n - full; ++i) total += tail[i];
  }
  return total;
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

}  // namespace swinfer::cpu

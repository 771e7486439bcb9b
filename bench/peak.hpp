// The CPU's register-only arithmetic ceiling per instruction that swinfer's cpu kernels use: float32 FMA, the bf16
// pair dot product (vdpbf16ps), the u8 x s8 quad dot product (vpdpbusd) and the int16 pair multiply-add with its
// accumulating add (vpmaddwd + vpaddd, int8's madd path), 12 independent accumulators per thread and no memory
// traffic. bench_peak prints it; bench_cpu_kernels states each kernel as a fraction of it.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

namespace swinfer_bench::peak {

inline constexpr int accumulators = 12;  // enough independent chains to cover the FMA latency on every x86 core we know
inline constexpr long steps = 1 << 20;   // per timed call: ~10-30 ms on a modern core

/// One instruction under test: the vector type, its lane count, the operations per lane and instruction, and the
/// instruction itself as step(acc, a, b).
#if defined(__AVX512F__)
struct fp32_fma {
  using vec = __m512;
  static constexpr const char* name = "fp32 FMA (vfmadd231ps zmm)";
  static constexpr double ops_per_instruction = 16 * 2;
  static vec init(float v) { return _mm512_set1_ps(v); }
  static vec step(vec acc, vec a, vec b) { return _mm512_fmadd_ps(a, b, acc); }
  static float sink(vec v) {
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, v);
    return lanes[0];
  }
};
#elif defined(__AVX2__) && defined(__FMA__)
struct fp32_fma {
  using vec = __m256;
  static constexpr const char* name = "fp32 FMA (vfmadd231ps ymm)";
  static constexpr double ops_per_instruction = 8 * 2;
  static vec init(float v) { return _mm256_set1_ps(v); }
  static vec step(vec acc, vec a, vec b) { return _mm256_fmadd_ps(a, b, acc); }
  static float sink(vec v) { return _mm256_cvtss_f32(v); }
};
#endif

#if defined(__AVX512BF16__)
struct bf16_dot {
  using vec = __m512;
  static constexpr const char* name = "bf16 pair dot (vdpbf16ps zmm)";
  static constexpr double ops_per_instruction = 16 * 2 * 2;
  static vec init(float v) { return _mm512_set1_ps(v); }
  static vec step(vec acc, vec a, vec b) {
    return _mm512_dpbf16_ps(acc, (__m512bh)_mm512_castps_si512(a), (__m512bh)_mm512_castps_si512(b));
  }
  static float sink(vec v) {
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, v);
    return lanes[0];
  }
};
#endif

#if defined(__AVX512VNNI__)
struct int8_dot {
  using vec = __m512i;
  static constexpr const char* name = "u8 x s8 quad dot (vpdpbusd zmm)";
  static constexpr double ops_per_instruction = 16 * 4 * 2;
  static vec init(float v) { return _mm512_set1_epi32(static_cast<int>(v * 3)); }
  static vec step(vec acc, vec a, vec b) { return _mm512_dpbusd_epi32(acc, a, b); }
  static float sink(vec v) {
    alignas(64) int lanes[16];
    _mm512_store_si512(lanes, v);
    return static_cast<float>(lanes[0]);
  }
};
#endif

#if defined(__AVX512BW__)
struct int8_madd {
  using vec = __m512i;
  static constexpr const char* name = "int16 pair madd (vpmaddwd+vpaddd zmm)";
  static constexpr double ops_per_instruction = 16 * 2 * 2;
  static vec init(float v) { return _mm512_set1_epi32(static_cast<int>(v * 3)); }
  static vec step(vec acc, vec a, vec b) { return _mm512_add_epi32(acc, _mm512_madd_epi16(a, b)); }
  static float sink(vec v) {
    alignas(64) int lanes[16];
    _mm512_store_si512(lanes, v);
    return static_cast<float>(lanes[0]);
  }
};
#elif defined(__AVX2__)
struct int8_madd {
  using vec = __m256i;
  static constexpr const char* name = "int16 pair madd (vpmaddwd+vpaddd ymm)";
  static constexpr double ops_per_instruction = 8 * 2 * 2;
  static vec init(float v) { return _mm256_set1_epi32(static_cast<int>(v * 3)); }
  static vec step(vec acc, vec a, vec b) { return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b)); }
  static float sink(vec v) { return static_cast<float>(_mm256_extract_epi32(v, 0)); }
};
#endif

/// Runs `steps` x `accumulators` instructions; the result keeps the compiler from dropping the chains.
template <class I>
inline float chains() {
  typename I::vec acc[accumulators];
  for (int i = 0; i < accumulators; ++i) acc[i] = I::init(1e-3f * static_cast<float>(i));
  typename I::vec a = I::init(0.999f), b = I::init(1e-3f);
  for (long s = 0; s < steps; ++s) {
    // An empty asm with the operands as in-outs stops the compiler from hoisting or folding the products.
    asm volatile("" : "+v"(a), "+v"(b));
#pragma GCC unroll 12
    for (int i = 0; i < accumulators; ++i) acc[i] = I::step(acc[i], a, b);
  }
  float total = 0;
  for (int i = 0; i < accumulators; ++i) total += I::sink(acc[i]);
  return total;
}

/// Giga-operations per second of `threads` threads each running chains<I>() for about `seconds` (best of three).
template <class I>
inline double rate(int threads, double seconds) {
  double best = 0;
  for (int round = 0; round < 3; ++round) {
    std::vector<long> calls(static_cast<std::size_t>(threads), 0);
    std::vector<std::thread> pool;
    volatile float sink = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        float local = 0;
        while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < seconds) {
          local += chains<I>();
          ++calls[static_cast<std::size_t>(t)];
        }
        sink = sink + local;
      });
    }
    for (auto& th : pool) th.join();
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    long total = 0;
    for (long c : calls) total += c;
    best = std::max(best, static_cast<double>(total) * steps * accumulators * I::ops_per_instruction / elapsed * 1e-9);
  }
  return best;
}

/// The peak rates (giga-operations per second) of `threads` threads; 0 where the build's target lacks the instruction.
struct rates {
  double fp32_fma = 0, bf16_dot = 0, int8_dot = 0, int8_madd = 0;
};

inline rates measure(int threads, double seconds) {
  rates r;
#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
  r.fp32_fma = rate<fp32_fma>(threads, seconds);
#endif
#if defined(__AVX512BF16__)
  r.bf16_dot = rate<bf16_dot>(threads, seconds);
#endif
#if defined(__AVX512VNNI__)
  r.int8_dot = rate<int8_dot>(threads, seconds);
#endif
#if defined(__AVX512BW__) || defined(__AVX2__)
  r.int8_madd = rate<int8_madd>(threads, seconds);
#endif
  return r;
}

}  // namespace swinfer_bench::peak

// swinfer cpu backend: what the host processor is and which of the instruction sets the kernels use it has, read
// from cpuid at run time (timings name the CPU they ran on; kernel choices depend on what it can execute), and which
// instruction sets this translation unit's kernels were compiled for.
#pragma once

#include <string>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

#include <cstring>
#endif

namespace swinfer::cpu {

/// \brief The host CPU: its brand string and the instruction-set extensions swinfer's kernels can use.
struct cpu_features {
  std::string model = "unknown CPU";
  bool avx2 = false, fma = false, avx512f = false, avx512_bf16 = false, avx512_vnni = false;
  bool amx_bf16 = false, amx_int8 = false;
  /// The rest of the x86-64 psABI levels (v2: SSE4.2 and POPCNT; v3: AVX2, FMA, BMI, F16C, MOVBE; v4: AVX-512
  /// F/BW/CD/DQ/VL), which kernels compiled for a whole level may use anywhere (runtime/include/swinfer/runtime/cpu_levels.hpp).
  bool cx16 = false, sse3 = false, ssse3 = false, sse4_1 = false, sse4_2 = false, popcnt = false;
  bool avx = false, f16c = false, bmi1 = false, bmi2 = false, lzcnt = false, movbe = false;
  bool avx512bw = false, avx512cd = false, avx512dq = false, avx512vl = false;

  /// The extensions present, e.g. "avx2 fma avx512f avx512_bf16 avx512_vnni".
  std::string extensions() const {
    std::string out;
    auto add = [&](bool present, const char* name) {
      if (!present) return;
      if (!out.empty()) out += ' ';
      out += name;
    };
    add(avx2, "avx2");
    add(fma, "fma");
    add(avx512f, "avx512f");
    add(avx512_bf16, "avx512_bf16");
    add(avx512_vnni, "avx512_vnni");
    add(amx_bf16, "amx_bf16");
    add(amx_int8, "amx_int8");
#if defined(__x86_64__) || defined(__i386__)
    return out.empty() ? std::string("none of avx2/avx512/amx") : out;
#elif defined(__ARM_NEON)
    return "neon";
#else
    return "no vector extensions known to swinfer";
#endif
  }
  /// "model (extensions)": what a timing should name.
  std::string describe() const { return model + " (" + extensions() + ")"; }
  /// Whether this CPU runs all of the x86-64 psABI level v2, v3 or v4 (false for another level or architecture).
  bool has_x86_64_level(int level) const {
    const bool v2 = cx16 && sse3 && ssse3 && sse4_1 && sse4_2 && popcnt;
    const bool v3 = v2 && avx && avx2 && bmi1 && bmi2 && f16c && fma && lzcnt && movbe;
    const bool v4 = v3 && avx512f && avx512bw && avx512cd && avx512dq && avx512vl;
    return level == 2 ? v2 : level == 3 ? v3 : level == 4 && v4;
  }
};

namespace internal {

inline cpu_features read_cpu_features() {
  cpu_features f;
#if defined(__aarch64__)
  f.model = "64-bit Arm CPU";
#endif
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  unsigned brand[12] = {};
  if (__get_cpuid(0x80000000u, &a, &b, &c, &d) && a >= 0x80000004u) {
    for (unsigned leaf = 0; leaf < 3; ++leaf)
      __get_cpuid(0x80000002u + leaf, &brand[leaf * 4], &brand[leaf * 4 + 1], &brand[leaf * 4 + 2], &brand[leaf * 4 + 3]);
    char text[49] = {};
    std::memcpy(text, brand, 48);
    std::string model(text);
    const auto first = model.find_first_not_of(' '), last = model.find_last_not_of(' ');
    if (first != std::string::npos) f.model = model.substr(first, last - first + 1);
  }
  // Vector state must also be enabled by the OS (XCR0): AVX needs bits 1-2, AVX-512 bits 5-7 too.
  bool os_avx = false, os_avx512 = false;
  if (__get_cpuid(1, &a, &b, &c, &d) && (c & bit_OSXSAVE)) {
    unsigned lo = 0, hi = 0;
    __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    os_avx = (lo & 0x6u) == 0x6u;
    os_avx512 = os_avx && (lo & 0xe0u) == 0xe0u;
    f.fma = os_avx && (c & bit_FMA);
    f.avx = os_avx && (c & bit_AVX);
    f.f16c = os_avx && (c & bit_F16C);
  }
  if (__get_cpuid(1, &a, &b, &c, &d)) {
    f.sse3 = c & bit_SSE3;
    f.ssse3 = c & bit_SSSE3;
    f.sse4_1 = c & bit_SSE4_1;
    f.sse4_2 = c & bit_SSE4_2;
    f.popcnt = c & bit_POPCNT;
    f.cx16 = c & bit_CMPXCHG16B;
    f.movbe = c & bit_MOVBE;
  }
  if (__get_cpuid(0x80000001u, &a, &b, &c, &d)) f.lzcnt = c & bit_LZCNT;
  // cpuid leaf 7 bits (spelled out: older <cpuid.h> versions lack the AMX and BF16 names).
  constexpr unsigned avx2_bit = 1u << 5, avx512f_bit = 1u << 16, vnni_bit = 1u << 11, bf16_bit = 1u << 5;
  constexpr unsigned amx_bf16_bit = 1u << 22, amx_tile_bit = 1u << 24, amx_int8_bit = 1u << 25;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
    const unsigned max_subleaf = a;
    f.avx2 = os_avx && (b & avx2_bit);
    f.avx512f = os_avx512 && (b & avx512f_bit);
    f.avx512bw = f.avx512f && (b & bit_AVX512BW);
    f.avx512cd = f.avx512f && (b & bit_AVX512CD);
    f.avx512dq = f.avx512f && (b & bit_AVX512DQ);
    f.avx512vl = f.avx512f && (b & bit_AVX512VL);
    f.bmi1 = b & bit_BMI;
    f.bmi2 = b & bit_BMI2;
    f.avx512_vnni = f.avx512f && (c & vnni_bit);
    f.amx_bf16 = (d & amx_bf16_bit) && (d & amx_tile_bit);
    f.amx_int8 = (d & amx_int8_bit) && (d & amx_tile_bit);
    if (max_subleaf >= 1 && __get_cpuid_count(7, 1, &a, &b, &c, &d)) f.avx512_bf16 = f.avx512f && (a & bf16_bit);
  }
#endif
  return f;
}

}  // namespace internal

/// The instruction sets this translation unit's kernels were compiled for (its -march or -m flags), e.g.
/// "avx2 fma" or "avx512f avx512_bf16 avx512_vnni"; with the level's name first where the build compiled the kernels
/// for several levels and chose one at run time (SWINFER_CPU_KERNEL_LEVEL, runtime/include/swinfer/runtime/cpu_levels.hpp).
inline std::string compiled_kernel_isa() {
  std::string out;
#ifdef SWINFER_CPU_KERNEL_LEVEL
  out = SWINFER_CPU_KERNEL_LEVEL ":";
#endif
  const auto add = [&](const char* name) { out += std::string(out.empty() ? "" : " ") + name; };
#if defined(__AVX512F__)
  add("avx512f");
#elif defined(__AVX2__)
  add("avx2");
#elif defined(__SSE4_2__)
  add("sse4.2");
#elif defined(__x86_64__)
  add("sse2");
#elif defined(__ARM_NEON)
  add("neon");
#else
  add("scalar");
#endif
#ifdef __FMA__
  add("fma");
#endif
#ifdef __AVX512BF16__
  add("avx512_bf16");
#endif
#ifdef __AVX512VNNI__
  add("avx512_vnni");
#endif
#if defined(__AMX_TILE__) && defined(__AMX_BF16__)
  add("amx");
#endif
  return out;
}

/// The host CPU, read once.
inline const cpu_features& host_cpu() {
  static const cpu_features features = internal::read_cpu_features();
  return features;
}

}  // namespace swinfer::cpu

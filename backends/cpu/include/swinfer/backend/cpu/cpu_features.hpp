// swinfer cpu backend: what the host processor is and which of the instruction sets the kernels use it has, read
// from cpuid at run time (timings name the CPU they ran on; kernel choices depend on what it can execute).
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
    return out.empty() ? std::string("none of avx2/avx512/amx") : out;
  }
  /// "model (extensions)": what a timing should name.
  std::string describe() const { return model + " (" + extensions() + ")"; }
};

namespace internal {

inline cpu_features read_cpu_features() {
  cpu_features f;
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
  }
  // cpuid leaf 7 bits (spelled out: older <cpuid.h> versions lack the AMX and BF16 names).
  constexpr unsigned avx2_bit = 1u << 5, avx512f_bit = 1u << 16, vnni_bit = 1u << 11, bf16_bit = 1u << 5;
  constexpr unsigned amx_bf16_bit = 1u << 22, amx_tile_bit = 1u << 24, amx_int8_bit = 1u << 25;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
    const unsigned max_subleaf = a;
    f.avx2 = os_avx && (b & avx2_bit);
    f.avx512f = os_avx512 && (b & avx512f_bit);
    f.avx512_vnni = f.avx512f && (c & vnni_bit);
    f.amx_bf16 = (d & amx_bf16_bit) && (d & amx_tile_bit);
    f.amx_int8 = (d & amx_int8_bit) && (d & amx_tile_bit);
    if (max_subleaf >= 1 && __get_cpuid_count(7, 1, &a, &b, &c, &d)) f.avx512_bf16 = f.avx512f && (a & bf16_bit);
  }
#endif
  return f;
}

}  // namespace internal

/// The host CPU, read once.
inline const cpu_features& host_cpu() {
  static const cpu_features features = internal::read_cpu_features();
  return features;
}

}  // namespace swinfer::cpu

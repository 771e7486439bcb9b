// swinfer runtime: the cpu backend's models with kernels for several x86-64 levels, one chosen at run time
// (SWINFER_CPU_DISPATCH). Each level's factory comes from cpu_level.cpp compiled with the flags that
// cmake/SwinferCpuDispatch.cmake gives the same level; the requirements below are what those flags let the compiler
// use anywhere in that level's code.
#include <swinfer/model/network.hpp>

#include <swinfer/runtime/backends.hpp>
#include <swinfer/runtime/cpu_levels.hpp>

extern "C" {
swinfer::network* swinfer_cpu_level_x86_64_v2(const swinfer::runtime::cpu_network_request&);
swinfer::network* swinfer_cpu_level_x86_64_v3(const swinfer::runtime::cpu_network_request&);
swinfer::network* swinfer_cpu_level_x86_64_v4(const swinfer::runtime::cpu_network_request&);
swinfer::network* swinfer_cpu_level_avx512_bf16(const swinfer::runtime::cpu_network_request&);
swinfer::network* swinfer_cpu_level_amx(const swinfer::runtime::cpu_network_request&);
}

namespace swinfer::runtime {
namespace {

using swinfer::cpu::cpu_features;

bool runs_avx512_bf16(const cpu_features& f) { return f.has_x86_64_level(4) && f.avx512_bf16 && f.avx512_vnni; }

constexpr cpu_kernel_level levels[] = {
    {"x86-64-v2", "SSE4.2, POPCNT", [](const cpu_features& f) { return f.has_x86_64_level(2); },
     swinfer_cpu_level_x86_64_v2, SWINFER_CPU_LEVEL_PRECISIONS_x86_64_v2},
    {"x86-64-v3", "AVX2, FMA, F16C, BMI1/2", [](const cpu_features& f) { return f.has_x86_64_level(3); },
     swinfer_cpu_level_x86_64_v3, SWINFER_CPU_LEVEL_PRECISIONS_x86_64_v3},
    {"x86-64-v4", "AVX-512 F/BW/CD/DQ/VL", [](const cpu_features& f) { return f.has_x86_64_level(4); },
     swinfer_cpu_level_x86_64_v4, SWINFER_CPU_LEVEL_PRECISIONS_x86_64_v4},
    {"avx512-bf16", "x86-64-v4 + AVX512_BF16 + AVX512_VNNI (AMD Zen 4 and later, Intel Cooper Lake)", runs_avx512_bf16,
     swinfer_cpu_level_avx512_bf16, SWINFER_CPU_LEVEL_PRECISIONS_avx512_bf16},
    {"amx", "avx512-bf16 + AMX-BF16/INT8 tiles (Intel Sapphire Rapids and later)",
     [](const cpu_features& f) { return runs_avx512_bf16(f) && f.amx_bf16 && f.amx_int8; }, swinfer_cpu_level_amx,
     SWINFER_CPU_LEVEL_PRECISIONS_amx},
};

}  // namespace

std::span<const cpu_kernel_level> cpu_kernel_levels() { return levels; }

std::unique_ptr<swinfer::network> make_backend_network(swinfer::backend::cpu, const swinfer::network_choice& choice,
                                                       const swinfer::swin_unetr_config& config,
                                                       const swinfer::state_dict& weights,
                                                       const swinfer::backend_options<swinfer::backend::cpu>& options,
                                                       const std::string& weights_name) {
  const cpu_network_request request{choice, config, weights, options, weights_name};
  const auto& level = cpu_kernel_level_for(choice.precision);
  std::unique_ptr<swinfer::network> made(level.make(request));
  if (!made) swinfer::detail::fail("cpu kernel level ", level.name, " made no ", choice.precision, " model");
  return made;
}

}  // namespace swinfer::runtime

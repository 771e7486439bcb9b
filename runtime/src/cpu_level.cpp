// swinfer runtime: the cpu backend's models compiled for one x86-64 level (SWINFER_CPU_DISPATCH). Compiled once per
// level with that level's -march/-m flags, SWINFER_CPU_LEVEL_FACTORY naming its factory and
// SWINFER_CPU_LEVEL_PRECISIONS the precisions whose models it holds ("all", or e.g. "bf16,int8"); the object is then
// linked alone (ld -r) and every symbol but the factory made local (cmake/SwinferCpuDispatch.cmake), so no inline
// function compiled here for, say, AVX-512 can be picked by the linker for code that runs on an older CPU.
#include <string_view>

#include <swinfer/swinfer.hpp>

#include <swinfer/runtime/cpu_levels.hpp>

namespace {

constexpr std::string_view precisions = SWINFER_CPU_LEVEL_PRECISIONS;

}  // namespace

/// The model for the request, or null when this level leaves its precision to a level below (a level that compiles
/// every precision reports an unknown name or an unsupported layout as make_network does).
extern "C" swinfer::network* SWINFER_CPU_LEVEL_FACTORY(const swinfer::runtime::cpu_network_request& r) {
  if constexpr (precisions == "all") {
    return swinfer::make_network<swinfer::backend::cpu>(r.choice, r.config, r.weights, r.options, r.weights_name)
        .release();
  } else {
    swinfer::network* made = nullptr;
    swinfer::precision_tags::visit(r.choice.precision, [&]<class P>(P) {
      if constexpr (swinfer::runtime::names_precision(precisions, swinfer::precision_traits<P>::name)) {
        made = swinfer::detail::make_network_pl<swinfer::backend::cpu, P>(r.choice, r.config, r.weights, r.options,
                                                                          r.weights_name)
                   .release();
      }
    });
    return made;
  }
}

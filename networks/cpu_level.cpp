// swinfer networks: the cpu backend's models compiled for one x86-64 level (SWINFER_CPU_DISPATCH). Compiled once per
// level with that level's -march/-m flags and SWINFER_CPU_LEVEL_FACTORY naming its factory; the object is then linked
// alone (ld -r) and every symbol but the factory made local (cmake/SwinferCpuDispatch.cmake), so no inline function
// compiled here for, say, AVX-512 can be picked by the linker for code that runs on an older CPU.
#include <swinfer/swinfer.hpp>

#include "cpu_levels.hpp"

extern "C" swinfer::network* SWINFER_CPU_LEVEL_FACTORY(const swinfer_cli::cpu_network_request& r) {
  return swinfer::make_network<swinfer::backend::cpu>(r.choice, r.config, r.weights, r.options, r.weights_name)
      .release();
}

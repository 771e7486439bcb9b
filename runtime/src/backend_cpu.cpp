// swinfer runtime: the cpu backend's models (every precision and layout it implements), compiled for the build
// machine (-march=native); cpu_dispatch.cpp replaces this file in builds with kernels chosen at run time.
#include <swinfer/swinfer.hpp>

#include <swinfer/runtime/backends.hpp>
#include <swinfer/runtime/cpu_levels.hpp>

namespace swinfer::runtime {

std::span<const cpu_kernel_level> cpu_kernel_levels() { return {}; }

std::unique_ptr<swinfer::network> make_backend_network(swinfer::backend::cpu, const swinfer::network_choice& choice,
                                                       const swinfer::swin_unetr_config& config,
                                                       const swinfer::state_dict& weights,
                                                       const swinfer::backend_options<swinfer::backend::cpu>& options,
                                                       const std::string& weights_name) {
  return swinfer::make_network<swinfer::backend::cpu>(choice, config, weights, options, weights_name);
}

}  // namespace swinfer::runtime

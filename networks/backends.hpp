// swinfer networks: building a network for a backend named at run time. Each backend is instantiated in its own
// translation unit so the heavy templates compile in parallel and only once.
#pragma once

#include <memory>

#include <swinfer/model/network.hpp>

namespace swinfer_cli {

std::unique_ptr<swinfer::network> make_cpu_network(const swinfer::network_choice&, const swinfer::swin_unetr_config&,
                                                   const swinfer::state_dict&, const swinfer::engine_options&,
                                                   const std::string& weights_name);
std::unique_ptr<swinfer::network> make_onednn_network(const swinfer::network_choice&,
                                                      const swinfer::swin_unetr_config&, const swinfer::state_dict&,
                                                      const swinfer::engine_options&, const std::string& weights_name);
/// The hip (GPU) backend's models (backend_hip.cpp, built when SWINFER_HAS_HIP). Constructing one without a usable
/// GPU throws swinfer::error "no usable GPU: <the runtime's reason> ...".
std::unique_ptr<swinfer::network> make_hip_network(const swinfer::network_choice&, const swinfer::swin_unetr_config&,
                                                   const swinfer::state_dict&, const swinfer::engine_options&,
                                                   const std::string& weights_name);

/// Dispatches on choice.backend; a backend this build lacks is an error saying how to get it.
inline std::unique_ptr<swinfer::network> make_network(const swinfer::network_choice& choice,
                                                      const swinfer::swin_unetr_config& config,
                                                      const swinfer::state_dict& weights,
                                                      const swinfer::engine_options& options,
                                                      const std::string& weights_name) {
  if (choice.backend == "cpu") return make_cpu_network(choice, config, weights, options, weights_name);
  if (choice.backend == "onednn") {
#ifdef SWINFER_HAS_ONEDNN
    return make_onednn_network(choice, config, weights, options, weights_name);
#else
    swinfer::detail::fail("this swinfer was built without the onednn backend (configure with -DSWINFER_WITH_ONEDNN=ON)");
#endif
  }
  if (choice.backend == "hip") {
#ifdef SWINFER_HAS_HIP
    return make_hip_network(choice, config, weights, options, weights_name);
#else
    swinfer::detail::fail("this swinfer was built without the hip GPU backend (configure with "
                          "-DSWINFER_GPU_PLATFORM=nvidia or -DSWINFER_GPU_PLATFORM=amd; see docs/gpu.md)");
#endif
  }
  swinfer::detail::fail("unknown backend '", choice.backend, "' (use cpu, onednn or hip)");
}

}  // namespace swinfer_cli

// swinfer runtime (the swinfer::runtime library): building a network for a backend named at run time. Each backend
// is instantiated in its own translation unit of the library, so the heavy templates compile in parallel and once,
// and a program that links the library compiles none of them.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <type_traits>

#include <swinfer/backend/cpu/options.hpp>
#include <swinfer/core/tag_list.hpp>
#include <swinfer/model/network.hpp>
#ifdef SWINFER_HAS_HIP
#include <swinfer/backend/hip/options.hpp>
#endif

namespace swinfer::runtime {

/// \brief What make_network builds a network named at run time with: the options every backend takes (this struct's
/// engine_options part) and the cpu and hip backends' own settings (onednn has none). The common fields of the
/// nested backend options are not read: each backend gets this struct's.
struct network_options : swinfer::engine_options {
  network_options() = default;
  network_options(const swinfer::engine_options& common) : engine_options(common) {}  // NOLINT: implicit on purpose
  swinfer::backend_options<swinfer::backend::cpu> cpu;
#ifdef SWINFER_HAS_HIP
  swinfer::backend_options<swinfer::backend::hip> hip;
#endif

  /// Backend B's options: its own settings from here, the common part from this struct.
  template <class Own>
  Own with_common(Own own) const {
    static_cast<swinfer::engine_options&>(own) = *this;
    return own;
  }
};

/// One backend's models, every precision and layout it implements: src/backend_cpu.cpp, src/backend_onednn.cpp
/// (built with SWINFER_HAS_ONEDNN) and src/backend_hip.cpp (built with SWINFER_HAS_HIP). Constructing a hip model
/// without a usable GPU throws swinfer::error "no usable GPU: <the runtime's reason> ...".
std::unique_ptr<swinfer::network> make_backend_network(swinfer::backend::cpu, const swinfer::network_choice&,
                                                       const swinfer::swin_unetr_config&, const swinfer::state_dict&,
                                                       const swinfer::backend_options<swinfer::backend::cpu>&,
                                                       const std::string& weights_name);
std::unique_ptr<swinfer::network> make_backend_network(swinfer::backend::onednn, const swinfer::network_choice&,
                                                       const swinfer::swin_unetr_config&, const swinfer::state_dict&,
                                                       const swinfer::engine_options&, const std::string& weights_name);
#ifdef SWINFER_HAS_HIP
std::unique_ptr<swinfer::network> make_backend_network(swinfer::backend::hip, const swinfer::network_choice&,
                                                       const swinfer::swin_unetr_config&, const swinfer::state_dict&,
                                                       const swinfer::backend_options<swinfer::backend::hip>&,
                                                       const std::string& weights_name);
#endif

#ifdef SWINFER_HAS_HIP
/// GPUs the hip backend can use on this machine: 0 without one, or in a build without the hip backend. Starts the
/// GPU runtime, which does not survive fork(): a process that forks workers leaves this to them.
int visible_gpu_count();
/// Opens or closes the GPU profiler's collection range around timed work (hip::set_profiler_range); without the
/// hip backend, nothing.
void set_gpu_profiler_range(bool open);
/// The most device memory swinfer's tensors, weights and scratch held at once on any GPU since the last
/// reset_gpu_memory_peak (hip::device_memory), in MiB; -1 without the hip backend.
double gpu_memory_peak_mib();
void reset_gpu_memory_peak();
#else
inline int visible_gpu_count() { return 0; }
inline void set_gpu_profiler_range(bool) {}
inline double gpu_memory_peak_mib() { return -1.0; }
inline void reset_gpu_memory_peak() {}
#endif

/// Empty when this build has backend B; otherwise why not and how to get it.
template <class B>
inline constexpr std::string_view missing_backend{};
#ifndef SWINFER_HAS_ONEDNN
template <>
inline constexpr std::string_view missing_backend<swinfer::backend::onednn> =
    "this swinfer was built without the onednn backend (configure with -DSWINFER_WITH_ONEDNN=ON)";
#endif
#ifndef SWINFER_HAS_HIP
template <>
inline constexpr std::string_view missing_backend<swinfer::backend::hip> =
    "this swinfer was built without the hip GPU backend (configure with -DSWINFER_GPU_PLATFORM=nvidia or "
    "-DSWINFER_GPU_PLATFORM=amd; see docs/gpu.md)";
#endif

/// Dispatches on choice.backend; a backend this build lacks is an error saying how to get it.
inline std::unique_ptr<swinfer::network> make_network(const swinfer::network_choice& choice,
                                                      const swinfer::swin_unetr_config& config,
                                                      const swinfer::state_dict& weights,
                                                      const network_options& options,
                                                      const std::string& weights_name) {
  std::unique_ptr<swinfer::network> made;
  const bool known = swinfer::backend_tags::visit(choice.backend, [&]<class B>(B tag) {
    if constexpr (std::is_same_v<B, swinfer::backend::cpu>) {
      made = make_backend_network(tag, choice, config, weights, options.with_common(options.cpu), weights_name);
#ifdef SWINFER_HAS_HIP
    } else if constexpr (std::is_same_v<B, swinfer::backend::hip>) {
      made = make_backend_network(tag, choice, config, weights, options.with_common(options.hip), weights_name);
#endif
    } else if constexpr (missing_backend<B>.empty()) {
      made = make_backend_network(tag, choice, config, weights, static_cast<const swinfer::engine_options&>(options),
                                  weights_name);
    } else {
      swinfer::detail::fail(missing_backend<B>);
    }
  });
  if (!known) {
    swinfer::detail::fail("unknown backend '", choice.backend, "' (use ", swinfer::backend_tags::joined(), ")");
  }
  return made;
}

}  // namespace swinfer::runtime

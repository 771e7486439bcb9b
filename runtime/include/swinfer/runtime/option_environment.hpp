// swinfer runtime: where SWINFER_* environment variables become backend options. The library reads no environment;
// the tool, the benchmarks and the GPU tests call these at their edge, and `swinfer --help` prints option_variables.
// The variables are the named options (named_options.hpp) that have one; a value that is not accepted is an error
// naming the variable, the value and what is accepted.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <swinfer/runtime/named_options.hpp>

namespace swinfer::runtime {

/// One variable the tool reads, for --help.
struct option_variable {
  std::string name;
  std::string values;
  std::string meaning;
};

/// Every variable that fills an option (SWINFER_CPU_LEVEL is read by the cpu level choice, src/cpu_levels.cpp).
inline std::vector<option_variable> option_variables() {
  std::vector<option_variable> variables;
  for (const auto& option : named_options()) {
    if (!option.variable.empty()) {
      variables.push_back({std::string(option.variable), option.values, option.meaning});
    }
  }
  variables.push_back(
      {"SWINFER_CPU_LEVEL", "a kernel level of this build", "cpu: the highest kernel level to use (as --cpu-level)"});
  return variables;
}

namespace detail {

/// The variable's value; empty where unset.
inline std::string variable(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

}  // namespace detail

/// $XDG_CACHE_HOME/swinfer/gpu-kernels.json, else $HOME/.cache/swinfer/gpu-kernels.json, else (no home) in the
/// system's temporary folder: where the tool keeps GPU kernel tuning between runs.
inline std::filesystem::path default_tuning_file() {
  std::filesystem::path dir = detail::variable("XDG_CACHE_HOME");
  const std::string home = detail::variable("HOME");
  if (dir.empty() && !home.empty()) dir = std::filesystem::path(home) / ".cache";
  if (dir.empty()) dir = std::filesystem::temp_directory_path();
  return dir / "swinfer" / "gpu-kernels.json";
}

/// `o` with `backend`'s named options that SWINFER_* variables set (the hip tuning file defaults to
/// default_tuning_file()).
inline network_options options_from_environment(std::string_view backend, network_options o) {
#ifdef SWINFER_HAS_HIP
  if (backend == "hip") o.hip.tuning_file = default_tuning_file();
#endif
  for (const auto& option : named_options()) {
    if (option.backend != backend || option.variable.empty()) continue;
    const std::string name(option.variable);
    if (const std::string value = detail::variable(name.c_str()); !value.empty()) option.set(o, value, name);
  }
  return o;
}

/// The cpu backend's own options as the SWINFER_CPU_* variables set them, on top of `o`.
inline swinfer::backend_options<swinfer::backend::cpu> cpu_options_from_environment(
    swinfer::backend_options<swinfer::backend::cpu> o = {}) {
  network_options all;
  all.cpu = o;
  return options_from_environment("cpu", std::move(all)).cpu;
}

#ifdef SWINFER_HAS_HIP
/// The hip backend's own options as the SWINFER_GPU_* variables set them, on top of `o`.
inline swinfer::backend_options<swinfer::backend::hip> hip_options_from_environment(
    swinfer::backend_options<swinfer::backend::hip> o = {}) {
  network_options all;
  all.hip = o;
  return options_from_environment("hip", std::move(all)).hip;
}
#endif

/// `common` with each backend's own options as the SWINFER_* variables set them (what the tool and the benchmarks
/// build networks with).
inline network_options network_options_from_environment(const swinfer::engine_options& common) {
  network_options o = common;
  o = options_from_environment("cpu", std::move(o));
#ifdef SWINFER_HAS_HIP
  o = options_from_environment("hip", std::move(o));
#endif
  return o;
}

}  // namespace swinfer::runtime

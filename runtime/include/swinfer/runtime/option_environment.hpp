// swinfer runtime: the one place where SWINFER_* environment variables become backend options. The library reads no
// environment; the tool, the benchmarks, the GPU tests (and the Python module) call these at their edge, and
// `swinfer --help` prints option_variables. A value that is not accepted is an error naming the variable, the value
// and what is accepted.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <swinfer/backend/cpu/conv3d.hpp>
#include <swinfer/backend/cpu/options.hpp>
#include <swinfer/core/error.hpp>
#include <swinfer/runtime/backends.hpp>
#ifdef SWINFER_HAS_HIP
#include <swinfer/backend/hip/options.hpp>
#endif

namespace swinfer::runtime {

namespace detail {

/// "a, b, c" of a table's names.
template <class Table>
std::string joined_names(const Table& table) {
  std::string joined;
  for (const auto& [name, choice] : table) joined += (joined.empty() ? "" : ", ") + std::string(name);
  return joined;
}

}  // namespace detail

/// One variable the tool reads, for --help.
struct option_variable {
  std::string name;
  std::string values;
  std::string meaning;
};

/// Every variable that fills an option (SWINFER_CPU_LEVEL is read by the cpu level choice, src/cpu_levels.cpp).
inline std::vector<option_variable> option_variables() {
  return {
      {"SWINFER_CPU_CONV3D", swinfer::cpu::conv3d_implementations<float>::joined(),
       "cpu: the 3-D convolutions' implementation (auto: the first in that order that can run and pays)"},
      {"SWINFER_CPU_LEVEL", "a kernel level of this build", "cpu: the highest kernel level to use (as --cpu-level)"},
#ifdef SWINFER_HAS_HIP
      {"SWINFER_GPU_DEVICE", "an index", "hip: the GPU to run on (default 0)"},
      {"SWINFER_GPU_CONV", detail::joined_names(swinfer::hip::conv_kernel_names), "hip: the 3x3x3 convolutions' kernel"},
      {"SWINFER_GPU_ATTENTION", detail::joined_names(swinfer::hip::attention_kernel_names), "hip: the window attention's kernel"},
      {"SWINFER_GPU_MATRIX_CORES", "0", "hip: float32 FMA instead of the matrix cores"},
      {"SWINFER_GPU_TUNE", detail::joined_names(swinfer::hip::tuning_mode_names),
       "hip: kernel tuning (default on on a GPU, off on the emulator)"},
      {"SWINFER_GPU_TUNING_FILE", "a path",
       "hip: where tuning keeps its measurements (default $XDG_CACHE_HOME/swinfer/gpu-kernels.json, else "
       "~/.cache/swinfer/gpu-kernels.json)"},
#endif
  };
}

namespace detail {

/// The variable's value; empty where unset.
inline std::string variable(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

/// `value` among `names` (pairs of a name and its choice); else an error naming the variable and what is accepted.
template <class Choice, std::size_t N>
Choice named_choice(const char* variable, const std::string& value,
                    const std::pair<std::string_view, Choice> (&names)[N], const char* what) {
  std::string accepted;
  for (const auto& [name, choice] : names) {
    if (value == name) return choice;
    accepted += (accepted.empty() ? "" : ", ") + std::string(name);
  }
  swinfer::detail::fail(variable, "=", value, " is not ", what, ": use one of ", accepted);
}

}  // namespace detail

/// The cpu backend's own options as SWINFER_CPU_CONV3D sets them, on top of `o`.
inline swinfer::backend_options<swinfer::backend::cpu> cpu_options_from_environment(
    swinfer::backend_options<swinfer::backend::cpu> o = {}) {
  using conv3d_list = swinfer::cpu::conv3d_implementations<float>;  // the names are the same for every storage
  const std::string v = detail::variable("SWINFER_CPU_CONV3D");
  if (!v.empty() && !conv3d_list::parse(v, o.kernels.conv3d)) {
    swinfer::detail::fail("SWINFER_CPU_CONV3D=", v, " is not a cpu conv3d implementation: use one of ",
                          conv3d_list::joined());
  }
  return o;
}

/// $XDG_CACHE_HOME/swinfer/gpu-kernels.json, else $HOME/.cache/swinfer/gpu-kernels.json, else (no home) in the
/// system's temporary folder: where the tool keeps GPU kernel tuning between runs.
inline std::filesystem::path default_tuning_file() {
  std::filesystem::path dir = detail::variable("XDG_CACHE_HOME");
  const std::string home = detail::variable("HOME");
  if (dir.empty() && !home.empty()) dir = std::filesystem::path(home) / ".cache";
  if (dir.empty()) dir = std::filesystem::temp_directory_path();
  return dir / "swinfer" / "gpu-kernels.json";
}

#ifdef SWINFER_HAS_HIP
/// The hip backend's own options as the SWINFER_GPU_* variables set them, on top of `o` (the tuning file defaults
/// to default_tuning_file()).
inline swinfer::backend_options<swinfer::backend::hip> hip_options_from_environment(
    swinfer::backend_options<swinfer::backend::hip> o = {}) {
  if (const std::string v = detail::variable("SWINFER_GPU_DEVICE"); !v.empty()) {
    char* end = nullptr;
    const long index = std::strtol(v.c_str(), &end, 10);
    if (*end != '\0' || index < 0 || index > 1 << 16) {
      swinfer::detail::fail("SWINFER_GPU_DEVICE=", v, " is not a device index (0, 1, ...)");
    }
    o.device = static_cast<int>(index);
  }
  if (const std::string v = detail::variable("SWINFER_GPU_CONV"); !v.empty()) {
    o.kernels.conv = detail::named_choice("SWINFER_GPU_CONV", v, swinfer::hip::conv_kernel_names,
                                          "a convolution kernel choice");
  }
  if (const std::string v = detail::variable("SWINFER_GPU_ATTENTION"); !v.empty()) {
    o.kernels.attention = detail::named_choice("SWINFER_GPU_ATTENTION", v, swinfer::hip::attention_kernel_names,
                                               "a window attention kernel choice");
  }
  if (detail::variable("SWINFER_GPU_MATRIX_CORES") == "0") o.matrix_cores = false;
  if (const std::string v = detail::variable("SWINFER_GPU_TUNE"); !v.empty()) {
    o.tuning = detail::named_choice("SWINFER_GPU_TUNE", v, swinfer::hip::tuning_mode_names, "a kernel tuning mode");
  }
  const std::string file = detail::variable("SWINFER_GPU_TUNING_FILE");
  o.tuning_file = file.empty() ? default_tuning_file() : std::filesystem::path(file);
  return o;
}
#endif

/// `common` with each backend's own options as the SWINFER_* variables set them (what the tool and the benchmarks
/// build networks with).
inline network_options network_options_from_environment(const swinfer::engine_options& common) {
  network_options o = common;
  o.cpu = cpu_options_from_environment();
#ifdef SWINFER_HAS_HIP
  o.hip = hip_options_from_environment();
#endif
  return o;
}

}  // namespace swinfer::runtime

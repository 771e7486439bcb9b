// swinfer runtime: the backends' own options by name, for front ends that take them as text (the tool's SWINFER_*
// variables, the Python module's keyword arguments). One table: each option's backend, key, accepted values and
// setter; a value that is not accepted is an error naming where it came from, the value and what is accepted.
#pragma once

#include <cstdlib>
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

/// `value` among `names` (pairs of a name and its choice); else an error naming `source` and what is accepted.
template <class Choice, std::size_t N>
Choice named_choice(std::string_view source, const std::string& value,
                    const std::pair<std::string_view, Choice> (&names)[N], const char* what) {
  for (const auto& [name, choice] : names) {
    if (value == name) return choice;
  }
  swinfer::detail::fail(source, "=", value, " is not ", what, ": use one of ", joined_names(names));
}

inline constexpr std::pair<std::string_view, swinfer::bf16_weight_mode> bf16_weight_names[] = {
    {"exact", swinfer::bf16_weight_mode::exact}, {"rounded", swinfer::bf16_weight_mode::rounded}};

}  // namespace detail

/// \brief One backend option settable by name.
struct named_option {
  std::string_view backend;   ///< cpu or hip (onednn has no options of its own)
  std::string_view key;       ///< the Python keyword
  std::string_view variable;  ///< the SWINFER_* variable the tool reads it from; empty: not read from the environment
  std::string values;         ///< what it accepts, for help texts
  std::string meaning;
  /// Sets the option in `o` from `value`; `source` names where the value came from in an error.
  void (*set)(network_options& o, const std::string& value, std::string_view source);
};

/// Every backend option a front end can set by name.
inline const std::vector<named_option>& named_options() {
  static const std::vector<named_option> table = {
      {"cpu", "conv3d", "SWINFER_CPU_CONV3D", swinfer::cpu::conv3d_implementations<float>::joined(),
       "cpu: the 3-D convolutions' implementation (auto: the first in that order that can run and pays)",
       [](network_options& o, const std::string& value, std::string_view source) {
         using list = swinfer::cpu::conv3d_implementations<float>;  // the names are the same for every storage
         if (!list::parse(value, o.cpu.kernels.conv3d)) {
           swinfer::detail::fail(source, "=", value, " is not a cpu conv3d implementation: use one of ",
                                 list::joined());
         }
       }},
      {"cpu", "bf16_weights", "", detail::joined_names(detail::bf16_weight_names),
       "cpu: bf16 models keep exact weights or round them to bf16 (as --bf16-weights)",
       [](network_options& o, const std::string& value, std::string_view source) {
         o.cpu.bf16_weights = detail::named_choice(source, value, detail::bf16_weight_names, "a bf16 weight mode");
       }},
#ifdef SWINFER_HAS_HIP
      {"hip", "device", "SWINFER_GPU_DEVICE", "an index", "hip: the GPU to run on (default 0)",
       [](network_options& o, const std::string& value, std::string_view source) {
         char* end = nullptr;
         const long index = std::strtol(value.c_str(), &end, 10);
         if (value.empty() || *end != '\0' || index < 0 || index > 1 << 16) {
           swinfer::detail::fail(source, "=", value, " is not a device index (0, 1, ...)");
         }
         o.hip.device = static_cast<int>(index);
       }},
      {"hip", "conv", "SWINFER_GPU_CONV", detail::joined_names(swinfer::hip::conv_kernel_names),
       "hip: the 3x3x3 convolutions' kernel",
       [](network_options& o, const std::string& value, std::string_view source) {
         o.hip.kernels.conv =
             detail::named_choice(source, value, swinfer::hip::conv_kernel_names, "a convolution kernel choice");
       }},
      {"hip", "attention", "SWINFER_GPU_ATTENTION", detail::joined_names(swinfer::hip::attention_kernel_names),
       "hip: the window attention's kernel",
       [](network_options& o, const std::string& value, std::string_view source) {
         o.hip.kernels.attention = detail::named_choice(source, value, swinfer::hip::attention_kernel_names,
                                                        "a window attention kernel choice");
       }},
      {"hip", "matrix_cores", "SWINFER_GPU_MATRIX_CORES", "0 or 1", "hip: 0 runs float32 FMA instead of the matrix cores",
       [](network_options& o, const std::string& value, std::string_view source) {
         if (value != "0" && value != "1") swinfer::detail::fail(source, "=", value, " is not 0 or 1");
         o.hip.matrix_cores = value == "1";
       }},
      {"hip", "tuning", "SWINFER_GPU_TUNE", detail::joined_names(swinfer::hip::tuning_mode_names),
       "hip: kernel tuning (default on on a GPU, off on the emulator)",
       [](network_options& o, const std::string& value, std::string_view source) {
         o.hip.tuning = detail::named_choice(source, value, swinfer::hip::tuning_mode_names, "a kernel tuning mode");
       }},
      {"hip", "tuning_file", "SWINFER_GPU_TUNING_FILE", "a path",
       "hip: where tuning keeps its measurements (the tool's default: $XDG_CACHE_HOME/swinfer/gpu-kernels.json, else "
       "~/.cache/swinfer/gpu-kernels.json; empty: in memory)",
       [](network_options& o, const std::string& value, std::string_view) { o.hip.tuning_file = value; }},
#endif
  };
  return table;
}

/// Sets `backend`'s option `key` to `value`; an unknown key is an error listing the backend's keys.
inline void set_named_option(network_options& o, std::string_view backend, std::string_view key,
                             const std::string& value) {
  std::string keys;
  for (const auto& option : named_options()) {
    if (option.backend != backend) continue;
    if (option.key == key) return option.set(o, value, key);
    keys += (keys.empty() ? "" : ", ") + std::string(option.key);
  }
  swinfer::detail::fail("the ", backend, " backend has no option '", key, "'",
                        keys.empty() ? std::string(" (it has none)") : " (it has " + keys + ")");
}

}  // namespace swinfer::runtime

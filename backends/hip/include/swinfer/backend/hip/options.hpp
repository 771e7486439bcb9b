// swinfer hip backend: its options (engine_options plus the GPU's own), set in code. Nothing here is read from the
// environment; the tool and the Python module map their SWINFER_GPU_* variables onto these (one table, listed in
// `swinfer --help`).
#pragma once

#include <filesystem>
#include <optional>
#include <string_view>

#include "swinfer/backend/hip/api.hpp"
#include "swinfer/core/backend.hpp"
#include "swinfer/core/options.hpp"

namespace swinfer {
namespace hip {

/// Kernel tuning of the 3x3x3 convolutions: on (shapes the tuning file does not know are measured and added), off
/// (the built-in choice by volume; no file is read or written), refresh (every shape this context meets is measured
/// again and its entry rewritten).
enum class tuning_mode { off, on, refresh };

/// The names the tool, the Python module and reports use, first the default.
inline constexpr std::pair<std::string_view, conv_kernel_choice> conv_kernel_names[] = {
    {"auto", conv_kernel_choice::automatic}, {"halo", conv_kernel_choice::halo},
    {"gemm", conv_kernel_choice::gemm},      {"wgmma", conv_kernel_choice::wgmma},
    {"direct", conv_kernel_choice::direct}};
inline constexpr std::pair<std::string_view, attention_kernel_choice> attention_kernel_names[] = {
    {"auto", attention_kernel_choice::automatic}, {"fma", attention_kernel_choice::fma},
    {"mma", attention_kernel_choice::mma}};
inline constexpr std::pair<std::string_view, tuning_mode> tuning_mode_names[] = {
    {"on", tuning_mode::on}, {"off", tuning_mode::off}, {"refresh", tuning_mode::refresh}};

}  // namespace hip

/// The hip backend's options.
template <>
struct backend_options<backend::hip> : engine_options {
  backend_options() = default;
  backend_options(const engine_options& common) : engine_options(common) {}  // NOLINT: implicit on purpose
  /// The GPU's index among the visible ones.
  int device = 0;
  /// The kernels where several can run an op (automatic: by shape, or as kernel tuning measured).
  hip::kernel_choices kernels;
  /// fp16/bf16/int8 products on the matrix cores where the device has them and their start-up self-test agrees with
  /// float32 FMA; false: float32 FMA throughout.
  bool matrix_cores = true;
  /// Kernel tuning; unset: on on a GPU, off on the CPU emulator (whose times say nothing about a GPU).
  std::optional<hip::tuning_mode> tuning;
  /// Where tuning keeps its measurements between runs; empty: in this context's memory only. The tool and the
  /// Python module default it to $XDG_CACHE_HOME/swinfer/gpu-kernels.json (else ~/.cache/...).
  std::filesystem::path tuning_file;
};

}  // namespace swinfer

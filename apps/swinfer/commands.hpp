// swinfer CLI: the subcommands and the options they share.
#pragma once

#include <algorithm>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>
#include <swinfer/core/options.hpp>
#include <swinfer/core/tag_list.hpp>
#include <swinfer/core/tensor.hpp>
#include <swinfer/io/npy.hpp>
#include <swinfer/model/int8_calibration.hpp>
#include <swinfer/model/load.hpp>
#include <swinfer/runtime/backends.hpp>
#include <swinfer/runtime/int8_choice.hpp>
#include <swinfer/runtime/option_environment.hpp>

#include "network_flags.hpp"

namespace swinfer_tool {

/// Options naming a model: checkpoint, optional config, backend, precision, layout, threads, bf16 weights, int8
/// calibration.
struct model_options {
  std::string model;
  std::string config;
  std::string backend{swinfer::tag_name<swinfer::backend::cpu>()};
  std::string precision{swinfer::tag_name<swinfer::precision::fp32>()};
  std::string layout{swinfer::tag_name<swinfer::layout::ndhwc>()};
  int threads = 0;
  swinfer::bf16_weight_mode bf16_weights = swinfer::bf16_weight_mode::exact;
  std::string calibration;
  bool int8_dynamic = false;
  std::string cpu_level;

  /// The engine options for `loaded` (the model these options named): its own calibration (an int8 model file,
  /// which runs with --precision int8 only), the --calibration file or --int8-dynamic for int8 (either with another
  /// precision, or both, is an error).
  /// Each backend's own options come from the flags and the SWINFER_* variables (option_environment.hpp).
  swinfer::runtime::network_options engine(const swinfer::loaded_model& loaded) const {
    auto e = swinfer::runtime::network_options_from_environment(swinfer::engine_options{threads});
    e.cpu.bf16_weights = bf16_weights;
    swinfer::runtime::apply_int8_choice(e, loaded, model, precision, {calibration, int8_dynamic},
                                        {"--calibration", "--int8-dynamic", "--precision"});
    return e;
  }
};

/// Adds --model/--config (and, with `runtime`, --backend/--precision/--layout/--threads) to a subcommand.
void add_model_options(CLI::App& cmd, model_options& o, bool runtime);

/// An (N, C, D, H, W) float32 .npy as an ncdhw tensor; any other rank is an error naming the file and shape.
inline swinfer::tensor<float> read_npy_volume(const std::string& path) {
  const auto a = swinfer::read_npy(path);
  if (a.shape.size() != 5) {
    swinfer::detail::fail(path, ": expected a 5-D (N, C, D, H, W) array, got shape ", swinfer::shape_string(a.shape));
  }
  swinfer::tensor<float> t({a.shape[0], a.shape[1], a.shape[2], a.shape[3], a.shape[4]}, swinfer::layout_kind::ncdhw);
  std::copy(a.data.begin(), a.data.end(), t.data());
  return t;
}

void add_crosscheck_command(CLI::App& app);
void add_forward_command(CLI::App& app);
void add_info_command(CLI::App& app);
void add_quantize_command(CLI::App& app);
void add_calibrate_command(CLI::App& app);
void add_segment_command(CLI::App& app);

}  // namespace swinfer_tool

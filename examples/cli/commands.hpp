// swinfer CLI: the subcommands and the options they share.
#pragma once

#include <algorithm>
#include <map>
#include <string>

#include <CLI/CLI.hpp>
#include <swinfer/core/options.hpp>
#include <swinfer/core/tensor.hpp>
#include <swinfer/io/npy.hpp>

namespace swinfer_cli {

/// Options naming a model: checkpoint, optional config, backend, precision, layout, threads, bf16 weights.
struct model_options {
  std::string model;
  std::string config;
  std::string backend = "cpu";
  std::string precision = "fp32";
  std::string layout = "ndhwc";
  int threads = 0;
  swinfer::bf16_weight_mode bf16_weights = swinfer::bf16_weight_mode::exact;

  swinfer::engine_options engine() const { return {threads, bf16_weights}; }
};

/// Adds --bf16-weights exact|rounded (swinfer::bf16_weight_mode) to a command.
inline void add_bf16_weights_option(CLI::App& cmd, swinfer::bf16_weight_mode& mode) {
  const std::map<std::string, swinfer::bf16_weight_mode> modes = {{"exact", swinfer::bf16_weight_mode::exact},
                                                                  {"rounded", swinfer::bf16_weight_mode::rounded}};
  cmd.add_option("--bf16-weights", mode,
                 "bf16 on the cpu backend: exact weights (default; bf16 only where activations are stored) or "
                 "weights rounded to bf16 (convolutions twice as fast on CPUs with AVX512_BF16 and no AMX, ~15% more error)")
      ->transform(CLI::CheckedTransformer(modes, CLI::ignore_case));
}


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
void add_segment_command(CLI::App& app);

}  // namespace swinfer_cli

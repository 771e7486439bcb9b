// swinfer CLI: the subcommands and the options they share.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace swinfer_cli {

/// Options naming a model: checkpoint, optional config, backend, precision, layout, threads.
struct model_options {
  std::string model;
  std::string config;
  std::string backend = "cpu";
  std::string precision = "fp32";
  std::string layout = "ndhwc";
  int threads = 0;
};

/// Adds --model/--config (and, with `runtime`, --backend/--precision/--layout/--threads) to a subcommand.
void add_model_options(CLI::App& cmd, model_options& o, bool runtime);

void add_forward_command(CLI::App& app);
void add_info_command(CLI::App& app);
void add_segment_command(CLI::App& app);

}  // namespace swinfer_cli

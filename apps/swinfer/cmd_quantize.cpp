// swinfer quantize: writes a model's int8 model file (docs/int8.md): the weights its calibration quantizes as int8
// with their per-channel scales, the rest as they are, and the calibration and configuration in its metadata, so
// `--model M.int8.safetensors --precision int8` runs without a calibration file.
#include <cstdio>
#include <filesystem>
#include <memory>

#include <swinfer/model/int8_model_file.hpp>
#include <swinfer/model/load.hpp>

#include "commands.hpp"

namespace swinfer_tool {
namespace {

struct quantize_options {
  model_options model;
  std::string output;
  bool quiet = false;
};

void run_quantize(const quantize_options& o) {
  const auto loaded = swinfer::load_model(o.model.model, o.model.config);
  if (loaded.calibration) {
    swinfer::detail::fail("'", o.model.model, "' is already an int8 model file; quantize the float checkpoint");
  }
  const swinfer::int8_calibration calibration = swinfer::read_calibration(o.model.calibration);
  swinfer::save_int8_model(o.output, loaded.config, loaded.weights, calibration, o.model.model, o.model.calibration);
  if (!o.quiet) {
    const auto in = std::filesystem::file_size(o.model.model), out = std::filesystem::file_size(o.output);
    std::fprintf(stderr, "swinfer quantize: %s -> %s, %zu of %zu products in int8, %.1f MB -> %.1f MB (%.3fx)\n",
                 o.model.model.c_str(), o.output.c_str(), calibration.quantized_points(), calibration.points.size(),
                 double(in) / 1e6, double(out) / 1e6, double(out) / double(in));
  }
}

}  // namespace

void add_quantize_command(CLI::App& app) {
  auto o = std::make_shared<quantize_options>();
  CLI::App* cmd = app.add_subcommand(
      "quantize", "write an int8 model file: int8 weights with their scales and the calibration, for --precision int8");
  add_model_options(*cmd, o->model, false);
  cmd->add_option("--calibration", o->model.calibration, "the int8 calibration of this model (`swinfer calibrate`)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--output,-o", o->output, "the int8 model file to write (.safetensors)")->required();
  cmd->add_flag("--quiet,-q", o->quiet, "no summary");
  cmd->callback([o] { run_quantize(*o); });
}

}  // namespace swinfer_tool

// swinfer calibrate: runs the float32 model over calibration volumes (the same preprocessing and sliding window as
// segment) and writes the int8 calibration file that --precision int8 --calibration reads (docs/int8.md).
#include <cstdio>
#include <limits>
#include <memory>
#include <string>

#include <swinfer/inference/int8_calibrator.hpp>
#include <swinfer/io/nifti.hpp>
#include <swinfer/model/load.hpp>
#include <swinfer/preprocess/pipeline.hpp>
#include <swinfer/runtime/backends.hpp>

#include "commands.hpp"
#include "input_files.hpp"
#include "preprocess_flags.hpp"
#include "progress.hpp"
#include "window_flags.hpp"

namespace swinfer_tool {
namespace {

struct calibrate_options {
  model_options model;
  std::vector<std::string> inputs;
  std::string output;
  swinfer::calibration_method method;
  window_flags window;
  preprocess_flags preprocess;
  bool quiet = false;
};

/// Which points calibration left in float and why, and the largest error among those it kept in int8.
void report_fallbacks(const swinfer::int8_calibration& c) {
  std::size_t fell_back = 0;
  const swinfer::int8_point* worst = nullptr;
  const std::string* worst_name = nullptr;
  for (const auto& [name, p] : c.points) {
    if (!p.quantized) {
      std::fprintf(stderr, "  %s stays in float: its int8 error %.3g exceeds %.3g (largest |x| %.4g, scale %.4g)\n",
                   name.c_str(), double{p.error}, c.fallback_error, double{p.max_abs}, double{p.scale});
      ++fell_back;
    } else if (!worst || p.error > worst->error) {
      worst = &p;
      worst_name = &name;
    }
  }
  std::fprintf(stderr, "  %zu point(s) in int8, %zu left in float (int8 error above %.3g)", c.points.size() - fell_back,
               fell_back, c.fallback_error);
  if (worst) std::fprintf(stderr, "; largest int8 error %.3g at %s", double{worst->error}, worst_name->c_str());
  std::fprintf(stderr, "\n");
}

void run_calibrate(const calibrate_options& o) {
  o.method.check();
  const auto files = expand_inputs(o.inputs);
  const auto pipeline = o.preprocess.spec();
  const auto loaded = swinfer::load_model(o.model.model, o.model.config);
  // The float32 cpu model through swinfer::runtime, so a dispatch build calibrates on its best kernels.
  swinfer::int8_calibrator calibrator(
      swinfer::runtime::make_network({}, loaded.config, loaded.weights, o.model.engine(loaded), o.model.model),
      loaded.weights);
  if (!o.quiet) {
    std::fprintf(stderr, "swinfer calibrate: %zu volume(s), model %s, method %s, float32 on %s\n", files.size(),
                 o.model.model.c_str(), o.method.name.c_str(), calibrator.device().c_str());
  }
  const auto window = o.window.options(o.model.threads);
  for (const auto& file : files) {
    try {
      const swinfer::nifti_volume volume = swinfer::read_nifti(file);
      if (volume.channels() != loaded.config.in_channels) {
        swinfer::detail::fail("the image has ", volume.channels(), " channel(s) but the model takes ",
                              loaded.config.in_channels, " (in_channels)");
      }
      const auto prepared = swinfer::preprocess(
          swinfer::spatial_image{volume.data.clone(), swinfer::affine_from_rows(volume.affine())}, pipeline);
      const auto grid = swinfer::sliding_window_grid(prepared.image.data.shape(), window);
      progress_bar bar("  " + file.filename().string(), grid.count(), "windows", o.quiet);
      calibrator.add(prepared.image.data, window, file.filename().string(),
                     [&](std::int64_t done, std::int64_t) { bar.update(done); });
    } catch (const swinfer::error& e) {
      // Nothing is written: a calibration from fewer volumes than asked for would be silently different.
      swinfer::detail::fail(file.string(), ": ", e.what(), " (no calibration written)");
    }
  }
  std::unique_ptr<progress_bar> bar;  // made at the first point, when the count is known
  const swinfer::int8_calibration c =
      calibrator.finish(o.method, o.model.threads, [&](std::int64_t done, std::int64_t total) {
        if (!bar) bar = std::make_unique<progress_bar>("  int8 error per point", total, "points", o.quiet);
        bar->update(done);
      });
  swinfer::write_calibration(c, o.output);
  if (!o.quiet) {
    std::fprintf(stderr, "  -> %s: %zu quantization points from %zu volume(s)\n", o.output.c_str(), c.points.size(),
                 c.volumes.size());
    report_fallbacks(c);
  }
}

}  // namespace

void add_calibrate_command(CLI::App& app) {
  auto o = std::make_shared<calibrate_options>();
  CLI::App* cmd = app.add_subcommand(
      "calibrate", "make an int8 calibration: activation scales from the float32 model over calibration volumes");
  add_model_options(*cmd, o->model, false);
  cmd->add_option("--threads", o->model.threads, "worker threads (0: one per hardware thread)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--input,-i", o->inputs, "NIfTI calibration volume(s) or folder(s), never the volumes you test on")
      ->required();
  cmd->add_option("--output,-o", o->output, "calibration JSON to write (for --precision int8 --calibration)")
      ->required();
  cmd->add_option("--method", o->method.name,
                  "threshold per point: max, percentile (default; see --percentile) or mse")
      ->check(CLI::IsMember({"max", "percentile", "mse"}));
  cmd->add_option("--percentile", o->method.percentile, "percentile of |x| kept unclipped (default 99.99)");
  cmd->add_option("--fallback-error", o->method.fallback_error,
                  "leave in float a point whose int8 product's relative L2 error on the calibration sample exceeds "
                  "this (default 0.1; inf keeps every point in int8)")
      ->check(CLI::Range(std::numeric_limits<double>::denorm_min(), std::numeric_limits<double>::infinity()));
  add_window_options(*cmd, o->window, "Sliding window");
  add_preprocess_options(*cmd, o->preprocess, "Preprocessing (MONAI transforms; as for segment)");
  cmd->add_flag("--quiet,-q", o->quiet, "no progress or summary");
  cmd->callback([o] { run_calibrate(*o); });
}

}  // namespace swinfer_tool

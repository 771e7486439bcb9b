// swinfer: command-line front end (segment, forward, info). Errors go to stderr with a non-zero exit status.
#include <cstdio>
#include <exception>

#include <CLI/CLI.hpp>
#include <swinfer/swinfer.hpp>
#include <swinfer/runtime/cpu_levels.hpp>

#include "commands.hpp"
#include "swinfer/runtime/option_environment.hpp"
#include "window_flags.hpp"

namespace swinfer_tool {

void add_model_options(CLI::App& cmd, model_options& o, bool runtime) {
  cmd.add_option("--model,-m", o.model, "checkpoint: torch.save .pt/.pth or .safetensors")->required()->check(CLI::ExistingFile);
  cmd.add_option("--config,-c", o.config,
                 "JSON of MONAI SwinUNETR arguments (plus \"arch\": \"SwinFusionUNETR\" options) or a bundle network_def "
                 "(default: inferred from the weights)")
      ->check(CLI::ExistingFile);
  if (!runtime) return;
  cmd.add_option("--backend", o.backend,
                 swinfer::detail::concat("backend: ", swinfer::backend_tags::joined(), " (default ", o.backend, ")"))
      ->check(CLI::IsMember(swinfer::backend_tags::names()));
  cmd.add_option("--precision", o.precision,
                 swinfer::detail::concat("storage precision: ", swinfer::precision_tags::joined(), " (default ",
                                         o.precision, "); compute is always float32"))
      ->check(CLI::IsMember(swinfer::precision_tags::names()));
  cmd.add_option("--layout", o.layout,
                 swinfer::detail::concat("activation layout: ", swinfer::layout_tags::joined(), " (default ",
                                         o.layout, ")"))
      ->check(CLI::IsMember(swinfer::layout_tags::names()));
  cmd.add_option("--threads", o.threads, "worker threads (0: one per hardware thread)")
      ->check(checked_by<int>([](int v) { swinfer::check_thread_count(v, ""); }, swinfer::thread_count_range.str()));
  add_bf16_weights_option(cmd, o.bf16_weights);
  cmd.add_option("--calibration", o.calibration,
                 "int8 calibration file (from `swinfer calibrate`) for --precision int8")
      ->check(CLI::ExistingFile);
  cmd.add_flag("--int8-dynamic", o.int8_dynamic,
               "--precision int8 without calibration data: each convolution and transposed convolution quantizes its "
               "input with max|x| / 127 of that input, per window, each linear every row of its input with the "
               "row's own (docs/int8.md)");
  cmd.add_option("--cpu-level", o.cpu_level,
                 "cap the cpu backend's kernels at this level (a build with kernels chosen at run time: see "
                 "`swinfer info`; default: the best this CPU runs, or the environment variable SWINFER_CPU_LEVEL)")
      ->each([](const std::string& level) { swinfer::runtime::cap_cpu_kernel_level(level); });
}

}  // namespace swinfer_tool

int main(int argc, char** argv) {
  swinfer::reuse_freed_memory();  // windows and volumes allocate the same activations again and again
  CLI::App app{"swinfer: SwinUNETR and Swin Fusion UNETR inference without Python"};
  app.set_version_flag("--version", swinfer::version_string);
  app.require_subcommand(1);
  // The variables that fill backend options (option_environment.hpp), listed where a user looks for options.
  std::string variables = "\nEnvironment variables (backend options the flags do not cover):\n";
  for (const auto& v : swinfer::runtime::option_variables()) {
    variables += swinfer::detail::concat("  ", v.name, "=", v.values, "\n      ", v.meaning, "\n");
  }
  app.footer(variables);
  swinfer_tool::add_segment_command(app);
  swinfer_tool::add_forward_command(app);
  swinfer_tool::add_info_command(app);
  swinfer_tool::add_crosscheck_command(app);
  swinfer_tool::add_calibrate_command(app);
  swinfer_tool::add_quantize_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "swinfer: error: %s\n", e.what());
    return 1;
  }
  return 0;
}

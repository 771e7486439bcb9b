// swinfer forward: one network pass on an (N, C, D, H, W) float32 .npy, logits written the same way.
#include <chrono>
#include <cstdio>
#include <memory>

#include <swinfer/swinfer.hpp>
#include <swinfer/runtime/backends.hpp>

#include "commands.hpp"

namespace swinfer_tool {
namespace {

struct forward_options {
  model_options model;
  std::string input, output;
  bool stages = false, quiet = false;
};

void run_forward(const forward_options& o) {
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  const auto loaded = swinfer::load_model(o.model.model, o.model.config);
  const swinfer::tensor<float> input = read_npy_volume(o.input);
  loaded.config.check_input(input.shape());
  auto net = swinfer::runtime::make_network({o.model.backend, o.model.precision, o.model.layout}, loaded.config,
                                            loaded.weights, o.model.engine(loaded), o.model.model);
  const auto t1 = clock::now();
  if (o.stages) {
    auto last = std::make_shared<clock::time_point>(clock::now());
    net->set_observer([last](std::string_view name, const swinfer::tensor<float>& v) {
      const auto now = clock::now();
      std::fprintf(stderr, "  %-12.*s %-28s %8.3f s\n", static_cast<int>(name.size()), name.data(), v.shape().str().c_str(),
                   std::chrono::duration<double>(now - *last).count());
      *last = clock::now();
    });
  }
  const swinfer::tensor<float> logits = net->forward(input);
  const auto t2 = clock::now();
  const auto& s = logits.shape();
  swinfer::write_npy(o.output, {s.n, s.c, s.d, s.h, s.w}, logits.data());
  if (!o.quiet) {
    std::fprintf(stderr, "swinfer forward: %s on %s (%s): load %.2f s, forward %.2f s -> %s\n",
                 input.shape().str().c_str(), net->description().c_str(), net->device().c_str(),
                 std::chrono::duration<double>(t1 - t0).count(),
                 std::chrono::duration<double>(t2 - t1).count(), o.output.c_str());
  }
}

}  // namespace

void add_forward_command(CLI::App& app) {
  auto o = std::make_shared<forward_options>();
  CLI::App* cmd = app.add_subcommand("forward", "run the network on an (N, C, D, H, W) float32 .npy; write logits .npy");
  add_model_options(*cmd, o->model, true);
  cmd->add_option("--input,-i", o->input, "input .npy, float32 C order, (N, C, D, H, W)")->required()->check(CLI::ExistingFile);
  cmd->add_option("--output,-o", o->output, "logits .npy, float32 C order, (N, out_channels, D, H, W)")->required();
  cmd->add_flag("--stages", o->stages, "print each stage's output shape and time");
  cmd->add_flag("--quiet,-q", o->quiet, "print nothing on success");
  cmd->callback([o] { run_forward(*o); });
}

}  // namespace swinfer_tool

// swinfer info: the architecture a checkpoint holds (SwinUNETR or a Swin Fusion variant), its configuration and
// parameter count.
#include <cstdio>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>
#include <swinfer/swinfer.hpp>
#include <swinfer/runtime/cpu_levels.hpp>

#include "commands.hpp"

namespace swinfer_tool {
namespace {

struct info_options {
  model_options model;
  bool json = false;
};

std::string grouped(std::int64_t v) {
  std::string s = std::to_string(v);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<std::size_t>(i), ",");
  return s;
}

template <class A>
std::string tuple_string(const A& a) {
  std::string s = "(";
  for (std::size_t i = 0; i < a.size(); ++i) s += (i ? ", " : "") + std::to_string(a[i]);
  return s + ")";
}

/// The cpu kernels a model would run with here: the level chosen at run time, or the instruction sets of a build's
/// one set of kernels.
std::string chosen_kernels() {
  if (swinfer::runtime::cpu_kernel_levels().empty()) return swinfer::cpu::compiled_kernel_isa();
  return std::string(swinfer::runtime::chosen_cpu_kernel_level().name);
}

void run_info(const info_options& o) {
  const auto m = swinfer::load_model(o.model.model, o.model.config);
  const auto& c = m.config;
  const std::int64_t params = swinfer::parameter_count(c);
  const char* source = m.calibration        ? "int8 model file: the config it records"
                       : m.config_from_file ? "config file over the tensors"
                                            : "inferred from the tensors";
  if (o.json) {
    nlohmann::json j = {{"arch", std::string(swinfer::model_arch_name(c.arch))}, {"checkpoint", m.path},
                        {"config", swinfer::config_to_json(c)},     {"config_source", source},
                        {"parameters", params},      {"tensors", m.weights.size()},
                        {"cpu", swinfer::cpu::host_cpu().describe()}, {"cpu_kernels", chosen_kernels()}};
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::printf("%s  %s (%zu tensors, %s)\n", std::string(swinfer::model_arch_name(c.arch)).c_str(), m.path.c_str(),
              m.weights.size(), source);
  if (c.is_fusion()) {
    std::printf("  variant        %s   skip_pool %s   final_kernel_size %d",
                std::string(swinfer::fusion_variant_name(c.fusion.variant)).c_str(),
                std::string(swinfer::skip_pool_name(c.fusion.pool)).c_str(), c.fusion.final_kernel_size);
    if (!swinfer::make_skip_plan(c).sources_are_skips) std::printf("   branch_channels %s", tuple_string(c.branch_channels()).c_str());
    std::printf("\n");
  }
  std::printf("  channels       %d in -> %d out\n", c.in_channels, c.out_channels);
  std::printf("  feature_size   %d   patch_size %d   window_size %s\n", c.feature_size, c.patch_size,
              tuple_string(c.window_size).c_str());
  std::printf("  depths         %s   num_heads %s   mlp_ratio %g   qkv_bias %s\n", tuple_string(c.depths).c_str(),
              tuple_string(c.num_heads).c_str(), c.mlp_ratio, c.qkv_bias ? "yes" : "no");
  std::printf("  normalize      %s   use_v2 %s   patch_norm %s\n", c.normalize ? "yes" : "no", c.use_v2 ? "yes" : "no",
              c.patch_norm ? "yes" : "no");
  std::printf("  downsample     %s\n", std::string(swinfer::ops::merge_order_name(c.downsample)).c_str());
  std::printf("  parameters     %s\n", grouped(params).c_str());
  if (m.calibration) {
    std::printf("  int8           %zu of %zu products, calibration method %s (run with --precision int8)\n",
                m.calibration->quantized_points(), m.calibration->points.size(), m.calibration->method.c_str());
  }
  std::printf("\nthis CPU       %s\ncpu kernels\n%s", swinfer::cpu::host_cpu().describe().c_str(),
              swinfer::runtime::describe_cpu_kernel_levels().c_str());
  if (!m.config_from_file && c.is_fusion()) {
    std::printf("\nnote: max vs avg skip pooling is not recorded in checkpoints (max assumed unless a config says\n"
                "      {\"skip_pool\": \"avg\"}); the merging order defaults to merging_legacy, as in the author's code.\n");
  } else if (!m.config_from_file) {
    std::printf("\nnote: the patch-merging order is not recorded in checkpoints; 'merging' is MONAI >= 1.5's.\n"
                "      Checkpoints trained with MONAI <= 1.4 (all published ones) need a config with\n"
                "      {\"downsample\": \"merging_legacy\"}.\n");
  }
}

}  // namespace

void add_info_command(CLI::App& app) {
  auto o = std::make_shared<info_options>();
  CLI::App* cmd = app.add_subcommand("info", "print a checkpoint's architecture, configuration and parameter count");
  add_model_options(*cmd, o->model, false);
  cmd->add_flag("--json", o->json, "print JSON (the parameter count under \"parameters\")");
  cmd->callback([o] { run_info(*o); });
}

}  // namespace swinfer_tool

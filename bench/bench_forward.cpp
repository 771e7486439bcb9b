// Whole-network forward benchmark: median seconds and achieved GFLOP/s per backend, precision and layout.
// Weights are random (timing does not depend on their values); the FLOP count is the spec's (section 5).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <swinfer/backend/cpu/cpu_features.hpp>
#include <swinfer/core/op_profile.hpp>
#include <swinfer/inference/int8_calibrator.hpp>
#include <swinfer/core/tag_list.hpp>
#include <swinfer/model/cost.hpp>
#include <swinfer/model/synthetic_weights.hpp>
#include <swinfer/runtime/backends.hpp>
#include <swinfer/runtime/cpu_levels.hpp>
#include <swinfer/swinfer.hpp>

#include "bench_support.hpp"
#include "network_flags.hpp"
#include <swinfer/runtime/option_environment.hpp>

namespace {

/// Uniform weights scaled by 1/sqrt(fan_in) (so activations stay in range), small biases and norms.
swinfer::state_dict random_weights(const swinfer::swin_unetr_config& c, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  return swinfer::synthetic_weights(c, [&](const swinfer::expected_tensor& e, std::int64_t) {
    std::int64_t fan_in = 1;
    for (std::size_t i = 1; i < e.shape.size(); ++i) fan_in *= e.shape[i];
    return (e.shape.size() > 1 ? std::sqrt(3.0f / static_cast<float>(fan_in)) : 0.1f) * u(rng);
  });
}

/// The cpu kernel levels to time, one after another: `--cpu-levels` split, every level this CPU runs for "all", or
/// "" (whatever is chosen at run time).
std::vector<std::string> levels_to_time(const std::string& requested) {
  if (requested.empty()) return {""};
  if (requested != "all") return swinfer_bench::split(requested);
  std::vector<std::string> names;
  for (const auto& level : swinfer::runtime::cpu_kernel_levels()) {
    if (level.runs_on(swinfer::cpu::host_cpu())) names.emplace_back(level.name);
  }
  if (names.empty()) names.emplace_back("native");
  return names;
}

void print_profile_rows(const std::vector<swinfer::op_profile::entry>& rows, double forward_seconds) {
  for (const auto& e : rows) {
    std::printf("  %-52s %6lld %8.3f %6.1f", e.label.name.c_str(), static_cast<long long>(e.calls), e.seconds,
                100.0 * e.seconds / forward_seconds);
    if (e.label.flop > 0) {
      std::printf(" %9.1f", e.label.flop / e.seconds * 1e-9);
    } else {
      std::printf(" %9s", "");
    }
    std::printf(" %6.1f %7.3f\n", 100.0 * e.idle_seconds() / e.worker_seconds, e.system_seconds);
  }
}

/// The per-op split of one forward of `forward_seconds`: per kind, then every op by name, largest first.
void print_profile(const swinfer::op_profile& profile, double forward_seconds) {
  auto largest_first = [](std::vector<swinfer::op_profile::entry> rows) {
    std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.seconds > b.seconds; });
    return rows;
  };
  if (profile.entries().empty()) {
    std::printf("  (no per-op profile: only the cpu backend records one)\n");
    return;
  }
  const auto kinds = largest_first(profile.by_kind());
  double in_ops = 0, idle = 0, workers = 0;
  for (const auto& k : kinds) {
    in_ops += k.seconds;
    idle += k.idle_seconds();
    workers += k.worker_seconds;
  }
  std::printf("  per-op profile of the last run: %.3f s in ops, %.3f s outside them (tensor allocation, the model's "
              "glue); workers idle %.1f %% of the time in ops\n",
              in_ops, forward_seconds - in_ops, 100.0 * idle / workers);
  std::printf("  %-52s %6s %8s %6s %9s %6s %7s\n", "kind / op", "calls", "s", "% fwd", "GFLOP/s", "% idle", "sys s");
  print_profile_rows(kinds, forward_seconds);
  std::printf("  by op:\n");
  print_profile_rows(largest_first(profile.entries()), forward_seconds);
}

/// Seconds of `runs` calls of f (after the caller's warm-up), in call order. On the GPU only these calls are
/// profiled (the profiler's range, ncu --profile-from-start off): no warm-up, no start-up self-test.
std::vector<double> timed_runs(int runs, bool gpu, const std::function<void()>& f) {
  std::vector<double> seconds;
  if (gpu) swinfer::runtime::set_gpu_profiler_range(true);
  for (int r = 0; r < runs; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  if (gpu) swinfer::runtime::set_gpu_profiler_range(false);
  return seconds;
}

}  // namespace

int main(int argc, char** argv) try {
  swinfer::reuse_freed_memory();  // as the swinfer tool does: the timed forwards reuse the warm-up's memory
  CLI::App app{"swinfer forward benchmark"};
  int feature_size = 48, size = 96, runs = 3, threads = 0, batch = 1;
  std::string backends{swinfer::tag_name<swinfer::backend::cpu>()};
  std::string precisions = swinfer::precision_tags::joined(",", ",");
  std::string layouts{swinfer::tag_name<swinfer::layout::ndhwc>()};
  std::string config_path, model_path;
  app.add_option("--feature-size", feature_size, "feature_size (a --config file may override it)");
  app.add_option("--config", config_path, "model config JSON, e.g. a Swin Fusion variant (default: SwinUNETR, 14 classes)")
      ->check(CLI::ExistingFile);
  app.add_option("--model", model_path, "checkpoint whose weights (and configuration) to time, e.g. the PyTorch "
                 "model compare_pytorch.py times; default: random weights")->check(CLI::ExistingFile);
  app.add_option("--size", size, "cubic input size (multiple of 32)");
  app.add_option("--batch", batch, "windows per forward, as the sliding window batches sw_batch of them")
      ->check(CLI::Range(1, 64));
  app.add_option("--runs", runs, "timed runs after one warm-up; the median is reported");
  app.add_option("--threads", threads, "worker threads (0: all)");
  app.add_option("--backends", backends, "comma-separated: " + swinfer::backend_tags::joined(",", ","));
  app.add_option("--precisions", precisions, "comma-separated: " + swinfer::precision_tags::joined(",", ","));
  app.add_option("--layouts", layouts, "comma-separated: " + swinfer::layout_tags::joined(",", ","));
  swinfer::bf16_weight_mode bf16_weights = swinfer::bf16_weight_mode::exact;
  swinfer_tool::add_bf16_weights_option(app, bf16_weights);
  bool int8_dynamic = false;
  app.add_flag("--int8-dynamic", int8_dynamic,
               "int8 with each product's own dynamic input scales (engine_options::int8_dynamic) instead of scales "
               "calibrated on the input");
  bool profile = false;
  app.add_flag("--profile", profile,
               "cpu backend: print where the last timed run spent its time, per kind of op and per op (wall seconds, "
               "GFLOP/s, workers' idle share, CPU time in the kernel), and the time outside the ops");
  std::string cpu_levels;
  app.add_option("--cpu-levels", cpu_levels,
                 "cpu kernel levels to time side by side, comma-separated, or 'all' this CPU runs (builds with "
                 "SWINFER_CPU_DISPATCH; default: the one chosen at run time)");
  CLI11_PARSE(app, argc, argv);

  swinfer::swin_unetr_config config;
  config.feature_size = feature_size;
  config.out_channels = 14;
  if (!config_path.empty()) config = swinfer::load_config(config_path, config);
  swinfer::state_dict weights;
  if (model_path.empty()) {
    weights = random_weights(config, 1);
  } else {
    auto loaded = swinfer::load_model(model_path, config_path);
    config = loaded.config;
    weights = std::move(loaded.weights);
  }
  const swinfer::shape5 shape{batch, config.in_channels, size, size, size};
  swinfer::tensor<float> input(shape, swinfer::layout_kind::ncdhw);
  std::mt19937 rng(2);
  std::normal_distribution<float> normal;
  for (std::int64_t i = 0; i < input.size(); ++i) input.data()[i] = normal(rng);
  const double gflop = 2 * swinfer::forward_macs(config, shape) / 1e9;
  // int8 needs activation scales: calibrated once (percentile) on the timed input itself, as one window.
  std::shared_ptr<const swinfer::int8_calibration> int8_scales;
  auto calibration = [&] {
    if (!int8_scales) {
      const swinfer::engine_options options{threads};
      auto observed = swinfer::runtime::make_network({}, config, weights, options, "random");
      swinfer::int8_calibrator calibrator(std::move(observed), weights);
      swinfer::sliding_window_options window;
      window.roi = {size, size, size};
      window.threads = threads;
      calibrator.add(input, window, "benchmark input");
      int8_scales = std::make_shared<const swinfer::int8_calibration>(calibrator.finish({}, threads));
    }
    return int8_scales;
  };
  std::string model(swinfer::model_arch_name(config.arch));
  if (config.is_fusion()) model += " " + std::string(swinfer::fusion_variant_name(config.fusion.variant));
  std::printf("%s fs%d, input %s, %.1f GFLOP per forward, threads %d, median of %d runs\n", model.c_str(),
              config.feature_size, shape.str().c_str(), gflop, threads, runs);
  std::printf("host CPU: %s; bf16 weights on the cpu backend: %s; int8 scales: %s\n",
              swinfer::cpu::host_cpu().describe().c_str(),
              bf16_weights == swinfer::bf16_weight_mode::rounded ? "rounded" : "exact",
              int8_dynamic ? "dynamic (each product's own input)" : "calibrated on the input");
  std::printf("%-24s %10s %10s %10s\n", "backend/precision/layout", "median s", "min s", "GFLOP/s");
  for (const auto& level : levels_to_time(cpu_levels)) {
    if (!level.empty()) swinfer::runtime::cap_cpu_kernel_level(level);
    for (const auto& b : swinfer_bench::split(backends))
      for (const auto& p : swinfer_bench::split(precisions))
        for (const auto& l : swinfer_bench::split(layouts)) {
          std::unique_ptr<swinfer::network> net;
          auto recorded = profile ? std::make_shared<swinfer::op_profile>() : nullptr;
          try {
            auto options = swinfer::runtime::network_options_from_environment(swinfer::engine_options{threads});
            options.cpu.bf16_weights = bf16_weights;
            options.profile = recorded;
            if (p == swinfer::tag_name<swinfer::precision::int8>()) {
              if (int8_dynamic) {
                options.int8_dynamic = true;
              } else {
                options.calibration = calibration();
              }
            }
            net = swinfer::runtime::make_network({b, p, l}, config, weights, options, "random");
          } catch (const swinfer::error& e) {
            std::printf("%-24s %s\n", (b + "/" + p + "/" + l).c_str(), e.what());
            continue;
          }
          const bool gpu = b == swinfer::tag_name<swinfer::backend::hip>();
          net->forward(input);  // warm-up: first-touch allocation, primitive creation, bias caches
          auto seconds = timed_runs(runs, gpu, [&] {
            if (recorded) recorded->clear();
            net->forward(input);
          });
          const double last_run = seconds.back();
          std::sort(seconds.begin(), seconds.end());
          const double median = seconds[seconds.size() / 2];
          std::printf("%-24s %10.5f %10.5f %10.1f\n", net->description().c_str(), median, seconds.front(), gflop / median);
          std::printf("  on %s\n", net->device().c_str());
          if (recorded) print_profile(*recorded, last_run);
          if (gpu) {
            // The forward alone, input and logits on the device (the host edges above move 4 bytes per input and
            // per logit voxel through pageable memory): what a framework's per-window time measures.
            const auto resident = net->resident_forward(input);
            resident();
            auto device_seconds = timed_runs(runs, false, resident);
            std::sort(device_seconds.begin(), device_seconds.end());
            const double device_median = device_seconds[device_seconds.size() / 2];
            std::printf("%-24s %10.5f %10.5f %10.1f\n", (net->description() + "@device").c_str(), device_median,
                        device_seconds.front(), gflop / device_median);
          }
          std::fflush(stdout);
        }
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_forward: error: %s\n", e.what());
  return 1;
}

// Microbenchmark of the cpu backend's hot kernels at SwinUNETR fs48 / 96^3 sizes: the full- and half-resolution
// 3x3x3 convolutions (90% of the model's FLOPs) and stage-1 window attention, in fp32 and bf16.
// Prints achieved GFLOP/s (2 x multiply-accumulates per second), median of a few runs after one warm-up, and that rate
// as a fraction of the register-only peak (bench/peak.hpp) of the instruction the kernel runs on.
//   usage: bench_cpu_kernels [threads] [runs]      (threads 0 = one per hardware thread)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "bench_support.hpp"
#include "peak.hpp"
#include "swinfer/backend/cpu.hpp"
#include "swinfer/backend/cpu/cpu_features.hpp"
#include "swinfer/model/cost.hpp"
#include "swinfer/ops/window_attention.hpp"
#include "swinfer/ops/window_plan.hpp"

using namespace swinfer;
using swinfer_bench::random_values;

namespace {

template <class S>
tensor<S> random_tensor(const shape5& s, layout_kind k, std::mt19937& rng) {
  tensor<S> t(s, k);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (std::int64_t i = 0; i < t.size(); ++i) t.data()[i] = from_float<S>(u(rng));
  return t;
}

/// Median wall time and median process CPU time (all threads) of `runs` calls after one warm-up call.
struct timing {
  double wall = 0, cpu = 0;
};

timing measure(int runs, const std::function<void()>& f) {
  f();
  std::vector<double> wall, cpu;
  for (int r = 0; r < runs; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::clock_t c0 = std::clock();
    f();
    cpu.push_back(static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC);
    wall.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(wall.begin(), wall.end());
  std::sort(cpu.begin(), cpu.end());
  return {wall[wall.size() / 2], cpu[cpu.size() / 2]};
}

/// GFLOP/s on the wall clock, and per CPU-second: the per-core rate, which stays meaningful when other
/// processes share the cores.
/// The peak of the instruction a kernel path runs on (0: not measured, e.g. AMX). Winograd convolutions count the
/// direct convolution's FLOPs, so their fraction of the FMA peak can pass 100 %.
double path_peak(const swinfer_bench::peak::rates& peak, const std::string& path) {
  if (path == "fp32 fma" || path == "fp32 winograd") return peak.fp32_fma;
  if (path == "avx512 bf16 dot") return peak.bf16_dot;
  if (path == "avx512 vnni int8") return peak.int8_dot;
  return 0;
}

void print_row(const char* kernel, const char* precision, const char* layout, const std::string& path, double peak,
               double gflop, timing t) {
  std::printf("%-46s %-5s %-6s %-16s %8.2f %9.1f %9.1f %10.1f", kernel, precision, layout, path.c_str(), gflop,
              t.wall * 1e3, gflop / t.wall, gflop / t.cpu);
  if (peak > 0) {
    std::printf(" %7.0f%%\n", 100.0 * gflop / t.wall / peak);
  } else {
    std::printf(" %8s\n", "-");
  }
}

template <class P>
void bench_conv(cpu::context& ctx, const swinfer_bench::peak::rates& peak, const char* name, int cin, int cout, std::int64_t size, layout_kind layout, int runs,
                std::mt19937& rng) {
  using S = storage_t<P>;
  ops::conv3d_problem p{cin, cout};
  // int8: the inputs (uniform in [-1, 1)) quantized with the scale a max calibration would give them.
  if constexpr (precision_traits<P>::is_quantized) p.int8 = {"bench", 1.0f / ops::weight_max};
  const shape5 in_shape{1, cin, size, size, size};
  const auto weight = random_values(static_cast<std::size_t>(p.weight_count()), 0.05f, rng);
  auto in = random_tensor<S>(in_shape, layout, rng);
  tensor<S> out(p.output_shape(in_shape), layout);
  typename kernels<backend::cpu, P, layout::ndhwc>::conv3d conv(ctx, p, weight.data(), nullptr);
  const timing t = measure(runs, [&] { conv.run(in, out); });
  const double gflop = 2.0 * p.weight_count() * static_cast<double>(out.shape().spatial()) * 1e-9;
  print_row(name, precision_traits<P>::name.data(), layout_name(layout).data(), conv.path(),
            path_peak(peak, conv.path()), gflop, t);
}

template <class P>
void bench_window_attention(cpu::context& ctx, const swinfer_bench::peak::rates& peak, bool shifted, int runs, std::mt19937& rng) {
  using S = storage_t<P>;
  const int c = 48, heads = 3;  // fs48 stage 1: head dim 16, 48^3 tokens, 7^3 windows on a 49^3 padded grid
  const swinfer_bench::random_window_attention params(c, heads, rng);
  const auto plan = ops::make_window_plan({48, 48, 48}, params.weights.configured_window);
  const shape5 s{1, c, 48, 48, 48};
  auto y = random_tensor<S>(s, layout_kind::ndhwc, rng);
  auto x = random_tensor<S>(s, layout_kind::ndhwc, rng);
  typename kernels<backend::cpu, P, layout::ndhwc>::window_attention op(ctx, params.weights);
  const timing t = measure(runs, [&] { op.run(y, plan, shifted, x); });
  print_row(shifted ? "window attention stage 1 (48^3, C48, shifted)" : "window attention stage 1 (48^3, C48)",
            precision_traits<P>::name.data(), "ndhwc", "fp32 fma", peak.fp32_fma,
            2.0 * ops::window_attention_macs(plan, c) * 1e-9, t);
}

template <class P>
void bench_convolutions(cpu::context& ctx, const swinfer_bench::peak::rates& peak, int runs, std::mt19937& rng) {
  bench_conv<P>(ctx, peak, "decoder1.conv1 3x3x3 96->48 @96^3", 96, 48, 96, layout_kind::ndhwc, runs, rng);
  bench_conv<P>(ctx, peak, "encoder1/decoder1.conv2 3x3x3 48->48 @96^3", 48, 48, 96, layout_kind::ndhwc, runs, rng);
  bench_conv<P>(ctx, peak, "encoder2-like 3x3x3 48->48 @48^3", 48, 48, 48, layout_kind::ndhwc, runs, rng);
  bench_conv<P>(ctx, peak, "encoder2-like 3x3x3 48->48 @48^3", 48, 48, 48, layout_kind::ncdhw, runs, rng);
}

template <class P>
void bench_precision(cpu::context& ctx, const swinfer_bench::peak::rates& peak, int runs, std::mt19937& rng) {
  bench_convolutions<P>(ctx, peak, runs, rng);
  bench_window_attention<P>(ctx, peak, false, runs, rng);
  bench_window_attention<P>(ctx, peak, true, runs, rng);
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 0;
  const int runs = argc > 2 ? std::max(1, std::atoi(argv[2])) : 3;
  cpu::context ctx(engine_options{threads});
  std::mt19937 rng(42);
  const swinfer_bench::peak::rates peak = swinfer_bench::peak::measure(ctx.threads(), 0.2);
  std::printf("swinfer cpu backend on %s, %d worker thread(s), median of %d run(s)\n",
              cpu::host_cpu().describe().c_str(), ctx.threads(), runs);
  std::printf("register-only peak on %d thread(s): fp32 FMA %.0f, bf16 dot %.0f GFLOP/s, int8 dot %.0f GOP/s "
              "(bench_peak)\n", ctx.threads(), peak.fp32_fma, peak.bf16_dot, peak.int8_dot);
  std::printf("%-46s %-5s %-6s %-16s %8s %9s %9s %10s %8s\n", "kernel", "prec", "layout", "path", "GFLOP", "ms",
              "GFLOP/s", "per CPU-s", "of peak");
  bench_precision<precision::fp32>(ctx, peak, runs, rng);
  bench_precision<precision::bf16>(ctx, peak, runs, rng);
  bench_convolutions<precision::int8>(ctx, peak, runs, rng);  // int8 attention runs in float (docs/int8.md)
  return 0;
}

// Microbenchmark of the cpu backend's hot kernels at SwinUNETR fs48 / 96^3 sizes: the full- and half-resolution
// 3x3x3 convolutions (90% of the model's FLOPs), stage 1's MLP linear and window attention, in fp32, bf16 and int8.
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
/// The peak of the instruction a path multiplies with: conv3d's implementation names (conv3d_implementations) or the
/// other ops' path names.
double path_peak(const swinfer_bench::peak::rates& peak, const std::string& path) {
  if (path == "fp32 fma" || path == "direct" || path == "whole-grid" || path == "winograd2" || path == "winograd4") {
    return peak.fp32_fma;
  }
  if (path == "avx512 bf16 dot" || path == "bf16-pairs") return peak.bf16_dot;
  if (path == "avx512 vnni int8" || path == "int8-vnni") return peak.int8_dot;
  if (path == "avx2 madd int8" || path == "avx512 madd int8" || path == "int8-madd") return peak.int8_madd;
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
  const std::string path(conv.path());
  print_row(name, precision_traits<P>::name.data(), layout_name(layout).data(), path, path_peak(peak, path), gflop, t);
}

template <class P>
void bench_window_attention(cpu::context& ctx, const swinfer_bench::peak::rates& peak, bool shifted, int runs, std::mt19937& rng) {
  using S = storage_t<P>;
  const int c = 48, heads = 3;  // fs48 stage 1: head dim 16, 48^3 tokens, 7^3 windows on a 49^3 padded grid
  const swinfer_bench::random_window_attention params(c, heads, rng);
  auto weights = params.weights;
  // int8: qkv and proj quantized (the attention products stay float32); their inputs are within about +-1.
  if constexpr (precision_traits<P>::is_quantized) weights.qkv_int8 = weights.proj_int8 = {"bench", 1.0f / 127};
  const auto plan = ops::make_window_plan({48, 48, 48}, weights.configured_window);
  const shape5 s{1, c, 48, 48, 48};
  auto y = random_tensor<S>(s, layout_kind::ndhwc, rng);
  auto x = random_tensor<S>(s, layout_kind::ndhwc, rng);
  typename kernels<backend::cpu, P, layout::ndhwc>::window_attention op(ctx, weights);
  const timing t = measure(runs, [&] { op.run(y, plan, shifted, x); });
  const std::string path = precision_traits<P>::is_quantized ? std::string(cpu::int8_dot::path_name()) : op.path();
  print_row(shifted ? "window attention stage 1 (48^3, C48, shifted)" : "window attention stage 1 (48^3, C48)",
            precision_traits<P>::name.data(), "ndhwc", path,
            precision_traits<P>::is_quantized ? 0 : path_peak(peak, op.path()),
            2.0 * ops::window_attention_macs(plan, c) * 1e-9, t);
}

/// Stage 1's MLP linear1 at fs48 / 96^3: 48^3 token rows, 48 -> 192 with GELU.
template <class P>
void bench_linear(cpu::context& ctx, const swinfer_bench::peak::rates& peak, int runs, std::mt19937& rng) {
  using S = storage_t<P>;
  ops::linear_problem p{48, 192, true, true, false};
  if constexpr (precision_traits<P>::is_quantized) p.int8 = {"bench", 4.0f / ops::weight_max};  // LayerNorm outputs
  const std::int64_t rows = 48 * 48 * 48;
  const auto weight = random_values(48 * 192, 0.1f, rng), bias = random_values(192, 0.1f, rng);
  auto x = random_tensor<S>({1, 48, 1, 1, rows}, layout_kind::ndhwc, rng);
  tensor<S> y({1, 192, 1, 1, rows}, layout_kind::ndhwc);
  typename kernels<backend::cpu, P, layout::ndhwc>::linear op(ctx, p, weight.data(), bias.data());
  const timing t = measure(runs, [&] { op.run(x.data(), rows, y.data()); });
  print_row("MLP linear1 stage 1 (48^3 rows, 48->192, GELU)", precision_traits<P>::name.data(), "ndhwc", op.path(),
            path_peak(peak, op.path()), 2.0 * rows * 48 * 192 * 1e-9, t);
}

template <class P>
void bench_convolutions(cpu::context& ctx, const swinfer_bench::peak::rates& peak, int runs, std::mt19937& rng) {
  bench_conv<P>(ctx, peak, "decoder1.conv1 3x3x3 96->48 @96^3", 96, 48, 96, layout_kind::ndhwc, runs, rng);
  bench_conv<P>(ctx, peak, "encoder1/decoder1.conv2 3x3x3 48->48 @96^3", 48, 48, 96, layout_kind::ndhwc, runs, rng);
  bench_conv<P>(ctx, peak, "encoder2-like 3x3x3 48->48 @48^3", 48, 48, 48, layout_kind::ndhwc, runs, rng);
  bench_conv<P>(ctx, peak, "encoder2-like 3x3x3 48->48 @48^3", 48, 48, 48, layout_kind::ncdhw, runs, rng);
}

/// The int8 products alone on every path this build runs on this CPU, one thread: one output row of decoder1.conv1
/// (96 voxels, 9 tap rows of 3 x 96 channels, 48 columns) repeated, A and B in cache.
void bench_int8_paths(int runs, std::mt19937& rng) {
  const std::int64_t rows = 96, run = 3 * 96, cols = 48, repeats = 2000;
  const int segments = 9;
  std::uniform_int_distribution<int> byte(0, 255), weight(-127, 127);
  std::vector<std::uint8_t> a(static_cast<std::size_t>(segments * run + cpu::round_up(rows, cpu::max_micro_rows) * 96 + 64));
  for (auto& v : a) v = static_cast<std::uint8_t>(byte(rng));
  std::vector<std::int8_t> b(static_cast<std::size_t>(segments * run * cols));
  for (auto& v : b) v = static_cast<std::int8_t>(weight(rng));
  std::vector<const std::uint8_t*> seg(static_cast<std::size_t>(segments));
  for (int s = 0; s < segments; ++s) seg[s] = a.data() + s * run;
  std::vector<std::int32_t> tile(static_cast<std::size_t>(cpu::round_up(rows, cpu::max_micro_rows) * cpu::group_width));
  for (const auto path : cpu::int8_dot::available_paths()) {
    const cpu::int8_dot::packed_quads packed(
        segments, run, cols, [&](std::int64_t k, std::int64_t c) { return b[k * cols + c]; }, path);
    const timing t = measure(runs, [&] {
      for (std::int64_t r = 0; r < repeats; ++r)
        for (int g = 0; g < packed.layout().groups(); ++g)
          cpu::int8_dot::gemm_group(seg.data(), segments, 96, rows, packed, g, tile.data(), cpu::group_width);
    });
    const std::string name = cpu::int8_dot::path_name(path);
    print_row("int8 products, a 3x3x3 96->48 row, 1 thread", "int8", "-", name, 0,
              2.0 * rows * segments * run * cols * repeats * 1e-9, t);
  }
}

template <class P>
void bench_precision(cpu::context& ctx, const swinfer_bench::peak::rates& peak, int runs, std::mt19937& rng) {
  bench_convolutions<P>(ctx, peak, runs, rng);
  bench_linear<P>(ctx, peak, runs, rng);
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
  std::printf("register-only peak on %d thread(s): fp32 FMA %.0f, bf16 dot %.0f GFLOP/s, int8 dot %.0f, int8 madd "
              "%.0f GOP/s (bench_peak)\n", ctx.threads(), peak.fp32_fma, peak.bf16_dot, peak.int8_dot, peak.int8_madd);
  std::printf("%-46s %-5s %-6s %-16s %8s %9s %9s %10s %8s\n", "kernel", "prec", "layout", "path", "GFLOP", "ms",
              "GFLOP/s", "per CPU-s", "of peak");
  bench_precision<precision::fp32>(ctx, peak, runs, rng);
  bench_precision<precision::bf16>(ctx, peak, runs, rng);
  // bf16 with rounded weights: the AVX-512 BF16 pair dot product where the CPU has it (the path column says).
  backend_options<backend::cpu> rounded_weights = engine_options{threads};
  rounded_weights.bf16_weights = bf16_weight_mode::rounded;
  cpu::context rounded(rounded_weights);
  bench_precision<precision::bf16>(rounded, peak, runs, rng);
  bench_precision<precision::int8>(ctx, peak, runs, rng);
  bench_int8_paths(runs, rng);
  return 0;
}

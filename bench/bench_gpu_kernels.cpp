// Microbenchmark of the hip backend's hot kernels at SwinUNETR fs48 sizes (a 96^3 window by default), channels-last:
// the 3x3x3 convolutions (90 % of the model's FLOPs; plain, with the previous InstanceNorm applied on load, on a
// decoder's two inputs read in place, and gathering the output's InstanceNorm moments), the transposed convolution,
// InstanceNorm (from a statistics pass, and from the moments its convolution gathered) and the concat at full
// resolution, stage-1 window attention and the MLP with their LayerNorms applied on load. Prints the median time of a
// few runs after one warm-up (the clock stops when the device is done) and the achieved TFLOP/s (2 x multiply-
// accumulates) or, for the memory-bound ops, GB/s (the bytes the op must move at least); a convolution's row ends with
// the kernel that ran (halo, wgmma or gemm: kernel tuning's choice, which the warm-up measures on first use, or
// SWINFER_GPU_CONV's). bench/compare_gpu_kernels.py times PyTorch's kernels on the same shapes.
//   bench_gpu_kernels [--size 96] [--runs 5] [--precisions fp32,bf16,fp16,int8] [--only NAME]
// (int8: the convolutions, transposed convolution, attention's qkv and proj and the MLP on the int8 matrix cores,
// with input scales that cover the random inputs; the other rows as fp32)
// (--only: the rows whose name holds NAME, e.g. for `ncu --set full` on one kernel: tools/gpu-acceptance.sh)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench_support.hpp"
#include <swinfer/runtime/option_environment.hpp>
#include "swinfer/backend/hip.hpp"
#include "swinfer/core/tag_list.hpp"
#include "swinfer/model/cost.hpp"
#include "swinfer/ops/window_plan.hpp"

using namespace swinfer;
using swinfer_bench::random_values;

namespace {

/// Median seconds of `runs` calls after one warm-up; each call is timed until the device is idle. Only the timed
/// calls are inside the profiler's range (`ncu --profile-from-start off` sees them and nothing else).
double measure(hip::context& ctx, int runs, const std::function<void()>& f) {
  f();
  ctx.synchronize();
  std::vector<double> seconds;
  hip::set_profiler_range(true);
  for (int r = 0; r < runs; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    ctx.synchronize();
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  hip::set_profiler_range(false);
  std::sort(seconds.begin(), seconds.end());
  return seconds[seconds.size() / 2];
}

/// One row: `work` is GFLOP for compute-bound ops and GB for memory-bound ones (`per` says which); `kernel`, where
/// given, names the kernel that ran (a convolution's: the one kernel tuning or SWINFER_GPU_CONV chose).
void print_row(const std::string& op, const char* precision, double seconds, double work, const char* per,
               const char* kernel = "") {
  std::printf("%-52s %-5s %10.3f %9.3f %9.2f %s%s%s\n", op.c_str(), precision, seconds * 1e3, work,
              work / seconds / (per[0] == 'T' ? 1e3 : 1.0), per, *kernel ? " " : "", kernel);
  std::fflush(stdout);
}

template <class P>
struct kernel_bench {
  using K = kernels<backend::hip, P, layout::ndhwc>;
  using volume = typename K::volume;
  using S = typename K::storage;
  hip::context& ctx;
  std::int64_t size;
  int runs;
  std::mt19937& rng;
  const std::string& only;
  const char* precision = precision_traits<P>::name.data();

  /// Under precision::int8, a product's input scale for inputs within +-`largest` (nothing clips); float otherwise.
  static ops::int8_input int8_input(float largest) {
    if constexpr (precision_traits<P>::is_quantized) {
      return {"bench", largest / ops::activation_max};
    } else {
      return {};
    }
  }

  /// Whether --only leaves out the row `name` (then nothing of it is built or run).
  bool left_out(const std::string& name) const { return !only.empty() && name.find(only) == std::string::npos; }

  volume random_volume(const shape5& s) {
    tensor<float> host(s, layout_kind::ndhwc);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (std::int64_t i = 0; i < host.size(); ++i) host.data()[i] = u(rng);
    return K::upload(ctx, host);
  }
  double bytes(const shape5& s) const { return static_cast<double>(s.numel()) * sizeof(S) * 1e-9; }

  /// How a convolution gets its input: as it is, through the previous InstanceNorm applied on load, or as two
  /// halves read as their concatenation; or as it is, gathering its output's InstanceNorm moments.
  enum class input { plain, norm_on_load, two_halves, plain_gathering_moments };

  void conv(const std::string& name, ops::conv3d_problem p, std::int64_t edge, input how = input::plain) {
    if (left_out(name)) return;
    p.int8 = int8_input(how == input::norm_on_load ? 4.0f : 1.0f);
    const int cin = p.cin;
    const auto weight = random_values(static_cast<std::size_t>(p.weight_count()), 0.05f, rng);
    typename K::conv3d op(ctx, p, weight.data(), nullptr);
    const shape5 in_shape{1, cin, edge, edge, edge}, half_shape{1, cin / 2, edge, edge, edge};
    const volume in = random_volume(how == input::two_halves ? half_shape : in_shape);
    const volume second = random_volume(how == input::two_halves ? half_shape : shape5{1, 1, 1, 1, 1});
    volume out(p.output_shape(in_shape), layout_kind::ndhwc);
    const ops::instance_norm_epilogue norm{1e-5f, 0.01f};
    typename K::channel_moments moments;
    const double s = measure(ctx, runs, [&] {
      if (how == input::norm_on_load) {
        op.run(in, norm, out);
      } else if (how == input::two_halves) {
        op.run(in, second, out);
      } else if (how == input::plain_gathering_moments) {
        op.run(in, out, moments);
      } else {
        op.run(in, out);
      }
    });
    const double gflop = 2.0 * p.weight_count() * static_cast<double>(out.shape().spatial()) * 1e-9;
    print_row(name, precision, s, gflop, "TFLOP/s", hip::kernel_name(op.last_kernel()));
  }

  void conv_transpose(int cin, int cout, std::int64_t edge) {
    const std::string name = "decoder1.transp_conv k2s2 " + std::to_string(cin) + "->" + std::to_string(cout) + " @" +
                             std::to_string(edge) + "^3";
    if (left_out(name)) return;
    const auto weight = random_values(static_cast<std::size_t>(cin) * cout * 8, 0.05f, rng);
    typename K::conv_transpose3d op(ctx, {cin, cout, int8_input(1.0f)}, weight.data());
    const shape5 in_shape{1, cin, edge, edge, edge};
    const volume in = random_volume(in_shape);
    volume out(ops::conv_transpose3d_output_shape(in_shape, cin, cout), layout_kind::ndhwc);
    const double s = measure(ctx, runs, [&] { op.run(in, out); });
    print_row(name, precision, s, 2.0 * cin * cout * 8 * static_cast<double>(in_shape.spatial()) * 1e-9, "TFLOP/s");
  }

  /// Statistics read x once, the apply pass reads x and the residual and writes x. With `gathered`, x's moments
  /// come from the convolution that stored it and the statistics pass is left out.
  void instance_norm(const std::string& name, std::int64_t edge, bool gathered) {
    if (left_out(name)) return;
    const shape5 s{1, 48, edge, edge, edge};
    volume x = random_volume(s);
    const volume residual = random_volume(s);
    const ops::instance_norm_epilogue e{1e-5f, 0.01f};
    typename K::channel_moments moments;
    if (gathered) {
      const auto weight = random_values(static_cast<std::size_t>(27 * 48 * 48), 0.05f, rng);
      ops::conv3d_problem p{48, 48};
      p.int8 = int8_input(1.0f);
      typename K::conv3d producer(ctx, p, weight.data(), nullptr);
      producer.run(random_volume(s), x, moments);
    }
    const double t = measure(ctx, runs, [&] {
      if (gathered) {
        K::instance_norm(ctx, x, moments, &residual, e);
      } else {
        K::instance_norm(ctx, x, &residual, e);
      }
    });
    print_row(name, precision, t, (gathered ? 3 : 4) * bytes(s), "GB/s");
  }

  void concat(std::int64_t edge) {
    const std::string name = "concat 48+48 channels @" + std::to_string(edge) + "^3";
    if (left_out(name)) return;
    const shape5 part{1, 48, edge, edge, edge};
    const volume a = random_volume(part), b = random_volume(part);
    volume out({1, 96, edge, edge, edge}, layout_kind::ndhwc);
    const double t = measure(ctx, runs, [&] { K::concat_channels(ctx, {&a, &b}, out); });
    print_row(name, precision, t, 4 * bytes(part), "GB/s");
  }

  /// Stage 1 of fs48: 48 channels, 3 heads, head dim 16, 7^3 windows; norm1 applied as the tokens are gathered.
  void window_attention(std::int64_t edge, bool shifted) {
    const std::string name =
        "norm1 + window attention, C48 @" + std::to_string(edge) + "^3" + (shifted ? " shifted" : "");
    if (left_out(name)) return;
    const int c = 48, heads = 3;
    swinfer_bench::random_window_attention params(c, heads, rng);
    params.weights.qkv_int8 = int8_input(4.0f);
    params.weights.proj_int8 = int8_input(1.0f);
    const auto gamma = random_values(c, 1.0f, rng), beta = random_values(c, 0.1f, rng);
    typename K::window_attention op(ctx, params.weights);
    typename K::layer_norm norm(ctx, c, gamma.data(), beta.data(), 1e-5f);
    const auto plan = ops::make_window_plan({edge, edge, edge}, params.weights.configured_window);
    volume x = random_volume({1, c, edge, edge, edge});
    const double t = measure(ctx, runs, [&] { op.run(norm, x, plan, shifted); });
    print_row(name, precision, t, 2.0 * ops::window_attention_macs(plan, c) * 1e-9, "TFLOP/s");
  }

  /// fc1 (norm2 applied on load, GELU) and fc2 (accumulating into x) of a stage-1 MLP.
  void mlp(std::int64_t edge) {
    const std::int64_t rows = edge * edge * edge;
    const std::string name = "norm2 + MLP 48->192->48, " + std::to_string(rows) + " tokens";
    if (left_out(name)) return;
    const int c = 48, hidden = 4 * c;
    const auto w1 = random_values(static_cast<std::size_t>(c) * hidden, 0.1f, rng);
    const auto w2 = random_values(static_cast<std::size_t>(c) * hidden, 0.1f, rng);
    const auto b1 = random_values(hidden, 0.1f, rng), b2 = random_values(c, 0.1f, rng);
    const auto gamma = random_values(c, 1.0f, rng), beta = random_values(c, 0.1f, rng);
    typename K::linear fc1(ctx, {c, hidden, true, true, false, int8_input(4.0f)}, w1.data(), b1.data());
    typename K::linear fc2(ctx, {hidden, c, true, false, true, int8_input(2.0f)}, w2.data(), b2.data());
    typename K::layer_norm norm(ctx, c, gamma.data(), beta.data(), 1e-5f);
    volume x = random_volume({1, c, edge, edge, edge});
    volume h({1, hidden, edge, edge, edge}, layout_kind::ndhwc);
    const double macs = 2.0 * static_cast<double>(rows) * c * hidden;
    const double t = measure(ctx, runs, [&] {
      fc1.run(norm, x.data(), rows, h.data());
      fc2.run(h.data(), rows, x.data());
    });
    print_row(name, precision, t, 2.0 * macs * 1e-9, "TFLOP/s");
  }

  void all() {
    const std::int64_t full = size, half = size / 2;
    const std::string at_full = " @" + std::to_string(full) + "^3", at_half = " @" + std::to_string(half) + "^3";
    conv("patch embedding k2s2 1->48" + at_full, {1, 48, {2, 2, 2}, {2, 2, 2}, {0, 0, 0}, false}, full);
    conv("encoder1.conv1 3x3x3 1->48" + at_full, {1, 48}, full);
    conv("encoder1.conv3 1x1x1 1->48" + at_full, {1, 48, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, false}, full);
    conv("encoder1.conv2 3x3x3 48->48" + at_full, {48, 48}, full);
    conv("  the same, conv1's InstanceNorm applied on load", {48, 48}, full, input::norm_on_load);
    conv("  the same, gathering its output's moments", {48, 48}, full, input::plain_gathering_moments);
    conv("decoder1.conv1 3x3x3 96->48" + at_full, {96, 48}, full);
    conv("  the same, reading [upsampled, skip] in place", {96, 48}, full, input::two_halves);
    conv("encoder2.conv2 3x3x3 48->48" + at_half, {48, 48}, half);
    conv("decoder3.conv1 3x3x3 192->96 @" + std::to_string(size / 4) + "^3", {192, 96}, size / 4);
    conv_transpose(96, 48, half);
    instance_norm("instance_norm + residual + LeakyReLU 48ch" + at_full, full, false);
    instance_norm("  the same, from the moments its conv gathered", full, true);
    concat(full);
    window_attention(half, false);
    window_attention(half, true);
    mlp(half);
  }
};

}  // namespace

int main(int argc, char** argv) try {
  CLI::App app{"swinfer hip kernel benchmark"};
  int size = 96, runs = 5;
  std::string precisions = "fp32,bf16,fp16";  // int8 too on request
  std::string only;
  app.add_option("--size", size, "the window's edge: full resolution (a multiple of 4)");
  app.add_option("--runs", runs, "timed runs after one warm-up; the median is reported");
  app.add_option("--precisions", precisions, "comma-separated: " + precision_tags::joined(",", ","));
  app.add_option("--only", only, "only the rows whose name holds this text, e.g. \"encoder1.conv2\"");
  CLI11_PARSE(app, argc, argv);
  if (size < 4 || size % 4 != 0) throw std::invalid_argument("--size must be a positive multiple of 4");
  hip::context ctx{swinfer::runtime::hip_options_from_environment()};
  const auto& d = ctx.device();
  std::printf("swinfer hip kernels on %s (%s, %d multiprocessors), matrix cores: %s; kernel tuning %s; median of %d "
              "run(s)\n",
              d.name.c_str(), d.arch.c_str(), d.multiprocessors, d.matrix_cores_note.c_str(),
              ctx.tuning().describe().c_str(), std::max(1, runs));
  std::printf("%-52s %-5s %10s %9s %9s\n", "kernel (channels-last, batch 1)", "prec", "ms", "GFLOP|GB", "rate");
  std::mt19937 rng(42);
  for (const auto& p : swinfer_bench::split(precisions)) {
    const bool known =
        precision_tags::visit(p, [&]<class P>(P) {
          if constexpr (is_supported_v<backend::hip, P, layout::ndhwc>) {
            kernel_bench<P>{ctx, size, std::max(1, runs), rng, only}.all();
          } else {
            throw std::invalid_argument("the hip backend does not implement precision " + p);
          }
        });
    if (!known) throw std::invalid_argument("unknown precision '" + p + "' (" + precision_tags::joined() + ")");
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_gpu_kernels: error: %s\n", e.what());
  return 1;
}

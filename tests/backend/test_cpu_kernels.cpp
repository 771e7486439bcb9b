// cpu backend, what the shared op suite (tests/ops/test_ops_cpu.cpp: every kernel against its ops::ref, argument
// errors) does not cover: the context's parallel_for (and that it never waits for a helper that has not started),
// the Winograd convolutions' float32 rounding (the suite checks F(4x4x4) only at the bound of the 16-bit storage it
// runs under), the softmax's exponential near its cutoff, the streamed stores of large outputs, that the fused
// shortcut norm equals the two separate norms bit for bit in float32, the InstanceNorm moments (the pass against
// naive sums; a convolution's gathered ones against the pass, bit for bit), and the low-precision error of a chain of
// ResBlocks against fp32.
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <future>
#include <optional>
#include <random>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "cpu_test_support.hpp"
#include "swinfer/backend/cpu/conv3d_winograd.hpp"
#include "swinfer/backend/cpu/instance_norm.hpp"
#include "swinfer/backend/cpu/simd.hpp"
#include "swinfer/backend/cpu/streaming_store.hpp"
#include "swinfer/model/block_specs.hpp"
#include "swinfer/ops/concat.hpp"
#include "swinfer/ops/conv3d.hpp"
#include "swinfer/ops/instance_norm.hpp"
#include "swinfer/ops/pool3d.hpp"

using namespace swinfer;
using namespace swinfer_cpu_test;

TEST_CASE("context::parallel_for visits every item once and rethrows a body's exception", "[cpu][context]") {
  const int threads = GENERATE(1, 2, 5);
  cpu::context ctx(engine_options{threads});
  REQUIRE(ctx.threads() == threads);
  for (const std::int64_t count : {1, 7, 1000}) {
    for (const std::int64_t grain : {std::int64_t{1}, std::int64_t{3}, ctx.even_grain(count)}) {
      // Catch's assertions are not thread-safe: workers only count, the checks run afterwards.
      std::vector<std::atomic<int>> visits(static_cast<std::size_t>(count));
      std::atomic<int> bad_worker_ids{0};
      ctx.parallel_for(count, grain, [&](std::int64_t begin, std::int64_t end, int worker) {
        if (worker < 0 || worker >= threads) ++bad_worker_ids;
        for (std::int64_t i = begin; i < end; ++i) ++visits[static_cast<std::size_t>(i)];
      });
      CHECK(bad_worker_ids.load() == 0);
      for (const auto& v : visits) REQUIRE(v.load() == 1);
    }
  }
  CHECK_THROWS_AS(ctx.parallel_for(100, 1,
                                   [](std::int64_t begin, std::int64_t end, int) {
                                     if (begin <= 37 && 37 < end) swinfer::detail::fail("item 37 failed");
                                   }),
                  swinfer::error);
  CHECK_THROWS_AS(cpu::context(engine_options{-1}), swinfer::error);
}

TEST_CASE("context::parallel_for does not wait for a helper that has not started", "[cpu][context]") {
  // The context's one helper is held inside another loop (run from a second thread) while this thread runs a
  // loop of its own: its chunks all run here, and it must return without the busy helper's share.
  cpu::context ctx(engine_options{2});
  std::atomic<bool> helper_busy{false}, release{false};
  std::thread holder([&] {
    ctx.parallel_for(2, 1, [&](std::int64_t, std::int64_t, int worker) {
      if (worker != 0) {
        helper_busy = true;
        while (!release) std::this_thread::yield();
        return;
      }
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (!helper_busy && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    });
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!helper_busy && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  REQUIRE(helper_busy);  // else the holder's loop ran both chunks on its own thread
  std::atomic<int> visited{0};
  auto loop = std::async(std::launch::async, [&] {
    ctx.parallel_for(8, 1, [&](std::int64_t begin, std::int64_t end, int) {
      visited += static_cast<int>(end - begin);
    });
  });
  const bool returned = loop.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  release = true;
  holder.join();
  loop.wait();
  CHECK(returned);
  CHECK(visited == 8);
}

/// The float32 rounding each Winograd tile may add, relative to max|y| (measured on these cases: F(2x2x2) up to
/// 5.0e-7, F(4x4x4) up to 3.9e-5; F(4x4x4) with one filter coefficient 0.2 % off fails 24 of its 72 checks).
template <class Tile>
constexpr double winograd_tolerance() {
  return Tile::out_side == 2 ? 2e-6 : 1e-4;
}

TEMPLATE_TEST_CASE("Winograd F(2x2x2) and F(4x4x4) convolutions match direct convolution within their float32 rounding",
                   "[cpu][winograd]", cpu::winograd::f2x3, cpu::winograd::f4x3) {
  using winograd = cpu::conv3d_winograd<TestType>;
  struct problem {
    int cin, cout;
    bool bias;
    shape5 input;
  };
  // Whole tiles and clipped ones on every side, several work items per tile row and several rows per item, input
  // channels past the last packet (with AVX-512, 12 = 8 + 4 lanes and 29 = 16 + 8 + 4 + 1), a partial last column
  // group, two samples.
  const problem cases[] = {{48, 48, true, {1, 48, 16, 12, 24}},
                           {12, 52, true, {2, 12, 9, 7, 11}},
                           {20, 17, false, {1, 20, 8, 10, 70}},
                           {29, 9, true, {1, 29, 9, 8, 10}},
                           {96, 48, false, {1, 96, 13, 8, 9}}};
  const int threads = GENERATE(1, 2, 3);
  const auto kind = GENERATE(layout_kind::ndhwc, layout_kind::ncdhw);
  cpu::context ctx(engine_options{threads});
  for (const problem& c : cases) {
    INFO("conv " << c.cin << "->" << c.cout << " on " << c.input << ", " << threads << " threads");
    const ops::conv3d_problem p{c.cin, c.cout, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, c.bias};
    REQUIRE(winograd::pays(p));
    const float bound = 1.0f / std::sqrt(static_cast<float>(c.cin * 27));  // PyTorch's default initialisation
    const auto weight = swinfer_test::random_vector(static_cast<std::size_t>(c.cout * c.cin * 27), -bound, bound);
    const auto bias = swinfer_test::random_vector(static_cast<std::size_t>(c.cout), -bound, bound);
    const auto input = random_tensor<float>(c.input, kind);
    const shape5 out_shape{c.input.n, c.cout, c.input.d, c.input.h, c.input.w};
    auto out = poisoned_tensor<float>(out_shape, kind);
    winograd(p, weight.data(), c.bias ? bias.data() : nullptr).run(ctx, input, out);
    tensor<float> want(out_shape, kind);
    ops::ref::conv3d(p, input, weight.data(), c.bias ? bias.data() : nullptr, want);
    check_close(out, want, winograd_tolerance<TestType>());
  }
}

namespace {

/// A chain of MONAI UnetResBlocks (conv-IN-LeakyReLU-conv-IN-(+x)-LeakyReLU) run with one configuration's kernels.
template <class Config>
tensor<float> resblock_chain(const tensor<float>& input, const std::vector<std::vector<float>>& weights) {
  using S = typename Config::storage;
  using K = typename Config::kernels;
  cpu::context ctx(engine_options{2});
  const shape5 s = input.shape();
  tensor<S> x(s, Config::kind), h(s, Config::kind), g(s, Config::kind);
  K::convert(ctx, input, x);
  const ops::conv3d_problem p{static_cast<int>(s.c), static_cast<int>(s.c)};
  ops::instance_norm_epilogue with_act;
  with_act.negative_slope = 0.01f;
  for (std::size_t b = 0; b + 1 < weights.size(); b += 2) {
    typename K::conv3d conv1(ctx, p, weights[b].data(), nullptr), conv2(ctx, p, weights[b + 1].data(), nullptr);
    conv1.run(x, h);
    K::instance_norm(ctx, h, nullptr, with_act);
    conv2.run(h, g);
    K::instance_norm(ctx, g, &x, with_act);
    std::swap(x, g);
  }
  tensor<float> out(s, layout_kind::ndhwc);
  K::convert(ctx, x, out);
  return out;
}

}  // namespace

// The packet conversions and to_float against Eigen's scalar ones, bit for bit, on every 16-bit pattern (NaN,
// infinities and subnormals included) and on lengths that leave a scalar tail.
TEMPLATE_TEST_CASE("to_floats, to_float, add_floats and round_like_storage convert half and bfloat16 as the scalar "
                   "conversions do",
                   "[cpu][simd]", Eigen::half, Eigen::bfloat16) {
  using S = TestType;
  std::vector<S> all(1 << 16);
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = Eigen::numext::bit_cast<S>(static_cast<std::uint16_t>(i));
  const auto same_bits = [](float a, float b) {
    return Eigen::numext::bit_cast<std::uint32_t>(a) == Eigen::numext::bit_cast<std::uint32_t>(b) ||
           (std::isnan(a) && std::isnan(b));
  };
  for (const std::int64_t n : {std::int64_t{1 << 16}, std::int64_t{37}, std::int64_t{5}}) {
    INFO("n " << n);
    std::vector<float> widened(static_cast<std::size_t>(n), -1.0f);
    cpu::to_floats(all.data(), widened.data(), n);
    std::int64_t wrong = 0, wrong_scalar = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      wrong += !same_bits(widened[i], static_cast<float>(all[i]));
      wrong_scalar += !same_bits(to_float(all[i]), static_cast<float>(all[i]));
    }
    CHECK(wrong == 0);
    CHECK(wrong_scalar == 0);

    std::vector<float> addend(static_cast<std::size_t>(n));
    // Mostly O(1) addends; every seventh is zero, so subnormal and NaN inputs also reach the narrowing as they are.
    for (std::int64_t i = 0; i < n; ++i) addend[i] = i % 7 == 0 ? 0.0f : 0.37f * static_cast<float>(i % 11) - 1.5f;
    std::vector<S> sum(all.begin(), all.begin() + n);
    cpu::add_floats(addend.data(), sum.data(), n);
    wrong = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      wrong += !same_bits(static_cast<float>(sum[i]), static_cast<float>(S(static_cast<float>(all[i]) + addend[i])));
    }
    CHECK(wrong == 0);

    // round_like_storage on every float that is a pattern's value, those halfway to the next pattern (ties: to
    // even), and those just above and below the halfway point.
    std::vector<float> values, want;
    for (std::int64_t i = 0; i < n; ++i) {
      const float x = static_cast<float>(all[i]);
      const float next = static_cast<float>(Eigen::numext::bit_cast<S>(static_cast<std::uint16_t>((i + 1) & 0xffff)));
      const float half_way = x + (next - x) / 2;
      for (const float v : {x, half_way, std::nextafter(half_way, 0.0f), std::nextafter(half_way, INFINITY)}) {
        values.push_back(v);
        want.push_back(static_cast<float>(S(v)));
      }
    }
    cpu::round_like_storage<S>(values.data(), static_cast<std::int64_t>(values.size()));
    wrong = 0;
    for (std::size_t i = 0; i < values.size(); ++i) wrong += !same_bits(values[i], want[i]);
    CHECK(wrong == 0);
  }
}

// Streamed stores write what from_floats writes, bit for bit, wherever dst starts (aligned or not, an odd byte
// offset for 16-bit values' halves excluded) and however long the run, and nothing outside it.
TEMPLATE_TEST_CASE("stream_from_floats stores exactly what from_floats does, and only there", "[cpu][simd]", float,
                   Eigen::bfloat16, Eigen::half) {
  using S = TestType;
  constexpr std::int64_t guard = 64;
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  for (const std::int64_t n : {std::int64_t{0}, std::int64_t{1}, std::int64_t{15}, std::int64_t{33},
                               std::int64_t{48}, std::int64_t{96 * 48 + 5}}) {
    std::vector<float> src(static_cast<std::size_t>(n));
    for (float& v : src) v = u(swinfer_test::rng());
    if (n > 3) src[3] = 1e-40f;  // a subnormal: narrowing must keep from_floats' rounding of it
    for (std::int64_t offset = 0; offset < 40; offset += 7) {
      INFO("n " << n << ", dst offset " << offset << " values");
      // 64-byte aligned storage; dst starts `offset` values in, poison on both sides.
      const S poison = S(-123.0f);
      tensor<S> want_store(shape5{1, 1, 1, 1, n + 2 * guard + offset}, layout_kind::ndhwc);
      tensor<S> got_store(want_store.shape(), layout_kind::ndhwc);
      want_store.fill(poison);
      got_store.fill(poison);
      cpu::from_floats(src.data(), want_store.data() + guard + offset, n);
      cpu::stream_from_floats(src.data(), got_store.data() + guard + offset, n);
      cpu::store_fence();
      std::int64_t wrong = 0;
      for (std::int64_t i = 0; i < want_store.size(); ++i) {
        wrong += std::memcmp(want_store.data() + i, got_store.data() + i, sizeof(S)) != 0;
      }
      CHECK(wrong == 0);
    }
  }
}

// Under float32 storage instance_norm_sum computes, value for value, what the separate ops compute and store (the
// int8 model runs the fused form, and its goldens were made with the separate ops): checked bit for bit.
TEST_CASE("instance_norm_sum equals the shortcut's norm then the norm with it, bit for bit in float32", "[cpu]") {
  cpu::context ctx(engine_options{2});
  for (const auto kind : {layout_kind::ndhwc, layout_kind::ncdhw}) {
    for (const shape5 s : {shape5{2, 48, 6, 7, 5}, shape5{1, 12, 9, 4, 7}, shape5{1, 3, 20, 21, 22}}) {
      INFO(layout_name(kind) << " " << s.str());
      const auto x = swinfer_test::random_tensor<float>(s, kind, -2.0f, 5.0f);
      const auto residual = swinfer_test::random_tensor<float>(s, kind, 90.0f, 110.0f);
      const ops::instance_norm_epilogue e{1e-5f, 0.01f};
      auto fused = x.clone();
      cpu::instance_norm_sum(ctx, fused, residual, e);
      auto separate = x.clone();
      auto shortcut = residual.clone();
      cpu::instance_norm<float>(ctx, shortcut, nullptr, {1e-5f, std::nullopt});
      cpu::instance_norm(ctx, separate, &shortcut, e);
      CHECK(std::memcmp(fused.data(), separate.data(), static_cast<std::size_t>(x.size()) * sizeof(float)) == 0);
    }
  }
}

namespace {

/// InstanceNorm's moments of x per (sample, channel) from naive double sums: the mean, then the mean squared
/// deviation from it.
template <class S>
cpu::channel_moments naive_moments(const tensor<S>& x) {
  const shape5& s = x.shape();
  const auto& st = x.strides();
  cpu::channel_moments m{std::vector<double>(static_cast<std::size_t>(s.n * s.c)),
                         std::vector<double>(static_cast<std::size_t>(s.n * s.c))};
  const auto voxels = static_cast<double>(s.spatial());
  for (std::int64_t n = 0; n < s.n; ++n)
    for (std::int64_t c = 0; c < s.c; ++c) {
      const auto at = [&](std::int64_t z, std::int64_t y, std::int64_t w) {
        return static_cast<double>(to_float(x.data()[n * st[0] + c * st[1] + z * st[2] + y * st[3] + w * st[4]]));
      };
      double sum = 0, sq = 0;
      for (std::int64_t z = 0; z < s.d; ++z)
        for (std::int64_t y = 0; y < s.h; ++y)
          for (std::int64_t w = 0; w < s.w; ++w) sum += at(z, y, w);
      const double mean = sum / voxels;
      for (std::int64_t z = 0; z < s.d; ++z)
        for (std::int64_t y = 0; y < s.h; ++y)
          for (std::int64_t w = 0; w < s.w; ++w) sq += (at(z, y, w) - mean) * (at(z, y, w) - mean);
      m.mean[static_cast<std::size_t>(n * s.c + c)] = mean;
      m.variance[static_cast<std::size_t>(n * s.c + c)] = sq / voxels;
    }
  return m;
}

bool same_bits(const cpu::channel_moments& a, const cpu::channel_moments& b) {
  return a.mean.size() == b.mean.size() && a.variance.size() == b.variance.size() &&
         std::memcmp(a.mean.data(), b.mean.data(), a.mean.size() * sizeof(double)) == 0 &&
         std::memcmp(a.variance.data(), b.variance.data(), a.variance.size() * sizeof(double)) == 0;
}

template <class S>
bool same_bits(const tensor<S>& a, const tensor<S>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), static_cast<std::size_t>(a.size()) * sizeof(S)) == 0;
}

}  // namespace

// The statistics pass against naive double sums, with means far from zero (the single-pass variance's cancellation)
// and rows longer than the 64 voxels a float32 sum takes.
TEMPLATE_TEST_CASE("instance_norm_moments: the mean and variance of naive double sums, far from zero too", "[cpu]",
                   float, Eigen::bfloat16) {
  cpu::context ctx(engine_options{3});
  for (const auto kind : {layout_kind::ndhwc, layout_kind::ncdhw}) {
    for (const shape5 s : {shape5{2, 48, 6, 7, 5}, shape5{1, 12, 9, 4, 7}, shape5{1, 20, 3, 2, 150}}) {
      for (const auto& [lo, hi] : {std::pair{-2.0f, 5.0f}, std::pair{90.0f, 110.0f}}) {
        INFO(layout_name(kind) << " " << s.str() << " values in [" << lo << ", " << hi << ")");
        const auto x = random_tensor<TestType>(s, kind, lo, hi);
        const cpu::channel_moments got = cpu::instance_norm_moments(ctx, x), want = naive_moments(x);
        // Float32 sums of up to 64 terms from a shift: the mean within 2^-18 of the values' range.
        double mean_error = 0, variance_error = 0;
        for (std::size_t i = 0; i < want.mean.size(); ++i) {
          mean_error = std::max(mean_error, std::abs(got.mean[i] - want.mean[i]) / (hi - lo));
          variance_error = std::max(variance_error, std::abs(got.variance[i] - want.variance[i]) / want.variance[i]);
        }
        CHECK(mean_error < 0x1p-18);
        CHECK(variance_error < 1e-5);
      }
    }
  }
}

// A convolution's gathered moments are those of the values it stored, bit for bit those of the statistics pass over
// its output, on every route (rows recorded as stored: the sweep's float32, AMX, int8 and whole-grid routes; a pass
// after Winograd or into channels-first), whatever the thread count; the norms given them then compute what they
// compute without them. Under bf16 storage the rows are recorded as rounded.
TEMPLATE_TEST_CASE("conv3d gathers its output's moments as it stores it, bit for bit those of a pass over the output",
                   "[cpu][instance_norm]", float, Eigen::bfloat16) {
  using S = TestType;
  struct conv_case {
    const char* name;
    ops::conv3d_problem p;
    shape5 in;
    layout_kind kind = layout_kind::ndhwc;
  };
  const auto conv = model::same_conv;
  auto int8 = conv(48, 48, 3);
  int8.int8.scale = 0.03f;
  std::vector<conv_case> cases{
      {"1x1x1 96->48", conv(96, 48, 1), {2, 96, 5, 6, 7}},
      {"1x1x1 96->48, channels-first", conv(96, 48, 1), {2, 96, 5, 6, 7}, layout_kind::ncdhw},
      {"3x3x3 24->40 @3^3 (40: a part packet)", conv(24, 40, 3), {1, 24, 3, 3, 3}},
      {"3x3x3 48->96", conv(48, 96, 3), {1, 48, 6, 5, 9}},
      {"3x3x3 384->384 @3^3 (float32: the whole-grid GEMM)", conv(384, 384, 3), {1, 384, 3, 3, 3}},
  };
  if constexpr (std::is_same_v<S, float>) cases.push_back({"3x3x3 48->48 int8", int8, {1, 48, 7, 6, 8}});
  cpu::context one(engine_options{1}), three(engine_options{3});
  const ops::instance_norm_epilogue e{1e-5f, 0.01f};
  for (const conv_case& c : cases) {
    INFO(c.name);
    const float bound = 1.0f / std::sqrt(static_cast<float>(c.p.cin * c.p.kernel[0] * c.p.kernel[1] * c.p.kernel[2]));
    const auto weight = swinfer_test::random_vector(static_cast<std::size_t>(c.p.weight_count()), -bound, bound);
    const auto in = random_tensor<S>(c.in, c.kind, -1.0f, 3.0f);
    const shape5 os = c.p.output_shape(c.in);
    cpu::conv3d<S> op3(three, c.p, weight.data(), nullptr), op1(one, c.p, weight.data(), nullptr);
    auto out = poisoned_tensor<S>(os, c.kind), out1 = poisoned_tensor<S>(os, c.kind);
    cpu::channel_moments gathered, gathered1;
    op3.run(in, out, gathered);
    op1.run(in, out1, gathered1);
    INFO(op3.path());
    CHECK(same_bits(gathered, cpu::instance_norm_moments(three, out)));
    CHECK(same_bits(gathered, gathered1));
    CHECK(same_bits(out, out1));

    // The norm given them, and the next convolution normalising on load from them.
    auto norm_given = out.clone(), norm_pass = out.clone();
    cpu::instance_norm(three, norm_given, gathered, &out, e);
    cpu::instance_norm(three, norm_pass, &out, e);
    CHECK(same_bits(norm_given, norm_pass));
    const auto after = conv(static_cast<int>(os.c), 16, 3);
    const auto next_weight = swinfer_test::random_vector(static_cast<std::size_t>(after.weight_count()), -0.1f, 0.1f);
    cpu::conv3d<S> next(three, after, next_weight.data(), nullptr);
    auto y_given = poisoned_tensor<S>(after.output_shape(os), c.kind), y_pass = y_given.clone();
    cpu::channel_moments y_moments;
    next.run(out, gathered, e, y_given, y_moments);
    next.run(out, e, y_pass);
    CHECK(same_bits(y_given, y_pass));
    CHECK(same_bits(y_moments, cpu::instance_norm_moments(three, y_given)));
  }

  // A decoder's two parts read where they are.
  const auto first = random_tensor<S>({1, 40, 5, 6, 7}, layout_kind::ndhwc, -1.0f, 3.0f);
  const auto second = random_tensor<S>({1, 56, 5, 6, 7}, layout_kind::ndhwc, 0.0f, 2.0f);
  const auto joined = conv(96, 48, 3);
  const auto weight = swinfer_test::random_vector(static_cast<std::size_t>(joined.weight_count()), -0.05f, 0.05f);
  cpu::conv3d<S> op(three, joined, weight.data(), nullptr);
  auto out = poisoned_tensor<S>({1, 48, 5, 6, 7}, layout_kind::ndhwc);
  cpu::channel_moments gathered;
  op.run(first, second, out, gathered);
  CHECK(same_bits(gathered, cpu::instance_norm_moments(three, out)));

  // Moments made for another tensor are refused, naming the shape.
  const cpu::channel_moments other{{0.0}, {1.0}};
  const tensor<S>* no_residual = nullptr;
  CHECK_THROWS_WITH(cpu::instance_norm(three, out, other, no_residual, e), Catch::Contains("(1, 48, 5, 6, 7)"));
  auto y = poisoned_tensor<S>({1, 48, 5, 6, 7}, layout_kind::ndhwc);
  cpu::conv3d<S> next(three, model::same_conv(48, 48, 1), weight.data(), nullptr);
  CHECK_THROWS_WITH(next.run(out, other, e, y, gathered), Catch::Contains("conv3d: moments for 1"));
}

// The window attention's softmax numerators against std::exp: within 2 ulp from the cutoff up, exactly zero below
// it (the shifted windows' -100 mask lands there), never subnormal; the row's sum over the first n values only.
TEST_CASE("exp_minus: e^(v - max) within 2 ulp down to its cutoff, zero below it, never subnormal", "[cpu][simd]") {
  std::vector<float> v;
  for (float x = -120.0f; x <= 0.0f; x += 0.0625f) v.push_back(x);
  for (const float near : {cpu::softmax_exp_cutoff, std::nextafter(cpu::softmax_exp_cutoff, 0.0f),
                           std::nextafter(cpu::softmax_exp_cutoff, -1.0f), -87.4f, -103.3f}) {
    v.push_back(near);
  }
  const auto n = static_cast<std::int64_t>(v.size());
  const float max = 1.5f;  // the values are shifted by it
  for (float& x : v) x += max;
  v.resize(static_cast<std::size_t>(cpu::round_up(n, cpu::packet_size)), max);  // the last packet is read whole
  std::vector<float> e(v.size(), -1.0f);
  const float sum = cpu::exp_minus(v.data(), n, max, [&](std::int64_t i, const cpu::packet& p) {
    Eigen::internal::pstoreu(e.data() + i, p);
  });
  double expected_sum = 0;
  std::int64_t wrong = 0, subnormal = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const float x = v[i] - max, want = x < cpu::softmax_exp_cutoff ? 0.0f : std::exp(x);
    const float ulp = std::nextafter(want, INFINITY) - want;
    wrong += !(std::fabs(e[i] - want) <= 2 * ulp);
    subnormal += std::fpclassify(e[i]) == FP_SUBNORMAL;
    expected_sum += want;
  }
  CHECK(wrong == 0);
  CHECK(subnormal == 0);
  CHECK(sum == Approx(expected_sum).epsilon(1e-6));
}

// bf16 storage alone costs about 0.6% relative L2 after three ResBlocks here (0.95% after six); this checks that the
// kernels add nothing on top of the rounding of stored activations (e.g. the AMX path's weights).
TEMPLATE_LIST_TEST_CASE("low precision stays within 1e-2 relative L2 of fp32 through a chain of ResBlocks",
                        "[cpu][precision]", all_configs) {
  const shape5 s{1, 24, 10, 9, 11};
  const int blocks = 3;
  std::vector<std::vector<float>> weights;
  const float bound = 1.0f / std::sqrt(24.0f * 27.0f);  // PyTorch's default conv initialisation
  for (int i = 0; i < 2 * blocks; ++i) weights.push_back(swinfer_test::random_vector(24 * 24 * 27, -bound, bound));
  const auto input = random_tensor<float>(s, layout_kind::ndhwc);
  const auto want = resblock_chain<config<precision::fp32, layout::ndhwc>>(input, weights);
  const auto got = resblock_chain<TestType>(input, weights);
  const auto e = swinfer_test::compare(got, want);
  INFO("relative L2 " << e.rel_l2 << ", max|diff| " << e.max_abs);
  CHECK(e.rel_l2 < (std::is_same_v<typename TestType::storage, float> ? 1e-6 : 1e-2));
}

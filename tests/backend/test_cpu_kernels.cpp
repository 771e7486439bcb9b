// cpu backend: every convolution, norm, linear and data-movement kernel against its ops::ref on fresh random
// inputs, for fp32/fp16/bf16 and both layouts, with outputs poisoned first and 1, 2 or 5 workers; and the
// low-precision error of a chain of ResBlocks against fp32.
#include <array>
#include <atomic>
#include <cmath>
#include <string_view>
#include <utility>
#include <vector>

#include "cpu_test_support.hpp"
#include "swinfer/ops/concat.hpp"
#include "swinfer/ops/conv3d.hpp"
#include "swinfer/ops/conv_transpose3d.hpp"
#include "swinfer/ops/instance_norm.hpp"
#include "swinfer/ops/layer_norm.hpp"
#include "swinfer/ops/linear.hpp"
#include "swinfer/ops/patch_merging.hpp"
#include "swinfer/ops/pool3d.hpp"

using namespace swinfer;
using namespace swinfer_cpu_test;

namespace {

/// The reference input: the kernel's (already rounded) input widened to float32.
template <class S>
tensor<float> widened(const tensor<S>& t) {
  return swinfer_test::to_float_tensor(t, t.layout());
}

/// The weights a kernel multiplies with: rounded to bf16 on the pair dot product path (which stores them so), as
/// given on every other path (float32 or AMX hi + lo), so the reference stays exact for those.
template <class S, class Kernel>
std::vector<float> weights_as_used(const Kernel& kernel, std::vector<float> weight) {
  if (std::string_view(kernel.path()) == "avx512 bf16 dot") swinfer_test::round_weights_like_storage<S>(weight);
  return weight;
}

}  // namespace

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

TEMPLATE_LIST_TEST_CASE("conv3d matches the reference", "[cpu][conv3d]", all_configs) {
  using S = typename TestType::storage;
  struct conv_case {
    int cin, cout;
    std::array<int, 3> kernel, stride, pad;
    bool bias;
    shape5 in;
  };
  const std::vector<conv_case> cases = {
      {5, 7, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, false, {2, 5, 5, 7, 3}},        // odd volume, batch 2
      {3, 50, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, true, {1, 3, 6, 5, 4}},        // a full and a 1-packet column group
      {16, 100, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, false, {1, 16, 4, 3, 19}},   // rows not a multiple of the tile
      {20, 14, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, true, {2, 20, 4, 3, 5}},      // 1x1x1 projection / head
      {1, 12, {2, 2, 2}, {2, 2, 2}, {0, 0, 0}, true, {1, 1, 6, 4, 8}},        // patch embedding
      {6, 9, {2, 3, 1}, {2, 1, 1}, {0, 1, 0}, false, {1, 6, 5, 4, 3}},        // anisotropic kernel and stride
      {104, 100, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, false, {1, 104, 3, 3, 2}},  // weights split into L2 chunks
  };
  const int threads = GENERATE(1, 2, 5);
  const auto weights = GENERATE(bf16_weight_mode::exact, bf16_weight_mode::rounded);
  cpu::context ctx(engine_options{threads, weights});
  for (const auto& c : cases) {
    ops::conv3d_problem p{c.cin, c.cout, c.kernel, c.stride, c.pad, c.bias};
    INFO("cin " << c.cin << " cout " << c.cout << " input " << c.in.str() << " threads " << threads << " bf16 weights "
                << (weights == bf16_weight_mode::rounded ? "rounded" : "exact"));
    const auto weight = swinfer_test::random_vector(static_cast<std::size_t>(p.weight_count()));
    const auto bias = swinfer_test::random_vector(static_cast<std::size_t>(c.cout));
    auto in = random_tensor<S>(c.in, TestType::kind);
    auto out = poisoned_tensor<S>(p.output_shape(c.in), TestType::kind);
    typename TestType::kernels::conv3d conv(ctx, p, weight.data(), c.bias ? bias.data() : nullptr);
    conv.run(in, out);
    tensor<float> want(out.shape(), TestType::kind);
    ops::ref::conv3d(p, widened(in), weights_as_used<S>(conv, weight).data(), c.bias ? bias.data() : nullptr, want);
    check_close(out, want);
  }
}

TEMPLATE_LIST_TEST_CASE("conv3d rejects mismatched shapes", "[cpu][conv3d]", all_configs) {
  using S = typename TestType::storage;
  cpu::context ctx(engine_options{1});
  ops::conv3d_problem p{4, 8};
  const auto weight = swinfer_test::random_vector(static_cast<std::size_t>(p.weight_count()));
  typename TestType::kernels::conv3d conv(ctx, p, weight.data(), nullptr);
  auto wrong_channels = random_tensor<S>({1, 3, 4, 4, 4}, TestType::kind);
  auto out = poisoned_tensor<S>({1, 8, 4, 4, 4}, TestType::kind);
  CHECK_THROWS_AS(conv.run(wrong_channels, out), swinfer::error);
  auto in = random_tensor<S>({1, 4, 4, 4, 4}, TestType::kind);
  auto wrong_out = poisoned_tensor<S>({1, 8, 4, 4, 5}, TestType::kind);
  CHECK_THROWS_AS(conv.run(in, wrong_out), swinfer::error);
  CHECK_THROWS_AS(typename TestType::kernels::conv3d(
                      ctx, ops::conv3d_problem{4, 8, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, true}, weight.data(), nullptr),
                  swinfer::error);
}

TEMPLATE_LIST_TEST_CASE("conv_transpose3d matches the reference", "[cpu][conv_transpose3d]", all_configs) {
  using S = typename TestType::storage;
  struct up_case {
    int cin, cout;
    shape5 in;
  };
  const std::vector<up_case> cases = {
      {5, 7, {2, 5, 3, 2, 4}},        // batch 2, odd sizes
      {20, 50, {1, 20, 2, 3, 5}},     // a full and a 1-packet column group
      {700, 100, {1, 700, 2, 2, 1}},  // weights split into L2 chunks
  };
  const int threads = GENERATE(1, 2, 5);
  cpu::context ctx(engine_options{threads});
  for (const auto& c : cases) {
    INFO("cin " << c.cin << " cout " << c.cout << " input " << c.in.str() << " threads " << threads);
    const auto weight = swinfer_test::random_vector(static_cast<std::size_t>(c.cin) * c.cout * 8);
    auto in = random_tensor<S>(c.in, TestType::kind);
    auto out = poisoned_tensor<S>(ops::conv_transpose3d_output_shape(c.in, c.cin, c.cout), TestType::kind);
    typename TestType::kernels::conv_transpose3d up(ctx, c.cin, c.cout, weight.data());
    up.run(in, out);
    tensor<float> want(out.shape(), TestType::kind);
    ops::ref::conv_transpose3d(widened(in), c.cout, weight.data(), want);
    check_close(out, want);
  }
}

TEMPLATE_LIST_TEST_CASE("linear matches the reference with every epilogue", "[cpu][linear]", all_configs) {
  using S = typename TestType::storage;
  struct linear_case {
    ops::linear_problem p;
    std::int64_t rows;
  };
  const std::vector<linear_case> cases = {
      {{48, 144, true, false, false}, 130},  // qkv: rows cross the 64-row blocks
      {{19, 50, true, true, false}, 7},      // MLP linear1 (GELU)
      {{37, 5, false, false, true}, 65},     // no bias, accumulate
      {{50, 19, true, false, true}, 1},      // MLP linear2 / proj (bias + residual)
      {{13, 97, true, true, true}, 16},      // everything, three column groups
  };
  const int threads = GENERATE(1, 2, 5);
  const auto weights = GENERATE(bf16_weight_mode::exact, bf16_weight_mode::rounded);
  cpu::context ctx(engine_options{threads, weights});
  for (const auto& c : cases) {
    const auto& p = c.p;
    INFO(p.in_features << " -> " << p.out_features << " bias " << p.bias << " gelu " << p.gelu << " accumulate "
                       << p.accumulate << " rows " << c.rows << " threads " << threads << " bf16 weights "
                       << (weights == bf16_weight_mode::rounded ? "rounded" : "exact"));
    const auto weight = swinfer_test::random_vector(static_cast<std::size_t>(p.in_features) * p.out_features);
    const auto bias = swinfer_test::random_vector(static_cast<std::size_t>(p.out_features));
    auto x = random_tensor<S>({1, p.in_features, 1, 1, c.rows}, layout_kind::ndhwc);
    auto y = p.accumulate ? random_tensor<S>({1, p.out_features, 1, 1, c.rows}, layout_kind::ndhwc)
                          : poisoned_tensor<S>({1, p.out_features, 1, 1, c.rows}, layout_kind::ndhwc);
    auto want = widened(y);
    typename TestType::kernels::linear lin(ctx, p, weight.data(), p.bias ? bias.data() : nullptr);
    lin.run(x.data(), c.rows, y.data());
    ops::ref::linear(p, widened(x).data(), c.rows, weights_as_used<S>(lin, weight).data(),
                     p.bias ? bias.data() : nullptr, want.data());
    check_close(y, want);
  }
}

TEMPLATE_LIST_TEST_CASE("layer_norm matches the reference, affine or not, in place or not", "[cpu][layer_norm]",
                        all_configs) {
  using S = typename TestType::storage;
  const int threads = GENERATE(1, 2, 5);
  cpu::context ctx(engine_options{threads});
  for (const int channels : {7, 48, 384}) {
    for (const bool affine : {true, false}) {
      for (const bool in_place : {false, true}) {
        const std::int64_t rows = 300;  // more than one 256-row block
        INFO(channels << " channels, affine " << affine << ", in place " << in_place << ", threads " << threads);
        const auto gamma = swinfer_test::random_vector(static_cast<std::size_t>(channels), 0.5f, 1.5f);
        const auto beta = swinfer_test::random_vector(static_cast<std::size_t>(channels));
        auto x = random_tensor<S>({1, channels, 1, 1, rows}, layout_kind::ndhwc, -3.0f, 5.0f);
        auto want = widened(x);
        auto y = poisoned_tensor<S>(x.shape(), layout_kind::ndhwc);
        typename TestType::kernels::layer_norm norm(ctx, channels, affine ? gamma.data() : nullptr,
                                                    affine ? beta.data() : nullptr, 1e-5f);
        S* dst = in_place ? x.data() : y.data();
        norm.run(x.data(), rows, dst);
        ops::ref::layer_norm(want.data(), rows, channels, affine ? gamma.data() : nullptr,
                             affine ? beta.data() : nullptr, 1e-5f, want.data());
        check_close(in_place ? x : y, want);
      }
    }
  }
}

TEMPLATE_LIST_TEST_CASE("instance_norm matches the reference with residual and LeakyReLU", "[cpu][instance_norm]",
                        all_configs) {
  using S = typename TestType::storage;
  const std::vector<shape5> shapes = {{2, 5, 5, 7, 3}, {1, 3, 20, 21, 22}};  // the second spans two voxel blocks
  const int threads = GENERATE(1, 2, 5);
  cpu::context ctx(engine_options{threads});
  for (const auto& s : shapes) {
    for (const bool with_residual : {false, true}) {
      for (const bool with_activation : {false, true}) {
        INFO(s.str() << " residual " << with_residual << " activation " << with_activation << " threads " << threads);
        // A large common offset checks that the statistics do not lose the variance to cancellation.
        auto x = random_tensor<S>(s, TestType::kind, 90.0f, 110.0f);
        auto residual = random_tensor<S>(s, TestType::kind);
        auto want = widened(x);
        ops::instance_norm_epilogue e;
        if (with_activation) e.negative_slope = 0.01f;
        TestType::kernels::instance_norm(ctx, x, with_residual ? &residual : nullptr, e);
        const auto residual_f = widened(residual);
        ops::ref::instance_norm(want, with_residual ? &residual_f : nullptr, e);
        check_close(x, want);
      }
    }
  }
}

TEMPLATE_LIST_TEST_CASE("concat_channels puts the parts in order", "[cpu][concat]", all_configs) {
  using S = typename TestType::storage;
  const int threads = GENERATE(1, 2, 5);
  cpu::context ctx(engine_options{threads});
  auto a = random_tensor<S>({2, 3, 5, 7, 3}, TestType::kind);
  auto b = random_tensor<S>({2, 5, 5, 7, 3}, TestType::kind);
  auto c = random_tensor<S>({2, 1, 5, 7, 3}, TestType::kind);
  for (const auto& parts : {std::vector<const tensor<S>*>{&a, &b}, std::vector<const tensor<S>*>{&c, &a, &b, &c}}) {
    auto out = poisoned_tensor<S>(ops::concat_channels_shape(parts), TestType::kind);
    TestType::kernels::concat_channels(ctx, parts, out);
    tensor<S> want(out.shape(), TestType::kind);
    ops::ref::concat_channels(parts, want);
    CHECK(swinfer_test::compare(out, want).max_abs == 0.0);
  }
  auto wrong = poisoned_tensor<S>({2, 7, 5, 7, 3}, TestType::kind);
  CHECK_THROWS_AS(TestType::kernels::concat_channels(ctx, {&a, &b}, wrong), swinfer::error);
  auto other_grid = random_tensor<S>({2, 3, 5, 7, 4}, TestType::kind);
  CHECK_THROWS_AS(TestType::kernels::concat_channels(ctx, {&a, &other_grid}, wrong), swinfer::error);
}

TEMPLATE_LIST_TEST_CASE("pool3d matches the naive max and average pooling", "[cpu][pool3d]", all_configs) {
  using S = typename TestType::storage;
  const int threads = GENERATE(1, 2, 5);
  cpu::context ctx(engine_options{threads});
  // Odd sizes leave a floor remainder on every axis; kernel 1 is the identity.
  for (const auto& [shape, kernel] : {std::pair<shape5, int>{{2, 3, 9, 7, 11}, 2}, {{1, 5, 13, 8, 9}, 4},
                                      {{1, 2, 33, 32, 40}, 16}, {{1, 4, 3, 5, 2}, 1}}) {
    for (const auto mode : {ops::pool_mode::max, ops::pool_mode::avg}) {
      INFO(shape.str() << " kernel " << kernel << " " << ops::pool_mode_name(mode) << " threads " << threads);
      const ops::pool3d_problem p{mode, kernel};
      const auto x = random_tensor<S>(shape, TestType::kind, -3.0f, 5.0f);
      auto out = poisoned_tensor<S>(p.output_shape(shape), TestType::kind);
      TestType::kernels::pool3d(ctx, x, p, out);
      tensor<float> want(p.output_shape(shape), TestType::kind);
      ops::ref::pool3d(widened(x), p, want);
      check_close(out, want);
    }
  }
  const auto tiny = random_tensor<S>({1, 1, 3, 8, 8}, TestType::kind);
  auto out = poisoned_tensor<S>({1, 1, 1, 2, 2}, TestType::kind);
  CHECK_THROWS_WITH(TestType::kernels::pool3d(ctx, tiny, {ops::pool_mode::max, 4}, out),
                    Catch::Contains("smaller than the 4^3 max-pooling kernel"));
}

TEMPLATE_LIST_TEST_CASE("patch_merge_gather follows each merge order", "[cpu][patch_merging]", all_configs) {
  using S = typename TestType::storage;
  const int threads = GENERATE(1, 2, 5);
  cpu::context ctx(engine_options{threads});
  for (const auto order : {ops::merge_order::merging, ops::merge_order::merging_legacy, ops::merge_order::mergingv2}) {
    INFO(ops::merge_order_name(order) << " threads " << threads);
    auto x = random_tensor<S>({2, 6, 4, 6, 2}, TestType::kind);
    auto out = poisoned_tensor<S>(ops::patch_merge_shape(x.shape()), TestType::kind);
    TestType::kernels::patch_merge_gather(ctx, x, order, out);
    tensor<S> want(out.shape(), TestType::kind);
    ops::ref::patch_merge_gather(x, order, want);
    CHECK(swinfer_test::compare(out, want).max_abs == 0.0);
  }
}

TEMPLATE_LIST_TEST_CASE("convert changes element type and layout", "[cpu][convert]", all_configs) {
  using S = typename TestType::storage;
  const int threads = GENERATE(1, 2, 5);
  cpu::context ctx(engine_options{threads});
  const shape5 s{2, 5, 7, 3, 9};
  for (const auto target : {layout_kind::ncdhw, layout_kind::ndhwc}) {
    INFO("to " << layout_name(target) << " threads " << threads);
    auto src = random_tensor<float>(s, TestType::kind, -3.0f, 3.0f);
    auto lowered = poisoned_tensor<S>(s, target);
    TestType::kernels::convert(ctx, src, lowered);
    for (std::int64_t i = 0; i < s.numel(); i += 37) {
      const std::int64_t x = i % s.w, y = (i / s.w) % s.h, z = (i / (s.w * s.h)) % s.d,
                         c = (i / (s.w * s.h * s.d)) % s.c, n = i / (s.w * s.h * s.d * s.c);
      REQUIRE(to_float(lowered(n, c, z, y, x)) == to_float(from_float<S>(src(n, c, z, y, x))));
    }
    auto back = poisoned_tensor<float>(s, TestType::kind);
    TestType::kernels::convert(ctx, lowered, back);
    CHECK(swinfer_test::compare(back, lowered).max_abs == 0.0);
    auto copy = poisoned_tensor<S>(s, target == layout_kind::ncdhw ? layout_kind::ndhwc : layout_kind::ncdhw);
    TestType::kernels::convert(ctx, lowered, copy);
    CHECK(swinfer_test::compare(copy, lowered).max_abs == 0.0);
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

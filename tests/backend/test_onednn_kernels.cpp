// The oneDNN backend, kernel by kernel, against the naive references in swinfer::ops::ref.
// Fresh random inputs every run (Catch's --rng-seed), outputs poisoned with NaN, odd sizes, batch 2,
// fp32 and bf16, both layouts. fp32 must agree to float32 rounding; bf16 within 1e-2 relative L2.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "attention_testing.hpp"
#include "backend_testing.hpp"
#include "swinfer/backend/onednn.hpp"
#include "swinfer/ops/concat.hpp"
#include "swinfer/ops/conv3d.hpp"
#include "swinfer/ops/conv_transpose3d.hpp"
#include "swinfer/ops/instance_norm.hpp"
#include "swinfer/ops/layer_norm.hpp"
#include "swinfer/ops/linear.hpp"
#include "swinfer/ops/patch_merging.hpp"
#include "swinfer/ops/pool3d.hpp"
#include "swinfer/ops/window_attention.hpp"
#include "swinfer/ops/window_plan.hpp"
#include "tensor_testing.hpp"

namespace {

using namespace swinfer;
using swinfer_test::compare;
using swinfer_test::error_stats;
using swinfer_test::random_tensor;
using swinfer_test::random_vector;

template <class P, class L>
struct config {
  using storage = storage_t<P>;
  using K = kernels<backend::onednn, P, L>;
  static constexpr layout_kind kind = L::kind;
  static constexpr bool fp32 = std::is_same_v<P, precision::fp32>;
};
using fp32_ncdhw = config<precision::fp32, layout::ncdhw>;
using fp32_ndhwc = config<precision::fp32, layout::ndhwc>;
using bf16_ncdhw = config<precision::bf16, layout::ncdhw>;
using bf16_ndhwc = config<precision::bf16, layout::ndhwc>;

static_assert(is_supported_v<backend::onednn, precision::fp32, layout::ndhwc>);
static_assert(is_supported_v<backend::onednn, precision::bf16, layout::ncdhw>);
static_assert(!is_supported_v<backend::onednn, precision::fp16, layout::ndhwc>);
static_assert(!is_supported_v<backend::onednn, precision::int8, layout::ncdhw>);

template <class T>
std::vector<float> to_floats(const std::vector<T>& v) {
  std::vector<float> f(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) f[i] = to_float(v[i]);
  return f;
}

template <class T>
std::vector<T> from_floats(const std::vector<float>& v) {
  std::vector<T> s(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) s[i] = from_float<T>(v[i]);
  return s;
}

/// fp32: max |kernel - ref| <= tol * max(1, max |ref|), a few float32 ulps of the largest output (oneDNN
/// accumulates in float32 in its own order, the references in double); bf16: relative L2 <= 1e-2.
/// Either way nothing may be left unwritten (NaN poison makes max_abs infinite).
template <class Cfg>
void check_close(const error_stats& e, double tol) {
  INFO("max_abs " << e.max_abs << "  max_ref " << e.max_ref << "  rel_l2 " << e.rel_l2 << "  n " << e.count);
  REQUIRE(e.count > 0);
  CHECK(std::isfinite(e.max_abs));
  if constexpr (Cfg::fp32) {
    CHECK(e.max_abs <= tol * std::max(1.0, e.max_ref));
  } else {
    CHECK(e.rel_l2 <= 1e-2);
  }
}

}  // namespace

TEST_CASE("onednn context", "[onednn][context]") {
  CHECK_NOTHROW(fp32_ndhwc::K::context(engine_options{0}));
  CHECK_THROWS_AS(fp32_ndhwc::K::context(engine_options{-1}), swinfer::error);
#if SWINFER_ONEDNN_SETS_THREADS
  CHECK_NOTHROW(fp32_ndhwc::K::context(engine_options{2}));
#else
  CHECK_THROWS_AS(fp32_ndhwc::K::context(engine_options{2}), swinfer::error);  // no OpenMP to set threads with
#endif
}

TEMPLATE_TEST_CASE("onednn conv3d matches ops::ref::conv3d", "[onednn][conv3d]", fp32_ncdhw, fp32_ndhwc, bf16_ncdhw,
                   bf16_ndhwc) {
  using S = typename TestType::storage;
  constexpr auto kind = TestType::kind;
  typename TestType::K::context ctx(engine_options{});
  struct test_case {
    const char* name;
    ops::conv3d_problem p;
    shape5 in, in2;  // the op is run on two input shapes (two primitives, one set of weights), then the first again
  };
  const test_case cases[] = {
      {"3x3x3 pad 1 with bias", {3, 5, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, true}, {2, 3, 7, 6, 5}, {1, 3, 4, 9, 3}},
      {"3x3x3 20 -> 24 channels", {20, 24, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, false}, {2, 20, 6, 5, 7}, {2, 20, 3, 3, 3}},
      {"patch embedding k2 s2 with bias",
       {1, 12, {2, 2, 2}, {2, 2, 2}, {0, 0, 0}, true},
       {2, 1, 8, 6, 10},
       {2, 1, 4, 4, 2}},
      {"1x1x1 projection", {7, 4, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, false}, {2, 7, 5, 3, 4}, {2, 7, 1, 2, 3}},
      {"3x3x3 stride 2 odd sizes", {4, 6, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, false}, {2, 4, 9, 7, 5}, {2, 4, 6, 6, 6}},
      {"output head 1x1x1 with bias",
       {16, 14, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, true},
       {2, 16, 4, 5, 6},
       {1, 16, 3, 3, 3}},
  };
  for (const auto& c : cases) {
    INFO(c.name);
    const auto w = random_vector(static_cast<std::size_t>(c.p.weight_count()));
    const auto b = random_vector(static_cast<std::size_t>(c.p.cout));
    typename TestType::K::conv3d op(ctx, c.p, w.data(), c.p.bias ? b.data() : nullptr);
    for (const shape5& s : {c.in, c.in2, c.in}) {
      INFO("input " << s.str());
      const auto in = random_tensor<S>(s, kind);
      const shape5 os = c.p.output_shape(s);
      tensor<float> ref(os, kind);
      ops::ref::conv3d(c.p, swinfer_test::to_float_tensor(in, kind), w.data(), c.p.bias ? b.data() : nullptr, ref);
      tensor<S> out(os, kind);
      swinfer_test::poison(out);
      op.run(in, out);
      check_close<TestType>(compare(out, ref), 4e-6);
    }
  }
}

TEMPLATE_TEST_CASE("onednn conv_transpose3d matches ops::ref::conv_transpose3d", "[onednn][conv_transpose3d]",
                   fp32_ncdhw, fp32_ndhwc, bf16_ncdhw, bf16_ndhwc) {
  using S = typename TestType::storage;
  constexpr auto kind = TestType::kind;
  typename TestType::K::context ctx(engine_options{});
  struct test_case {
    int cin, cout;
    shape5 in;
  };
  for (const auto& c :
       {test_case{6, 5, {2, 6, 3, 4, 5}}, test_case{16, 8, {2, 16, 4, 3, 2}}, test_case{48, 48, {2, 48, 3, 3, 3}}}) {
    INFO("cin " << c.cin << " cout " << c.cout << " input " << c.in.str());
    const auto w = random_vector(static_cast<std::size_t>(c.cin) * c.cout * 8);
    typename TestType::K::conv_transpose3d op(ctx, c.cin, c.cout, w.data());
    const auto in = random_tensor<S>(c.in, kind);
    const shape5 os = ops::conv_transpose3d_output_shape(c.in, c.cin, c.cout);
    tensor<float> ref(os, kind);
    ops::ref::conv_transpose3d(swinfer_test::to_float_tensor(in, kind), c.cout, w.data(), ref);
    tensor<S> out(os, kind);
    swinfer_test::poison(out);
    op.run(in, out);
    check_close<TestType>(compare(out, ref), 4e-6);
  }
}

TEMPLATE_TEST_CASE("onednn linear matches ops::ref::linear", "[onednn][linear]", fp32_ndhwc, bf16_ndhwc) {
  using S = typename TestType::storage;
  typename TestType::K::context ctx(engine_options{});
  struct test_case {
    const char* name;
    ops::linear_problem p;
  };
  const test_case cases[] = {
      {"bias", {13, 7, true, false, false}},
      {"no bias", {13, 7, false, false, false}},
      {"MLP linear1: bias + GELU", {24, 96, true, true, false}},
      {"MLP linear2: bias + accumulate", {96, 24, true, false, true}},
      {"GELU + accumulate", {32, 40, true, true, true}},
      {"merging reduction 8C -> 2C, no bias", {384, 96, false, false, false}},
  };
  for (const auto& c : cases) {
    for (const std::int64_t rows : {std::int64_t{37}, std::int64_t{1}, std::int64_t{500}}) {
      INFO(c.name << ", rows " << rows);
      const auto w = random_vector(static_cast<std::size_t>(c.p.in_features) * c.p.out_features);
      const auto b = random_vector(static_cast<std::size_t>(c.p.out_features));
      const auto x = from_floats<S>(random_vector(static_cast<std::size_t>(rows * c.p.in_features), -2.0f, 2.0f));
      std::vector<S> y(static_cast<std::size_t>(rows * c.p.out_features), from_float<S>(NAN));
      if (c.p.accumulate) y = from_floats<S>(random_vector(y.size()));
      auto ref = to_floats(y);
      ops::ref::linear(c.p, to_floats(x).data(), rows, w.data(), b.data(), ref.data());
      typename TestType::K::linear op(ctx, c.p, w.data(), b.data());
      op.run(x.data(), rows, y.data());
      check_close<TestType>(compare(to_floats(y).data(), ref.data(), ref.size()), 4e-6);
    }
  }
}

TEMPLATE_TEST_CASE("onednn layer_norm matches ops::ref::layer_norm", "[onednn][layer_norm]", fp32_ndhwc, bf16_ndhwc) {
  using S = typename TestType::storage;
  typename TestType::K::context ctx(engine_options{});
  const std::int64_t rows = 33;
  for (const int channels : {7, 48, 96, 3072}) {
    const auto gamma = random_vector(static_cast<std::size_t>(channels), 0.5f, 1.5f);
    const auto beta = random_vector(static_cast<std::size_t>(channels));
    for (const int affine : {0, 1, 2, 3}) {  // bit 0: gamma, bit 1: beta; 0 is MONAI's parameter-free proj_out
      // Offset 10: hidden states with a mean well away from 0 (oneDNN computes the row mean in f32).
      for (const float offset : {0.0f, 10.0f}) {
        INFO("channels " << channels << " gamma " << (affine & 1) << " beta " << (affine >> 1) << " offset " << offset);
        const float* g = affine & 1 ? gamma.data() : nullptr;
        const float* be = affine & 2 ? beta.data() : nullptr;
        const auto x = from_floats<S>(random_vector(static_cast<std::size_t>(rows * channels), offset - 2, offset + 2));
        std::vector<float> ref(x.size());
        ops::ref::layer_norm(to_floats(x).data(), rows, channels, g, be, 1e-5f, ref.data());
        typename TestType::K::layer_norm op(ctx, channels, g, be, 1e-5f);
        std::vector<S> y(x.size(), from_float<S>(NAN));
        op.run(x.data(), rows, y.data());
        check_close<TestType>(compare(to_floats(y).data(), ref.data(), ref.size()), 4e-6);
        auto inplace = x;  // x and y may alias
        op.run(inplace.data(), rows, inplace.data());
        check_close<TestType>(compare(to_floats(inplace).data(), ref.data(), ref.size()), 4e-6);
      }
    }
  }
}

TEMPLATE_TEST_CASE("onednn instance_norm matches ops::ref::instance_norm", "[onednn][instance_norm]", fp32_ncdhw,
                   fp32_ndhwc, bf16_ncdhw, bf16_ndhwc) {
  using S = typename TestType::storage;
  constexpr auto kind = TestType::kind;
  typename TestType::K::context ctx(engine_options{});
  const shape5 s{2, 5, 7, 6, 5};
  for (const bool with_residual : {false, true}) {
    for (const bool with_act : {false, true}) {
      INFO("residual " << with_residual << " LeakyReLU " << with_act);
      ops::instance_norm_epilogue e;
      if (with_act) e.negative_slope = 0.01f;
      const auto residual = random_tensor<S>(s, kind);
      auto x = random_tensor<S>(s, kind, -2.0f, 3.0f);
      auto ref = swinfer_test::to_float_tensor(x, kind);
      const auto residual_f = swinfer_test::to_float_tensor(residual, kind);
      ops::ref::instance_norm(ref, with_residual ? &residual_f : nullptr, e);
      TestType::K::instance_norm(ctx, x, with_residual ? &residual : nullptr, e);
      check_close<TestType>(compare(x, ref), 2e-6);
    }
  }
}

TEMPLATE_TEST_CASE("onednn instance_norm statistics are exact on a 96^3 volume with mean 1000",
                   "[onednn][instance_norm]", fp32_ncdhw, fp32_ndhwc) {
  constexpr auto kind = TestType::kind;
  typename TestType::K::context ctx(engine_options{});
  const shape5 s{1, 3, 96, 96, 96};
  // 1000 + noise: float32 statistics lose ~1e-2 here; the result must still match the double reference.
  auto x = random_tensor<float>(s, kind, 999.0f, 1001.0f);
  const auto residual = random_tensor<float>(s, kind);
  auto ref = x.clone();
  ops::instance_norm_epilogue e;
  e.negative_slope = 0.01f;
  ops::ref::instance_norm(ref, &residual, e);
  TestType::K::instance_norm(ctx, x, &residual, e);
  check_close<TestType>(compare(x, ref), 1e-6);
}

namespace {

struct attention_case {
  const char* name;
  std::array<std::int64_t, 3> grid;
  int channels, heads;
  bool qkv_bias;
};

}  // namespace

TEMPLATE_TEST_CASE("onednn window_attention matches ops::ref::window_attention", "[onednn][window_attention]",
                   fp32_ncdhw, fp32_ndhwc, bf16_ncdhw, bf16_ndhwc) {
  using S = typename TestType::storage;
  constexpr auto kind = TestType::kind;
  typename TestType::K::context ctx(engine_options{});
  const attention_case cases[] = {
      {"8x8x8: every axis > 7 (window 7, shift 3, padded to 14), hd 4", {8, 8, 8}, 12, 3, true},
      {"7x7x7: every axis == 7 (one window, no shift), hd 6", {7, 7, 7}, 12, 2, true},
      {"6x4x2: every axis < 7 (clamped, truncated bias index), hd 16, no qkv bias", {6, 4, 2}, 32, 2, false},
      {"9x7x5: > 7, == 7 and < 7 on one grid, hd 6", {9, 7, 5}, 12, 2, true},
      {"12x10x8: padded on every axis, hd 16, no qkv bias", {12, 10, 8}, 32, 2, false},
      {"16x16x32: anisotropic, 45 windows per sample, hd 4", {16, 16, 32}, 12, 3, true},
  };
  for (const auto& c : cases) {
    const swinfer_test::random_attention_parameters params(c.channels, c.heads, {7, 7, 7}, c.qkv_bias);
    typename TestType::K::window_attention op(ctx, params.weights);
    const auto plan = ops::make_window_plan(c.grid, params.weights.configured_window);
    const shape5 s{2, c.channels, c.grid[0], c.grid[1], c.grid[2]};
    for (const bool shifted : {false, true}) {
      INFO(c.name << (shifted ? ", shifted" : ", unshifted"));
      const auto y = random_tensor<S>(s, kind);
      auto x = random_tensor<S>(s, kind);
      const auto x0 = swinfer_test::to_float_tensor(x, kind);
      auto ref = x0.clone();
      ops::ref::window_attention(params.weights, swinfer_test::to_float_tensor(y, kind), plan, shifted, ref);
      op.run(y, plan, shifted, x);
      // Compare the attention output x - x0 itself, not x, so the residual does not hide errors.
      auto got = swinfer_test::to_float_tensor(x, kind);
      for (std::int64_t i = 0; i < got.size(); ++i) {
        got.data()[i] -= x0.data()[i];
        ref.data()[i] -= x0.data()[i];
      }
      check_close<TestType>(compare(got, ref), 4e-6);
    }
  }
}

TEST_CASE("onednn convert changes type and layout exactly", "[onednn][convert]") {
  using K = fp32_ndhwc::K;
  K::context ctx(engine_options{});
  const shape5 s{2, 5, 3, 4, 6};
  for (const auto from : {layout_kind::ncdhw, layout_kind::ndhwc}) {
    for (const auto to : {layout_kind::ncdhw, layout_kind::ndhwc}) {
      INFO(layout_name(from) << " -> " << layout_name(to));
      const auto f = random_tensor<float>(s, from, -300.0f, 300.0f);
      tensor<Eigen::bfloat16> b(s, to), b_ref(s, to);
      swinfer_test::poison(b);
      for (std::int64_t n = 0; n < s.n; ++n)
        for (std::int64_t c = 0; c < s.c; ++c)
          for (std::int64_t z = 0; z < s.d; ++z)
            for (std::int64_t y = 0; y < s.h; ++y)
              for (std::int64_t x = 0; x < s.w; ++x)
                b_ref(n, c, z, y, x) = from_float<Eigen::bfloat16>(f(n, c, z, y, x));
      K::convert(ctx, f, b);  // rounds to nearest even, as Eigen does
      CHECK(compare(b, b_ref).max_abs == 0.0);
      tensor<float> back(s, from);
      swinfer_test::poison(back);
      K::convert(ctx, b, back);
      CHECK(compare(back, b_ref).max_abs == 0.0);
      tensor<float> f2(s, to);
      swinfer_test::poison(f2);
      K::convert(ctx, f, f2);
      CHECK(compare(f2, f).max_abs == 0.0);
    }
  }
}

TEMPLATE_TEST_CASE("onednn concat_channels matches ops::ref::concat_channels", "[onednn][concat]", fp32_ncdhw,
                   fp32_ndhwc, bf16_ncdhw, bf16_ndhwc) {
  using S = typename TestType::storage;
  constexpr auto kind = TestType::kind;
  typename TestType::K::context ctx(engine_options{});
  for (const auto& channels : {std::vector<std::int64_t>{3, 6}, std::vector<std::int64_t>{48, 48},
                               std::vector<std::int64_t>{1, 12, 24, 7, 5}}) {
    std::vector<tensor<S>> owned;
    for (const auto c : channels) owned.push_back(random_tensor<S>({2, c, 5, 4, 3}, kind));
    std::vector<const tensor<S>*> parts;
    for (const auto& t : owned) parts.push_back(&t);
    const shape5 os = ops::concat_channels_shape(parts);
    tensor<S> out(os, kind), ref(os, kind);
    swinfer_test::poison(out);
    ops::ref::concat_channels(parts, ref);
    TestType::K::concat_channels(ctx, parts, out);
    CHECK(compare(out, ref).max_abs == 0.0);
  }
}

TEMPLATE_TEST_CASE("onednn pool3d matches ops::ref::pool3d", "[onednn][pool3d]", fp32_ncdhw, fp32_ndhwc, bf16_ncdhw,
                   bf16_ndhwc) {
  using S = typename TestType::storage;
  constexpr auto kind = TestType::kind;
  typename TestType::K::context ctx(engine_options{});
  for (const auto& [shape, kernel] : {std::pair<shape5, int>{{2, 3, 9, 7, 11}, 2}, {{1, 6, 17, 16, 9}, 8}}) {
    for (const auto mode : {ops::pool_mode::max, ops::pool_mode::avg}) {
      INFO(shape.str() << " kernel " << kernel << " " << ops::pool_mode_name(mode));
      const ops::pool3d_problem p{mode, kernel};
      const auto x = random_tensor<S>(shape, kind);
      tensor<S> out(p.output_shape(shape), kind);
      swinfer_test::poison(out);
      TestType::K::pool3d(ctx, x, p, out);
      tensor<float> xf(shape, kind), want(p.output_shape(shape), kind);
      for (std::int64_t i = 0; i < x.size(); ++i) xf.data()[i] = to_float(x.data()[i]);
      ops::ref::pool3d(xf, p, want);
      check_close<TestType>(compare(out, want), 1e-6);
    }
  }
}

TEMPLATE_TEST_CASE("onednn patch_merge_gather matches ops::ref::patch_merge_gather", "[onednn][patch_merging]",
                   fp32_ncdhw, fp32_ndhwc, bf16_ncdhw, bf16_ndhwc) {
  using S = typename TestType::storage;
  constexpr auto kind = TestType::kind;
  typename TestType::K::context ctx(engine_options{});
  const auto x = random_tensor<S>({2, 5, 6, 4, 8}, kind);
  const shape5 os = ops::patch_merge_shape(x.shape());
  for (const auto order : {ops::merge_order::merging, ops::merge_order::merging_legacy, ops::merge_order::mergingv2}) {
    INFO(ops::merge_order_name(order));
    tensor<S> out(os, kind), ref(os, kind);
    swinfer_test::poison(out);
    ops::ref::patch_merge_gather(x, order, ref);
    TestType::K::patch_merge_gather(ctx, x, order, out);
    CHECK(compare(out, ref).max_abs == 0.0);
  }
}

// The oneDNN backend beyond the shared op suite (tests/ops/test_ops_onednn.cpp runs every kernel's case table): the
// context, instance_norm's exact statistics on a large volume, and window attention, against the naive references
// in swinfer::ops::ref. Fresh random inputs every run (Catch's --rng-seed), outputs poisoned with NaN, fp32 and bf16,
// both layouts. fp32 must agree to float32 rounding; bf16 within 1e-2 relative L2.
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
#include "swinfer/ops/instance_norm.hpp"
#include "swinfer/ops/window_attention.hpp"
#include "swinfer/ops/window_plan.hpp"
#include "tensor_testing.hpp"

namespace {

using namespace swinfer;
using swinfer_test::compare;
using swinfer_test::error_stats;
using swinfer_test::random_tensor;

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
  if (std::is_same_v<S, Eigen::bfloat16> && !onednn::context::has_bf16_kernels()) {
    WARN("onednn/bf16: skipped, oneDNN has no bf16 kernels on this CPU");
    return;
  }
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

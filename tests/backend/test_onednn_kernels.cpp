// The oneDNN backend beyond the shared op suite (tests/ops/test_ops_onednn.cpp runs every kernel's case table): the
// context and instance_norm's exact statistics on a large volume against the naive reference in swinfer::ops::ref.
// Fresh random inputs every run (Catch's --rng-seed), fp32 in both layouts, agreeing to float32 rounding.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "backend_testing.hpp"
#include "swinfer/backend/onednn.hpp"
#include "swinfer/ops/instance_norm.hpp"
#include "tensor_testing.hpp"

namespace {

using namespace swinfer;
using swinfer_test::compare;
using swinfer_test::error_stats;
using swinfer_test::random_tensor;

template <class L>
struct fp32_config {
  using K = kernels<backend::onednn, precision::fp32, L>;
  static constexpr layout_kind kind = L::kind;
};
using fp32_ncdhw = fp32_config<layout::ncdhw>;
using fp32_ndhwc = fp32_config<layout::ndhwc>;

static_assert(is_supported_v<backend::onednn, precision::fp32, layout::ndhwc>);
static_assert(is_supported_v<backend::onednn, precision::bf16, layout::ncdhw>);
static_assert(!is_supported_v<backend::onednn, precision::fp16, layout::ndhwc>);
static_assert(is_supported_v<backend::onednn, precision::int8, layout::ncdhw>);

/// max |kernel - ref| <= tol * max(1, max |ref|), a few float32 ulps of the largest output (oneDNN accumulates in
/// float32 in its own order, the references in double); nothing may be left unwritten (NaN makes max_abs infinite).
void check_close(const error_stats& e, double tol) {
  INFO("max_abs " << e.max_abs << "  max_ref " << e.max_ref << "  rel_l2 " << e.rel_l2 << "  n " << e.count);
  REQUIRE(e.count > 0);
  CHECK(std::isfinite(e.max_abs));
  CHECK(e.max_abs <= tol * std::max(1.0, e.max_ref));
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
  check_close(compare(x, ref), 1e-6);
}

// swinfer::compare_tensors, which the tests' compare() and `swinfer crosscheck` measure every error with.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "error_testing.hpp"
#include "swinfer/core/compare.hpp"

using swinfer::layout_kind;
using swinfer::tensor;
using swinfer_test::error_of;

namespace {

/// (1, 2, 1, 2, 3) with element i (in logical order) equal to i + 1, in the given layout.
template <class T>
tensor<T> counting(layout_kind layout) {
  tensor<T> t({1, 2, 1, 2, 3}, layout);
  int i = 0;
  for (std::int64_t c = 0; c < 2; ++c)
    for (std::int64_t y = 0; y < 2; ++y)
      for (std::int64_t x = 0; x < 3; ++x) t(0, c, 0, y, x) = static_cast<T>(++i);
  return t;
}

}  // namespace

TEST_CASE("compare_tensors matches elements by logical index across layouts", "[compare]") {
  const auto ref = counting<float>(layout_kind::ncdhw);
  auto got = counting<float>(layout_kind::ndhwc);
  auto e = swinfer::compare_tensors(got, ref);
  CHECK(e.max_abs == 0.0);
  CHECK(e.max_ref == 12.0);
  CHECK(e.rel_l2 == 0.0);
  CHECK(e.count == 12);

  got(0, 1, 0, 0, 2) += 0.5f;  // element 9
  got(0, 0, 0, 1, 0) -= 2.0f;  // element 4
  e = swinfer::compare_tensors(got, ref);
  CHECK(e.max_abs == 2.0);
  CHECK(e.relative() == Approx(2.0 / 12.0));
  // ||diff|| = sqrt(0.25 + 4), ||ref|| = sqrt(1 + 4 + ... + 144) = sqrt(650)
  CHECK(e.rel_l2 == Approx(std::sqrt(4.25 / 650.0)));
  CHECK(e.finite());

  // Any storage type is widened exactly: fp16 integers up to 12 equal the float reference.
  CHECK(swinfer::compare_tensors(counting<Eigen::half>(layout_kind::ndhwc), ref).max_abs == 0.0);
}

TEST_CASE("compare_tensors: a NaN or infinity makes the difference infinite", "[compare]") {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const auto ref = counting<float>(layout_kind::ncdhw);
  SECTION("NaN in the result") {
    auto got = counting<float>(layout_kind::ndhwc);
    got(0, 0, 0, 0, 0) = nan;
    got(0, 1, 0, 1, 2) += 100.0f;  // a finite difference after the NaN does not hide it
    const auto e = swinfer::compare_tensors(got, ref);
    CHECK(std::isinf(e.max_abs));
    CHECK_FALSE(e.finite());
    CHECK(e.max_ref == 12.0);
  }
  SECTION("NaN in the reference") {
    auto bad = counting<float>(layout_kind::ncdhw);
    bad(0, 1, 0, 1, 2) = nan;
    const auto e = swinfer::compare_tensors(counting<float>(layout_kind::ncdhw), bad);
    CHECK(std::isinf(e.max_abs));
    CHECK(e.max_ref == 11.0);  // the NaN is not a magnitude
  }
  SECTION("the same infinity on both sides") {
    auto got = counting<float>(layout_kind::ncdhw), want = counting<float>(layout_kind::ndhwc);
    got(0, 0, 0, 0, 1) = want(0, 0, 0, 0, 1) = inf;
    CHECK_FALSE(swinfer::compare_tensors(got, want).finite());
  }
}

TEST_CASE("compare_tensors: different shapes are an error naming both", "[compare]") {
  const tensor<float> a({1, 2, 1, 2, 3}, layout_kind::ncdhw), b({1, 2, 1, 3, 2}, layout_kind::ncdhw);
  CHECK_THAT(error_of([&] { swinfer::compare_tensors(a, b); }),
             Catch::Contains("(1, 2, 1, 2, 3)") && Catch::Contains("(1, 2, 1, 3, 2)"));
  const tensor<float> empty({1, 0, 1, 1, 1}, layout_kind::ndhwc);
  const auto e = swinfer::compare_tensors(empty, empty);
  CHECK(e.count == 0);
  CHECK(e.max_abs == 0.0);
  CHECK(e.rel_l2 == 0.0);
}

// Shared by the cpu backend tests: the precision x layout configurations and the tolerance of each precision.
#pragma once

#include <catch2/catch.hpp>
#include <tuple>

#include "swinfer/backend/cpu.hpp"
#include "tensor_testing.hpp"

namespace swinfer_cpu_test {

template <class P, class L>
struct config {
  using precision = P;
  using layout = L;
  using storage = swinfer::storage_t<P>;
  using kernels = swinfer::kernels<swinfer::backend::cpu, P, L>;
  static constexpr swinfer::layout_kind kind = L::kind;
};

using all_configs = std::tuple<
    config<swinfer::precision::fp32, swinfer::layout::ncdhw>, config<swinfer::precision::fp32, swinfer::layout::ndhwc>,
    config<swinfer::precision::fp16, swinfer::layout::ncdhw>, config<swinfer::precision::fp16, swinfer::layout::ndhwc>,
    config<swinfer::precision::bf16, swinfer::layout::ncdhw>, config<swinfer::precision::bf16, swinfer::layout::ndhwc>>;

/// Allowed max|kernel - ref| relative to max|ref|. The reference runs in double on the same (rounded) inputs, so
/// low precision only adds the rounding of the stored output: at most 2^-11 (fp16) or 2^-8 (bf16) of the value.
template <class S>
constexpr double tolerance() {
  if constexpr (std::is_same_v<S, float>) return 1e-5;
  if constexpr (std::is_same_v<S, Eigen::half>) return 1e-3;
  return 5e-3;
}

/// A kernel result against its float reference; NaN (a poisoned element left unwritten) fails.
template <class S>
void check_close(const swinfer::tensor<S>& got, const swinfer::tensor<float>& want) {
  const auto e = swinfer_test::compare(got, want);
  INFO("max|diff| " << e.max_abs << ", max|ref| " << e.max_ref << ", rel L2 " << e.rel_l2);
  REQUIRE(e.count == want.size());
  CHECK(e.max_abs <= tolerance<S>() * std::max(e.max_ref, 1e-20));
}

template <class S>
swinfer::tensor<S> random_tensor(const swinfer::shape5& s, swinfer::layout_kind k, float lo = -1.0f, float hi = 1.0f) {
  swinfer::tensor<S> t(s, k);
  swinfer_test::fill_random(t, lo, hi);
  return t;
}

template <class S>
swinfer::tensor<S> poisoned_tensor(const swinfer::shape5& s, swinfer::layout_kind k) {
  swinfer::tensor<S> t(s, k);
  swinfer_test::poison(t);
  return t;
}

}  // namespace swinfer_cpu_test

// Shared by the kernel tests of the cpu and hip backends: the precision x layout configurations, the tolerance of a
// kernel against its naive double-precision reference, and random or NaN-poisoned host tensors.
#pragma once

#include <catch2/catch.hpp>
#include <algorithm>
#include <tuple>
#include <type_traits>

#include "swinfer/core/backend.hpp"
#include "swinfer/model/backend_volume.hpp"
#include "tensor_testing.hpp"

namespace swinfer_test {

/// One backend, precision and layout: its kernels, storage type and volume type (host or device tensor).
template <class B, class P, class L>
struct backend_config {
  using precision = P;
  using layout = L;
  using storage = swinfer::storage_t<P>;
  using kernels = swinfer::kernels<B, P, L>;
  using volume = swinfer::backend_volume_t<kernels>;
  static constexpr swinfer::layout_kind kind = L::kind;
};

/// fp32, fp16 and bf16 in both layouts, for TEMPLATE_LIST_TEST_CASE.
template <class B>
using all_precisions_and_layouts =
    std::tuple<backend_config<B, swinfer::precision::fp32, swinfer::layout::ncdhw>,
               backend_config<B, swinfer::precision::fp32, swinfer::layout::ndhwc>,
               backend_config<B, swinfer::precision::fp16, swinfer::layout::ncdhw>,
               backend_config<B, swinfer::precision::fp16, swinfer::layout::ndhwc>,
               backend_config<B, swinfer::precision::bf16, swinfer::layout::ncdhw>,
               backend_config<B, swinfer::precision::bf16, swinfer::layout::ndhwc>>;

/// Allowed max|kernel - ref| relative to max|ref|. The reference runs in double on the same (rounded) inputs, so
/// low precision only adds the rounding of the stored output: at most 2^-11 (fp16) or 2^-8 (bf16) of the value.
template <class S>
constexpr double kernel_tolerance() {
  if constexpr (std::is_same_v<S, float>) return 1e-5;
  if constexpr (std::is_same_v<S, Eigen::half>) return 1e-3;
  return 5e-3;
}

/// Rounds weights to S in place: for kernels that store their weights in the storage type (the hip backend's GEMMs,
/// the cpu backend's bf16 pair dot product), a reference given the rounded weights differs from the kernel only by
/// the rounding of activations.
template <class S>
void round_weights_like_storage(std::vector<float>& w) {
  for (float& v : w) v = static_cast<float>(static_cast<S>(v));
}

/// A kernel result against its float reference; NaN (a poisoned element left unwritten) fails.
template <class S>
void check_close(const swinfer::tensor<S>& got, const swinfer::tensor<float>& want,
                 double tol = kernel_tolerance<S>()) {
  const auto e = compare(got, want);
  INFO("max|diff| " << e.max_abs << ", max|ref| " << e.max_ref << ", rel L2 " << e.rel_l2);
  REQUIRE(e.count == want.size());
  CHECK(e.max_abs <= tol * std::max(e.max_ref, 1e-20));
}

template <class S>
swinfer::tensor<S> random_tensor(const swinfer::shape5& s, swinfer::layout_kind k, float lo = -1.0f, float hi = 1.0f) {
  swinfer::tensor<S> t(s, k);
  fill_random(t, lo, hi);
  return t;
}

template <class S>
swinfer::tensor<S> poisoned_tensor(const swinfer::shape5& s, swinfer::layout_kind k) {
  swinfer::tensor<S> t(s, k);
  poison(t);
  return t;
}

}  // namespace swinfer_test

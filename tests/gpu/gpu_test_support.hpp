// Shared by the [gpu] tests: the one device context, the precision x layout configurations, tolerances, and
// moving test tensors between host and device.
#pragma once

#include <catch2/catch.hpp>
#include <memory>
#include <tuple>
#include <type_traits>
#include <vector>

#include "swinfer/backend/hip.hpp"
#include "tensor_testing.hpp"

namespace swinfer_gpu_test {

/// ctest's SKIP_RETURN_CODE for "no GPU here".
inline constexpr int skip_exit_code = 77;

/// The context every test uses (created on first use; main has checked that a device exists).
inline swinfer::hip::context& gpu() {
  static swinfer::hip::context ctx{swinfer::engine_options{}};
  return ctx;
}

template <class P, class L>
struct config {
  using precision = P;
  using layout = L;
  using storage = swinfer::storage_t<P>;
  using kernels = swinfer::kernels<swinfer::backend::hip, P, L>;
  using volume = typename kernels::volume;
  static constexpr swinfer::layout_kind kind = L::kind;
};

using all_configs = std::tuple<
    config<swinfer::precision::fp32, swinfer::layout::ncdhw>, config<swinfer::precision::fp32, swinfer::layout::ndhwc>,
    config<swinfer::precision::fp16, swinfer::layout::ncdhw>, config<swinfer::precision::fp16, swinfer::layout::ndhwc>,
    config<swinfer::precision::bf16, swinfer::layout::ncdhw>, config<swinfer::precision::bf16, swinfer::layout::ndhwc>>;

/// Allowed max|kernel - ref| relative to max|ref|: the reference runs in double on the same (rounded) inputs, so
/// low precision adds the rounding of the stored output, float32 the float accumulation.
template <class S>
constexpr double tolerance() {
  if constexpr (std::is_same_v<S, float>) return 1e-5;
  if constexpr (std::is_same_v<S, Eigen::half>) return 1e-3;
  return 5e-3;
}

/// A kernel result against its float reference; NaN (a poisoned element left unwritten) fails.
template <class S>
void check_close(const swinfer::tensor<S>& got, const swinfer::tensor<float>& want, double tol = tolerance<S>()) {
  const auto e = swinfer_test::compare(got, want);
  INFO("max|diff| " << e.max_abs << ", max|ref| " << e.max_ref << ", rel L2 " << e.rel_l2);
  REQUIRE(e.count == want.size());
  CHECK(e.max_abs <= tol * std::max(e.max_ref, 1e-20));
}

/// Exact equality (data movement must not change a bit); NaN fails.
template <class S>
void check_equal(const swinfer::tensor<S>& got, const swinfer::tensor<S>& want) {
  const auto e = swinfer_test::compare(got, want);
  INFO("max|diff| " << e.max_abs);
  REQUIRE(e.count == want.size());
  CHECK(e.max_abs == 0.0);
}

template <class S>
swinfer::tensor<S> random_host(const swinfer::shape5& s, swinfer::layout_kind k, float lo = -1.0f, float hi = 1.0f) {
  swinfer::tensor<S> t(s, k);
  swinfer_test::fill_random(t, lo, hi);
  return t;
}

template <class S>
swinfer::hip::device_tensor<S> upload(const swinfer::tensor<S>& t) {
  return swinfer::hip::device_tensor<S>::upload(gpu(), t);
}

/// A device tensor full of NaN: any element a kernel forgets to write shows up.
template <class S>
swinfer::hip::device_tensor<S> poisoned_device(const swinfer::shape5& s, swinfer::layout_kind k) {
  swinfer::tensor<S> t(s, k);
  swinfer_test::poison(t);
  return upload(t);
}

template <class S>
swinfer::tensor<S> download(const swinfer::hip::device_tensor<S>& t) {
  return t.download(gpu());
}

/// Rounds weights to S in place when the device multiplies S operands on its matrix cores (16-bit S and
/// device().matrix_cores): what such a GEMM sees of its float32 packed weights, so a reference given the rounded
/// weights differs from the kernel only by the rounding of activations.
template <class S>
void round_weights_like_matrix_cores(std::vector<float>& w) {
  if constexpr (!std::is_same_v<S, float>) {
    if (!gpu().device().matrix_cores) return;
    for (float& v : w) v = static_cast<float>(static_cast<S>(v));
  }
}

/// Token rows (rows, C) as a tensor: shape (1, C, 1, 1, rows) channels-last is row-major rows x C.
inline swinfer::shape5 rows_shape(std::int64_t rows, int channels) { return {1, channels, 1, 1, rows}; }

}  // namespace swinfer_gpu_test

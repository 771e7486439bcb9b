// Shared by the [gpu] tests: the one device context, the precision x layout configurations, tolerances, and
// moving test tensors between host and device.
#pragma once

#include <catch2/catch.hpp>
#include <memory>
#include <tuple>
#include <vector>

#include "backend_testing.hpp"
#include "swinfer/backend/hip.hpp"
#include "swinfer/ops/convert.hpp"

namespace swinfer_gpu_test {

/// ctest's SKIP_RETURN_CODE for "no GPU here".
inline constexpr int skip_exit_code = 77;

/// The context every test uses (created on first use; main has checked that a device exists).
inline swinfer::hip::context& gpu() {
  static swinfer::hip::context ctx{swinfer::engine_options{}};
  return ctx;
}

template <class P, class L>
using config = swinfer_test::backend_config<swinfer::backend::hip, P, L>;
using all_configs = swinfer_test::all_precisions_and_layouts<swinfer::backend::hip>;
using swinfer_test::check_close;
using swinfer_test::random_tensor;
using swinfer_test::round_weights_like_storage;

/// Exact equality (data movement must not change a bit); NaN fails.
template <class S>
void check_equal(const swinfer::tensor<S>& got, const swinfer::tensor<S>& want) {
  const auto e = swinfer_test::compare(got, want);
  INFO("max|diff| " << e.max_abs);
  REQUIRE(e.count == want.size());
  CHECK(e.max_abs == 0.0);
}

template <class S>
swinfer::hip::device_tensor<S> upload(const swinfer::tensor<S>& t) {
  return swinfer::hip::device_tensor<S>::upload(gpu(), t);
}

/// A device tensor full of NaN: any element a kernel forgets to write shows up.
template <class S>
swinfer::hip::device_tensor<S> poisoned_device(const swinfer::shape5& s, swinfer::layout_kind k) {
  return upload(swinfer_test::poisoned_tensor<S>(s, k));
}

template <class S>
swinfer::tensor<S> download(const swinfer::hip::device_tensor<S>& t) {
  return t.download(gpu());
}

/// Random GEMM weights (uniform in [lo, hi)) as the hip backend stores them, rounded to S: a reference given them
/// differs from a kernel only by the rounding of activations, however few terms an output sums.
template <class S>
std::vector<float> random_weights(std::size_t n, float lo, float hi) {
  auto w = swinfer_test::random_vector(n, lo, hi);
  swinfer_test::round_weights_like_storage<S>(w);
  return w;
}

/// `t` rounded to S and widened again, in layout k: what a kernel that stores an intermediate in S reads back.
template <class S>
swinfer::tensor<float> rounded_like_storage(const swinfer::tensor<float>& t, swinfer::layout_kind k) {
  swinfer::tensor<S> stored(t.shape(), k);
  swinfer::ops::ref::convert(t, stored);
  return swinfer_test::to_float_tensor(stored, k);
}

/// Token rows (rows, C) as a tensor: shape (1, C, 1, 1, rows) channels-last is row-major rows x C.
inline swinfer::shape5 rows_shape(std::int64_t rows, int channels) { return {1, channels, 1, 1, rows}; }

}  // namespace swinfer_gpu_test

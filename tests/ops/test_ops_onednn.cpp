// The shared op suite (tests/ops/op_suite.hpp) on the oneDNN backend: fp32, bf16 and int8 x ncdhw/ndhwc (under int8 the
// products, conv3d, conv_transpose3d, linear and the attention's qkv and proj, run quantized against the references'
// int8 scheme), and the int8 rows (int8_op_suite.hpp) in both layouts. fp32 must agree with the double reference to a
// few float32 ulps of the largest output (oneDNN accumulates in float32 in its own order), and so must int8 with the
// reference's integer arithmetic (its sums are exact; only the float epilogue rounds); bf16 within 1e-2 relative L2;
// window attention's bounds apply to its own output, x - x0.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "ops/int8_op_suite.hpp"
#include "ops/op_suite.hpp"
#include "swinfer/backend/onednn.hpp"

namespace swinfer_ops_test {

template <>
struct op_backend<swinfer::backend::onednn> : host_backend {
  static constexpr std::string_view name = "onednn";

  static std::vector<run_context> contexts(bool) { return {{"", swinfer::engine_options{}}}; }

  /// oneDNN 2.6 has bf16 kernels on AVX-512 CPUs only.
  template <class P>
  static bool runs_here() {
    return !std::is_same_v<P, swinfer::precision::bf16> || swinfer::onednn::context::has_bf16_kernels();
  }

  template <class K>
  static std::shared_ptr<typename K::context> make_context(const run_context& rc) {
    return std::make_shared<typename K::context>(rc.options);
  }

  /// oneDNN is given float32 weights and stores them in the storage type (a reorder, rounding to nearest even), so
  /// a bf16 kernel multiplies bf16 weights: the reference gets those. Left to the tolerance, that rounding alone
  /// took the head-dim-48 window attention rows past 1e-2 relative L2 where oneDNN has native bf16 kernels (Zen 4).
  template <class S, class Kernel>
  static std::vector<float> reference_weights(const Kernel&, std::vector<float> weight) {
    swinfer_test::round_weights_like_storage<S>(weight);
    return weight;
  }

  /// fp32: max|kernel - ref| <= tol * max(1, max|ref|); bf16: relative L2 <= 1e-2. Nothing may be left unwritten.
  template <class S>
  static void check(op_id op, const swinfer::tensor<S>& got, const swinfer::tensor<float>& want,
                    std::int64_t terms = 0) {
    check_errors<S>(op, swinfer_test::compare(got, want), want.size(), terms);
  }

  /// x += op(y): the bounds above apply to the op's own output x - before, so the residual does not hide errors.
  template <class S>
  static void check_increment(op_id op, const swinfer::tensor<S>& got, swinfer::tensor<float> want,
                              const swinfer::tensor<S>& before, std::int64_t terms) {
    auto increment = widened(got);
    const auto b = widened(before);
    for (std::int64_t i = 0; i < want.size(); ++i) {
      increment.data()[i] -= b.data()[i];
      want.data()[i] -= b.data()[i];
    }
    check_errors<S>(op, swinfer_test::compare(increment, want), want.size(), terms);
  }

  template <class S>
  static void check_errors(op_id op, const swinfer_test::error_stats& e, std::int64_t count, std::int64_t terms) {
    INFO("max_abs " << e.max_abs << "  max_ref " << e.max_ref << "  rel_l2 " << e.rel_l2 << "  n " << e.count);
    REQUIRE(e.count == count);
    CHECK(std::isfinite(e.max_abs));
    if constexpr (std::is_same_v<S, float>) {
      CHECK(e.max_abs <= fp32_tolerance(op, terms) * std::max(1.0, e.max_ref));
    } else {
      CHECK(e.rel_l2 <= 1e-2);
    }
  }

  /// Average pooling sums k^3 values in float32. The suite's inputs, uniform in [-3, 5), have mean 1, so the k-th
  /// partial sum is about k and its rounding up to k * 2^-24: over 512 terms the average's error has a standard
  /// deviation of about 2^-24 sqrt(512) / 3 = 4.5e-7 (CI twice drew 1.3e-6 and 1.4e-6 against a former 1e-6 bound).
  /// 3e-6 up to a 8^3 window (over 6 sigma), growing with the number of terms beyond it (the cpu suite's 16^3 row);
  /// a wrong window or divisor is off by 1/k^3 of the values, 2e-3 at 8^3. Window attention's dot products have
  /// head-dim terms: 4e-6 up to head dim 16 (every onednn case before the shared suite), growing beyond it (the cpu
  /// table's head dims 32 and 48).
  static double fp32_tolerance(op_id op, std::int64_t terms) {
    switch (op) {
      case op_id::instance_norm: return 2e-6;
      case op_id::pool3d: return 3e-6 * std::max(1.0, static_cast<double>(terms) / 512.0);
      case op_id::window_attention: return 4e-6 * std::max(1.0, static_cast<double>(terms) / 16.0);
      default: return 4e-6;
    }
  }
};

template <class P, class L>
using onednn_target = target<swinfer::backend::onednn, P, L>;
using onednn_targets = std::tuple<onednn_target<swinfer::precision::fp32, swinfer::layout::ncdhw>,
                                  onednn_target<swinfer::precision::fp32, swinfer::layout::ndhwc>,
                                  onednn_target<swinfer::precision::bf16, swinfer::layout::ncdhw>,
                                  onednn_target<swinfer::precision::bf16, swinfer::layout::ndhwc>,
                                  onednn_target<swinfer::precision::int8, swinfer::layout::ncdhw>,
                                  onednn_target<swinfer::precision::int8, swinfer::layout::ndhwc>>;
using onednn_int8_targets = std::tuple<onednn_target<swinfer::precision::int8, swinfer::layout::ncdhw>,
                                       onednn_target<swinfer::precision::int8, swinfer::layout::ndhwc>>;

}  // namespace swinfer_ops_test

SWINFER_OP_TESTS("onednn", "[onednn]", swinfer_ops_test::onednn_targets)
SWINFER_INT8_OP_TESTS("onednn", "[onednn]", swinfer_ops_test::onednn_int8_targets)

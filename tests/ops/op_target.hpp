// What the shared op suite (op_suite.hpp) is built on: a target (backend x precision x layout), the hooks a backend
// plugs in with, section names and the comparisons every op's test body uses.
//
// A backend plugs in by specialising op_backend<B> (see tests/ops/test_ops_cpu.cpp):
//   name                                       "cpu", "onednn", "hip"
//   contexts(bool weight_modes)                the run_contexts each row runs in (threads, bf16 weight modes)
//   make_context<K>(run_context)               a shared_ptr to a K::context with the run_context's options
//   implementations<K>(op_id)                  optional: a run_context forcing each implementation of the op's
//                                              list (the op suite runs every case on each that can run it)
//   to_device(tensor) / download(volume)       host tensor <-> the backend's volume (a copy for host backends)
//   poisoned<S>(shape, layout)                 a NaN-filled volume
//   reference_weights<S>(op, weights)          the weights the kernel multiplies with (rounded where it stores so)
//   check(op_id, got, want, terms)             the backend's tolerance for that op against the float reference
//                                              (terms: how many values an output sums, where a backend's bound
//                                              grows with it)
//   check_increment(op_id, got, want, before)  optional: for x += op(y), compare x - before with want - before
//   reference_operands<S>(op)                  optional: how the window attention rounds its inner operands
//                                              (ops::ref::operand_rounding; none by default)
#pragma once

#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <iostream>
#include <vector>
#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>

#include "backend_testing.hpp"
#include "swinfer/core/options.hpp"
#include "swinfer/ops/convert.hpp"
#include "swinfer/ops/quantization.hpp"
#include "swinfer/ops/window_attention.hpp"
#include "tensor_testing.hpp"

namespace swinfer_ops_test {

using swinfer::shape5;

/// The ops whose results are compared with a tolerance (data movement must be exact).
enum class op_id { conv3d, conv_transpose3d, linear, layer_norm, instance_norm, pool3d, window_attention };

/// One context a row runs in, and the suffix it adds to the row's name.
struct run_context {
  std::string label;
  swinfer::engine_options options;
  bool round_bf16_weights = false;  ///< cpu: bf16_weight_mode::rounded
  std::string kernel;               ///< the forced implementation's name in the op's list; empty: automatic
};

template <class B>
struct op_backend;

/// One backend x precision x layout: backend_config's storage, layout, kernels and volume, plus the backend's hooks.
template <class B, class P, class L>
struct target : swinfer_test::backend_config<B, P, L> {
  using backend = op_backend<B>;
  using precision_type = P;
};

/// Whether target T's backend runs its precision on this machine (op_backend<B>::runs_here<P>(), where a backend's
/// kernels depend on the CPU; true otherwise).
template <class T>
bool runs_here() {
  if constexpr (requires { T::backend::template runs_here<typename T::precision_type>(); }) {
    return T::backend::template runs_here<typename T::precision_type>();
  } else {
    return true;
  }
}

/// Every precision x layout in `Tuple` (a std::tuple of targets) this machine runs, calling f(target{}) for each; a
/// skipped one is reported.
template <class Tuple, class F>
void for_each_target(F&& f) {
  const auto run = [&](auto target) {
    using T = decltype(target);
    if (runs_here<T>()) {
      f(target);
    } else {
      WARN(T::backend::name << "/" << swinfer::precision_traits<typename T::precision_type>::name
                            << ": skipped, this CPU has no kernels for it");
    }
  };
  std::apply([&](auto... t) { (run(t), ...); }, Tuple{});
}

/// The run_contexts for T's rows of an op whose kernels may round bf16 weights: both weight modes where T stores bf16,
/// the exact one elsewhere (the mode changes nothing for other storage, and doubling those rows only costs time).
template <class T>
std::vector<run_context> weight_mode_contexts() {
  return T::backend::contexts(std::is_same_v<typename T::precision_type, swinfer::precision::bf16>);
}

/// The run_contexts forcing each implementation of `op` that T's backend lists (its implementations<K> hook); none
/// for a backend without one.
template <class T>
std::vector<run_context> forced_implementations(op_id op) {
  if constexpr (requires { T::backend::template implementations<typename T::kernels>(op); }) {
    return T::backend::template implementations<typename T::kernels>(op);
  } else {
    return {};
  }
}

/// Prints what one forced implementation ran (ctest keeps it in the log): "conv3d/cpu/fp32/ndhwc/ (2 threads, kernel
/// winograd2): ran 6 cases, cannot implement 9 (...)".
inline void report_implementation(const std::string& what, int ran, int refused, const std::string& reason) {
  if (ran + refused == 0) return;
  std::cout << what << ": ran " << ran << (ran == 1 ? " case" : " cases");
  if (refused > 0) std::cout << ", cannot implement " << refused << " (" << reason << ")";
  std::cout << '\n';
}

/// Whether target T runs the int8 scheme: its rows then quantize the inputs of their products (docs/int8.md).
template <class T>
inline constexpr bool quantizes = std::is_same_v<typename T::precision_type, swinfer::precision::int8>;

/// Under precision::int8, the input a row's product runs with: a scale that maps 0.9 x `magnitude` (about the
/// inputs' largest |x|) to 127, so the largest few clip as a percentile calibration would clip them; float otherwise.
template <class T>
swinfer::ops::int8_input int8_input_for(const char* point, float magnitude) {
  if constexpr (quantizes<T>) {
    return {point, 0.9f * magnitude / swinfer::ops::activation_max};
  } else {
    return {};
  }
}

/// x += op(y) under int8 where the op requantizes a value it computed itself (the window attention's proj input):
/// kernel and reference compute that value in float32 and in double, so the odd one within float rounding of a
/// rounding boundary rounds the other way (measured: about 2e-4 of the values), moving its token's C outputs by
/// one step x a weight, at most `step`. Every output is within the float tolerance of the reference's or within
/// three such steps, and the tokens with any output beyond the float tolerance are at most one per 1000 of those
/// values, plus 5.
inline void check_requantized(const swinfer::tensor<float>& got, const swinfer::tensor<float>& want,
                              const swinfer::tensor<float>& before, double step) {
  REQUIRE(got.shape() == want.shape());
  const shape5& s = want.shape();
  double max_increment = 0;
  for (std::int64_t i = 0; i < want.size(); ++i) {
    max_increment = std::max(max_increment, std::fabs(double{want.data()[i]} - before.data()[i]));
  }
  const double tolerance = swinfer_test::kernel_tolerance<float>() * std::max(max_increment, 1e-20);
  std::int64_t flipped_tokens = 0;
  double worst = 0;
  for (std::int64_t n = 0; n < s.n; ++n)
    for (std::int64_t z = 0; z < s.d; ++z)
      for (std::int64_t y = 0; y < s.h; ++y)
        for (std::int64_t x = 0; x < s.w; ++x) {
          bool flipped = false;
          for (std::int64_t c = 0; c < s.c; ++c) {
            const double d = std::fabs(double{got(n, c, z, y, x)} - want(n, c, z, y, x));
            flipped = flipped || !(d <= tolerance);  // NaN counts
            worst = std::max(worst, std::isnan(d) ? INFINITY : d);
          }
          flipped_tokens += flipped;
        }
  const std::int64_t values = s.n * s.spatial() * s.c;
  INFO("max|diff| " << worst << ", float tolerance " << tolerance << ", one requantization step " << step << ", "
                    << flipped_tokens << " of " << s.n * s.spatial() << " tokens beyond the float tolerance");
  CHECK(worst <= std::max(tolerance, 3 * step));
  CHECK(flipped_tokens <= values / 1000 + 5);
}

/// The section name's prefix, "conv3d/cpu/bf16/ndhwc/".
template <class T>
std::string prefix(const char* op) {
  std::string s = op;
  s += "/";
  s += T::backend::name;
  s += "/";
  s += swinfer::precision_traits<typename T::precision_type>::name;
  s += "/";
  s += swinfer::layout_name(T::kind);
  s += "/";
  return s;
}

/// Exact equality (data movement must not change a bit); NaN fails.
template <class A, class Bt>
void check_equal(const swinfer::tensor<A>& got, const swinfer::tensor<Bt>& want) {
  const auto e = swinfer_test::compare(got, want);
  INFO("max|diff| " << e.max_abs);
  REQUIRE(e.count == want.size());
  CHECK(e.max_abs == 0.0);
}

/// Host backends: the volume is a host tensor.
struct host_backend {
  template <class S>
  static swinfer::tensor<S> to_device(const swinfer::tensor<S>& t) {
    return t.clone();
  }
  template <class S>
  static const swinfer::tensor<S>& download(const swinfer::tensor<S>& t) {
    return t;
  }
  template <class S>
  static swinfer::tensor<S> poisoned(const shape5& s, swinfer::layout_kind k) {
    return swinfer_test::poisoned_tensor<S>(s, k);
  }
};

template <class S>
swinfer::tensor<float> widened(const swinfer::tensor<S>& t) {
  return swinfer_test::to_float_tensor(t, t.layout());
}

/// Token rows (rows, C) as a tensor: shape (1, C, 1, 1, rows) channels-last is row-major rows x C.
inline shape5 rows_shape(std::int64_t rows, int channels) { return {1, channels, 1, 1, rows}; }

/// `t` rounded to S and widened again, in layout k: what a fused kernel reads of a normalised input it never stores,
/// which it rounds to S as the separate norm op would store it (contract.hpp, fuses_instance_norm, fuses_layer_norm).
template <class S>
swinfer::tensor<float> rounded_like_storage(const swinfer::tensor<float>& t, swinfer::layout_kind k) {
  swinfer::tensor<S> stored(t.shape(), k);
  swinfer::ops::ref::convert(t, stored);
  return swinfer_test::to_float_tensor(stored, k);
}

/// x += op(y), compared whole; or, where the backend's bound is relative to the op's own output (its
/// check_increment), as x - before against want - before, so the residual does not hide errors.
template <class Bk, class S>
void check_accumulated(op_id op, const swinfer::tensor<S>& got, const swinfer::tensor<float>& want,
                       const swinfer::tensor<S>& before, std::int64_t terms) {
  if constexpr (requires { Bk::check_increment(op, got, want, before, terms); }) {
    Bk::check_increment(op, got, want, before, terms);
  } else {
    Bk::check(op, got, want, terms);
  }
}

/// The rounding of the window attention's inner operands that `kernel` applies (the backend's optional
/// reference_operands hook), for ops::ref::window_attention; null: none.
template <class Bk, class S, class Kernel>
swinfer::ops::ref::operand_rounding reference_operands(const Kernel& kernel) {
  if constexpr (requires { Bk::template reference_operands<S>(kernel); }) {
    return Bk::template reference_operands<S>(kernel);
  } else {
    return nullptr;
  }
}

}  // namespace swinfer_ops_test

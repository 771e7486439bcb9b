// The shared op suite's int8 rows: on precision::int8 targets, the convolutions (conv3d, conv_transpose3d) run their
// case tables with a calibrated and with a dynamic activation scale in their problems, against the naive reference's
// integer arithmetic (ops::ref: inputs quantized per tensor, weights per output channel, exact integer sums,
// docs/int8.md); the linears and the window attention with dynamic scales, which quantize each row with its own
// (their calibrated rows run in the op suite itself). Such an op adds its body here and one TEST_CASE to
// SWINFER_INT8_OP_TESTS.
#pragma once

#include <catch2/catch.hpp>
#include <string>
#include <utility>
#include <vector>

#include "ops/op_cases.hpp"
#include "ops/fused_op_suite.hpp"
#include "ops/op_target.hpp"
#include "ops/window_attention_suite.hpp"
#include "swinfer/ops/concat.hpp"
#include "swinfer/ops/conv3d.hpp"
#include "swinfer/ops/conv_transpose3d.hpp"
#include "swinfer/ops/linear.hpp"
#include "swinfer/ops/quantization.hpp"
#include "tensor_testing.hpp"

namespace swinfer_ops_test {

/// The activation scales of the int8 rows: calibrated (inputs are uniform in [-1, 1) and 0.9 maps to 127, so the
/// largest values clip as they would under a percentile calibration) and dynamic (each input's max|x| / 127).
inline std::vector<std::pair<std::string, swinfer::ops::int8_input>> int8_test_inputs() {
  return {{"", {"test.point", 0.9f / swinfer::ops::activation_max}}, {" dynamic", {"test.point", 0, true}}};
}

/// The integer result must also be visibly quantized: farther from the float reference than float rounding.
inline void check_quantized(const swinfer::tensor<float>& got, const swinfer::tensor<float>& float_ref) {
  const auto e = swinfer_test::compare(got, float_ref);
  INFO("against the float reference: max|diff| " << e.max_abs << ", max|ref| " << e.max_ref);
  CHECK(e.max_abs > 1e-4 * e.max_ref);
}

/// Runs one op of quantized problem `p` on inputs of `shapes` in turn (run(in, out)), each against the reference's
/// integer arithmetic (ref(problem, in, out)) and visibly quantized against the float reference (`float_p`). A
/// dynamic scale must follow each input: the same op then sees inputs of growing range.
template <class T, class Problem, class Run, class Ref>
void check_int8_inputs(op_id id, const Problem& p, const Problem& float_p, const std::vector<shape5>& shapes,
                       Run&& run, Ref&& ref) {
  using Bk = typename T::backend;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const shape5& s = shapes[i];
    const float range = p.int8.dynamic ? 1.0f + 4.0f * static_cast<float>(i) : 1.0f;
    INFO("input " << dims(s) << " in +-" << range);
    const auto in = swinfer_test::random_tensor<float>(s, T::kind, -range, range);
    auto out = Bk::template poisoned<float>(p.output_shape(s), T::kind);
    run(Bk::to_device(in), out);
    swinfer::tensor<float> want(p.output_shape(s), T::kind), float_ref(p.output_shape(s), T::kind);
    ref(p, in, want);
    Bk::check(id, Bk::download(out), want);
    ref(float_p, in, float_ref);
    check_quantized(Bk::download(out), float_ref);
  }
}

/// out = conv(concat_channels(first, second)) in int8, each part read where it is: one activation scale for the
/// whole concatenation (a dynamic one from both parts: the second part's range is 5x the first's, so a scale taken
/// from the first alone clips it).
template <class T>
  requires swinfer::fuses_concat<typename T::kernels>
void conv3d_concat_int8_rows(const run_context& rc) {
  using K = typename T::kernels;
  using Bk = typename T::backend;
  for (const auto& c : conv3d_concat_cases()) {
    for (const auto& [scale_name, int8] : int8_test_inputs()) {
      DYNAMIC_SECTION(prefix<T>("conv3d") << name(c) << scale_name << rc.label) {
        const swinfer::ops::conv3d_problem float_p = problem(c);
        swinfer::ops::conv3d_problem p = float_p;
        p.int8 = int8;
        auto ctx = Bk::template make_context<K>(rc);
        const auto weight = swinfer_test::random_vector(static_cast<std::size_t>(p.weight_count()));
        typename K::conv3d conv(*ctx, p, weight.data(), nullptr);
        const float second_range = int8.dynamic ? 5.0f : 1.0f;
        const auto first = swinfer_test::random_tensor<float>(concat_part_shape(c.first), T::kind);
        const auto second =
            swinfer_test::random_tensor<float>(concat_part_shape(c.second), T::kind, -second_range, second_range);
        const shape5 joined = concat_part_shape(p.cin);
        auto out = Bk::template poisoned<float>(p.output_shape(joined), T::kind);
        conv.run(Bk::to_device(first), Bk::to_device(second), out);
        swinfer::tensor<float> cat(joined, T::kind), want(p.output_shape(joined), T::kind),
            float_ref(p.output_shape(joined), T::kind);
        swinfer::ops::ref::concat_channels({&first, &second}, cat);
        swinfer::ops::ref::conv3d(p, cat, weight.data(), nullptr, want);
        Bk::check(op_id::conv3d, Bk::download(out), want);
        swinfer::ops::ref::conv3d(float_p, cat, weight.data(), nullptr, float_ref);
        check_quantized(Bk::download(out), float_ref);
      }
    }
  }
}

template <class T>
void conv3d_int8_suite() {
  using K = typename T::kernels;
  using Bk = typename T::backend;
  for (const auto& rc : Bk::contexts(false)) {
    for (const auto& c : conv3d_cases()) {
      for (const auto& [scale_name, int8] : int8_test_inputs()) {
        DYNAMIC_SECTION(prefix<T>("conv3d") << name(c) << scale_name << rc.label) {
          swinfer::ops::conv3d_problem p = c.p;
          p.int8 = int8;
          auto ctx = Bk::template make_context<K>(rc);
          const auto weight = swinfer_test::random_vector(static_cast<std::size_t>(p.weight_count()));
          const auto bias = swinfer_test::random_vector(static_cast<std::size_t>(p.cout));
          const float* b = p.bias ? bias.data() : nullptr;
          typename K::conv3d conv(*ctx, p, weight.data(), b);
          std::vector<shape5> shapes{c.in};
          if (c.in2.n > 0) shapes.insert(shapes.end(), {c.in2, c.in});
          check_int8_inputs<T>(
              op_id::conv3d, p, c.p, shapes, [&](const auto& in, auto& out) { conv.run(in, out); },
              [&](const auto& problem, const auto& in, auto& out) {
                swinfer::ops::ref::conv3d(problem, in, weight.data(), b, out);
              });
        }
      }
    }
    if constexpr (swinfer::fuses_concat<K>) conv3d_concat_int8_rows<T>(rc);
  }
}

template <class T>
void conv_transpose3d_int8_suite() {
  using K = typename T::kernels;
  using Bk = typename T::backend;
  for (const auto& rc : Bk::contexts(false)) {
    for (const auto& c : conv_transpose3d_cases()) {
      for (const auto& [scale_name, int8] : int8_test_inputs()) {
        DYNAMIC_SECTION(prefix<T>("conv_transpose3d") << name(c) << scale_name << rc.label) {
          const swinfer::ops::conv_transpose3d_problem p{c.cin, c.cout, int8}, float_p{c.cin, c.cout};
          auto ctx = Bk::template make_context<K>(rc);
          const auto weight = swinfer_test::random_vector(static_cast<std::size_t>(p.weight_count()));
          typename K::conv_transpose3d up(*ctx, p, weight.data());
          // Two inputs of the same extents (a dynamic scale per input, the op built once).
          check_int8_inputs<T>(
              op_id::conv_transpose3d, p, float_p, {c.in, c.in}, [&](const auto& in, auto& out) { up.run(in, out); },
              [&](const auto& problem, const auto& in, auto& out) {
                swinfer::ops::ref::conv_transpose3d(problem, in, weight.data(), out);
              });
        }
      }
    }
  }
}

/// Rows of `features` values whose magnitudes span 1 to 1000 (row r scaled by 10^(r mod 4)), one of them all zero:
/// dynamic scales must follow each row.
inline swinfer::tensor<float> rows_of_mixed_range(std::int64_t rows, int features, float low, float high) {
  auto x = swinfer_test::random_tensor<float>(rows_shape(rows, features), swinfer::layout_kind::ndhwc, low, high);
  for (std::int64_t r = 0; r < rows; ++r) {
    const float factor = r == rows / 2 && rows > 2 ? 0.0f : std::pow(10.0f, static_cast<float>(r % 4));
    for (int k = 0; k < features; ++k) x.data()[r * features + k] *= factor;
  }
  return x;
}

/// A linear with dynamic scales (each input row quantized with its own max|x| / 127) against the reference with
/// the same scales, visibly quantized, and far from the reference with one scale for the whole input (the small
/// rows' steps 1000x coarser there). Where the backend fuses a LayerNorm on load, the rows' scales are the
/// normalised rows'.
template <class T>
void linear_int8_suite() {
  using K = typename T::kernels;
  using Bk = typename T::backend;
  constexpr auto rows_layout = swinfer::layout_kind::ndhwc;
  for (const auto& rc : Bk::contexts(false)) {
    for (const auto& c : linear_cases()) {
      DYNAMIC_SECTION(prefix<T>("linear") << name(c) << " dynamic" << rc.label) {
        auto p = c.p;
        p.int8 = {"test.point", 0, true};
        auto ctx = Bk::template make_context<K>(rc);
        const auto weight = swinfer_test::random_vector(static_cast<std::size_t>(p.in_features) * p.out_features);
        const auto bias = swinfer_test::random_vector(static_cast<std::size_t>(p.out_features));
        const float* b = p.bias ? bias.data() : nullptr;
        typename K::linear lin(*ctx, p, weight.data(), b);
        const auto x = rows_of_mixed_range(c.rows, p.in_features, -1.0f, 1.0f);
        const auto y0 = swinfer_test::random_tensor<float>(rows_shape(c.rows, p.out_features), rows_layout);
        auto y = p.accumulate ? Bk::to_device(y0) : Bk::template poisoned<float>(y0.shape(), rows_layout);
        const auto dx = Bk::to_device(x);
        lin.run(dx.data(), c.rows, y.data());
        const auto& got = Bk::download(y);
        const auto reference = [&](const swinfer::ops::linear_problem& problem) {
          auto want = y0.clone();
          swinfer::ops::ref::linear(problem, x.data(), c.rows, weight.data(), b, want.data());
          return want;
        };
        Bk::check(op_id::linear, got, reference(p));
        check_quantized(got, reference(c.p));
        if (c.rows >= 4) {
          auto per_tensor = p;
          per_tensor.int8 = {"test.point", swinfer::ops::dynamic_activation_scale(x)};
          const double to_dynamic = swinfer_test::compare(got, reference(p)).max_abs;
          const double to_per_tensor = swinfer_test::compare(got, reference(per_tensor)).max_abs;
          INFO("max|diff| to the rows' own scales " << to_dynamic << ", to one scale for all rows " << to_per_tensor);
          CHECK(to_per_tensor > 10 * to_dynamic);
        }
      }
    }
    if constexpr (swinfer::fuses_layer_norm<K>) linear_norm_rows<T>(rc, true);
  }
}

/// The window attention with dynamic scales on its qkv and proj linears (each token row its own).
template <class T>
void window_attention_int8_suite() {
  using K = typename T::kernels;
  for (const auto& rc : T::backend::contexts(false)) {
    for (const auto& c : window_attention_cases()) {
      if (c.pre_norm ? !swinfer::fuses_layer_norm<K> : !swinfer::separate_attention_norm<K>) continue;
      DYNAMIC_SECTION(prefix<T>("window_attention") << name(c) << " dynamic" << rc.label) {
        run_window_attention_row<T>(c, rc, true);
      }
    }
  }
}

}  // namespace swinfer_ops_test

/// The int8 rows of one backend, over its precision::int8 targets (a std::tuple of targets).
#define SWINFER_INT8_OP_TESTS(backend_name, tags, Targets)                                                    \
  TEST_CASE("conv3d int8/" backend_name, tags "[conv3d][int8][ops]") {                                        \
    swinfer_ops_test::for_each_target<Targets>([](auto t) { swinfer_ops_test::conv3d_int8_suite<decltype(t)>(); }); \
  }                                                                                                           \
  TEST_CASE("conv_transpose3d int8/" backend_name, tags "[conv_transpose3d][int8][ops]") {                    \
    swinfer_ops_test::for_each_target<Targets>(                                                               \
        [](auto t) { swinfer_ops_test::conv_transpose3d_int8_suite<decltype(t)>(); });                        \
  }                                                                                                           \
  TEST_CASE("linear int8/" backend_name, tags "[linear][int8][ops]") {                                        \
    swinfer_ops_test::for_each_target<Targets>([](auto t) { swinfer_ops_test::linear_int8_suite<decltype(t)>(); }); \
  }                                                                                                           \
  TEST_CASE("window_attention int8/" backend_name, tags "[window_attention][int8][ops]") {                    \
    swinfer_ops_test::for_each_target<Targets>(                                                               \
        [](auto t) { swinfer_ops_test::window_attention_int8_suite<decltype(t)>(); });                        \
  }

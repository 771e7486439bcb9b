// The shared op suite's int8 rows: on precision::int8 targets, every op that takes dynamic scales (conv3d,
// conv_transpose3d) runs its case table with a calibrated and with a dynamic activation scale in its problem, against
// the naive reference's integer arithmetic (ops::ref: inputs quantized per tensor, weights per output channel, exact
// integer sums, docs/int8.md). Such an op adds its body here and one TEST_CASE to SWINFER_INT8_OP_TESTS.
#pragma once

#include <catch2/catch.hpp>
#include <string>
#include <utility>
#include <vector>

#include "ops/op_cases.hpp"
#include "ops/op_target.hpp"
#include "swinfer/ops/conv3d.hpp"
#include "swinfer/ops/conv_transpose3d.hpp"
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
          auto ctx = Bk::template make_context<K>(rc.options);
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
          auto ctx = Bk::template make_context<K>(rc.options);
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

}  // namespace swinfer_ops_test

/// The int8 rows of one backend, over its precision::int8 targets (a std::tuple of targets).
#define SWINFER_INT8_OP_TESTS(backend_name, tags, Targets)                                                    \
  TEST_CASE("conv3d int8/" backend_name, tags "[conv3d][int8][ops]") {                                        \
    swinfer_ops_test::for_each_target<Targets>([](auto t) { swinfer_ops_test::conv3d_int8_suite<decltype(t)>(); }); \
  }                                                                                                           \
  TEST_CASE("conv_transpose3d int8/" backend_name, tags "[conv_transpose3d][int8][ops]") {                    \
    swinfer_ops_test::for_each_target<Targets>(                                                               \
        [](auto t) { swinfer_ops_test::conv_transpose3d_int8_suite<decltype(t)>(); });                        \
  }

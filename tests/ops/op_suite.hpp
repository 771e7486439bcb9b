// One op test suite for every backend (like ggml's test-backend-ops): each op's case table (op_cases.hpp) runs over
// every precision x layout a backend supports, each row in its own Catch2 section named by its configuration, e.g.
// `conv3d/cpu/bf16/ndhwc/k3s1p1+bias 3->50 1x3x6x5x4 (2 threads, bf16 weights rounded)`, so a failure says what
// failed (and `-c "<name>"` reruns just that row). The reference is the naive ops::ref kernel in double on the same
// (rounded) inputs; inputs are fresh random (Catch's --rng-seed), outputs poisoned with NaN before the kernel runs.
// Rows of the optional fused overloads (fused_op_suite.hpp) run where a backend has them (fuses_instance_norm,
// fuses_layer_norm, fuses_concat, fuses_instance_norm_sum, gathers_instance_norm_moments); every backend's ops
// refuse bad arguments alike (argument_error_suite.hpp). A backend plugs in by specialising op_backend<B>
// (op_target.hpp).
#pragma once

#include <catch2/catch.hpp>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ops/argument_error_suite.hpp"
#include "ops/fused_op_suite.hpp"
#include "ops/op_cases.hpp"
#include "ops/op_target.hpp"
#include "ops/window_attention_suite.hpp"
#include "swinfer/backend/contract.hpp"
#include "swinfer/ops/concat.hpp"
#include "swinfer/ops/conv3d.hpp"
#include "swinfer/ops/conv_transpose3d.hpp"
#include "swinfer/ops/convert.hpp"
#include "swinfer/ops/instance_norm.hpp"
#include "swinfer/ops/layer_norm.hpp"
#include "swinfer/ops/linear.hpp"
#include "swinfer/ops/patch_merging.hpp"
#include "swinfer/ops/pool3d.hpp"
#include "tensor_testing.hpp"

namespace swinfer_ops_test {

// ---- the test bodies, one per op -----------------------------------------------------------------------------------

template <class T>
void conv3d_suite() {
  using S = typename T::storage;
  using K = typename T::kernels;
  using Bk = typename T::backend;
  // One case in one context against the reference; false where the context forces an implementation that cannot
  // run the case (the construction's error, which must say so, is kept in `why_not`).
  const auto run_case = [](const run_context& rc, const conv3d_case& c, std::string& why_not) {
    auto ctx = Bk::template make_context<K>(rc);
    auto p = c.p;
    p.int8 = int8_input_for<T>("conv3d", 1.0f);
    const auto weight = swinfer_test::random_vector(static_cast<std::size_t>(p.weight_count()));
    const auto bias = swinfer_test::random_vector(static_cast<std::size_t>(p.cout));
    const float* b = p.bias ? bias.data() : nullptr;
    std::optional<typename K::conv3d> made;
    try {
      made.emplace(*ctx, p, weight.data(), b);
    } catch (const swinfer::error& e) {
      if (rc.kernel.empty() || std::string_view(e.what()).find("cannot run it") == std::string_view::npos) throw;
      why_not = e.what();
      return false;
    }
    auto& conv = *made;
    const auto used = Bk::template reference_weights<S>(conv, weight);
    std::vector<shape5> shapes{c.in};
    if (c.in2.n > 0) shapes.insert(shapes.end(), {c.in2, c.in});
    for (const auto& s : shapes) {
      INFO("input " << dims(s));
      const auto in = swinfer_test::random_tensor<S>(s, T::kind);
      auto out = Bk::template poisoned<S>(p.output_shape(s), T::kind);
      conv.run(Bk::to_device(in), out);
      swinfer::tensor<float> want(p.output_shape(s), T::kind);
      swinfer::ops::ref::conv3d(p, widened(in), used.data(), b, want);
      Bk::check(op_id::conv3d, Bk::download(out), want);
    }
    return true;
  };
  for (const auto& rc : weight_mode_contexts<T>()) {
    for (const auto& c : conv3d_cases()) {
      DYNAMIC_SECTION(prefix<T>("conv3d") << name(c) << rc.label) {
        std::string why_not;
        CHECK(run_case(rc, c, why_not));
      }
    }
  }
  // Every implementation the backend lists, forced, on every case it can run (one section each); what each ran is
  // reported.
  for (const auto& rc : forced_implementations<T>(op_id::conv3d)) {
    DYNAMIC_SECTION(prefix<T>("conv3d") << "every case" << rc.label) {
      int ran = 0, refused = 0;
      std::string last_reason;
      for (const auto& c : conv3d_cases()) {
        INFO(name(c));
        std::string why_not;
        if (run_case(rc, c, why_not)) {
          ++ran;
        } else {
          ++refused;
          last_reason = why_not;
        }
      }
      report_implementation(prefix<T>("conv3d") + rc.label, ran, refused, last_reason);
    }
  }
  for (const auto& rc : Bk::contexts(false)) {
    if constexpr (swinfer::fuses_instance_norm<K>) conv3d_norm_rows<T>(rc);
    if constexpr (swinfer::fuses_concat<K>) conv3d_concat_rows<T>(rc);
    if constexpr (swinfer::gathers_instance_norm_moments<K>) conv3d_moments_rows<T>(rc);
  }
}

template <class T>
void conv_transpose3d_suite() {
  using S = typename T::storage;
  using K = typename T::kernels;
  using Bk = typename T::backend;
  for (const auto& rc : Bk::contexts(false)) {
    for (const auto& c : conv_transpose3d_cases()) {
      DYNAMIC_SECTION(prefix<T>("conv_transpose3d") << name(c) << rc.label) {
        auto ctx = Bk::template make_context<K>(rc);
        const swinfer::ops::conv_transpose3d_problem p{c.cin, c.cout, int8_input_for<T>("conv_transpose3d", 1.0f)};
        const auto weight = swinfer_test::random_vector(static_cast<std::size_t>(p.weight_count()));
        typename K::conv_transpose3d up(*ctx, p, weight.data());
        const auto used = Bk::template reference_weights<S>(up, weight);
        const auto in = swinfer_test::random_tensor<S>(c.in, T::kind);
        const shape5 os = p.output_shape(c.in);
        auto out = Bk::template poisoned<S>(os, T::kind);
        up.run(Bk::to_device(in), out);
        swinfer::tensor<float> want(os, T::kind);
        swinfer::ops::ref::conv_transpose3d(p, widened(in), used.data(), want);
        Bk::check(op_id::conv_transpose3d, Bk::download(out), want);
      }
    }
  }
}


template <class T>
void linear_suite() {
  using S = typename T::storage;
  using K = typename T::kernels;
  using Bk = typename T::backend;
  constexpr auto rows_layout = swinfer::layout_kind::ndhwc;
  for (const auto& rc : weight_mode_contexts<T>()) {
    for (const auto& c : linear_cases()) {
      DYNAMIC_SECTION(prefix<T>("linear") << name(c) << rc.label) {
        auto p = c.p;
        p.int8 = int8_input_for<T>("linear", c.x_range);
        auto ctx = Bk::template make_context<K>(rc);
        const auto weight = swinfer_test::random_vector(static_cast<std::size_t>(p.in_features) * p.out_features);
        const auto bias = swinfer_test::random_vector(static_cast<std::size_t>(p.out_features));
        const float* b = p.bias ? bias.data() : nullptr;
        typename K::linear lin(*ctx, p, weight.data(), b);
        const auto used = Bk::template reference_weights<S>(lin, weight);
        const auto x = swinfer_test::random_tensor<S>(rows_shape(c.rows, p.in_features), rows_layout, -c.x_range,
                                                      c.x_range);
        const auto y0 = swinfer_test::random_tensor<S>(rows_shape(c.rows, p.out_features), rows_layout);
        auto y = p.accumulate ? Bk::to_device(y0) : Bk::template poisoned<S>(y0.shape(), rows_layout);
        const auto dx = Bk::to_device(x);
        lin.run(dx.data(), c.rows, y.data());
        auto want = widened(y0);
        swinfer::ops::ref::linear(p, widened(x).data(), c.rows, used.data(), b, want.data());
        Bk::check(op_id::linear, Bk::download(y), want);
      }
    }
  }
  if constexpr (swinfer::fuses_layer_norm<K>) {
    for (const auto& rc : Bk::contexts(false)) linear_norm_rows<T>(rc);
  }
}

template <class T>
void layer_norm_suite() {
  using S = typename T::storage;
  using K = typename T::kernels;
  using Bk = typename T::backend;
  constexpr auto rows_layout = swinfer::layout_kind::ndhwc;
  for (const auto& rc : Bk::contexts(false)) {
    for (const auto& c : layer_norm_cases()) {
      DYNAMIC_SECTION(prefix<T>("layer_norm") << name(c) << rc.label) {
        auto ctx = Bk::template make_context<K>(rc);
        const auto gamma = swinfer_test::random_vector(static_cast<std::size_t>(c.channels), 0.5f, 1.5f);
        const auto beta = swinfer_test::random_vector(static_cast<std::size_t>(c.channels));
        const float* g = c.affine & 1 ? gamma.data() : nullptr;
        const float* be = c.affine & 2 ? beta.data() : nullptr;
        typename K::layer_norm norm(*ctx, c.channels, g, be, 1e-5f);
        const auto x = swinfer_test::random_tensor<S>(rows_shape(c.rows, c.channels), rows_layout, c.lo, c.hi);
        auto dx = Bk::to_device(x);
        auto y = Bk::template poisoned<S>(x.shape(), rows_layout);
        if (c.in_place) {
          norm.run(dx.data(), c.rows, dx.data());  // x and y may alias
        } else {
          norm.run(dx.data(), c.rows, y.data());
        }
        auto want = widened(x);
        swinfer::ops::ref::layer_norm(want.data(), c.rows, c.channels, g, be, 1e-5f, want.data());
        Bk::check(op_id::layer_norm, Bk::download(c.in_place ? dx : y), want);
      }
    }
  }
}

template <class T>
void instance_norm_suite() {
  using S = typename T::storage;
  using K = typename T::kernels;
  using Bk = typename T::backend;
  for (const auto& rc : Bk::contexts(false)) {
    for (const auto& c : instance_norm_cases()) {
      DYNAMIC_SECTION(prefix<T>("instance_norm") << name(c) << rc.label) {
        auto ctx = Bk::template make_context<K>(rc);
        const auto host = swinfer_test::random_tensor<S>(c.s, T::kind, c.lo, c.hi);
        const auto residual = swinfer_test::random_tensor<S>(c.s, T::kind);
        auto x = Bk::to_device(host);
        const auto r = Bk::to_device(residual);
        swinfer::ops::instance_norm_epilogue e;
        if (c.activation) e.negative_slope = 0.01f;
        K::instance_norm(*ctx, x, c.residual ? &r : nullptr, e);
        auto want = widened(host);
        const auto residual_f = widened(residual);
        swinfer::ops::ref::instance_norm(want, c.residual ? &residual_f : nullptr, e);
        Bk::check(op_id::instance_norm, Bk::download(x), want);
      }
    }
    if constexpr (swinfer::fuses_instance_norm_sum<K>) instance_norm_sum_rows<T>(rc);
  }
}

template <class T>
void concat_suite() {
  using S = typename T::storage;
  using K = typename T::kernels;
  using Bk = typename T::backend;
  for (const auto& rc : Bk::contexts(false)) {
    for (const auto& c : concat_cases()) {
      DYNAMIC_SECTION(prefix<T>("concat_channels") << name(c) << rc.label) {
        auto ctx = Bk::template make_context<K>(rc);
        std::vector<swinfer::tensor<S>> host;
        std::vector<typename T::volume> dev;
        for (const auto ch : c.channels) {
          host.push_back(swinfer_test::random_tensor<S>({c.grid.n, ch, c.grid.d, c.grid.h, c.grid.w}, T::kind));
          dev.push_back(Bk::to_device(host.back()));
        }
        std::vector<const swinfer::tensor<S>*> host_parts;
        for (const auto& h : host) host_parts.push_back(&h);
        std::vector<const typename T::volume*> parts;
        for (const auto& d : dev) parts.push_back(&d);
        const shape5 os = swinfer::ops::concat_channels_shape(host_parts);
        auto out = Bk::template poisoned<S>(os, T::kind);
        K::concat_channels(*ctx, parts, out);
        swinfer::tensor<S> want(os, T::kind);
        swinfer::ops::ref::concat_channels(host_parts, want);
        check_equal(Bk::download(out), want);
      }
    }
  }
}

template <class T>
void pool3d_suite() {
  using S = typename T::storage;
  using K = typename T::kernels;
  using Bk = typename T::backend;
  for (const auto& rc : Bk::contexts(false)) {
    for (const auto& c : pool3d_cases()) {
      DYNAMIC_SECTION(prefix<T>("pool3d") << name(c) << rc.label) {
        auto ctx = Bk::template make_context<K>(rc);
        const swinfer::ops::pool3d_problem p{c.mode, c.kernel};
        const auto x = swinfer_test::random_tensor<S>(c.s, T::kind, -3.0f, 5.0f);
        auto out = Bk::template poisoned<S>(p.output_shape(c.s), T::kind);
        K::pool3d(*ctx, Bk::to_device(x), p, out);
        swinfer::tensor<float> want(p.output_shape(c.s), T::kind);
        swinfer::ops::ref::pool3d(widened(x), p, want);
        Bk::check(op_id::pool3d, Bk::download(out), want, std::int64_t{c.kernel} * c.kernel * c.kernel);
      }
    }
  }
}

template <class T>
void patch_merge_suite() {
  using S = typename T::storage;
  using K = typename T::kernels;
  using Bk = typename T::backend;
  for (const auto& rc : Bk::contexts(false)) {
    for (const auto& c : patch_merge_cases()) {
      DYNAMIC_SECTION(prefix<T>("patch_merge_gather") << name(c) << rc.label) {
        auto ctx = Bk::template make_context<K>(rc);
        const auto x = swinfer_test::random_tensor<S>(c.s, T::kind);
        const shape5 os = swinfer::ops::patch_merge_shape(c.s);
        auto out = Bk::template poisoned<S>(os, T::kind);
        K::patch_merge_gather(*ctx, Bk::to_device(x), c.order, out);
        swinfer::tensor<S> want(os, T::kind);
        swinfer::ops::ref::patch_merge_gather(x, c.order, want);
        check_equal(Bk::download(out), want);
      }
    }
  }
}

/// float32 (layout `from`) to storage (layout `to`) rounds to nearest even like the host; widening back, copying the
/// storage into the other layout and float32 to float32 across layouts are exact.
template <class T>
void convert_suite() {
  using S = typename T::storage;
  using K = typename T::kernels;
  using Bk = typename T::backend;
  using swinfer::layout_kind;
  for (const auto& rc : Bk::contexts(false)) {
    for (const auto& c : convert_cases()) {
      DYNAMIC_SECTION(prefix<T>("convert") << name(c) << rc.label) {
        auto ctx = Bk::template make_context<K>(rc);
        const auto src = swinfer_test::random_tensor<float>(c.s, c.from, -c.range, c.range);
        const auto dsrc = Bk::to_device(src);
        auto lowered = Bk::template poisoned<S>(c.s, c.to);
        K::convert(*ctx, dsrc, lowered);
        swinfer::tensor<S> rounded(c.s, c.to);
        swinfer::ops::ref::convert(src, rounded);
        check_equal(Bk::download(lowered), rounded);
        auto back = Bk::template poisoned<float>(c.s, c.from);
        K::convert(*ctx, lowered, back);
        check_equal(Bk::download(back), rounded);
        const auto other = c.to == layout_kind::ncdhw ? layout_kind::ndhwc : layout_kind::ncdhw;
        auto copy = Bk::template poisoned<S>(c.s, other);
        K::convert(*ctx, lowered, copy);
        check_equal(Bk::download(copy), rounded);
        auto f2 = Bk::template poisoned<float>(c.s, c.to);
        K::convert(*ctx, dsrc, f2);
        check_equal(Bk::download(f2), src);
      }
    }
  }
}

}  // namespace swinfer_ops_test

/// The op test cases of one backend: one Catch2 test case per op ("conv3d/cpu"), each running its whole case table
/// over every target in `Targets`, one section per row, and one for the argument errors of every op.
#define SWINFER_OP_TESTS(backend_name, tags, Targets)                                                              \
  TEST_CASE("conv3d/" backend_name, tags "[conv3d][ops]") {                                                        \
    swinfer_ops_test::for_each_target<Targets>([](auto t) { swinfer_ops_test::conv3d_suite<decltype(t)>(); });     \
  }                                                                                                                \
  TEST_CASE("conv_transpose3d/" backend_name, tags "[conv_transpose3d][ops]") {                                    \
    swinfer_ops_test::for_each_target<Targets>(                                                                    \
        [](auto t) { swinfer_ops_test::conv_transpose3d_suite<decltype(t)>(); });                                  \
  }                                                                                                                \
  TEST_CASE("linear/" backend_name, tags "[linear][ops]") {                                                        \
    swinfer_ops_test::for_each_target<Targets>([](auto t) { swinfer_ops_test::linear_suite<decltype(t)>(); });     \
  }                                                                                                                \
  TEST_CASE("layer_norm/" backend_name, tags "[layer_norm][ops]") {                                                \
    swinfer_ops_test::for_each_target<Targets>([](auto t) { swinfer_ops_test::layer_norm_suite<decltype(t)>(); }); \
  }                                                                                                                \
  TEST_CASE("instance_norm/" backend_name, tags "[instance_norm][ops]") {                                          \
    swinfer_ops_test::for_each_target<Targets>(                                                                    \
        [](auto t) { swinfer_ops_test::instance_norm_suite<decltype(t)>(); });                                     \
  }                                                                                                                \
  TEST_CASE("concat_channels/" backend_name, tags "[concat][ops]") {                                               \
    swinfer_ops_test::for_each_target<Targets>([](auto t) { swinfer_ops_test::concat_suite<decltype(t)>(); });     \
  }                                                                                                                \
  TEST_CASE("pool3d/" backend_name, tags "[pool3d][ops]") {                                                        \
    swinfer_ops_test::for_each_target<Targets>([](auto t) { swinfer_ops_test::pool3d_suite<decltype(t)>(); });     \
  }                                                                                                                \
  TEST_CASE("patch_merge_gather/" backend_name, tags "[patch_merging][ops]") {                                     \
    swinfer_ops_test::for_each_target<Targets>(                                                                    \
        [](auto t) { swinfer_ops_test::patch_merge_suite<decltype(t)>(); });                                       \
  }                                                                                                                \
  TEST_CASE("convert/" backend_name, tags "[convert][ops]") {                                                      \
    swinfer_ops_test::for_each_target<Targets>([](auto t) { swinfer_ops_test::convert_suite<decltype(t)>(); });    \
  }                                                                                                                \
  TEST_CASE("window_attention/" backend_name, tags "[window_attention][ops]") {                                    \
    swinfer_ops_test::for_each_target<Targets>(                                                                    \
        [](auto t) { swinfer_ops_test::window_attention_suite<decltype(t)>(); });                                  \
  }                                                                                                                \
  TEST_CASE("argument_errors/" backend_name, tags "[errors][ops]") {                                               \
    swinfer_ops_test::for_each_target<Targets>(                                                                    \
        [](auto t) { swinfer_ops_test::argument_error_suite<decltype(t)>(); });                                    \
  }

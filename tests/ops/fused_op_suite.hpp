// The shared op suite's rows for the optional fused overloads (contract.hpp), run on the backends that have them:
// conv3d and linear reading a normalised input they never store (fuses_instance_norm, fuses_layer_norm), conv3d
// reading a two-part concatenation where the parts are (fuses_concat), an InstanceNorm adding a residual it
// normalises as it reads it (fuses_instance_norm_sum), and convolutions gathering their outputs' moments for the
// norms after them (gathers_instance_norm_moments). The reference normalises (or concatenates)
// first, rounding the normalised values to S as the separate op would store them. Weights in [-0.3, 0.3), inputs
// with a mean away from 0.
#pragma once

#include <catch2/catch.hpp>
#include <algorithm>
#include <cstdint>

#include "ops/op_cases.hpp"
#include "ops/op_target.hpp"
#include "swinfer/backend/contract.hpp"
#include "swinfer/ops/concat.hpp"
#include "swinfer/ops/conv3d.hpp"
#include "swinfer/ops/instance_norm.hpp"
#include "swinfer/ops/layer_norm.hpp"
#include "swinfer/ops/linear.hpp"
#include "swinfer/ops/quantization.hpp"

namespace swinfer_ops_test {

/// out = conv(act(InstanceNorm(in))); `in` must be left as it was.
template <class T>
  requires swinfer::fuses_instance_norm<typename T::kernels>
void conv3d_norm_rows(const run_context& rc) {
  using S = typename T::storage;
  using K = typename T::kernels;
  using Bk = typename T::backend;
  for (const auto& c : conv3d_norm_cases()) {
    DYNAMIC_SECTION(prefix<T>("conv3d") << name(c) << rc.label) {
      auto ctx = Bk::template make_context<K>(rc);
      const auto weight = swinfer_test::random_vector(static_cast<std::size_t>(c.p.weight_count()), -0.3f, 0.3f);
      const auto bias = swinfer_test::random_vector(static_cast<std::size_t>(c.p.cout));
      const float* b = c.p.bias ? bias.data() : nullptr;
      typename K::conv3d conv(*ctx, c.p, weight.data(), b);
      const auto used = Bk::template reference_weights<S>(conv, weight);
      const auto host = swinfer_test::random_tensor<S>(c.in, T::kind, -2.0f, 5.0f);
      swinfer::ops::instance_norm_epilogue e;
      if (c.leaky_relu) e.negative_slope = 0.01f;
      const auto in = Bk::to_device(host);
      const shape5 os = c.p.output_shape(c.in);
      auto out = Bk::template poisoned<S>(os, T::kind);
      conv.run(in, e, out);
      auto normalised = widened(host);
      swinfer::ops::ref::instance_norm(normalised, nullptr, e);
      swinfer::tensor<float> want(os, T::kind);
      swinfer::ops::ref::conv3d(c.p, rounded_like_storage<S>(normalised, T::kind), used.data(), b, want);
      Bk::check(op_id::conv3d, Bk::download(out), want);
      check_equal(Bk::download(in), host);
    }
  }
}

/// x = act(IN(x) + IN(residual)); the residual must be left as it was. Both with a mean away from 0 where the case
/// has one (the statistics' cancellation).
template <class T>
  requires swinfer::fuses_instance_norm_sum<typename T::kernels>
void instance_norm_sum_rows(const run_context& rc) {
  using S = typename T::storage;
  using K = typename T::kernels;
  using Bk = typename T::backend;
  for (const auto& c : instance_norm_cases()) {
    if (!c.residual) continue;
    DYNAMIC_SECTION(prefix<T>("instance_norm_sum") << name(c) << rc.label) {
      auto ctx = Bk::template make_context<K>(rc);
      const auto host = swinfer_test::random_tensor<S>(c.s, T::kind, c.lo, c.hi);
      const auto residual = swinfer_test::random_tensor<S>(c.s, T::kind, c.lo, c.hi);
      auto x = Bk::to_device(host);
      const auto r = Bk::to_device(residual);
      swinfer::ops::instance_norm_epilogue e;
      if (c.activation) e.negative_slope = 0.01f;
      K::instance_norm_sum(*ctx, x, r, e);
      auto want = widened(host);
      swinfer::ops::ref::instance_norm_sum(want, widened(residual), e);
      Bk::check(op_id::instance_norm, Bk::download(x), want);
      check_equal(Bk::download(r), residual);
    }
  }
}

/// A residual block's chain on gathered moments (gathers_instance_norm_moments): x = conv0(in) leaves x's moments;
/// out = conv(act(IN(x))) from them, leaving out's; r = conv1x1(x) leaves r's; then out = act(IN(out) + IN(r)) and
/// r = act(IN(r) + residual), each norm from the moments alone. Each step against the reference on what the device
/// stored before it (the moments must describe that tensor, not an ideal one). Moments gathered for no tensor or for
/// another shape are an error.
template <class T>
  requires swinfer::gathers_instance_norm_moments<typename T::kernels>
void conv3d_moments_rows(const run_context& rc) {
  using S = typename T::storage;
  using K = typename T::kernels;
  using Bk = typename T::backend;
  using problem = swinfer::ops::conv3d_problem;
  for (const auto& c : conv3d_norm_cases()) {
    DYNAMIC_SECTION(prefix<T>("conv3d") << "gathering moments " << name(c) << rc.label) {
      auto ctx = Bk::template make_context<K>(rc);
      const int cin = c.p.cin;
      const problem p0{cin, cin, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, true};
      const problem p1{cin, c.p.cout, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, false};
      const shape5 os = c.p.output_shape(c.in);
      REQUIRE(p1.output_shape(c.in) == os);
      std::vector<std::vector<float>> weights, biases;
      for (const problem* q : {&p0, &c.p, &p1}) {
        weights.push_back(swinfer_test::random_vector(static_cast<std::size_t>(q->weight_count()), -0.3f, 0.3f));
        biases.push_back(swinfer_test::random_vector(static_cast<std::size_t>(q->cout), 1.0f, 3.0f));  // means
      }
      typename K::conv3d conv0(*ctx, p0, weights[0].data(), biases[0].data());
      typename K::conv3d conv(*ctx, c.p, weights[1].data(), c.p.bias ? biases[1].data() : nullptr);
      typename K::conv3d conv1(*ctx, p1, weights[2].data(), nullptr);
      const auto used = Bk::template reference_weights<S>(conv, weights[1]);
      swinfer::ops::instance_norm_epilogue e;
      if (c.leaky_relu) e.negative_slope = 0.01f;
      typename K::channel_moments x_moments, out_moments, r_moments;
      auto x = Bk::template poisoned<S>(c.in, T::kind);
      conv0.run(Bk::to_device(swinfer_test::random_tensor<S>(c.in, T::kind, -2.0f, 5.0f)), x, x_moments);
      auto out = Bk::template poisoned<S>(os, T::kind);
      conv.run(x, x_moments, e, out, out_moments);
      const auto x_stored = widened(Bk::download(x));  // copies: a host backend's download is the volume itself
      auto normalised = widened(x_stored);
      swinfer::ops::ref::instance_norm(normalised, nullptr, e);
      swinfer::tensor<float> want(os, T::kind);
      swinfer::ops::ref::conv3d(c.p, rounded_like_storage<S>(normalised, T::kind), used.data(),
                                c.p.bias ? biases[1].data() : nullptr, want);
      Bk::check(op_id::conv3d, Bk::download(out), want);
      check_equal(Bk::download(x), x_stored);
      auto r = Bk::template poisoned<S>(os, T::kind);
      conv1.run(x, r, r_moments);
      const auto out_stored = widened(Bk::download(out)), r_stored = widened(Bk::download(r));
      K::instance_norm_sum(*ctx, out, out_moments, r, r_moments, e);
      auto want_sum = widened(out_stored);
      swinfer::ops::ref::instance_norm_sum(want_sum, widened(r_stored), e);
      Bk::check(op_id::instance_norm, Bk::download(out), want_sum);
      const auto residual = swinfer_test::random_tensor<S>(os, T::kind);
      const auto residual_device = Bk::to_device(residual);
      K::instance_norm(*ctx, r, r_moments, &residual_device, e);
      auto want_norm = widened(r_stored);
      const auto residual_f = widened(residual);
      swinfer::ops::ref::instance_norm(want_norm, &residual_f, e);
      Bk::check(op_id::instance_norm, Bk::download(r), want_norm);
      const typename K::channel_moments none;
      CHECK_THROWS_AS(K::instance_norm(*ctx, x, none, nullptr, e), swinfer::error);
      if (c.in.c != os.c) CHECK_THROWS_AS(K::instance_norm(*ctx, x, r_moments, nullptr, e), swinfer::error);
    }
  }
}

/// out = conv(concat_channels(first, second)).
template <class T>
  requires swinfer::fuses_concat<typename T::kernels>
void conv3d_concat_rows(const run_context& rc) {
  using S = typename T::storage;
  using K = typename T::kernels;
  using Bk = typename T::backend;
  for (const auto& c : conv3d_concat_cases()) {
    DYNAMIC_SECTION(prefix<T>("conv3d") << name(c) << rc.label) {
      auto ctx = Bk::template make_context<K>(rc);
      const auto p = problem(c);
      const auto weight = swinfer_test::random_vector(static_cast<std::size_t>(p.weight_count()), -0.3f, 0.3f);
      typename K::conv3d conv(*ctx, p, weight.data(), nullptr);
      const auto used = Bk::template reference_weights<S>(conv, weight);
      const auto first = swinfer_test::random_tensor<S>(concat_part_shape(c.first), T::kind);
      const auto second = swinfer_test::random_tensor<S>(concat_part_shape(c.second), T::kind);
      const shape5 joined = concat_part_shape(p.cin);
      auto out = Bk::template poisoned<S>(p.output_shape(joined), T::kind);
      conv.run(Bk::to_device(first), Bk::to_device(second), out);
      swinfer::tensor<S> cat(joined, T::kind);
      swinfer::ops::ref::concat_channels({&first, &second}, cat);
      swinfer::tensor<float> want(p.output_shape(joined), T::kind);
      swinfer::ops::ref::conv3d(p, widened(cat), used.data(), nullptr, want);
      Bk::check(op_id::conv3d, Bk::download(out), want);
      if constexpr (swinfer::gathers_instance_norm_moments<K>) {  // the same, and the norm from its moments
        typename K::channel_moments moments;
        auto gathered = Bk::template poisoned<S>(p.output_shape(joined), T::kind);
        conv.run(Bk::to_device(first), Bk::to_device(second), gathered, moments);
        auto want_norm = widened(Bk::download(gathered));
        const swinfer::ops::instance_norm_epilogue e{1e-5f, 0.01f};
        K::instance_norm(*ctx, gathered, moments, nullptr, e);
        swinfer::ops::ref::instance_norm(want_norm, nullptr, e);
        Bk::check(op_id::instance_norm, Bk::download(gathered), want_norm);
      }
    }
  }
}

/// y (=|+=) act(LayerNorm(x) W^T + b); x must be left as it was. With `dynamic_scales` (int8 targets) each normalised
/// row quantized with its own scale: the kernel normalises in float32, the reference in double, so a value within
/// rounding of a quantization boundary may round the other way, one step of its row (at most max|x| / 127) times a
/// weight (0.3).
template <class T>
  requires swinfer::fuses_layer_norm<typename T::kernels>
void linear_norm_rows(const run_context& rc, bool dynamic_scales = false) {
  using S = typename T::storage;
  using K = typename T::kernels;
  using Bk = typename T::backend;
  constexpr auto rows_layout = swinfer::layout_kind::ndhwc;
  for (const auto& c : linear_norm_cases()) {
    DYNAMIC_SECTION(prefix<T>("linear") << name(c) << (dynamic_scales ? " dynamic" : "") << rc.label) {
      auto p = c.p;
      if (dynamic_scales) p.int8 = {"test.point", 0, true};
      auto ctx = Bk::template make_context<K>(rc);
      const auto weight = swinfer_test::random_vector(static_cast<std::size_t>(p.in_features) * p.out_features,
                                                      -0.3f, 0.3f);
      const auto bias = swinfer_test::random_vector(static_cast<std::size_t>(p.out_features));
      const auto gamma = swinfer_test::random_vector(static_cast<std::size_t>(p.in_features), 0.5f, 1.5f);
      const auto beta = swinfer_test::random_vector(static_cast<std::size_t>(p.in_features));
      const float* g = c.affine ? gamma.data() : nullptr;
      const float* be = c.affine ? beta.data() : nullptr;
      typename K::layer_norm norm(*ctx, p.in_features, g, be, 1e-5f);
      typename K::linear lin(*ctx, p, weight.data(), bias.data());
      const auto used = Bk::template reference_weights<S>(lin, weight);
      const auto x = swinfer_test::random_tensor<S>(rows_shape(c.rows, p.in_features), rows_layout, -1.0f, 3.0f);
      const auto y0 = swinfer_test::random_tensor<S>(rows_shape(c.rows, p.out_features), rows_layout);
      auto y = p.accumulate ? Bk::to_device(y0) : Bk::template poisoned<S>(y0.shape(), rows_layout);
      const auto dx = Bk::to_device(x);
      lin.run(norm, dx.data(), c.rows, y.data());
      auto normalised = widened(x);
      swinfer::ops::ref::layer_norm(normalised.data(), c.rows, p.in_features, g, be, 1e-5f, normalised.data());
      auto want = widened(y0);
      swinfer::ops::ref::linear(p, rounded_like_storage<S>(normalised, rows_layout).data(), c.rows, used.data(),
                                bias.data(), want.data());
      if (!dynamic_scales) {
        Bk::check(op_id::linear, Bk::download(y), want);
      } else if constexpr (quantizes<T>) {
        double step = 0;
        for (std::int64_t r = 0; r < c.rows; ++r) {
          step = std::max<double>(
              step, swinfer::ops::dynamic_activation_scale(normalised.data() + r * p.in_features, p.in_features));
        }
        check_requantized(Bk::download(y), want, y0, 0.3 * step);
      }
      check_equal(Bk::download(dx), x);
    }
  }
}

}  // namespace swinfer_ops_test

// The shared op suite's rows for the optional fused overloads (contract.hpp), run on the backends that have them:
// conv3d and linear reading a normalised input they never store (fuses_instance_norm, fuses_layer_norm), conv3d
// reading a two-part concatenation where the parts are (fuses_concat), and an InstanceNorm adding a residual it
// normalises as it reads it (fuses_instance_norm_sum). The reference normalises (or concatenates)
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
      auto ctx = Bk::template make_context<K>(rc.options);
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
      auto ctx = Bk::template make_context<K>(rc.options);
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

/// out = conv(concat_channels(first, second)).
template <class T>
  requires swinfer::fuses_concat<typename T::kernels>
void conv3d_concat_rows(const run_context& rc) {
  using S = typename T::storage;
  using K = typename T::kernels;
  using Bk = typename T::backend;
  for (const auto& c : conv3d_concat_cases()) {
    DYNAMIC_SECTION(prefix<T>("conv3d") << name(c) << rc.label) {
      auto ctx = Bk::template make_context<K>(rc.options);
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
      auto ctx = Bk::template make_context<K>(rc.options);
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

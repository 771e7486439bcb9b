// The shared op suite's argument errors (op_suite.hpp): each op refuses arguments that do not fit its problem with a
// swinfer::error whose message names the offending shape (the checks beside each problem in swinfer/ops/, which
// every backend calls). One section per refusal, e.g. `conv3d/hip/fp32/ncdhw/rejects output (1, 8, 4, 4, 5)`.
#pragma once

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "attention_testing.hpp"
#include "error_testing.hpp"
#include "ops/op_target.hpp"
#include "swinfer/backend/contract.hpp"
#include "swinfer/ops/conv3d.hpp"
#include "swinfer/ops/instance_norm.hpp"
#include "swinfer/ops/linear.hpp"
#include "swinfer/ops/patch_merging.hpp"
#include "swinfer/ops/pool3d.hpp"
#include "swinfer/ops/window_plan.hpp"

namespace swinfer_ops_test {

template <class T>
void argument_error_suite() {
  using S = typename T::storage;
  using K = typename T::kernels;
  using Bk = typename T::backend;
  using swinfer::ops::conv3d_problem;
  const run_context rc = Bk::contexts(false).front();
  // One section per refusal: `call` must throw swinfer::error and its message must contain `message`.
  const auto rejects = [&](const char* op, const std::string& what, const std::string& message, auto&& call) {
    DYNAMIC_SECTION(prefix<T>(op) << "rejects " << what << rc.label) {
      auto ctx = Bk::template make_context<K>(rc);
      CHECK_THAT(swinfer_test::error_of([&] { call(*ctx); }), Catch::Contains(message));
    }
  };
  const auto random = [](const shape5& s) { return Bk::to_device(swinfer_test::random_tensor<S>(s, T::kind)); };
  const auto poisoned = [](const shape5& s) { return Bk::template poisoned<S>(s, T::kind); };

  const conv3d_problem conv{4, 8};  // k3s1p1
  const auto conv_weight = swinfer_test::random_vector(static_cast<std::size_t>(conv.weight_count()));
  rejects("conv3d", "input (1, 3, 4, 4, 4) for 4 input channels", "(1, 3, 4, 4, 4)", [&](auto& ctx) {
    typename K::conv3d op(ctx, conv, conv_weight.data(), nullptr);
    auto out = poisoned({1, 8, 4, 4, 4});
    op.run(random({1, 3, 4, 4, 4}), out);
  });
  rejects("conv3d", "output (1, 8, 4, 4, 5)", "output shape (1, 8, 4, 4, 5) should be (1, 8, 4, 4, 4)", [&](auto& ctx) {
    typename K::conv3d op(ctx, conv, conv_weight.data(), nullptr);
    auto out = poisoned({1, 8, 4, 4, 5});
    op.run(random({1, 4, 4, 4, 4}), out);
  });
  rejects("conv3d", "a bias without values", "no bias values", [&](auto& ctx) {
    typename K::conv3d op(ctx, conv3d_problem{4, 8, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, true}, conv_weight.data(),
                          nullptr);
  });
  if constexpr (swinfer::fuses_concat<K>) {
    rejects("conv3d", "parts (1, 2, 4, 4, 4) and (1, 2, 4, 4, 5)", "(1, 2, 4, 4, 4) and (1, 2, 4, 4, 5)",
            [&](auto& ctx) {
              typename K::conv3d op(ctx, conv, conv_weight.data(), nullptr);
              auto out = poisoned({1, 8, 4, 4, 4});
              op.run(random({1, 2, 4, 4, 4}), random({1, 2, 4, 4, 5}), out);
            });
  }

  rejects("conv_transpose3d", "input (1, 3, 2, 2, 2) for 4 input channels", "(1, 3, 2, 2, 2)", [&](auto& ctx) {
    const auto weight = swinfer_test::random_vector(4 * 5 * 8);
    typename K::conv_transpose3d op(ctx, {4, 5}, weight.data());
    auto out = poisoned({1, 5, 4, 4, 4});
    op.run(random({1, 3, 2, 2, 2}), out);
  });

  if constexpr (swinfer::fuses_layer_norm<K>) {
    rejects("linear", "a layer_norm over 8 channels for 9 inputs", "a pre-norm over 8 channels for 9 inputs",
            [&](auto& ctx) {
              typename K::layer_norm narrow(ctx, 8, nullptr, nullptr, 1e-5f);
              const auto weight = swinfer_test::random_vector(36);
              typename K::linear op(ctx, {9, 4, false, false, false}, weight.data(), nullptr);
              auto y = Bk::template poisoned<S>(rows_shape(2, 4), swinfer::layout_kind::ndhwc);
              const auto x = Bk::to_device(swinfer_test::random_tensor<S>(rows_shape(2, 9), swinfer::layout_kind::ndhwc));
              op.run(narrow, x.data(), 2, y.data());
            });
  }

  rejects("instance_norm", "residual (2, 5, 4, 6, 9)", "residual shape (2, 5, 4, 6, 9) differs from (2, 5, 4, 6, 8)",
          [&](auto& ctx) {
            auto x = random({2, 5, 4, 6, 8});
            const auto residual = random({2, 5, 4, 6, 9});
            K::instance_norm(ctx, x, &residual, swinfer::ops::instance_norm_epilogue{});
          });

  rejects("concat_channels", "output (2, 7, 5, 7, 3) for 3 + 5 channels",
          "output shape (2, 7, 5, 7, 3) should be (2, 8, 5, 7, 3)", [&](auto& ctx) {
            const auto a = random({2, 3, 5, 7, 3});
            const auto b = random({2, 5, 5, 7, 3});
            auto out = poisoned({2, 7, 5, 7, 3});
            K::concat_channels(ctx, {&a, &b}, out);
          });
  rejects("concat_channels", "parts (2, 3, 5, 7, 3) and (2, 3, 5, 7, 4)", "(2, 3, 5, 7, 3) and (2, 3, 5, 7, 4)",
          [&](auto& ctx) {
            const auto a = random({2, 3, 5, 7, 3});
            const auto other_grid = random({2, 3, 5, 7, 4});
            auto out = poisoned({2, 6, 5, 7, 3});
            K::concat_channels(ctx, {&a, &other_grid}, out);
          });

  rejects("pool3d", "input (1, 1, 3, 8, 8) smaller than its 4^3 kernel",
          "(1, 1, 3, 8, 8) is smaller than the 4^3 max-pooling kernel", [&](auto& ctx) {
            auto out = poisoned({1, 1, 1, 2, 2});
            K::pool3d(ctx, random({1, 1, 3, 8, 8}), {swinfer::ops::pool_mode::max, 4}, out);
          });

  rejects("patch_merge_gather", "input (1, 4, 4, 6, 5)", "(1, 4, 4, 6, 5)", [&](auto& ctx) {
    auto out = poisoned({1, 32, 2, 3, 2});
    K::patch_merge_gather(ctx, random({1, 4, 4, 6, 5}), swinfer::ops::merge_order::merging, out);
  });

  const auto plan_for = [](std::array<std::int64_t, 3> grid) { return swinfer::ops::make_window_plan(grid, {7, 7, 7}); };
  if constexpr (swinfer::separate_attention_norm<K>) {
    rejects("window_attention", "tokens (1, 8, 5, 5, 5) with a plan for 5x5x6",
            "plan was made for a different grid than (1, 8, 5, 5, 5)", [&](auto& ctx) {
              const swinfer_test::random_attention_parameters params(8, 2, {7, 7, 7}, true);
              typename K::window_attention op(ctx, params.weights);
              auto x = random({1, 8, 5, 5, 5});
              op.run(random({1, 8, 5, 5, 5}), plan_for({5, 5, 6}), false, x);
            });
    rejects("window_attention", "tokens (1, 6, 5, 5, 5) for C=8", "tokens (1, 6, 5, 5, 5)", [&](auto& ctx) {
      const swinfer_test::random_attention_parameters params(8, 2, {7, 7, 7}, true);
      typename K::window_attention op(ctx, params.weights);
      auto wrong_channels = random({1, 6, 5, 5, 5});
      op.run(wrong_channels, plan_for({5, 5, 5}), false, wrong_channels);
    });
  }
  if constexpr (swinfer::fuses_layer_norm<K>) {
    rejects("window_attention", "a layer_norm over 6 channels for C=8", "a pre-norm over 6 channels for C=8",
            [&](auto& ctx) {
              const swinfer_test::random_attention_parameters params(8, 2, {7, 7, 7}, true);
              typename K::window_attention op(ctx, params.weights);
              typename K::layer_norm norm_of_6(ctx, 6, nullptr, nullptr, 1e-5f);
              auto x = random({1, 8, 5, 5, 5});
              op.run(norm_of_6, x, plan_for({5, 5, 5}), false);
            });
  }
}

}  // namespace swinfer_ops_test

// [gpu] The hip backend's window attention against ops::ref::window_attention: every window-clamping case the cpu
// backend is tested on (tests/backend/test_cpu_window_attention.cpp), shifted and unshifted, with and without qkv
// bias, head dims 4 to 32 (every padded head-dim kernel up to 64), all precisions and both layouts. With fp16/bf16
// on matrix cores, the reference gets the qkv and proj weights rounded as the matrix cores see them.
#include <catch2/catch.hpp>
#include <array>
#include <vector>

#include "attention_testing.hpp"
#include "gpu_test_support.hpp"
#include "swinfer/ops/layer_norm.hpp"
#include "swinfer/ops/window_attention.hpp"
#include "swinfer/ops/window_plan.hpp"

using namespace swinfer;
using namespace swinfer_gpu_test;

namespace {

using attention_params = swinfer_test::random_attention_parameters;

using swinfer_test::attention_case;

/// Runs the kernel on device tokens in the configuration's layout and the reference on the same rounded inputs.
template <class Config>
void check_window_attention(typename Config::kernels::window_attention& op, const attention_params& params,
                            const ops::window_plan& plan, bool shifted, std::int64_t batch) {
  using S = typename Config::storage;
  const shape5 s{batch, params.weights.channels, plan.grid[0], plan.grid[1], plan.grid[2]};
  const auto y = random_tensor<S>(s, Config::kind, -2.0f, 2.0f);
  const auto x0 = random_tensor<S>(s, Config::kind);
  auto want = swinfer_test::to_float_tensor(x0, Config::kind);
  auto x = upload(x0);
  op.run(upload(y), plan, shifted, x);
  ops::ref::window_attention(params.weights, swinfer_test::to_float_tensor(y, Config::kind), plan, shifted, want);
  check_close(download(x), want);
}

}  // namespace

TEMPLATE_LIST_TEST_CASE("gpu window_attention matches the reference for every clamp case", "[gpu][window_attention]",
                        all_configs) {
  std::vector<attention_case> cases = swinfer_test::window_clamp_cases();
  cases.insert(cases.end(), {
      {"head dim 32 (fs96), two query tiles per window", {8, 9, 7}, 64, 2, {7, 7, 7}, 1},
      {"head dim 48: the 64-wide kernel", {9, 7, 8}, 96, 2, {7, 7, 7}, 1},
  });
  for (const auto& c : cases) {
    for (const bool qkv_bias : {true, false}) {
      attention_params params(c.channels, c.heads, c.configured, qkv_bias);
      // Large scores amplify weight rounding through the softmax: the reference gets the weights the GEMMs see.
      round_weights_like_storage<typename TestType::storage>(params.qkv_weight);
      round_weights_like_storage<typename TestType::storage>(params.proj_weight);
      typename TestType::kernels::window_attention op(gpu(), params.weights);
      const auto plan = ops::make_window_plan(c.grid, c.configured);
      for (const bool shifted : {false, true}) {
        INFO(c.what << ": grid " << c.grid[0] << "x" << c.grid[1] << "x" << c.grid[2] << ", head dim "
                    << c.channels / c.heads << ", qkv bias " << qkv_bias << ", shifted " << shifted);
        check_window_attention<TestType>(op, params, plan, shifted, c.batch);
      }
    }
  }
}

TEMPLATE_LIST_TEST_CASE("gpu window_attention applies the LayerNorm of its input as it gathers the windows",
                        "[gpu][window_attention][fused_norm]", all_configs) {
  using S = typename TestType::storage;
  for (const auto& c : swinfer_test::window_clamp_cases()) {
    attention_params params(c.channels, c.heads, c.configured, true);
    round_weights_like_storage<S>(params.qkv_weight);
    round_weights_like_storage<S>(params.proj_weight);
    typename TestType::kernels::window_attention op(gpu(), params.weights);
    const auto gamma = swinfer_test::random_vector(static_cast<std::size_t>(c.channels), 0.5f, 1.5f);
    const auto beta = swinfer_test::random_vector(static_cast<std::size_t>(c.channels));
    typename TestType::kernels::layer_norm norm(gpu(), c.channels, gamma.data(), beta.data(), 1e-5f);
    const auto plan = ops::make_window_plan(c.grid, c.configured);
    const shape5 s{c.batch, c.channels, c.grid[0], c.grid[1], c.grid[2]};
    for (const bool shifted : {false, true}) {
      INFO(c.what << ", shifted " << shifted);
      const auto x0 = random_tensor<S>(s, TestType::kind, -1.0f, 3.0f);
      auto x = upload(x0);
      op.run(norm, x, plan, shifted);
      auto normalised = swinfer_test::to_float_tensor(x0, layout_kind::ndhwc);  // token rows
      ops::ref::layer_norm(normalised.data(), s.n * s.spatial(), c.channels, gamma.data(), beta.data(), 1e-5f,
                           normalised.data());
      auto want = swinfer_test::to_float_tensor(x0, TestType::kind);
      ops::ref::window_attention(params.weights, rounded_like_storage<S>(normalised, TestType::kind), plan, shifted,
                                 want);
      check_close(download(x), want);
    }
  }
}

TEMPLATE_LIST_TEST_CASE("gpu window_attention rebuilds its tables when the plan changes", "[gpu][window_attention]",
                        all_configs) {
  attention_params params(16, 1, {7, 7, 7}, true);  // head dim 16, the fs48 value
  round_weights_like_storage<typename TestType::storage>(params.qkv_weight);
  round_weights_like_storage<typename TestType::storage>(params.proj_weight);
  typename TestType::kernels::window_attention op(gpu(), params.weights);
  const auto big = ops::make_window_plan({9, 10, 8}, {7, 7, 7});
  const auto small = ops::make_window_plan({6, 6, 6}, {7, 7, 7});  // 96^3 stage 4: 216 tokens, no shift
  const auto other_pad = ops::make_window_plan({8, 12, 15}, {7, 7, 7});
  for (const auto* plan : {&big, &small, &other_pad, &big}) {
    INFO("grid " << plan->grid[0] << "x" << plan->grid[1] << "x" << plan->grid[2]);
    check_window_attention<TestType>(op, params, *plan, true, 1);
  }
}

TEMPLATE_LIST_TEST_CASE("gpu window_attention rejects a plan for another grid", "[gpu][window_attention]",
                        all_configs) {
  using S = typename TestType::storage;
  attention_params params(8, 2, {7, 7, 7}, true);
  typename TestType::kernels::window_attention op(gpu(), params.weights);
  const auto y = upload(random_tensor<S>({1, 8, 5, 5, 5}, TestType::kind));
  auto x = upload(random_tensor<S>({1, 8, 5, 5, 5}, TestType::kind));
  CHECK_THROWS_AS(op.run(y, ops::make_window_plan({5, 5, 6}, {7, 7, 7}), false, x), swinfer::error);
  auto wrong_channels = upload(random_tensor<S>({1, 6, 5, 5, 5}, TestType::kind));
  CHECK_THROWS_AS(op.run(wrong_channels, ops::make_window_plan({5, 5, 5}, {7, 7, 7}), false, wrong_channels),
                  swinfer::error);
  typename TestType::kernels::layer_norm norm_of_6(gpu(), 6, nullptr, nullptr, 1e-5f);
  CHECK_THROWS_AS(op.run(norm_of_6, x, ops::make_window_plan({5, 5, 5}, {7, 7, 7}), false), swinfer::error);
}

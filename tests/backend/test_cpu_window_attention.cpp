// cpu backend: fused window attention against ops::ref::window_attention for every window-clamping case,
// shifted and unshifted, with and without qkv bias, head dims 4, 6 and 16, all precisions and layouts.
#include <array>
#include <vector>

#include "attention_testing.hpp"
#include "cpu_test_support.hpp"
#include "swinfer/ops/window_attention.hpp"
#include "swinfer/ops/window_plan.hpp"

using namespace swinfer;
using namespace swinfer_cpu_test;

namespace {

using attention_params = swinfer_test::random_attention_parameters;

using swinfer_test::attention_case;

/// Runs the kernel on tokens in `kind` and the reference on the same rounded inputs; returns nothing, checks.
template <class Config>
void check_window_attention(typename Config::kernels::window_attention& op, const attention_params& params,
                            const ops::window_plan& plan, bool shifted, std::int64_t batch) {
  using S = typename Config::storage;
  const shape5 s{batch, params.weights.channels, plan.grid[0], plan.grid[1], plan.grid[2]};
  auto y = random_tensor<S>(s, Config::kind, -2.0f, 2.0f);
  auto x = random_tensor<S>(s, Config::kind);
  auto want = swinfer_test::to_float_tensor(x, Config::kind);
  op.run(y, plan, shifted, x);
  ops::ref::window_attention(params.weights, swinfer_test::to_float_tensor(y, Config::kind), plan, shifted, want);
  check_close(x, want);
}

}  // namespace

TEMPLATE_LIST_TEST_CASE("window_attention matches the reference for every clamp case", "[cpu][window_attention]",
                        all_configs) {
  const std::vector<attention_case> cases = swinfer_test::window_clamp_cases();
  const int threads = GENERATE(1, 2, 5);
  cpu::context ctx(engine_options{threads});
  for (const auto& c : cases) {
    for (const bool qkv_bias : {true, false}) {
      attention_params params(c.channels, c.heads, c.configured, qkv_bias);
      typename TestType::kernels::window_attention op(ctx, params.weights);
      const auto plan = ops::make_window_plan(c.grid, c.configured);
      for (const bool shifted : {false, true}) {
        INFO(c.what << ": grid " << c.grid[0] << "x" << c.grid[1] << "x" << c.grid[2] << ", head dim "
                    << c.channels / c.heads << ", qkv bias " << qkv_bias << ", shifted " << shifted << ", threads "
                    << threads);
        check_window_attention<TestType>(op, params, plan, shifted, c.batch);
      }
    }
  }
}

TEMPLATE_LIST_TEST_CASE("window_attention rebuilds its caches when the plan changes", "[cpu][window_attention]",
                        all_configs) {
  cpu::context ctx(engine_options{2});
  attention_params params(16, 1, {7, 7, 7}, true);  // head dim 16, the fs48 value
  typename TestType::kernels::window_attention op(ctx, params.weights);
  const auto big = ops::make_window_plan({9, 10, 8}, {7, 7, 7});
  const auto small = ops::make_window_plan({6, 6, 6}, {7, 7, 7});  // 96^3 stage 4: 216 tokens, no shift
  const auto other_pad = ops::make_window_plan({8, 12, 15}, {7, 7, 7});
  for (const auto* plan : {&big, &small, &other_pad, &big}) {
    INFO("grid " << plan->grid[0] << "x" << plan->grid[1] << "x" << plan->grid[2]);
    check_window_attention<TestType>(op, params, *plan, true, 1);
  }
}

TEMPLATE_LIST_TEST_CASE("window_attention rejects a plan for another grid", "[cpu][window_attention]", all_configs) {
  using S = typename TestType::storage;
  cpu::context ctx(engine_options{1});
  attention_params params(8, 2, {7, 7, 7}, true);
  typename TestType::kernels::window_attention op(ctx, params.weights);
  auto y = random_tensor<S>({1, 8, 5, 5, 5}, TestType::kind);
  auto x = random_tensor<S>({1, 8, 5, 5, 5}, TestType::kind);
  CHECK_THROWS_AS(op.run(y, ops::make_window_plan({5, 5, 6}, {7, 7, 7}), false, x), swinfer::error);
  auto wrong_channels = random_tensor<S>({1, 6, 5, 5, 5}, TestType::kind);
  CHECK_THROWS_AS(op.run(wrong_channels, ops::make_window_plan({5, 5, 5}, {7, 7, 7}), false, wrong_channels),
                  swinfer::error);
}

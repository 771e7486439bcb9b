// Test helper: random parameters of one WindowAttention module, kept alive together with the view kernels take.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include <swinfer/ops/window_attention.hpp>
#include <swinfer/ops/window_plan.hpp>

#include "tensor_testing.hpp"

namespace swinfer_test {

/// Random qkv/proj weights and biases and a non-trivial bias table (so a wrong, e.g. geometric instead of
/// truncated, index shows up); the index is MONAI's for the configured window.
struct random_attention_parameters {
  std::vector<float> qkv_weight, qkv_bias, proj_weight, proj_bias, table;
  std::vector<std::int64_t> index;
  swinfer::ops::window_attention_weights weights;

  random_attention_parameters(int channels, int heads, std::array<int, 3> window, bool with_qkv_bias) {
    const auto c = static_cast<std::size_t>(channels);
    qkv_weight = random_vector(3 * c * c, -0.5f, 0.5f);
    qkv_bias = random_vector(3 * c);
    proj_weight = random_vector(c * c, -0.5f, 0.5f);
    proj_bias = random_vector(c);
    table = random_vector(static_cast<std::size_t>(swinfer::ops::relative_bias_table_rows(window)) * heads, -2.0f, 2.0f);
    index = swinfer::ops::relative_position_index(window);
    weights.channels = channels;
    weights.heads = heads;
    weights.configured_window = window;
    weights.qkv_weight = qkv_weight.data();
    weights.qkv_bias = with_qkv_bias ? qkv_bias.data() : nullptr;
    weights.proj_weight = proj_weight.data();
    weights.proj_bias = proj_bias.data();
    weights.bias_table = table.data();
    weights.relative_index = index.data();
  }
  random_attention_parameters(const random_attention_parameters&) = delete;  // `weights` points into this object
  random_attention_parameters& operator=(const random_attention_parameters&) = delete;
};

/// One window-attention test case: a token grid, channels and heads, the configured window, the batch.
struct attention_case {
  const char* what;
  std::array<std::int64_t, 3> grid;
  int channels, heads;
  std::array<int, 3> configured;
  std::int64_t batch;
};

/// Every way the window plan clamps, pads and shifts: what each backend's attention kernel is tested on.
inline std::vector<attention_case> window_clamp_cases() {
  return {
      {"axis equal to the window: one window, no shift", {7, 7, 7}, 12, 3, {7, 7, 7}, 1},
      {"all axes smaller: clamped, truncated bias index", {5, 6, 4}, 12, 2, {7, 7, 7}, 1},
      {"bigger on every axis: padding and shift", {9, 8, 10}, 32, 2, {7, 7, 7}, 2},
      {"anisotropic, all clamped", {6, 4, 2}, 16, 1, {7, 7, 7}, 1},
      {"mixed: bigger, equal and smaller axes", {10, 7, 3}, 12, 2, {7, 7, 7}, 1},
      {"padding on a long grid", {16, 16, 32}, 8, 2, {7, 7, 7}, 1},
      {"configured window 4", {9, 5, 3}, 12, 3, {4, 4, 4}, 1},
  };
}

}  // namespace swinfer_test

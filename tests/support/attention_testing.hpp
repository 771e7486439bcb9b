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

}  // namespace swinfer_test

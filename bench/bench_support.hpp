// Shared by the benchmarks: random parameters and comma-separated option lists.
#pragma once

#include <array>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "swinfer/ops/window_attention.hpp"

namespace swinfer_bench {

/// n values uniform in [-scale, scale].
inline std::vector<float> random_values(std::size_t n, float scale, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

/// Random parameters of one WindowAttention module with 7^3 windows, kept alive with the view the ops take.
struct random_window_attention {
  std::vector<float> qkv_weight, qkv_bias, proj_weight, proj_bias, table;
  std::vector<std::int64_t> index;
  swinfer::ops::window_attention_weights weights;

  random_window_attention(int channels, int heads, std::mt19937& rng) {
    const std::array<int, 3> window{7, 7, 7};
    const auto c = static_cast<std::size_t>(channels);
    qkv_weight = random_values(3 * c * c, 0.1f, rng);
    qkv_bias = random_values(3 * c, 0.1f, rng);
    proj_weight = random_values(c * c, 0.1f, rng);
    proj_bias = random_values(c, 0.1f, rng);
    table = random_values(static_cast<std::size_t>(swinfer::ops::relative_bias_table_rows(window) * heads), 0.1f, rng);
    index = swinfer::ops::relative_position_index(window);
    weights.channels = channels;
    weights.heads = heads;
    weights.configured_window = window;
    weights.qkv_weight = qkv_weight.data();
    weights.qkv_bias = qkv_bias.data();
    weights.proj_weight = proj_weight.data();
    weights.proj_bias = proj_bias.data();
    weights.bias_table = table.data();
    weights.relative_index = index.data();
  }
  random_window_attention(const random_window_attention&) = delete;  // `weights` points into this object
  random_window_attention& operator=(const random_window_attention&) = delete;
};

/// "a,b,c" as {"a", "b", "c"}.
inline std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  return out;
}

}  // namespace swinfer_bench

// swinfer oneDNN backend: int8 weights as oneDNN's u8 x s8 products can take them exactly (docs/int8.md).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace swinfer::onednn {

/// One part of a weight tensor's int8 values: the product with it counts `multiplier` times.
struct int8_weight_part {
  float multiplier;
  std::vector<std::int8_t> values;
};

/// The int8 weights `values` as parts whose products sum to the original's, each part's values within `limit`.
///
/// oneDNN's int8 products add 128 to an s8 source and multiply u8 by s8. Without VNNI (vpmaddubsw sums byte pairs
/// into int16) two products of 255 and |w| > 64 saturate. limit 127: the values as they are; limit 64: q = 2h + l
/// with h = q / 2 (truncated, |h| <= 63) and l in {-1, 0, 1}, each exact, at twice the products.
inline std::vector<int8_weight_part> split_int8_weights(const std::vector<std::int8_t>& values, int limit) {
  if (limit >= 127) return {{1.0f, values}};
  std::vector<std::int8_t> high(values.size()), low(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    high[i] = static_cast<std::int8_t>(values[i] / 2);
    low[i] = static_cast<std::int8_t>(values[i] - 2 * high[i]);
  }
  return {{2.0f, std::move(high)}, {1.0f, std::move(low)}};
}

}  // namespace swinfer::onednn

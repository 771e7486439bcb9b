// swinfer cpu backend: the dynamic int8 activation scale of a convolution's whole input (--int8-dynamic).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "swinfer/backend/cpu/context.hpp"
#include "swinfer/core/tensor.hpp"
#include "swinfer/ops/quantization.hpp"

namespace swinfer::cpu {

/// ops::largest_magnitude(x) split over the workers (one worker's pass over a 96^3 x 96 input left the others idle
/// for milliseconds per convolution). The largest value is exact in any order.
inline float largest_input_magnitude(context& ctx, const tensor<float>& x) {
  constexpr std::int64_t block = 1 << 16;
  const std::int64_t blocks = (x.size() + block - 1) / block;
  std::vector<float> largest(static_cast<std::size_t>(blocks), 0.0f);
  ctx.parallel_for(blocks, 1, [&](std::int64_t b0, std::int64_t b1, int) {
    for (std::int64_t b = b0; b < b1; ++b) {
      const std::int64_t begin = b * block;
      largest[static_cast<std::size_t>(b)] = ops::largest_magnitude(x.data() + begin, std::min(block, x.size() - begin));
    }
  });
  return largest.empty() ? 0.0f : *std::max_element(largest.begin(), largest.end());
}

/// ops::dynamic_activation_scale(x) on the workers.
inline float dynamic_input_scale(context& ctx, const tensor<float>& x) {
  return ops::dynamic_scale_of_largest(largest_input_magnitude(ctx, x));
}

}  // namespace swinfer::cpu

// swinfer: every tensor a SwinUNETR-family configuration has in its state_dict, and the parameter count.
#pragma once

#include <cstdint>
#include <vector>

#include "swinfer/model/network_spec.hpp"

namespace swinfer {

/// Every tensor a model with this configuration has, in MONAI's (or the Swin Fusion author's) state_dict order.
inline std::vector<expected_tensor> expected_tensors(const swin_unetr_config& c) {
  return model::describe_network(c).tensors();
}

/// Trainable parameters (the relative_position_index buffers are not parameters), as PyTorch counts them.
inline std::int64_t parameter_count(const swin_unetr_config& c) {
  std::int64_t total = 0;
  for (const auto& e : expected_tensors(c)) {
    if (e.is_index) continue;
    std::int64_t n = 1;
    for (auto d : e.shape) n *= d;
    total += n;
  }
  return total;
}

}  // namespace swinfer

// swinfer: a state_dict of the right shapes with generated values, for benchmarks and tests that need no real weights.
#pragma once

#include <cstdint>

#include "swinfer/io/state_dict.hpp"
#include "swinfer/model/expected_tensors.hpp"
#include "swinfer/ops/window_plan.hpp"

namespace swinfer {

/// Every tensor `config` expects: parameters filled with value(tensor, flat_index), the relative_position_index
/// buffers with MONAI's index for the configured window.
template <class ValueFn>
state_dict synthetic_weights(const swin_unetr_config& config, ValueFn&& value) {
  state_dict sd;
  for (const auto& e : expected_tensors(config)) {
    weight w;
    w.shape = e.shape;
    if (e.is_index) {
      w.source = dtype::i64;
      w.indices = ops::relative_position_index(config.window_size);
    } else {
      w.values.resize(static_cast<std::size_t>(w.numel()));
      for (std::int64_t i = 0; i < w.numel(); ++i) w.values[static_cast<std::size_t>(i)] = value(e, i);
    }
    sd.insert(e.key, std::move(w));
  }
  return sd;
}

}  // namespace swinfer

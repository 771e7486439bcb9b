// swinfer: reading checked parameters out of a state_dict while building a model.
#pragma once

#include <string>

#include "swinfer/core/error.hpp"
#include "swinfer/io/state_dict.hpp"

namespace swinfer::detail {

/// Float32 data of a parameter whose key and shape check_weights() has already verified.
inline const float* param(const state_dict& sd, const std::string& key) {
  const weight& w = sd.at(key);
  if (w.values.empty()) fail("tensor '", key, "' holds no floating-point data");
  return w.values.data();
}

/// Like param(), but null when the tensor is absent (optional biases).
inline const float* optional_param(const state_dict& sd, const std::string& key) {
  return sd.contains(key) ? param(sd, key) : nullptr;
}

}  // namespace swinfer::detail

// swinfer: the scalar activations SwinUNETR uses, exactly as PyTorch defines them.
#pragma once

#include <cmath>

namespace swinfer::ops {

/// Exact erf GELU (nn.GELU(approximate='none')): tanh-GELU differs by ~1e-4 at the logits, which is detectable.
inline float gelu(float x) { return 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752440f)); }

/// LeakyReLU with PyTorch's semantics (slope applied to negative inputs only).
inline float leaky_relu(float x, float negative_slope) { return x >= 0.0f ? x : x * negative_slope; }

}  // namespace swinfer::ops

// swinfer: multiply-accumulates of one SwinUNETR-family forward pass, counted the way the spec counts them
// (section 5), so benchmarks can report achieved GFLOP/s.
#pragma once

#include "swinfer/core/shape.hpp"
#include "swinfer/model/network_spec.hpp"

namespace swinfer {

/// MACs of every Conv3d / ConvTranspose3d / Linear plus the two attention products. The attention linears run on
/// the padded grid, the MLP on the real one; element-wise work is not counted. GFLOP = 2 x MACs / 1e9.
inline double forward_macs(const swin_unetr_config& c, const shape5& input) {
  return model::describe_network(c).macs(input);
}

}  // namespace swinfer

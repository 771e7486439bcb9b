// The int8 goldens (tools/goldens/make_int8_goldens.py: the int8 scheme as fake quantization in PyTorch on MONAI's
// SwinUNETR, tests/data/goldens/int8/): where they are, reading one, and the statistic the all-layer checks use.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include <swinfer/core/tensor.hpp>
#include <swinfer/io/npy.hpp>

#include "golden_case.hpp"

namespace swinfer_test {

inline std::filesystem::path int8_dir() { return goldens_dir() / "int8"; }

/// One of the int8 goldens' .npy outputs, e.g. "logits_all.npy".
inline swinfer::tensor<float> read_int8_golden(const std::string& file) {
  const auto a = swinfer::read_npy((int8_dir() / file).string());
  return to_tensor(a.shape, a.data);
}

/// The share of voxels where two-class logits `a` and `b` pick the same class (batch item 0).
inline double two_class_agreement(const swinfer::tensor<float>& a, const swinfer::tensor<float>& b) {
  std::int64_t agree = 0;
  const auto& s = a.shape();
  for (std::int64_t z = 0; z < s.d; ++z)
    for (std::int64_t y = 0; y < s.h; ++y)
      for (std::int64_t x = 0; x < s.w; ++x)
        agree += (a(0, 1, z, y, x) > a(0, 0, z, y, x)) == (b(0, 1, z, y, x) > b(0, 0, z, y, x));
  return double(agree) / double(s.spatial());
}

}  // namespace swinfer_test

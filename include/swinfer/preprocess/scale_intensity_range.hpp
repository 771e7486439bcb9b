// swinfer: MONAI's ScaleIntensityRange: map [a_min, a_max] linearly onto [b_min, b_max], optionally clipping.
#pragma once

#include <optional>

#include <xtensor/xmath.hpp>
#include <xtensor/xnoalias.hpp>

#include "swinfer/core/error.hpp"
#include "swinfer/preprocess/image.hpp"

namespace swinfer {

/// \brief ScaleIntensityRange's arguments (MONAI's names). Without b_min and b_max the values are only shifted and
/// divided: (x - a_min) / (a_max - a_min).
struct scale_intensity_range_options {
  double a_min = 0.0;
  double a_max = 1.0;
  std::optional<double> b_min, b_max;
  bool clip = false;
};

/// \brief MONAI's ScaleIntensityRange, in place. torch does each operation as its own float32 pass with the Python
/// scalars rounded to float32; separate xtensor passes keep the compiler from fusing a multiply and an add into one
/// rounding, so the results are bit-identical to MONAI's.
inline void scale_intensity_range(tensor<float>& data, const scale_intensity_range_options& o) {
  if (o.b_min.has_value() != o.b_max.has_value()) {
    detail::fail("ScaleIntensityRange: give both b_min and b_max, or neither");
  }
  if (o.clip && !o.b_min) detail::fail("ScaleIntensityRange: clip needs b_min and b_max");
  auto x = detail::flat_view(data);
  if (o.a_max - o.a_min == 0.0) {  // MONAI warns and only shifts
    x -= static_cast<float>(o.a_min);
    if (o.b_min) x += static_cast<float>(*o.b_min);
    return;
  }
  x -= static_cast<float>(o.a_min);
  x /= static_cast<float>(o.a_max - o.a_min);
  if (o.b_min) {
    x *= static_cast<float>(*o.b_max - *o.b_min);
    x += static_cast<float>(*o.b_min);
  }
  // torch.clamp's order: with b_min > b_max (an inverting range) everything becomes b_max.
  if (o.clip) xt::noalias(x) = xt::minimum(xt::maximum(x, static_cast<float>(*o.b_min)), static_cast<float>(*o.b_max));
}

}  // namespace swinfer

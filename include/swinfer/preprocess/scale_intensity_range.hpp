// swinfer: MONAI's ScaleIntensityRange: map [a_min, a_max] linearly onto [b_min, b_max], optionally clipping.
#pragma once

#include <optional>
#include <string_view>

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

/// Checks the options: b_min and b_max together, clip only with them, every value in intensity_value_range.
/// `where` prefixes the message.
inline void check_scale_intensity_range_options(const scale_intensity_range_options& o, std::string_view where) {
  if (o.b_min.has_value() != o.b_max.has_value()) detail::fail(where, ": give both b_min and b_max, or neither");
  if (o.clip && !o.b_min) detail::fail(where, ": clip needs b_min and b_max");
  detail::require_in_range(o.a_min, intensity_value_range, where, "a_min");
  detail::require_in_range(o.a_max, intensity_value_range, where, "a_max");
  if (o.b_min) {
    detail::require_in_range(*o.b_min, intensity_value_range, where, "b_min");
    detail::require_in_range(*o.b_max, intensity_value_range, where, "b_max");
  }
}

/// \brief MONAI's ScaleIntensityRange, in place. torch does each operation as its own float32 pass with the Python
/// scalars rounded to float32; separate xtensor passes keep the compiler from fusing a multiply and an add into one
/// rounding, so the results are bit-identical to MONAI's.
inline void scale_intensity_range(tensor<float>& data, const scale_intensity_range_options& o) {
  check_scale_intensity_range_options(o, "ScaleIntensityRange");
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

// swinfer: MONAI's NormalizeIntensity: subtract the mean and divide by the standard deviation (or given values).
#pragma once

#include <cmath>
#include <cstddef>
#include <string_view>
#include <vector>

#include <xtensor/xmath.hpp>
#include <xtensor/xnoalias.hpp>
#include <xtensor/xoperation.hpp>
#include <xtensor/xreducer.hpp>

#include "swinfer/core/error.hpp"
#include "swinfer/preprocess/image.hpp"

namespace swinfer {

/// \brief NormalizeIntensity's arguments (MONAI's names and defaults).
struct normalize_intensity_options {
  std::vector<double> subtrahend;  ///< empty: the mean; else one value, or one per channel when channel_wise
  std::vector<double> divisor;     ///< empty: the population standard deviation; else as subtrahend. 0 reads as 1
  bool nonzero = false;            ///< statistics over, and changes to, nonzero voxels only
  bool channel_wise = false;       ///< statistics per channel instead of over the whole image
};

/// Checks every given subtrahend and divisor against intensity_value_range; `where` prefixes the message.
inline void check_normalize_intensity_options(const normalize_intensity_options& o, std::string_view where) {
  for (double v : o.subtrahend) detail::require_in_range(v, intensity_value_range, where, "subtrahend");
  for (double v : o.divisor) detail::require_in_range(v, intensity_value_range, where, "divisor");
}

namespace detail {

/// Normalises one set of voxels (the image or one channel) as NormalizeIntensity._normalize does.
template <class Voxels>
void normalize_voxels(Voxels&& x, bool nonzero, const double* subtrahend, const double* divisor) {
  const auto count = static_cast<double>(nonzero ? xt::count_nonzero(x)() : x.size());
  if (count == 0) return;  // MONAI leaves an image without nonzero voxels unchanged
  // torch takes the mean in float32 and the deviations from that float mean in float64 (torch.std, unbiased=False);
  // summing in double gives the float32 mean to within an ulp of torch's float sum, typically exactly.
  float sub = 0.0f;
  if (subtrahend) {
    sub = static_cast<float>(*subtrahend);
  } else {
    sub = static_cast<float>(xt::sum(xt::cast<double>(x), xt::evaluation_strategy::immediate)() / count);
  }
  float div = 0.0f;
  if (divisor) {
    div = static_cast<float>(*divisor);
  } else {
    const auto deviation = xt::cast<double>(x) - static_cast<double>(sub);
    const double squares = nonzero ? xt::sum(xt::where(xt::not_equal(x, 0.0f), deviation * deviation, 0.0),
                                             xt::evaluation_strategy::immediate)()
                                   : xt::sum(deviation * deviation, xt::evaluation_strategy::immediate)();
    div = static_cast<float>(std::sqrt(squares / count));
  }
  if (div == 0.0f) div = 1.0f;
  if (nonzero) {
    xt::noalias(x) = xt::where(xt::not_equal(x, 0.0f), (x - sub) / div, x);
  } else {
    xt::noalias(x) = (x - sub) / div;
  }
}

}  // namespace detail

/// \brief MONAI's NormalizeIntensity, in place: (x - mean) / std over the image, each channel, and/or nonzero voxels.
inline void normalize_intensity(tensor<float>& data, const normalize_intensity_options& o) {
  detail::require_one_image(data, "NormalizeIntensity");
  check_normalize_intensity_options(o, "NormalizeIntensity");
  const auto channels = static_cast<std::size_t>(data.shape().c);
  const std::size_t values = o.channel_wise ? channels : 1;
  const char* per = o.channel_wise ? " (one per channel)" : " (one value unless channel_wise)";
  if (!o.subtrahend.empty() && o.subtrahend.size() != values) {
    detail::fail("NormalizeIntensity: ", o.subtrahend.size(), " subtrahend values for ", values, per);
  }
  if (!o.divisor.empty() && o.divisor.size() != values) {
    detail::fail("NormalizeIntensity: ", o.divisor.size(), " divisor values for ", values, per);
  }
  auto given = [](const std::vector<double>& v, std::size_t i) { return v.empty() ? nullptr : &v[i]; };
  if (!o.channel_wise) {
    detail::normalize_voxels(detail::flat_view(data), o.nonzero, given(o.subtrahend, 0), given(o.divisor, 0));
    return;
  }
  for (std::size_t c = 0; c < channels; ++c) {
    detail::normalize_voxels(detail::channel_values(data, static_cast<std::int64_t>(c)), o.nonzero,
                             given(o.subtrahend, c), given(o.divisor, c));
  }
}

}  // namespace swinfer

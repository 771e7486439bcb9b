// swinfer: sliding_window_inference's options with MONAI's names and defaults, their allowed ranges and check.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <vector>

#include "swinfer/core/error.hpp"
#include "swinfer/core/options.hpp"
#include "swinfer/core/value_range.hpp"
#include "swinfer/inference/importance_map.hpp"
#include "swinfer/inference/spatial_pad.hpp"

namespace swinfer {

/// \brief A setting given once for all three spatial axes or once per axis (D, H, W): `96` or `{96, 96, 64}`.
template <class T>
class per_axis {
 public:
  per_axis(T all) : values_{all} {}  // implicit on purpose: `options.overlap = 0.5`
  per_axis(std::initializer_list<T> values) : values_(values) {}
  explicit per_axis(std::vector<T> values) : values_(std::move(values)) {}

  /// The three per-axis values; an error naming `what` unless one or three values were given.
  std::array<T, 3> resolve(const char* what) const {
    if (values_.size() == 1) return {values_[0], values_[0], values_[0]};
    if (values_.size() == 3) return {values_[0], values_[1], values_[2]};
    detail::fail("sliding_window_inference: ", what, " has ", values_.size(),
                 " values; give one for all spatial axes or three (D, H, W)");
  }

 private:
  std::vector<T> values_;
};

/// \brief Options of sliding_window_inference, with MONAI's names and defaults (roi_size is required in MONAI; here it
/// defaults to SwinUNETR's usual 96).
struct sliding_window_options {
  per_axis<std::int64_t> roi{96};  ///< window size; a non-positive value takes the image's extent on that axis
  std::int64_t sw_batch_size = 1;  ///< windows per predictor call; one call may hold windows of two batch items
  per_axis<double> overlap{0.25};  ///< fraction of the roi that neighbouring windows share, in [0, 1)
  blend_mode mode = blend_mode::constant;
  per_axis<double> sigma_scale{0.125};         ///< Gaussian sigma as a fraction of the roi (gaussian mode only)
  pad_mode padding_mode = pad_mode::constant;  ///< how an image smaller than the roi is padded
  float cval = 0.0f;                           ///< fill value for pad_mode::constant
  int threads = 0;  ///< threads for gathering and blending (0: one per hardware thread); the predictor threads itself
};

/// \brief The values sliding_window_options may take (MONAI's names), checked by check_sliding_window_options before
/// any work. Wider than any real use; past them the window plan is absurd (a 0.999 overlap steps one voxel at a time).
struct sliding_window_ranges {
  static constexpr value_range<std::int64_t> roi{1, 4096};  ///< or 0 and less: the image's extent on that axis
  static constexpr value_range<std::int64_t> sw_batch_size{1, 1024};
  static constexpr value_range<double> overlap{0.0, 0.99};
  static constexpr value_range<double> sigma_scale{0.001, 10.0};
  static constexpr value_range<float> cval{-1e30f, 1e30f};
};

namespace detail {

/// One roi value: 0 or less (MONAI's fall_back_tuple: the image's extent) or within sliding_window_ranges::roi.
inline void check_roi_value(std::int64_t roi, std::string_view where) {
  if (roi > 0) require_in_range(roi, sliding_window_ranges::roi, where, "roi", " (or 0 for the image's extent)");
}

}  // namespace detail

/// Checks every option against sliding_window_ranges (and the per-axis counts); `where` prefixes the message.
inline void check_sliding_window_options(const sliding_window_options& o, std::string_view where) {
  using r = sliding_window_ranges;
  for (const auto roi : o.roi.resolve("roi")) detail::check_roi_value(roi, where);
  detail::require_in_range(o.sw_batch_size, r::sw_batch_size, where, "sw_batch_size");
  for (const double overlap : o.overlap.resolve("overlap")) {
    detail::require_in_range(overlap, r::overlap, where, "overlap");
  }
  for (const double sigma : o.sigma_scale.resolve("sigma_scale")) {
    detail::require_in_range(sigma, r::sigma_scale, where, "sigma_scale");
  }
  detail::require_in_range(o.cval, r::cval, where, "cval");
  check_thread_count(o.threads, where);
}

}  // namespace swinfer

// swinfer: a preprocessing pipeline's steps, by the arguments of the MONAI transforms they reproduce.
#pragma once

#include <variant>
#include <vector>

#include "swinfer/preprocess/crop_foreground.hpp"
#include "swinfer/preprocess/normalize_intensity.hpp"
#include "swinfer/preprocess/orientation.hpp"
#include "swinfer/preprocess/scale_intensity_range.hpp"
#include "swinfer/preprocess/spacing.hpp"

namespace swinfer {

/// One step, by the arguments of the MONAI transform it reproduces.
using preprocess_step = std::variant<orientation_options, spacing_options, scale_intensity_range_options,
                                     normalize_intensity_options, crop_foreground_options>;

/// \brief The steps in order. None: the network sees the raw voxel values (as float32).
struct pipeline_spec {
  std::vector<preprocess_step> steps;
};

}  // namespace swinfer

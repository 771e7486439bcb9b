// swinfer: a preprocessing pipeline run with a record of each step, so predictions invert; planned and checked
// against the memory available before any step runs.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "swinfer/core/error.hpp"
#include "swinfer/core/memory.hpp"
#include "swinfer/core/value_range.hpp"
#include "swinfer/preprocess/image.hpp"
#include "swinfer/preprocess/pipeline_json.hpp"  // so that one include reads and runs a pipeline
#include "swinfer/preprocess/pipeline_spec.hpp"

namespace swinfer {

/// What Orientation needs to invert: the affine before it (MONAI reorients back to that affine's axis codes).
struct orientation_record {
  affine4 original_affine;
};
/// What Spacing needs to invert: the grid before it, and the padding it sampled with.
struct spacing_record {
  affine4 source_affine;
  extent3 source_shape{};
  grid_padding padding = grid_padding::border;
};
/// What CropForeground needs to invert: the box and the shape it was cut from.
struct crop_record {
  crop_box box;
  extent3 source_shape{};
};
/// One invertible step as applied (MONAI's applied_operations); intensity steps are not invertible and leave none.
using applied_step = std::variant<orientation_record, spacing_record, crop_record>;

/// \brief The image after preprocessing, and what each invertible step did so a prediction can be mapped back.
struct preprocessed_image {
  spatial_image image;                ///< the network input, with its affine
  std::vector<applied_step> applied;  ///< in the order applied

  /// Applies one step to `image`, recording it.
  void apply(const preprocess_step& step) {
    std::visit(
        [&](const auto& options) {
          using options_t = std::decay_t<decltype(options)>;
          if constexpr (std::is_same_v<options_t, orientation_options>) {
            applied.push_back(orientation_record{image.affine});
            image = reorient(image, options.axcodes);
          } else if constexpr (std::is_same_v<options_t, spacing_options>) {
            applied.push_back(spacing_record{image.affine, image.spatial_shape(), options.padding});
            image = respace(image, options);
          } else if constexpr (std::is_same_v<options_t, scale_intensity_range_options>) {
            scale_intensity_range(image.data, options);
          } else if constexpr (std::is_same_v<options_t, normalize_intensity_options>) {
            normalize_intensity(image.data, options);
          } else {
            const crop_box box = foreground_box(image.data, options);
            applied.push_back(crop_record{box, image.spatial_shape()});
            image = crop_to_box(image, box);
          }
        },
        step);
  }

  /// \brief MONAI's Invertd: maps a prediction (1, K, ...) on the preprocessed grid back onto the input's voxel grid,
  /// undoing the steps in reverse: crops are padded back with zeros, Spacing resamples back to the input grid with
  /// `mode` (Invertd's nearest_interp=True is nearest; False keeps the forward mode, bilinear for images), Orientation
  /// reorients back. The result's affine is the input's (to float64 rounding).
  spatial_image invert(const tensor<float>& prediction, interpolation mode) const {
    detail::require_one_image(prediction, "invert");
    const shape5& p = prediction.shape();
    if (extent3{p.d, p.h, p.w} != image.spatial_shape()) {
      detail::fail("invert: the prediction's spatial shape ", detail::spatial_text({p.d, p.h, p.w}),
                   " is not the preprocessed image's ", detail::spatial_text(image.spatial_shape()));
    }
    spatial_image current{prediction.clone(), image.affine};
    for (auto record = applied.rbegin(); record != applied.rend(); ++record) {
      std::visit(
          [&](const auto& r) {
            using record_t = std::decay_t<decltype(r)>;
            if constexpr (std::is_same_v<record_t, crop_record>) {
              current = uncrop(current, r.box, r.source_shape);
            } else if constexpr (std::is_same_v<record_t, spacing_record>) {
              current = resample(current, resample_target{r.source_affine, r.source_shape}, mode, r.padding);
            } else {
              current = reorient(current, axcodes_of(r.original_affine));
            }
          },
          *record);
    }
    return current;
  }
};

/// \brief How much preprocessing may multiply an image's voxel count. No real pipeline comes near it (resampling 3 mm
/// slices to 1 mm triples them; k_divisible 96 on a 40-voxel crop, 14 times); a tiny pixdim, a huge margin or a
/// k_divisible much larger than the image does, which is never what was meant.
inline constexpr value_range<double> preprocessing_growth_range{0.0, 1000.0};

/// \brief What preprocessing will make of an image, worked out from its grid alone before any step runs.
struct preprocessing_plan {
  resample_target grid;       ///< the network input's grid (exact, except that CropForeground gives at most this)
  double largest_voxels = 0;  ///< the largest grid any step produces, in voxels
  std::string size_steps;     ///< the steps that change the grid and their parameters, for messages
};

/// \brief The grid each step of `spec` gives an image of `shape` on `affine`: Orientation and Spacing exactly,
/// CropForeground as its largest box (the image plus its margins, grown to k_divisible; the box depends on the voxels).
inline preprocessing_plan plan_preprocessing(const pipeline_spec& spec, const extent3& shape, const affine4& affine) {
  preprocessing_plan p{{affine, shape}, 0.0, {}};
  const auto voxels = [](const extent3& e) { return double(e[0]) * double(e[1]) * double(e[2]); };
  const auto triple = [](const auto& v) { return detail::concat("(", v[0], ", ", v[1], ", ", v[2], ")"); };
  p.largest_voxels = voxels(shape);
  for (const auto& step : spec.steps) {
    resample_target& g = p.grid;
    if (const auto* o = std::get_if<orientation_options>(&step)) {
      const auto r = detail::plan_reorientation(g.affine, g.shape, o->axcodes);
      g = {r.affine, r.shape};
    } else if (const auto* sp = std::get_if<spacing_options>(&step)) {
      check_spacing_options(*sp, "Spacing");
      const Eigen::Vector3d current = detail::affine_spacing(g.affine);
      p.size_steps += detail::concat(p.size_steps.empty() ? "" : "; ", "spacing: pixdim ", triple(sp->pixdim),
                                     " mm on voxels of ", triple(current), " mm");
      g = spacing_target(g.affine, g.shape, sp->pixdim);
    } else if (const auto* c = std::get_if<crop_foreground_options>(&step)) {
      check_crop_foreground_options(*c, "CropForeground");
      p.size_steps += detail::concat(p.size_steps.empty() ? "" : "; ", "crop_foreground: margin ", triple(c->margin),
                                     ", k_divisible ", triple(c->k_divisible));
      for (std::size_t a = 0; a < 3; ++a) {
        const double k = static_cast<double>(std::max<std::int64_t>(c->k_divisible[a], 1));
        const double margins = c->allow_smaller ? 0.0 : 2.0 * static_cast<double>(c->margin[a]);
        const double box = static_cast<double>(g.shape[a]) + margins;
        g.shape[a] = detail::checked_integer_cast<std::int64_t>(
            std::ceil(box / k) * k, "CropForeground: the box on axis ", a, " for margin ", c->margin[a],
            " and k_divisible ", k);
      }
    }
    p.largest_voxels = std::max(p.largest_voxels, voxels(g.shape));
  }
  return p;
}

/// \brief Refuses, before any step runs, preprocessing that would multiply the image's voxels by more than
/// preprocessing_growth_range allows (the message names each size-changing step's parameters) or whose largest grid
/// does not fit in the memory available. `where` (the input's name) prefixes the message.
inline preprocessing_plan check_preprocessing(const pipeline_spec& spec, const spatial_image& input,
                                              std::string_view where) {
  const extent3 shape = input.spatial_shape();
  const preprocessing_plan p = plan_preprocessing(spec, shape, input.affine);
  const double input_voxels = double(shape[0]) * double(shape[1]) * double(shape[2]);
  if (input_voxels > 0) {
    detail::require_in_range(p.largest_voxels / input_voxels, preprocessing_growth_range, where,
                             "preprocessed voxels / input voxels",
                             detail::concat(" (", detail::spatial_text(shape), " becomes up to ",
                                            detail::spatial_text(p.grid.shape), "; from ", p.size_steps, ")"));
  }
  // The step's input and output live at once.
  detail::require_memory(4.0 * double(input.channels()) * (input_voxels + p.largest_voxels),
                         detail::concat(where, ": preprocessing ", detail::spatial_text(shape), " into up to ",
                                        detail::spatial_text(p.grid.shape)),
                         p.size_steps.empty() ? "" : detail::concat(" (", p.size_steps, ")"));
  return p;
}

/// Runs every step of `spec` on `input`, after check_preprocessing.
inline preprocessed_image preprocess(spatial_image input, const pipeline_spec& spec) {
  check_preprocessing(spec, input, "preprocess");
  preprocessed_image out{std::move(input), {}};
  for (const auto& step : spec.steps) out.apply(step);
  return out;
}

}  // namespace swinfer

// swinfer: a preprocessing pipeline (from JSON or named steps), run with a record of each step so predictions invert.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "swinfer/core/error.hpp"
#include "swinfer/core/memory.hpp"
#include "swinfer/core/value_range.hpp"
#include "swinfer/preprocess/crop_foreground.hpp"
#include "swinfer/preprocess/image.hpp"
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

namespace detail {

using step_json = nlohmann::ordered_json;

inline constexpr std::array<std::string_view, 5> step_names{"orientation", "spacing", "scale_intensity_range",
                                                            "normalize_intensity", "crop_foreground"};

inline double json_number(const step_json& v, const char* key, const std::string& where) {
  if (!v.is_number()) fail(where, ": '", key, "' must be a number, got ", v.dump());
  return v.get<double>();
}

/// A number or a non-empty list of numbers.
inline std::vector<double> json_numbers(const step_json& v, const char* key, const std::string& where) {
  if (v.is_number()) return {v.get<double>()};
  if (!v.is_array() || v.empty()) fail(where, ": '", key, "' must be a number or a list of numbers, got ", v.dump());
  std::vector<double> out;
  for (const auto& e : v) out.push_back(json_number(e, key, where));
  return out;
}

/// Reads a step's argument object, failing on keys it does not know.
class step_arguments {
 public:
  step_arguments(const step_json& args, std::string where, std::initializer_list<std::string_view> known)
      : args_(args), where_(std::move(where)) {
    if (!args.is_object()) fail(where_, ": expected an object of arguments, got ", args.dump());
    for (const auto& item : args.items()) {
      if (std::find(known.begin(), known.end(), item.key()) == known.end()) {
        std::string list;
        for (auto k : known) list += (list.empty() ? "" : ", ") + std::string(k);
        fail(where_, ": unknown key '", item.key(), "' (known: ", list, ")");
      }
    }
  }

  const step_json* find(const char* key) const {
    const auto it = args_.find(key);
    return it == args_.end() || it->is_null() ? nullptr : &*it;
  }
  const std::string& where() const { return where_; }

  double number(const char* key) const {
    const auto* v = find(key);
    if (!v) fail(where_, ": '", key, "' is required");
    return json_number(*v, key, where_);
  }
  std::optional<double> optional_number(const char* key) const {
    const auto* v = find(key);
    return v ? std::optional<double>(json_number(*v, key, where_)) : std::nullopt;
  }
  bool boolean(const char* key, bool fallback) const {
    const auto* v = find(key);
    if (!v) return fallback;
    if (!v->is_boolean()) fail(where_, ": '", key, "' must be true or false, got ", v->dump());
    return v->get<bool>();
  }
  std::string text(const char* key, std::string fallback) const {
    const auto* v = find(key);
    if (!v) return fallback;
    if (!v->is_string()) fail(where_, ": '", key, "' must be a string, got ", v->dump());
    return v->get<std::string>();
  }
  /// A number or a list of numbers (an empty vector when absent).
  std::vector<double> numbers(const char* key) const {
    const auto* v = find(key);
    return v ? json_numbers(*v, key, where_) : std::vector<double>{};
  }
  /// An integer for all three axes, or one per axis, each checked against `allowed` as written (before it is
  /// narrowed to int64, so 2^64 is reported as itself).
  extent3 per_axis(const char* key, std::int64_t fallback, const value_range<std::int64_t>& allowed,
                   std::string_view note = {}) const {
    const auto* v = find(key);
    if (!v) return {fallback, fallback, fallback};
    const auto integer = [&](const step_json& e) -> std::int64_t {
      if (e.is_number_unsigned()) {
        return static_cast<std::int64_t>(require_in_range(e.get<std::uint64_t>(), allowed, where_, key, note));
      }
      return require_in_range(e.get<std::int64_t>(), allowed, where_, key, note);
    };
    if (v->is_number_integer()) return {integer(*v), integer(*v), integer(*v)};
    if (!v->is_array() || v->size() != 3 || !std::all_of(v->begin(), v->end(), [](const auto& e) { return e.is_number_integer(); })) {
      fail(where_, ": '", key, "' must be an integer or a list of three integers, got ", v->dump());
    }
    return {integer((*v)[0]), integer((*v)[1]), integer((*v)[2])};
  }

 private:
  const step_json& args_;
  std::string where_;
};

/// Spacing's pixdim: MONAI repeats the last value for missing axes.
inline std::array<double, 3> pixdim_from(std::vector<double> values, const std::string& where) {
  if (values.empty() || values.size() > 3) fail(where, ": 'pixdim' must hold one to three numbers");
  values.resize(3, values.back());
  return {values[0], values[1], values[2]};
}

}  // namespace detail

/// \brief One step from its name and JSON arguments, as a pipeline file or a command line gives them:
/// orientation: "RAS" or {"axcodes"}; spacing: [x, y, z] or {"pixdim", "mode": "bilinear"|"nearest",
/// "padding_mode": "border"|"zeros"}; scale_intensity_range: {"a_min", "a_max", "b_min", "b_max", "clip"};
/// normalize_intensity: {"subtrahend", "divisor", "nonzero", "channel_wise"}; crop_foreground: {"margin",
/// "allow_smaller", "k_divisible"}. Unknown names and keys are errors naming them; `where` prefixes messages.
inline preprocess_step parse_preprocess_step(std::string_view name, const nlohmann::ordered_json& args,
                                             const std::string& where) {
  const std::string at = where + ": " + std::string(name);
  if (name == "orientation") {
    std::string codes = args.is_string() ? args.get<std::string>() : "";
    if (!args.is_string()) {
      codes = detail::step_arguments(args, at, {"axcodes"}).text("axcodes", "");
      if (codes.empty()) detail::fail(at, ": 'axcodes' is required");
    }
    try {
      detail::axcodes_to_orientation(codes);  // validated now rather than when the pipeline runs
    } catch (const error& e) {
      detail::fail(at, ": ", e.what());
    }
    return orientation_options{codes};
  }
  if (name == "spacing") {
    spacing_options o;
    if (args.is_array() || args.is_number()) {
      o.pixdim = detail::pixdim_from(detail::json_numbers(args, "pixdim", at), at);
      check_spacing_options(o, at);
      return o;
    }
    const detail::step_arguments a(args, at, {"pixdim", "mode", "padding_mode"});
    o.pixdim = detail::pixdim_from(a.numbers("pixdim"), at);
    const std::string mode = a.text("mode", "bilinear"), padding = a.text("padding_mode", "border");
    if (mode != "bilinear" && mode != "nearest") detail::fail(at, ": mode '", mode, "' is not bilinear or nearest");
    if (padding != "border" && padding != "zeros") {
      detail::fail(at, ": padding_mode '", padding, "' is not border or zeros");
    }
    o.mode = mode == "nearest" ? interpolation::nearest : interpolation::bilinear;
    o.padding = padding == "zeros" ? grid_padding::zeros : grid_padding::border;
    check_spacing_options(o, at);
    return o;
  }
  if (name == "scale_intensity_range") {
    const detail::step_arguments a(args, at, {"a_min", "a_max", "b_min", "b_max", "clip"});
    scale_intensity_range_options o{a.number("a_min"), a.number("a_max"), a.optional_number("b_min"),
                                    a.optional_number("b_max"), a.boolean("clip", false)};
    check_scale_intensity_range_options(o, at);
    return o;
  }
  if (name == "normalize_intensity") {
    const detail::step_arguments a(args, at, {"subtrahend", "divisor", "nonzero", "channel_wise"});
    normalize_intensity_options o{a.numbers("subtrahend"), a.numbers("divisor"), a.boolean("nonzero", false),
                                  a.boolean("channel_wise", false)};
    check_normalize_intensity_options(o, at);
    return o;
  }
  if (name == "crop_foreground") {
    const detail::step_arguments a(args, at, {"margin", "allow_smaller", "k_divisible"});
    // Each value checked as it is read (check_crop_foreground_options' ranges), before it is narrowed to int64.
    return crop_foreground_options{a.per_axis("margin", 0, crop_margin_range), a.boolean("allow_smaller", false),
                                   a.per_axis("k_divisible", 1, crop_k_divisible_range, crop_k_divisible_note)};
  }
  std::string known;
  for (auto n : detail::step_names) known += (known.empty() ? "" : ", ") + std::string(n);
  detail::fail(where, ": unknown preprocessing step '", name, "' (known: ", known, ")");
}

/// \brief A pipeline from JSON: an object whose keys are step names, applied in the file's order (as MONAI's BTCV
/// bundle lists them: orientation, spacing, scale_intensity_range, crop_foreground), or a list of one-key objects
/// (which may repeat a step). `where` (a file name) prefixes error messages.
inline pipeline_spec pipeline_from_json(const nlohmann::ordered_json& j, const std::string& where) {
  pipeline_spec spec;
  if (j.is_object()) {
    for (const auto& item : j.items()) spec.steps.push_back(parse_preprocess_step(item.key(), item.value(), where));
    return spec;
  }
  if (!j.is_array()) detail::fail(where, ": a pipeline is a JSON object of steps or a list of one-step objects");
  for (const auto& step : j) {
    if (!step.is_object() || step.size() != 1) {
      detail::fail(where, ": each list entry must be an object with one step, got ", step.dump());
    }
    spec.steps.push_back(parse_preprocess_step(step.begin().key(), step.begin().value(), where));
  }
  return spec;
}

/// Reads a pipeline file (see pipeline_from_json).
inline pipeline_spec load_pipeline(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) detail::fail("cannot open pipeline file '", path.string(), "'");
  nlohmann::ordered_json j;
  try {
    in >> j;
  } catch (const nlohmann::json::exception& e) {
    detail::fail(path.string(), ": not valid JSON (", e.what(), ")");
  }
  return pipeline_from_json(j, path.string());
}

}  // namespace swinfer

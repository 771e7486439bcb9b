// swinfer: a preprocessing pipeline from JSON (a pipeline file, or one step's arguments from the command line);
// every key, type and range is checked and an error names it.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "swinfer/core/error.hpp"
#include "swinfer/core/value_range.hpp"
#include "swinfer/preprocess/pipeline_spec.hpp"

namespace swinfer {

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

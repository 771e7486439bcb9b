// swinfer: an int8 calibration (docs/int8.md): one activation scale per quantization point, which weights it was
// made for, how, and which layers it left in float; read from and written to its JSON file.
#pragma once

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "swinfer/core/error.hpp"
#include "swinfer/io/atomic_file.hpp"
#include "swinfer/io/state_dict.hpp"
#include "swinfer/ops/quantization.hpp"

namespace swinfer {

/// \brief What calibration decided for one quantization point (a product's input, named by its module's prefix).
struct int8_point {
  float scale = 0;        ///< the activation scale (threshold / 127)
  float max_abs = 0;      ///< the largest |value| seen, for reports
  bool quantized = true;  ///< false: the layer runs in float (the per-layer fallback)
  /// The relative L2 error of the point's product in int8 on calibration's sample of its inputs (int8_error.hpp);
  /// negative: not measured (a file without it).
  float error = -1;
};

/// \brief A calibration file's contents.
struct int8_calibration {
  static constexpr const char* format = "swinfer-int8-calibration";
  static constexpr int version = 1;

  std::uint32_t weights_checksum = 0;  ///< weights_checksum() of the weights it was made for
  std::string method;                  ///< max, percentile or mse
  double percentile = 0;               ///< the percentile of |x| (method percentile)
  double fallback_error = 0;  ///< the error above which calibration left a point in float; 0: not recorded (none)
  std::vector<std::string> volumes;    ///< the calibration inputs, for the record
  std::map<std::string, int8_point> points;

  /// How many points run in int8 (the rest fall back to float).
  std::size_t quantized_points() const {
    return static_cast<std::size_t>(
        std::count_if(points.begin(), points.end(), [](const auto& p) { return p.second.quantized; }));
  }

  /// The int8_input a product at `point` runs with: its scale, or 0 (float) when the point was left in float or is
  /// not in the calibration (a layer calibration never saw).
  ops::int8_input input(const std::string& point) const {
    const auto it = points.find(point);
    if (it == points.end() || !it->second.quantized) return {point, 0};
    return {point, it->second.scale};
  }
};

/// CRC-32 over every floating tensor's key, shape and float32 values in file order: which weights a calibration
/// belongs to (an identity check, not a security one).
inline std::uint32_t weights_checksum(const state_dict& sd) {
  uLong crc = crc32(0L, Z_NULL, 0);
  for (const auto& key : sd.keys()) {
    const weight& w = sd.at(key);
    if (w.values.empty()) continue;
    crc = crc32(crc, reinterpret_cast<const Bytef*>(key.data()), static_cast<uInt>(key.size()));
    crc = crc32(crc, reinterpret_cast<const Bytef*>(w.shape.data()),
                static_cast<uInt>(w.shape.size() * sizeof(std::int64_t)));
    const auto* bytes = reinterpret_cast<const Bytef*>(w.values.data());
    std::size_t left = w.values.size() * sizeof(float);
    while (left > 0) {  // crc32 takes 32-bit lengths
      const uInt chunk = static_cast<uInt>(std::min<std::size_t>(left, 1u << 30));
      crc = crc32(crc, bytes, chunk);
      bytes += chunk;
      left -= chunk;
    }
  }
  return static_cast<std::uint32_t>(crc);
}

namespace detail {
inline std::string checksum_hex(std::uint32_t v) {
  std::ostringstream s;
  s << std::hex;
  s.width(8);
  s.fill('0');
  s << v;
  return s.str();
}
}  // namespace detail

/// The calibration as JSON text.
inline std::string calibration_to_json(const int8_calibration& c) {
  nlohmann::ordered_json j;
  j["format"] = int8_calibration::format;
  j["version"] = int8_calibration::version;
  j["weights_crc32"] = detail::checksum_hex(c.weights_checksum);
  j["method"] = c.method;
  if (c.method == "percentile") j["percentile"] = c.percentile;
  if (c.fallback_error > 0 && std::isfinite(c.fallback_error)) j["fallback_error"] = c.fallback_error;
  j["volumes"] = c.volumes;
  auto& points = j["points"];
  points = nlohmann::ordered_json::object();
  for (const auto& [name, p] : c.points) {
    points[name] = {{"scale", p.scale}, {"max_abs", p.max_abs}, {"precision", p.quantized ? "int8" : "float"}};
    if (p.error >= 0) points[name]["error"] = p.error;
  }
  return j.dump(1) + "\n";
}

/// Writes the calibration to `path` atomically (a complete file or none).
inline void write_calibration(const int8_calibration& c, const std::string& path) {
  const std::string text = calibration_to_json(c);
  write_stream_atomically(path, [&](std::ostream& out) { out << text; });
}

/// Reads a calibration from its JSON text; anything missing, mistyped or out of range is an error naming `path` (the
/// file, or where the text came from) and the key.
inline int8_calibration calibration_from_json(const std::string& text, const std::string& path) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    detail::fail("'", path, "' is not a complete int8 calibration file (not valid JSON: ", e.what(),
                 "); make it again with `swinfer calibrate`");
  }
  auto need = [&](const nlohmann::json& o, const char* key, const char* where) -> const nlohmann::json& {
    if (!o.is_object() || !o.contains(key)) detail::fail("'", path, "': ", where, " has no '", key, "'");
    return o.at(key);
  };
  if (!j.is_object() || !j.contains("format") || j["format"] != int8_calibration::format) {
    detail::fail("'", path, "' is not an int8 calibration file (no \"format\": \"", int8_calibration::format, "\")");
  }
  if (need(j, "version", "the file") != int8_calibration::version) {
    detail::fail("'", path, "': calibration format version ", need(j, "version", "the file").dump(),
                 " is not supported (this swinfer reads version ", int8_calibration::version, ")");
  }
  int8_calibration c;
  try {
    const std::string crc = need(j, "weights_crc32", "the file").get<std::string>();
    std::size_t used = 0;
    const unsigned long v = std::stoul(crc, &used, 16);
    if (used != crc.size() || crc.size() != 8) throw std::invalid_argument("not 8 hex digits");
    c.weights_checksum = static_cast<std::uint32_t>(v);
    c.method = need(j, "method", "the file").get<std::string>();
    if (c.method == "percentile") c.percentile = need(j, "percentile", "the file").get<double>();
    if (j.contains("fallback_error")) {
      c.fallback_error = j["fallback_error"].get<double>();
      if (!(c.fallback_error > 0)) detail::fail("'", path, "': 'fallback_error' must be positive");
    }
    if (j.contains("volumes")) c.volumes = j["volumes"].get<std::vector<std::string>>();
    const auto& points = need(j, "points", "the file");
    if (!points.is_object() || points.empty()) detail::fail("'", path, "': 'points' must be a non-empty object");
    for (const auto& [name, p] : points.items()) {
      int8_point point;
      point.scale = need(p, "scale", ("point '" + name + "'").c_str()).get<float>();
      if (p.contains("max_abs")) point.max_abs = p["max_abs"].get<float>();
      if (p.contains("error")) {
        point.error = p["error"].get<float>();
        if (!(point.error >= 0 && std::isfinite(point.error))) {
          detail::fail("'", path, "': point '", name, "' has error ", point.error, " (a finite number >= 0)");
        }
      }
      const std::string precision = need(p, "precision", ("point '" + name + "'").c_str()).get<std::string>();
      if (precision != "int8" && precision != "float") {
        detail::fail("'", path, "': point '", name, "' has precision '", precision, "' (int8 or float)");
      }
      point.quantized = precision == "int8";
      if (!(point.scale > 0 && std::isfinite(point.scale))) {
        detail::fail("'", path, "': point '", name, "' has scale ", point.scale, " (a positive finite number)");
      }
      c.points.emplace(name, point);
    }
  } catch (const nlohmann::json::exception& e) {
    detail::fail("'", path, "': a value has the wrong type (", e.what(), ")");
  } catch (const std::invalid_argument&) {
    detail::fail("'", path, "': 'weights_crc32' must be 8 hexadecimal digits");
  } catch (const std::out_of_range&) {
    detail::fail("'", path, "': 'weights_crc32' must be 8 hexadecimal digits");
  }
  return c;
}

/// Reads a calibration file (calibration_from_json).
inline int8_calibration read_calibration(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) detail::fail("cannot open the int8 calibration file '", path, "'");
  std::stringstream text;
  text << in.rdbuf();
  return calibration_from_json(text.str(), path);
}

/// Whether `c` was made for `weights`; otherwise an error that says how to make the right one.
inline void check_calibration_matches(const int8_calibration& c, const state_dict& weights,
                                      const std::string& weights_name, const std::string& calibration_name) {
  const std::uint32_t actual = weights_checksum(weights);
  if (actual != c.weights_checksum) {
    detail::fail("the int8 calibration '", calibration_name, "' was made for other weights (weights CRC-32 ",
                 detail::checksum_hex(c.weights_checksum), ", ", weights_name, " has ", detail::checksum_hex(actual),
                 "); make one for these weights with `swinfer calibrate --model ", weights_name,
                 " --input <volumes> --output <file>`");
  }
}

}  // namespace swinfer

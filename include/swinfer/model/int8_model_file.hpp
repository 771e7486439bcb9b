// swinfer: the int8 model file `swinfer quantize` writes (docs/int8.md): a safetensors checkpoint that stores the
// weights of every product its calibration quantizes as int8 with per-output-channel scales, every other tensor as
// it was, and the calibration and the configuration in its metadata, so it runs with --precision int8 alone.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "swinfer/core/error.hpp"
#include "swinfer/io/safetensors.hpp"
#include "swinfer/io/state_dict.hpp"
#include "swinfer/model/config_json.hpp"
#include "swinfer/model/int8_calibration.hpp"
#include "swinfer/model/network_spec.hpp"
#include "swinfer/model/swin_unetr_config.hpp"
#include "swinfer/model/weights_check.hpp"
#include "swinfer/ops/quantization.hpp"

namespace swinfer {

namespace int8_model_file {
/// Metadata: "format" names the kind of file, "version" its layout, "config" the configuration (config_to_json),
/// "calibration" the calibration file's JSON for the weights as loaded, "quantized_from" the float weights' CRC-32.
inline constexpr const char* format = "swinfer-int8-model";
inline constexpr const char* version = "2";
/// The versions this swinfer reads: 1 stored the ConvTranspose3d weights in float.
inline bool reads(const std::string& v) { return v == "1" || v == version; }
/// The per-output-channel scales of the int8 tensor `key` are `key + "_scale"`, shaped to broadcast against it:
/// (C,) where the output channels are its first axis (Conv3d, Linear), (1, C) where they are its second
/// (ConvTranspose3d's (cin, cout, 2, 2, 2)).
inline constexpr std::string_view scale_suffix = "_scale";

/// Whether a checkpoint's metadata marks it as an int8 model file.
inline bool holds(const std::map<std::string, std::string>& metadata) {
  const auto it = metadata.find("format");
  return it != metadata.end() && it->second == format;
}
}  // namespace int8_model_file

namespace detail {

/// A float m with m / 127 == scale in float32 (the weight scale the per-channel quantizer derives from a channel's
/// largest |w|), searched outward from 127 x scale; 0 where none lies within 16 steps (a damaged scale).
inline float largest_weight_for(float scale) {
  const float middle = scale * static_cast<float>(ops::weight_max);
  float below = middle, above = middle;
  for (int step = 0; step <= 16; ++step) {
    if (below / ops::weight_max == scale) return below;
    if (above / ops::weight_max == scale) return above;
    below = std::nextafter(below, 0.0f);
    above = std::nextafter(above, INFINITY);
  }
  return 0;
}

/// A weight's elements by output channel: element k of channel o's row is at index(o, k) of the flat weight whose
/// output channels are axis `axis` of `shape` (each row: every element of that channel, in storage order).
struct channel_rows {
  std::int64_t channels = 0, per_channel = 0, inner = 1;
  channel_rows(const std::vector<std::int64_t>& shape, int axis) : channels(shape.at(static_cast<std::size_t>(axis))) {
    std::int64_t outer = 1;
    for (std::size_t d = 0; d < shape.size(); ++d) {
      if (d < static_cast<std::size_t>(axis)) outer *= shape[d];
      if (d > static_cast<std::size_t>(axis)) inner *= shape[d];
    }
    per_channel = outer * inner;
  }
  std::size_t index(std::int64_t o, std::int64_t k) const {
    return static_cast<std::size_t>(((k / inner) * channels + o) * inner + k % inner);
  }
  ops::channel_quantized_weights quantize(const std::vector<float>& w) const {
    return ops::channel_quantized_weights::quantize(channels, per_channel,
                                                    [&](std::int64_t o, std::int64_t k) { return w[index(o, k)]; });
  }
};

/// The shape of the scales of a weight whose `channels` output channels are its axis `axis` (0 or 1).
inline std::vector<std::int64_t> scale_shape(int axis, std::int64_t channels) {
  return axis == 0 ? std::vector<std::int64_t>{channels} : std::vector<std::int64_t>{1, channels};
}

}  // namespace detail

/// \brief The tensors an int8 model file stores for `weights`: the weights of every product `spec` quantizes (its
/// calibration's int8 points) as int8 (dtype::i8, in their own layout) plus their per-output-channel scales (shaped
/// as int8_model_file::scale_suffix says), every other tensor unchanged, in `weights`' order;
/// not the relative_position_index buffers that equal MONAI's for the configured window (int64, t^2 each: 8.3 of
/// the demo model's 12.9 MB), which the loader recomputes when they are absent.
inline state_dict quantize_model_weights(const model::network_spec& spec, const state_dict& weights) {
  std::map<std::string, int> quantized;  // key -> output-channel axis
  std::set<std::string> recomputed;
  const std::vector<std::int64_t> monai_index = ops::relative_position_index(spec.config.window_size);
  for (const auto& t : spec.tensors()) {
    if (t.int8.quantized()) quantized[t.key] = t.channel_axis;
    const weight* w = t.is_index ? weights.find(t.key) : nullptr;
    if (w && w->indices == monai_index) recomputed.insert(t.key);
  }
  state_dict out;
  for (const auto& key : weights.keys()) {
    const weight& w = weights.at(key);
    if (recomputed.count(key)) continue;
    if (!quantized.count(key)) {
      out.insert(key, w);
      continue;
    }
    const int axis = quantized.at(key);
    const detail::channel_rows rows(w.shape, axis);
    const auto q = rows.quantize(w.values);
    weight values{dtype::i8, w.shape, {}, std::vector<std::int64_t>(static_cast<std::size_t>(w.numel()))};
    for (std::int64_t o = 0; o < rows.channels; ++o)
      for (std::int64_t k = 0; k < rows.per_channel; ++k) {
        values.indices[rows.index(o, k)] = q.at(o, k, rows.per_channel);
      }
    weight scales{dtype::f32, detail::scale_shape(axis, rows.channels), q.scales, {}};
    out.insert(key, std::move(values));
    out.insert(key + std::string(int8_model_file::scale_suffix), std::move(scales));
  }
  return out;
}

/// \brief The float weights an int8 model file's tensors stand for: each int8 tensor times its scales, chosen so that
/// quantizing them again per output channel (the axis the scales' shape gives) gives back exactly the stored int8
/// values and scales (every channel's +-127 entries become the float whose division by 127 is the scale). Anything
/// missing, mis-shaped or out of range is an error naming `path` and the tensor.
inline state_dict dequantized_weights(const state_dict& stored, const std::string& path) {
  const std::string suffix(int8_model_file::scale_suffix);
  state_dict out;
  for (const auto& key : stored.keys()) {
    const weight& w = stored.at(key);
    const bool is_scales = key.size() > suffix.size() && key.ends_with(suffix);
    if (is_scales) {
      const weight* of = stored.find(key.substr(0, key.size() - suffix.size()));
      if (of && of->source == dtype::i8) continue;  // read with its tensor
    }
    if (w.source != dtype::i8) {
      out.insert(key, w);
      continue;
    }
    auto bad = [&](auto... what) {
      detail::fail("'", path, "': int8 tensor '", key, "': ", what..., "; the file is damaged, write it again with ",
                   "`swinfer quantize`");
    };
    const weight* scales = stored.find(key + suffix);
    if (!scales) bad("its scales '", key, suffix, "' are missing");
    // (C,): channels on the first axis; (1, C): on the second.
    const int axis = scales->shape.size() == 2 && scales->shape[0] == 1 ? 1 : 0;
    const auto axis_index = static_cast<std::size_t>(axis);
    const std::int64_t channels = w.shape.size() > axis_index ? w.shape[axis_index] : 0;
    if (channels <= 0 || !is_floating(scales->source) || scales->shape != detail::scale_shape(axis, channels)) {
      bad("its scales '", key, suffix, "' have shape ", shape_string(scales->shape), ", not (",
          w.shape.empty() ? 0 : w.shape[0], ",) or (1, ", w.shape.size() > 1 ? w.shape[1] : 0, ")");
    }
    const detail::channel_rows rows(w.shape, axis);
    weight f{dtype::f32, w.shape, std::vector<float>(w.indices.size()), {}};
    for (std::int64_t o = 0; o < channels; ++o) {
      const float scale = scales->values[static_cast<std::size_t>(o)];
      const float largest = detail::largest_weight_for(scale);
      if (!(scale > 0) || !std::isfinite(scale) || largest == 0) bad("channel ", o, " has scale ", scale);
      for (std::int64_t k = 0; k < rows.per_channel; ++k) {
        const std::size_t i = rows.index(o, k);
        const std::int64_t q = w.indices[i];
        if (q < -ops::weight_max || q > ops::weight_max) bad("value ", q, " is outside [-127, 127]");
        f.values[i] = q == ops::weight_max ? largest : q == -ops::weight_max ? -largest : static_cast<float>(q) * scale;
      }
    }
    // The model quantizes these floats again as it packs them: they must give back exactly what the file holds.
    const auto again = rows.quantize(f.values);
    bool same_values = true;
    for (std::int64_t o = 0; o < channels && same_values; ++o)
      for (std::int64_t k = 0; k < rows.per_channel; ++k)
        if (again.at(o, k, rows.per_channel) != w.indices[rows.index(o, k)]) same_values = false;
    if (!std::equal(again.scales.begin(), again.scales.end(), scales->values.begin()) || !same_values) {
      bad("its values and scales do not fit together (a channel's largest value must be +-127)");
    }
    out.insert(key, std::move(f));
  }
  return out;
}

/// \brief Writes the int8 model file of `weights` (configuration `config`) with `calibration`, which must belong to
/// them: the products it quantizes store int8 weights, its float layers keep float ones. The file appears complete
/// or not at all.
inline void save_int8_model(const std::filesystem::path& path, const swin_unetr_config& config,
                            const state_dict& weights, const int8_calibration& calibration,
                            const std::string& weights_name, const std::string& calibration_name) {
  check_calibration_matches(calibration, weights, weights_name, calibration_name);
  const model::network_spec spec = model::describe_network(config, {&calibration});
  const state_dict stored = quantize_model_weights(spec, weights);
  // The calibration names the weights as the file will load them (each int8 tensor times its scales).
  int8_calibration as_loaded = calibration;
  as_loaded.weights_checksum = weights_checksum(dequantized_weights(stored, path.string()));
  save_safetensors(path, stored,
                   {{"format", int8_model_file::format},
                    {"version", int8_model_file::version},
                    {"config", config_to_json(config).dump()},
                    {"calibration", calibration_to_json(as_loaded)},
                    {"quantized_from", detail::checksum_hex(calibration.weights_checksum)}});
}

/// \brief What an int8 model file holds: the weights as loaded (dequantized_weights), the configuration it was
/// written with and its calibration, which is checked against those weights (a mismatch: a damaged file).
struct int8_model_contents {
  state_dict weights;
  swin_unetr_config config;
  int8_calibration calibration;
};

inline int8_model_contents read_int8_model(const safetensors_contents& file, const std::string& path) {
  const auto& md = file.metadata;
  auto field = [&](const char* key) -> const std::string& {
    const auto it = md.find(key);
    if (it == md.end()) {
      detail::fail("'", path, "' is an int8 model file without its metadata '", key,
                   "'; write it again with `swinfer quantize`");
    }
    return it->second;
  };
  if (!int8_model_file::reads(field("version"))) {
    detail::fail("'", path, "': int8 model file version ", field("version"),
                 " is not supported (this swinfer reads 1 to ", int8_model_file::version,
                 "); write it again with `swinfer quantize`");
  }
  int8_model_contents m;
  m.weights = dequantized_weights(file.tensors, path);
  nlohmann::json config;
  try {
    config = nlohmann::json::parse(field("config"));
  } catch (const nlohmann::json::exception& e) {
    detail::fail("'", path, "': its metadata 'config' is not valid JSON (", e.what(), ")");
  }
  m.config = config_from_json(config, path + " (metadata 'config')", infer_config(m.weights));
  m.calibration = calibration_from_json(field("calibration"), path + " (metadata 'calibration')");
  const std::uint32_t actual = weights_checksum(m.weights);
  if (actual != m.calibration.weights_checksum) {
    detail::fail("'", path, "': its weights (CRC-32 ", detail::checksum_hex(actual), ") are not the ones its ",
                 "calibration was stored with (", detail::checksum_hex(m.calibration.weights_checksum),
                 "): the file is damaged; write it again with `swinfer quantize`");
  }
  return m;
}

}  // namespace swinfer

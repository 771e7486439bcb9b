// swinfer: a SwinUNETR-family configuration to and from JSON (MONAI argument names, or a bundle's network_def,
// plus "arch": "SwinFusionUNETR" and the fused-skip options for the Swin Fusion variants), through one key table.
#pragma once

#include <array>
#include <cstdint>
#include <fstream>
#include <string>
#include <string_view>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "swinfer/core/error.hpp"
#include "swinfer/core/value_range.hpp"
#include "swinfer/model/swin_unetr_config.hpp"

namespace swinfer {

namespace detail::config_keys {

using json = nlohmann::json;

/// Where a value is being read: the key, the source (a file path) and the whole object.
struct reading {
  std::string_view key;
  const std::string& where;
  const json& object;

  [[noreturn]] void fail_as(const json& v, std::string_view what) const {
    fail(where, ": '", key, "' must be ", what, ", got ", v.dump());
  }
};

/// The values an enumeration's JSON spelling ranges over.
inline constexpr std::array merge_orders{ops::merge_order::merging, ops::merge_order::merging_legacy,
                                         ops::merge_order::mergingv2};
inline constexpr std::array fusion_variants{fusion_variant::od, fusion_variant::od_large, fusion_variant::v2_2,
                                            fusion_variant::v1_1, fusion_variant::v1_2};
inline constexpr std::array skip_pools{skip_pool::max, skip_pool::avg, skip_pool::maxavg};
inline constexpr const auto& values_of(ops::merge_order) { return merge_orders; }
inline constexpr const auto& values_of(fusion_variant) { return fusion_variants; }
inline constexpr const auto& values_of(skip_pool) { return skip_pools; }
inline std::string_view name_of(ops::merge_order v) { return ops::merge_order_name(v); }
inline std::string_view name_of(fusion_variant v) { return fusion_variant_name(v); }
inline std::string_view name_of(skip_pool v) { return skip_pool_name(v); }
/// What tells the values apart, where the names alone do not say.
inline std::string_view hint_of(ops::merge_order) {
  return " (merging: MONAI >= 1.5; merging_legacy: MONAI <= 1.4 and every published checkpoint)";
}
inline std::string_view hint_of(fusion_variant) { return ""; }
inline std::string_view hint_of(skip_pool) { return ""; }

/// A JSON integer checked against its option's range before it is narrowed to int, so a value past int (or int64)
/// is reported as written.
inline int read_int(const json& v, const reading& r, const value_range<int>& range) {
  if (v.is_number_unsigned()) return static_cast<int>(require_in_range(v.get<std::uint64_t>(), range, r.where, r.key));
  return static_cast<int>(require_in_range(v.get<std::int64_t>(), range, r.where, r.key));
}

/// One option's value as T; `Range` points to its allowed range (config_ranges) for numbers.
template <class T, auto Range = nullptr>
T read_value(const json& v, const reading& r) {
  if constexpr (std::is_same_v<T, bool>) {
    if (!v.is_boolean()) r.fail_as(v, "true or false");
    return v.get<bool>();
  } else if constexpr (std::is_same_v<T, int>) {
    if (!v.is_number_integer()) r.fail_as(v, "an integer");
    return read_int(v, r, *Range);
  } else if constexpr (std::is_same_v<T, double>) {
    if (!v.is_number()) r.fail_as(v, "a number");
    return require_in_range(v.get<double>(), *Range, r.where, r.key);
  } else if constexpr (std::is_enum_v<T>) {
    if (!v.is_string()) r.fail_as(v, "a string");
    std::string names;
    for (T value : values_of(T{})) {
      if (v.get<std::string>() == name_of(value)) return value;
      names += concat(names.empty() ? "" : ", ", name_of(value));
    }
    fail(r.where, ": ", r.key, " '", v.get<std::string>(), "' is not one of ", names, hint_of(T{}));
  } else {  // std::array<int, N>: MONAI accepts one integer for every axis or stage
    T out{};
    if (v.is_number_integer()) {
      out.fill(read_int(v, r, *Range));
    } else if (v.is_array() && v.size() == out.size()) {
      for (std::size_t i = 0; i < out.size(); ++i) {
        if (!v[i].is_number_integer()) fail(r.where, ": '", r.key, "' must hold integers, got ", v.dump());
        out[i] = read_int(v[i], r, *Range);
      }
    } else {
      r.fail_as(v, concat("an integer or a list of ", out.size(), " integers"));
    }
    return out;
  }
}

template <class T>
json write_value(const T& v) {
  if constexpr (std::is_enum_v<T>) {
    return std::string(name_of(v));
  } else {
    return v;
  }
}

/// \brief One JSON key of a configuration. `read` null: accepted and ignored (no effect in eval mode);
/// `write` null: never written.
struct key {
  std::string_view name;
  bool fusion_only;  ///< read once the architecture is known, an error unless it is SwinFusionUNETR; written only then
  void (*read)(const json& value, swin_unetr_config& c, const reading& r);
  void (*write)(const swin_unetr_config& c, json& object, std::string_view name);
};

template <auto Member, bool FusionOnly, class Config>
auto& field_of(Config& c) {
  if constexpr (FusionOnly) {
    return c.fusion.*Member;
  } else {
    return c.*Member;
  }
}

/// A member of the configuration (or, FusionOnly, of its fusion options) read and written as it is; a number is
/// checked against *Range (a config_ranges member) as it is read.
template <auto Member, auto Range = nullptr, bool FusionOnly = false>
constexpr key member(std::string_view name) {
  return {name, FusionOnly,
          [](const json& v, swin_unetr_config& c, const reading& r) {
            auto& target = field_of<Member, FusionOnly>(c);
            target = read_value<std::remove_reference_t<decltype(target)>, Range>(v, r);
          },
          [](const swin_unetr_config& c, json& j, std::string_view n) {
            j[std::string(n)] = write_value(field_of<Member, FusionOnly>(c));
          }};
}

inline void read_arch(const json& v, swin_unetr_config& c, const reading& r) {
  if (!v.is_string()) r.fail_as(v, "a string");
  const auto t = v.get<std::string>();
  if (t.find("SwinFusion") != std::string::npos || t.find("swin_fusion") != std::string::npos) {
    // The author's code predates MONAI 1.5's merging order.
    if (!c.is_fusion() && !r.object.contains("downsample")) c.downsample = ops::merge_order::merging_legacy;
    c.arch = model_arch::swin_fusion_unetr;
  } else if (t.find("SwinUNETR") != std::string::npos) {
    c.arch = model_arch::swin_unetr;
  } else {
    fail(r.where, ": ", r.key, " '", t, "' is neither SwinUNETR nor SwinFusionUNETR");
  }
}

inline void read_spatial_dims(const json& v, swin_unetr_config&, const reading& r) {
  if (v != 3) fail(r.where, ": spatial_dims ", v.dump(), " is not supported (only 3-D)");
}

inline void read_norm_name(const json& v, swin_unetr_config&, const reading& r) {
  const bool instance = (v.is_string() && v == "instance") ||
                        (v.is_array() && !v.empty() && v[0] == "instance" &&
                         (v.size() == 1 || (v[1].is_object() && v[1].empty())));
  if (!instance) {
    fail(r.where, ": norm_name ", v.dump(), " is not supported; swinfer implements MONAI's default \"instance\" ",
         "(InstanceNorm3d without affine)");
  }
}

inline const std::array table{
    key{"_target_", false, read_arch, nullptr},
    key{"arch", false, read_arch,
        [](const swin_unetr_config& c, json& j, std::string_view n) {
          if (c.is_fusion()) j[std::string(n)] = std::string(model_arch_name(c.arch));
        }},
    member<&swin_unetr_config::in_channels, &config_ranges::channels>("in_channels"),
    member<&swin_unetr_config::out_channels, &config_ranges::channels>("out_channels"),
    member<&swin_unetr_config::feature_size, &config_ranges::feature_size>("feature_size"),
    member<&swin_unetr_config::patch_size, &config_ranges::patch_size>("patch_size"),
    member<&swin_unetr_config::depths, &config_ranges::depth>("depths"),
    member<&swin_unetr_config::num_heads, &config_ranges::heads>("num_heads"),
    member<&swin_unetr_config::window_size, &config_ranges::window>("window_size"),
    member<&swin_unetr_config::qkv_bias>("qkv_bias"),
    member<&swin_unetr_config::mlp_ratio, &config_ranges::mlp_ratio>("mlp_ratio"),
    member<&swin_unetr_config::normalize>("normalize"),
    member<&swin_unetr_config::patch_norm>("patch_norm"),
    member<&swin_unetr_config::use_v2>("use_v2"),
    member<&swin_unetr_config::downsample>("downsample"),
    key{"spatial_dims", false, read_spatial_dims, nullptr},
    key{"norm_name", false, read_norm_name, nullptr},
    member<&fusion_options::variant, nullptr, true>("variant"),
    member<&fusion_options::pool, nullptr, true>("skip_pool"),
    member<&fusion_options::final_kernel_size, &config_ranges::final_kernel_size, true>("final_kernel_size"),
    key{"branch_channels", true,
        [](const json& v, swin_unetr_config& c, const reading& r) {
          c.fusion.branch_channels = read_value<std::array<int, 5>, &config_ranges::branch_channels>(v, r);
        },
        [](const swin_unetr_config& c, json& j, std::string_view n) {  // explicit widths, except where none exist
          if (c.fusion.variant != fusion_variant::v1_1 && c.fusion.variant != fusion_variant::v1_2) {
            j[std::string(n)] = c.branch_channels();
          }
        }},
    key{"drop_rate", false, nullptr, nullptr},
    key{"attn_drop_rate", false, nullptr, nullptr},
    key{"dropout_path_rate", false, nullptr, nullptr},
    key{"use_checkpoint", false, nullptr, nullptr},
    key{"img_size", false, nullptr, nullptr},
    key{"norm_layer", false, nullptr, nullptr},
};

inline const key* find(std::string_view name) {
  for (const auto& k : table)
    if (k.name == name) return &k;
  return nullptr;
}

}  // namespace detail::config_keys

/// \brief Reads a configuration from a JSON object whose keys are MONAI SwinUNETR constructor arguments, plus for a
/// Swin Fusion UNETR "arch" (or "_target_") naming it, "variant", "skip_pool", "final_kernel_size" and
/// "branch_channels". A fusion model that does not name "downsample" gets merging_legacy (the author's code
/// predates MONAI 1.5's merging order).
/// A MONAI bundle's `network_def` (with `_target_`) is accepted as is, or a whole bundle config holding one.
/// Keys without effect on inference are ignored; unknown keys and unsupported values are errors naming them.
/// \param where names the source (a file path) in error messages.
/// \param base  values for keys the JSON does not give (e.g. what infer_config read from the weights).
inline swin_unetr_config config_from_json(const nlohmann::json& root, const std::string& where,
                                          const swin_unetr_config& base = {}) {
  namespace keys = detail::config_keys;
  const nlohmann::json* j = &root;
  if (j->is_object() && j->contains("network_def")) j = &(*j)["network_def"];
  if (!j->is_object()) detail::fail(where, ": expected a JSON object of SwinUNETR (or SwinFusionUNETR) arguments");
  swin_unetr_config c = base;
  for (const auto& [name, v] : j->items()) {
    if (v.is_string() && !v.get<std::string>().empty() && (v.get<std::string>()[0] == '@' || v.get<std::string>()[0] == '$')) {
      detail::fail(where, ": '", name, "' is a bundle expression (", v.dump(), "); give the literal value instead");
    }
    const keys::key* k = keys::find(name);
    if (!k) detail::fail(where, ": unknown SwinUNETR argument '", name, "'");
    if (!k->fusion_only && k->read) k->read(v, c, {name, where, *j});
  }
  for (const auto& k : keys::table) {  // fusion options, once the architecture is known
    if (!k.fusion_only || !j->contains(k.name)) continue;
    if (!c.is_fusion()) {
      detail::fail(where, ": '", k.name, "' is a Swin Fusion UNETR option; add \"arch\": \"SwinFusionUNETR\"");
    }
    k.read((*j)[std::string(k.name)], c, {k.name, where, *j});
  }
  c.validate(where);
  return c;
}

/// The configuration as JSON that config_from_json reads back to the same configuration (Swin Fusion keys only
/// for a Swin Fusion UNETR).
inline nlohmann::json config_to_json(const swin_unetr_config& c) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& k : detail::config_keys::table) {
    if (k.write && (!k.fusion_only || c.is_fusion())) k.write(c, j, k.name);
  }
  return j;
}

/// Reads a configuration file (see config_from_json).
inline swin_unetr_config load_config(const std::string& path, const swin_unetr_config& base = {}) {
  std::ifstream in(path);
  if (!in) detail::fail("cannot open config file '", path, "'");
  nlohmann::json j;
  try {
    in >> j;
  } catch (const nlohmann::json::exception& e) {
    detail::fail(path, ": not valid JSON (", e.what(), ")");
  }
  return config_from_json(j, path, base);
}

}  // namespace swinfer

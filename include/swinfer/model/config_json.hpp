// swinfer: reading a SwinUNETR-family configuration from JSON (MONAI argument names, or a bundle's network_def,
// plus "arch": "SwinFusionUNETR" and the fused-skip options for the Swin Fusion variants).
#pragma once

#include <fstream>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "swinfer/core/error.hpp"
#include "swinfer/model/swin_unetr_config.hpp"

namespace swinfer {

namespace detail {

inline ops::merge_order parse_merge_order(const std::string& v, const std::string& where) {
  if (v == "merging") return ops::merge_order::merging;
  if (v == "merging_legacy") return ops::merge_order::merging_legacy;
  if (v == "mergingv2") return ops::merge_order::mergingv2;
  fail(where, ": downsample '", v, "' is not one of merging (MONAI >= 1.5), merging_legacy (MONAI <= 1.4), mergingv2");
}

template <std::size_t N>
std::array<int, N> int_or_array(const nlohmann::json& v, const std::string& key, const std::string& where) {
  std::array<int, N> out{};
  if (v.is_number_integer()) {
    out.fill(v.get<int>());
  } else if (v.is_array() && v.size() == N) {
    for (std::size_t i = 0; i < N; ++i) {
      if (!v[i].is_number_integer()) fail(where, ": '", key, "' must hold integers, got ", v.dump());
      out[i] = v[i].get<int>();
    }
  } else {
    fail(where, ": '", key, "' must be an integer or a list of ", N, " integers, got ", v.dump());
  }
  return out;
}

}  // namespace detail

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
  const nlohmann::json* j = &root;
  if (j->is_object() && j->contains("network_def")) j = &(*j)["network_def"];
  if (!j->is_object()) detail::fail(where, ": expected a JSON object of SwinUNETR (or SwinFusionUNETR) arguments");
  swin_unetr_config c = base;
  static const std::set<std::string> fusion_keys = {"variant", "skip_pool", "final_kernel_size", "branch_channels"};
  static const std::set<std::string> ignored = {"drop_rate",  "attn_drop_rate", "dropout_path_rate",
                                                "use_checkpoint", "img_size",    "norm_layer"};
  for (const auto& [key, v] : j->items()) {
    auto want = [&](bool ok, const char* what) {
      if (!ok) detail::fail(where, ": '", key, "' must be ", what, ", got ", v.dump());
    };
    if (v.is_string() && !v.get<std::string>().empty() && (v.get<std::string>()[0] == '@' || v.get<std::string>()[0] == '$')) {
      detail::fail(where, ": '", key, "' is a bundle expression (", v.dump(), "); give the literal value instead");
    }
    if (key == "_target_" || key == "arch") {
      want(v.is_string(), "a string");
      const auto t = v.get<std::string>();
      if (t.find("SwinFusion") != std::string::npos || t.find("swin_fusion") != std::string::npos) {
        if (!c.is_fusion() && !j->contains("downsample")) c.downsample = ops::merge_order::merging_legacy;
        c.arch = model_arch::swin_fusion_unetr;
      } else if (t.find("SwinUNETR") != std::string::npos) {
        c.arch = model_arch::swin_unetr;
      } else {
        detail::fail(where, ": ", key, " '", t, "' is neither SwinUNETR nor SwinFusionUNETR");
      }
    } else if (fusion_keys.count(key)) {
      continue;  // read below, once the architecture is known
    } else if (ignored.count(key)) {
      continue;
    } else if (key == "in_channels") {
      want(v.is_number_integer(), "an integer");
      c.in_channels = v.get<int>();
    } else if (key == "out_channels") {
      want(v.is_number_integer(), "an integer");
      c.out_channels = v.get<int>();
    } else if (key == "feature_size") {
      want(v.is_number_integer(), "an integer");
      c.feature_size = v.get<int>();
    } else if (key == "patch_size") {
      want(v.is_number_integer(), "an integer");
      c.patch_size = v.get<int>();
    } else if (key == "depths") {
      c.depths = detail::int_or_array<4>(v, key, where);
    } else if (key == "num_heads") {
      c.num_heads = detail::int_or_array<4>(v, key, where);
    } else if (key == "window_size") {
      c.window_size = detail::int_or_array<3>(v, key, where);
    } else if (key == "qkv_bias") {
      want(v.is_boolean(), "true or false");
      c.qkv_bias = v.get<bool>();
    } else if (key == "mlp_ratio") {
      want(v.is_number(), "a number");
      c.mlp_ratio = v.get<double>();
    } else if (key == "normalize") {
      want(v.is_boolean(), "true or false");
      c.normalize = v.get<bool>();
    } else if (key == "patch_norm") {
      want(v.is_boolean(), "true or false");
      c.patch_norm = v.get<bool>();
    } else if (key == "use_v2") {
      want(v.is_boolean(), "true or false");
      c.use_v2 = v.get<bool>();
    } else if (key == "downsample") {
      want(v.is_string(), "a string");
      c.downsample = detail::parse_merge_order(v.get<std::string>(), where);
    } else if (key == "spatial_dims") {
      if (v != 3) detail::fail(where, ": spatial_dims ", v.dump(), " is not supported (only 3-D)");
    } else if (key == "norm_name") {
      const bool instance = (v.is_string() && v == "instance") ||
                            (v.is_array() && !v.empty() && v[0] == "instance" &&
                             (v.size() == 1 || (v[1].is_object() && v[1].empty())));
      if (!instance) {
        detail::fail(where, ": norm_name ", v.dump(), " is not supported; swinfer implements MONAI's default "
                     "\"instance\" (InstanceNorm3d without affine)");
      }
    } else {
      detail::fail(where, ": unknown SwinUNETR argument '", key, "'");
    }
  }
  for (const auto& key : fusion_keys) {
    if (!j->contains(key)) continue;
    if (!c.is_fusion()) {
      detail::fail(where, ": '", key, "' is a Swin Fusion UNETR option; add \"arch\": \"SwinFusionUNETR\"");
    }
    const auto& v = (*j)[key];
    auto want = [&](bool ok, const char* what) {
      if (!ok) detail::fail(where, ": '", key, "' must be ", what, ", got ", v.dump());
    };
    if (key == "variant") {
      want(v.is_string(), "a string");
      c.fusion.variant = detail::parse_fusion_variant(v.get<std::string>(), where);
    } else if (key == "skip_pool") {
      want(v.is_string(), "a string");
      c.fusion.pool = detail::parse_skip_pool(v.get<std::string>(), where);
    } else if (key == "final_kernel_size") {
      want(v.is_number_integer(), "an integer");
      c.fusion.final_kernel_size = v.get<int>();
    } else {
      c.fusion.branch_channels = detail::int_or_array<5>(v, key, where);
    }
  }
  c.validate();
  return c;
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

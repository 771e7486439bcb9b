// Test helpers for tests/inference: the MONAI goldens of tools/goldens/make_sliding_window_goldens.py, the input
// formula and the window-position-dependent predictor it uses, reproduced bit-exactly.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "swinfer/core/tensor.hpp"
#include "swinfer/inference/sliding_window.hpp"
#include "swinfer/io/npy.hpp"
#include "test_data.hpp"

namespace swinfer_test {

inline std::filesystem::path sliding_window_data() {
  return test_data_dir() / "sliding_window";
}

inline const nlohmann::json& sliding_window_manifest() {
  static const nlohmann::json manifest = [] {
    std::ifstream f(sliding_window_data() / "cases.json");
    if (!f) throw std::runtime_error("missing " + (sliding_window_data() / "cases.json").string());
    return nlohmann::json::parse(f);
  }();
  return manifest;
}

inline swinfer::shape5 shape_of(const std::vector<std::int64_t>& s) {
  return {s.at(0), s.at(1), s.at(2), s.at(3), s.at(4)};
}

/// A stored golden (any rank <= 5, padded with leading 1s) as an ncdhw tensor.
inline swinfer::tensor<float> load_golden(const std::string& name) {
  auto a = swinfer::read_npy(sliding_window_data() / (name + ".npy"));
  std::vector<std::int64_t> s(5 - a.shape.size(), 1);
  s.insert(s.end(), a.shape.begin(), a.shape.end());
  swinfer::tensor<float> t(shape_of(s), swinfer::layout_kind::ncdhw);
  std::copy(a.data.begin(), a.data.end(), t.data());
  return t;
}

/// The generator's input_formula: a lowbias32 hash of the flat C-order index, mapped exactly to [-1, 1).
inline float formula_value(std::uint32_t index, std::uint32_t seed) {
  std::uint32_t z = index * 0x9E3779B1u + seed * 0x85EBCA77u;
  z ^= z >> 16;
  z *= 0x7FEB352Du;
  z ^= z >> 15;
  z *= 0x846CA68Bu;
  z ^= z >> 16;
  return static_cast<float>(static_cast<std::int32_t>(z >> 8) - (1 << 23)) / static_cast<float>(1 << 23);
}

inline swinfer::tensor<float> formula_tensor(const swinfer::shape5& s, std::uint32_t seed,
                                             swinfer::layout_kind layout = swinfer::layout_kind::ncdhw) {
  swinfer::tensor<float> t(s, layout);
  std::uint32_t i = 0;
  for (std::int64_t n = 0; n < s.n; ++n)
    for (std::int64_t c = 0; c < s.c; ++c)
      for (std::int64_t z = 0; z < s.d; ++z)
        for (std::int64_t y = 0; y < s.h; ++y)
          for (std::int64_t x = 0; x < s.w; ++x) t(n, c, z, y, x) = formula_value(i++, seed);
  return t;
}

/// The generator's predictor: output k = A[k] x[k % C] + B[k] z/rd + C[k] (y/rh)(x/rw) [+ D[k] condition[k % C]],
/// with window-local coordinates, so a window placed wrongly changes the result.
struct formula_predictor {
  std::int64_t channels = 2;
  swinfer::layout_kind output_layout = swinfer::layout_kind::ncdhw;
  std::int64_t calls = 0;

  swinfer::tensor<float> operator()(const swinfer::tensor<float>& x) { return run(x, nullptr); }
  swinfer::tensor<float> operator()(const swinfer::tensor<float>& x, const swinfer::tensor<float>& condition) {
    return run(x, &condition);
  }

 private:
  swinfer::tensor<float> run(const swinfer::tensor<float>& in, const swinfer::tensor<float>* condition) {
    ++calls;
    const auto& co = sliding_window_manifest().at("coefficients");
    const auto a = co.at("A").get<std::vector<float>>(), b = co.at("B").get<std::vector<float>>(),
               c = co.at("C").get<std::vector<float>>(), d = co.at("D").get<std::vector<float>>();
    const swinfer::shape5& s = in.shape();
    swinfer::tensor<float> out({s.n, channels, s.d, s.h, s.w}, output_layout);
    for (std::int64_t n = 0; n < s.n; ++n)
      for (std::int64_t k = 0; k < channels; ++k)
        for (std::int64_t z = 0; z < s.d; ++z)
          for (std::int64_t y = 0; y < s.h; ++y)
            for (std::int64_t x = 0; x < s.w; ++x) {
              const auto ku = static_cast<std::size_t>(k);
              const float zz = static_cast<float>(z) / static_cast<float>(s.d);
              const float yx = (static_cast<float>(y) / static_cast<float>(s.h)) *
                               (static_cast<float>(x) / static_cast<float>(s.w));
              float v = a[ku] * in(n, k % s.c, z, y, x) + b[ku] * zz + c[ku] * yx;
              if (condition) v = v + d[ku] * (*condition)(n, k % s.c, z, y, x);
              out(n, k, z, y, x) = v;
            }
    return out;
  }
};

/// A JSON number or list as a per-axis option.
template <class T>
swinfer::per_axis<T> per_axis_of(const nlohmann::json& j) {
  if (j.is_array()) return swinfer::per_axis<T>(j.get<std::vector<T>>());
  return swinfer::per_axis<T>(j.get<T>());
}

/// The sliding-window options of a golden case.
inline swinfer::sliding_window_options case_options(const nlohmann::json& c) {
  swinfer::sliding_window_options o;
  o.roi = per_axis_of<std::int64_t>(c.at("roi"));
  o.overlap = per_axis_of<double>(c.at("overlap"));
  o.sw_batch_size = c.at("sw_batch_size").get<std::int64_t>();
  o.mode = c.at("mode") == "gaussian" ? swinfer::blend_mode::gaussian : swinfer::blend_mode::constant;
  if (c.contains("sigma_scale")) o.sigma_scale = per_axis_of<double>(c.at("sigma_scale"));
  const std::string pad = c.value("padding_mode", "constant");
  o.padding_mode = pad == "replicate" ? swinfer::pad_mode::replicate
                   : pad == "reflect" ? swinfer::pad_mode::reflect
                   : pad == "circular" ? swinfer::pad_mode::circular
                                       : swinfer::pad_mode::constant;
  o.cval = c.value("cval", 0.0f);
  return o;
}

}  // namespace swinfer_test

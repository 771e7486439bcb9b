// Loads a MONAI golden case (tests/data/goldens/<name>): weights regenerated from the formula the Python
// generator used (or a real torch.save checkpoint), the input, MONAI's logits and optional intermediates.
#pragma once

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <swinfer/core/tensor.hpp>
#include <swinfer/io/checkpoint.hpp>
#include <swinfer/io/npy.hpp>
#include <swinfer/model/config_json.hpp>
#include <swinfer/model/weights_check.hpp>

#include "formula_weights.hpp"
#include "test_data.hpp"

namespace swinfer_test {

/// The backends on this machine's CPU in this build: cpu, and onednn where it is built.
inline std::vector<std::string> cpu_backends() {
#ifdef SWINFER_HAS_ONEDNN
  return {"cpu", "onednn"};
#else
  return {"cpu"};
#endif
}

inline std::filesystem::path goldens_dir() { return test_data_dir() / "goldens"; }

/// MONAI's relative_position_index for a configured window, written here independently of the library.
inline std::vector<std::int64_t> monai_relative_index(const std::vector<std::int64_t>& window) {
  const auto a = window[0], b = window[1], c = window[2];
  const auto n = a * b * c;
  std::vector<std::int64_t> out(static_cast<std::size_t>(n * n));
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      const std::int64_t dz = i / (b * c) - j / (b * c) + a - 1, dy = (i / c) % b - (j / c) % b + b - 1,
                         dx = i % c - j % c + c - 1;
      out[static_cast<std::size_t>(i * n + j)] = dz * (2 * b - 1) * (2 * c - 1) + dy * (2 * c - 1) + dx;
    }
  return out;
}

inline swinfer::tensor<float> to_tensor(const std::vector<std::int64_t>& shape, const std::vector<float>& data) {
  swinfer::tensor<float> t({shape.at(0), shape.at(1), shape.at(2), shape.at(3), shape.at(4)}, swinfer::layout_kind::ncdhw);
  std::copy(data.begin(), data.end(), t.data());
  return t;
}

struct golden_case {
  std::string name;
  nlohmann::json meta;
  swinfer::state_dict weights;
  swinfer::swin_unetr_config config;
  swinfer::tensor<float> input;
  swinfer::tensor<float> logits;

  explicit golden_case(const std::string& case_name) : name(case_name) {
    const auto dir = goldens_dir() / name;
    std::ifstream f(dir / "case.json");
    if (!f) throw std::runtime_error("missing golden case " + (dir / "case.json").string());
    f >> meta;
    if (std::filesystem::exists(dir / "model.pt")) {
      weights = swinfer::load_checkpoint((dir / "model.pt").string());
    } else {
      for (const auto& t : meta.at("tensors")) {
        swinfer::weight w;
        w.shape = t.at("shape").get<std::vector<std::int64_t>>();
        if (t.at("role") == "relative_position_index") {
          w.source = swinfer::dtype::i64;
          const auto cfg_window = meta.at("config").value("window_size", nlohmann::json(7));
          std::vector<std::int64_t> window = cfg_window.is_array() ? cfg_window.get<std::vector<std::int64_t>>()
                                                                   : std::vector<std::int64_t>(3, cfg_window.get<std::int64_t>());
          w.indices = monai_relative_index(window);
        } else {
          w.values = formula_tensor(t.at("key").get<std::string>(), static_cast<std::size_t>(w.numel()),
                                    t.at("offset").get<float>(), t.at("scale").get<float>());
        }
        weights.insert(t.at("key").get<std::string>(), std::move(w));
      }
    }
    config = swinfer::config_from_json(meta.at("config"), (dir / "case.json").string(), swinfer::infer_config(weights));
    const auto& in = meta.at("input");
    const auto shape = in.at("shape").get<std::vector<std::int64_t>>();
    std::int64_t numel = 1;
    for (auto s : shape) numel *= s;
    input = to_tensor(shape, formula_tensor("input", static_cast<std::size_t>(numel), in.at("offset").get<float>(),
                                            in.at("scale").get<float>()));
    const auto out = swinfer::read_npy((dir / "logits.npy").string());
    logits = to_tensor(out.shape, out.data);
  }

  /// An intermediate MONAI output saved for this case, if any.
  std::optional<swinfer::tensor<float>> intermediate(const std::string& stage) const {
    const auto path = goldens_dir() / name / "intermediates" / (stage + ".npy");
    if (!std::filesystem::exists(path)) return std::nullopt;
    const auto a = swinfer::read_npy(path.string());
    return to_tensor(a.shape, a.data);
  }
};

}  // namespace swinfer_test

// swinfer: one call from a checkpoint file (and an optional config file) to weights plus a checked configuration.
#pragma once

#include <memory>
#include <string>

#include "swinfer/io/checkpoint.hpp"
#include "swinfer/model/config_json.hpp"
#include "swinfer/model/int8_calibration.hpp"
#include "swinfer/model/int8_model_file.hpp"
#include "swinfer/model/weights_check.hpp"

namespace swinfer {

/// \brief A checkpoint's tensors and the configuration they are used with.
struct loaded_model {
  state_dict weights;
  swin_unetr_config config;
  std::string path;
  /// False when every option came from the tensors (normalize and downsample then keep MONAI 1.5 defaults); true
  /// with a config file or an int8 model file (which records its configuration).
  bool config_from_file = false;
  /// An int8 model file's own calibration (`swinfer quantize`; engine_options::calibration for precision::int8);
  /// empty for a float checkpoint.
  std::shared_ptr<const int8_calibration> calibration;
};

/// Loads a .pt/.pth (torch.save) or .safetensors checkpoint. Options the tensors determine are inferred; a config
/// file (MONAI argument names or a bundle network_def) overrides or adds to them. Every key and shape is then
/// checked against the result, so a mismatch is an error naming the tensor and both shapes. An int8 model file
/// (int8_model_file.hpp) loads as its weights, the configuration it was written with and its calibration.
inline loaded_model load_model(const std::string& model_path, const std::string& config_path = "") {
  loaded_model m;
  m.path = model_path;
  safetensors_contents file = read_checkpoint(model_path);
  if (int8_model_file::holds(file.metadata)) {
    int8_model_contents int8 = read_int8_model(file, model_path);
    m.weights = std::move(int8.weights);
    m.config = int8.config;
    m.config_from_file = true;
    m.calibration = std::make_shared<const int8_calibration>(std::move(int8.calibration));
  } else {
    m.weights = std::move(file.tensors);
    m.config = infer_config(m.weights);
  }
  if (!config_path.empty()) {
    m.config = load_config(config_path, m.config);
    m.config_from_file = true;
  }
  check_weights(m.config, m.weights, model_path);
  return m;
}

}  // namespace swinfer

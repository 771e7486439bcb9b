// swinfer CLI: the preprocessing flags that segment and calibrate share (MONAI transforms in their usual order),
// or a pipeline JSON that replaces them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <swinfer/preprocess/pipeline.hpp>

namespace swinfer_tool {

struct preprocess_flags {
  std::string pipeline;
  std::string orientation;
  std::vector<double> spacing, intensity_range;
  bool clip = false, normalize = false, nonzero = false, channel_wise = false;
  std::optional<std::int64_t> crop_foreground;

  /// The pipeline the flags describe, or the --pipeline file's.
  swinfer::pipeline_spec spec() const {
    if (!pipeline.empty()) return swinfer::load_pipeline(pipeline);
    swinfer::pipeline_spec spec;
    const std::string where = "command line";
    using json = nlohmann::ordered_json;
    if (!orientation.empty()) spec.steps.push_back(swinfer::parse_preprocess_step("orientation", json(orientation), where));
    if (!spacing.empty()) spec.steps.push_back(swinfer::parse_preprocess_step("spacing", json(spacing), where));
    if (!intensity_range.empty()) {
      if (intensity_range.size() != 4) swinfer::detail::fail("--intensity-range takes a_min,a_max,b_min,b_max");
      const auto& r = intensity_range;
      spec.steps.push_back(swinfer::parse_preprocess_step(
          "scale_intensity_range",
          json{{"a_min", r[0]}, {"a_max", r[1]}, {"b_min", r[2]}, {"b_max", r[3]}, {"clip", clip}}, where));
    }
    if (normalize) {
      spec.steps.push_back(swinfer::parse_preprocess_step(
          "normalize_intensity", json{{"nonzero", nonzero}, {"channel_wise", channel_wise}}, where));
    }
    if (crop_foreground) {
      spec.steps.push_back(swinfer::parse_preprocess_step("crop_foreground", json{{"margin", *crop_foreground}}, where));
    }
    return spec;
  }
};

/// Adds --pipeline, --orientation, --spacing, --intensity-range, --clip, --normalize, --nonzero, --channel-wise and
/// --crop-foreground in option group `group`.
inline void add_preprocess_options(CLI::App& cmd, preprocess_flags& f, const std::string& group) {
  cmd.add_option("--pipeline", f.pipeline, "pipeline JSON (replaces the flags below)")->check(CLI::ExistingFile)->group(group);
  cmd.add_option("--orientation", f.orientation, "Orientation axcodes, e.g. RAS")->group(group);
  cmd.add_option("--spacing", f.spacing, "Spacing pixdim in mm, e.g. 1.5,1.5,2")->delimiter(',')->group(group);
  cmd.add_option("--intensity-range", f.intensity_range, "ScaleIntensityRange a_min,a_max,b_min,b_max")
      ->delimiter(',')
      ->group(group);
  cmd.add_flag("--clip", f.clip, "clip after ScaleIntensityRange")->group(group);
  cmd.add_flag("--normalize", f.normalize, "NormalizeIntensity")->group(group);
  cmd.add_flag("--nonzero", f.nonzero, "NormalizeIntensity over non-zero voxels only")->group(group);
  cmd.add_flag("--channel-wise", f.channel_wise, "NormalizeIntensity per channel")->group(group);
  cmd.add_option("--crop-foreground", f.crop_foreground, "CropForeground with this margin")->group(group);
}

}  // namespace swinfer_tool

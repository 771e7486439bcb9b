// swinfer segment: NIfTI in, MONAI-exact preprocessing and sliding window, label mask out on the input's grid.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>

#include <nlohmann/json.hpp>
#include <swinfer/core/memory.hpp>
#include <swinfer/core/value_range.hpp>
#include <swinfer/inference/label_metrics.hpp>
#include <swinfer/inference/postprocess.hpp>
#include <swinfer/inference/sliding_window.hpp>
#include <swinfer/io/atomic_file.hpp>
#include <swinfer/io/nifti.hpp>
#include <swinfer/preprocess/pipeline.hpp>
#include <swinfer/swinfer.hpp>

#include "backends.hpp"
#include "commands.hpp"
#include "preview.hpp"
#include "progress.hpp"
#include "window_flags.hpp"

namespace swinfer_cli {
namespace {

namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

struct segment_options {
  model_options model;
  std::vector<std::string> inputs;
  std::string output, logits, probabilities, report, preview, truth, pipeline;
  window_flags window;
  std::string activation = "softmax";
  // Preprocessing from flags (in MONAI's usual order); --pipeline replaces them.
  std::string orientation;
  std::vector<double> spacing, intensity_range;
  bool clip = false, normalize = false, nonzero = false, channel_wise = false, keep_largest = false, quiet = false;
  std::optional<std::int64_t> crop_foreground;
};

/// Classes a softmax mask can hold: its labels are uint8.
constexpr swinfer::value_range<int> softmax_label_range{1, 256};

/// Where one input's outputs go: a file for a single input, `<dir>/<stem><suffix>` when several are run.
struct output_paths {
  fs::path mask, logits, probabilities, report, preview;
};

fs::path place(const std::string& option, bool many, const std::string& stem, const std::string& suffix) {
  if (option.empty()) return {};
  if (!many) return option;
  fs::create_directories(option);
  return fs::path(option) / (stem + suffix);
}

std::vector<fs::path> expand_inputs(const std::vector<std::string>& inputs) {
  std::vector<fs::path> files;
  for (const auto& in : inputs) {
    if (fs::is_directory(in)) {
      std::vector<fs::path> found;
      for (const auto& e : fs::directory_iterator(in))
        if (e.is_regular_file() && swinfer::is_nifti_path(e.path())) found.push_back(e.path());
      if (found.empty()) swinfer::detail::fail("input folder '", in, "' holds no .nii or .nii.gz files");
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else {
      files.emplace_back(in);
    }
  }
  return files;
}

swinfer::pipeline_spec pipeline_from_flags(const segment_options& o) {
  if (!o.pipeline.empty()) return swinfer::load_pipeline(o.pipeline);
  swinfer::pipeline_spec spec;
  const std::string where = "command line";
  using json = nlohmann::ordered_json;
  if (!o.orientation.empty()) spec.steps.push_back(swinfer::parse_preprocess_step("orientation", json(o.orientation), where));
  if (!o.spacing.empty()) spec.steps.push_back(swinfer::parse_preprocess_step("spacing", json(o.spacing), where));
  if (!o.intensity_range.empty()) {
    if (o.intensity_range.size() != 4) swinfer::detail::fail("--intensity-range takes a_min,a_max,b_min,b_max");
    const auto& r = o.intensity_range;
    spec.steps.push_back(swinfer::parse_preprocess_step(
        "scale_intensity_range", json{{"a_min", r[0]}, {"a_max", r[1]}, {"b_min", r[2]}, {"b_max", r[3]}, {"clip", o.clip}},
        where));
  }
  if (o.normalize) {
    spec.steps.push_back(swinfer::parse_preprocess_step(
        "normalize_intensity", json{{"nonzero", o.nonzero}, {"channel_wise", o.channel_wise}}, where));
  }
  if (o.crop_foreground) {
    spec.steps.push_back(swinfer::parse_preprocess_step("crop_foreground", json{{"margin", *o.crop_foreground}}, where));
  }
  return spec;
}

double peak_memory_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

/// Refuses, before any work, a volume whose buffers would not fit: the image and its copy, the preprocessed image,
/// the sliding window's padded input, blended logits and their softmax on the network grid, then the inverted
/// probabilities and logits and the mask on the input grid. The grids come from the plans (the preprocessing plan is
/// an upper bound where CropForeground depends on the voxels).
void check_memory(const fs::path& input, const swinfer::shape5& s, const swinfer::preprocessing_plan& plan,
                  const swinfer::sliding_window_options& window, std::int64_t classes) {
  const auto& net = plan.grid.shape;
  const auto grid = swinfer::detail::padded_grid({1, s.c, net[0], net[1], net[2]}, window);
  const double padded = static_cast<double>(grid[0]) * static_cast<double>(grid[1]) * static_cast<double>(grid[2]);
  const double voxels = static_cast<double>(s.d) * static_cast<double>(s.h) * static_cast<double>(s.w);
  const double c = static_cast<double>(s.c), k = static_cast<double>(classes);
  const double need = 4.0 * (2.0 * c * voxels + c * plan.largest_voxels + c * padded + 2.0 * k * padded +
                             2.0 * k * voxels) + k * voxels;
  swinfer::detail::require_memory(
      need, swinfer::detail::concat(input.string(), ": a ", s.d, "x", s.h, "x", s.w, " volume (network grid ", net[0],
                                    "x", net[1], "x", net[2], ")"),
      "; crop it, resample it coarser (--spacing) or free memory");
}

/// Channel c of (1, K, D, H, W) masks as a (1, 1, D, H, W) label map.
swinfer::tensor<std::uint8_t> channel(const swinfer::tensor<std::uint8_t>& mask, std::int64_t c) {
  const auto& s = mask.shape();
  swinfer::tensor<std::uint8_t> out({1, 1, s.d, s.h, s.w}, swinfer::layout_kind::ncdhw);
  for (std::int64_t z = 0; z < s.d; ++z)
    for (std::int64_t y = 0; y < s.h; ++y)
      for (std::int64_t x = 0; x < s.w; ++x) out(0, 0, z, y, x) = mask(0, c, z, y, x);
  return out;
}

/// For the preview of per-channel masks: the highest channel that is on, as label c + 1 (nested regions such as
/// BraTS's show their innermost part).
swinfer::tensor<std::uint8_t> highest_channel_on(const swinfer::tensor<std::uint8_t>& mask) {
  swinfer::tensor<std::uint8_t> out = channel(mask, 0);
  for (std::int64_t c = 1; c < mask.shape().c; ++c) {
    const auto on = channel(mask, c);
    for (std::int64_t i = 0; i < out.size(); ++i)
      if (on.data()[i]) out.data()[i] = static_cast<std::uint8_t>(c + 1);
  }
  return out;
}

nlohmann::json segment_one(const segment_options& o, swinfer::network& net, const swinfer::pipeline_spec& pipeline,
                           const fs::path& input, const output_paths& out, int threads) {
  const auto t0 = clock_type::now();
  auto seconds = [](clock_type::time_point a, clock_type::time_point b) { return std::chrono::duration<double>(b - a).count(); };
  const swinfer::nifti_volume volume = swinfer::read_nifti(input);
  const auto& config = net.config();
  if (volume.channels() != config.in_channels) {
    swinfer::detail::fail(input.string(), ": the image has ", volume.channels(), " channel(s) but the model takes ",
                          config.in_channels, " (in_channels)");
  }
  const auto options = o.window.options(threads);
  swinfer::spatial_image image{volume.data.clone(), swinfer::affine_from_rows(volume.affine())};
  check_memory(input, volume.data.shape(), swinfer::check_preprocessing(pipeline, image, input.string()), options,
               config.out_channels);
  const auto t1 = clock_type::now();

  const auto prepared = swinfer::preprocess(std::move(image), pipeline);
  const auto t2 = clock_type::now();

  const auto grid = swinfer::sliding_window_grid(prepared.image.data.shape(), options);
  const std::int64_t windows = grid.count();
  progress_bar bar("  " + input.filename().string(), windows, "windows", o.quiet);
  const auto on_progress = [&](std::int64_t done, std::int64_t) { bar.update(done); };
  // As MONAI's bundles: activation, invert the spatial steps (bilinear), then argmax (softmax: one label map) or
  // threshold 0.5 (sigmoid: one binary mask per channel, for overlapping multi-label models such as BraTS). With
  // softmax, nothing to invert and no probabilities asked for, the backend takes the argmax itself (on the GPU for
  // hip: only the labels, and the logits when asked, come back).
  const bool multi_label = o.activation == "sigmoid";
  const bool labels_on_backend = !multi_label && prepared.applied.empty() && out.probabilities.empty();
  swinfer::tensor<float> logits;
  swinfer::tensor<std::uint8_t> mask;
  swinfer::spatial_image probabilities;
  if (labels_on_backend) {
    mask = net.segment_volume(prepared.image.data, options, on_progress, out.logits.empty() ? nullptr : &logits);
  } else {
    logits = net.infer_volume(prepared.image.data, options, on_progress);
  }
  const auto t3 = clock_type::now();

  if (!labels_on_backend) {
    const swinfer::tensor<float> probabilities_net =
        multi_label ? swinfer::sigmoid(logits, threads) : swinfer::softmax_channels(logits, threads);
    probabilities = prepared.invert(probabilities_net, swinfer::interpolation::bilinear);
    mask = multi_label ? swinfer::threshold_channels(probabilities.data, 0.5f, threads)
                       : swinfer::argmax_channels<std::uint8_t>(probabilities.data, threads);
  }
  if (o.keep_largest) swinfer::keep_largest_connected_component(mask);
  const auto t4 = clock_type::now();

  swinfer::write_nifti(out.mask, mask, volume, swinfer::nifti_datatype::uint8);
  if (!out.logits.empty()) {
    const auto inverted = prepared.invert(logits, swinfer::interpolation::bilinear);
    swinfer::write_nifti(out.logits, inverted.data, volume, swinfer::nifti_datatype::float32);
  }
  if (!out.probabilities.empty()) {
    swinfer::write_nifti(out.probabilities, probabilities.data, volume, swinfer::nifti_datatype::float32);
  }
  if (!out.preview.empty()) {
    const auto affine = swinfer::affine_from_rows(volume.affine());
    if (multi_label) {
      write_preview_png(out.preview, volume.data, highest_channel_on(mask), affine);
    } else {
      write_preview_png(out.preview, volume.data, mask, affine);
    }
  }
  const auto t5 = clock_type::now();

  const auto spacing = volume.spacing();
  nlohmann::json labels = nlohmann::json::array();
  if (multi_label) {
    for (std::int64_t c = 0; c < mask.shape().c; ++c) {
      for (const auto& v : swinfer::label_volumes(channel(mask, c), spacing)) {
        if (v.label == 1) labels.push_back({{"label", c + 1}, {"channel", c}, {"voxels", v.voxels}, {"volume_ml", v.millilitres}});
      }
    }
  } else {
    for (const auto& v : swinfer::label_volumes(mask, spacing)) {
      labels.push_back({{"label", v.label}, {"voxels", v.voxels}, {"volume_ml", v.millilitres}});
    }
  }
  const auto dims = volume.dims();
  const auto& net_shape = prepared.image.data.shape();
  nlohmann::json report = {
      {"input", input.string()},
      {"output", out.mask.string()},
      {"image", {{"shape", dims}, {"channels", volume.channels()}, {"spacing_mm", spacing},
                 {"orientation", swinfer::axcodes_of(swinfer::affine_from_rows(volume.affine()))}}},
      {"network_grid", {{"shape", {net_shape.d, net_shape.h, net_shape.w}}}},
      {"engine", {{"backend", net.description()}, {"device", net.device()}}},
      {"sliding_window", {{"roi", grid.roi}, {"overlap", o.window.overlap}, {"sw_batch_size", o.window.sw_batch},
                          {"mode", o.window.blend}, {"windows", windows}}},
      {"timings_s", {{"read", seconds(t0, t1)}, {"preprocess", seconds(t1, t2)}, {"inference", seconds(t2, t3)},
                     {"postprocess", seconds(t3, t4)}, {"write", seconds(t4, t5)}, {"total", seconds(t0, t5)}}},
      {"seconds_per_window", seconds(t2, t3) / static_cast<double>(std::max<std::int64_t>(windows, 1))},
      {"peak_memory_mib", peak_memory_mib()},
      {"labels", labels}};
  if (!o.truth.empty()) {
    if (multi_label) swinfer::detail::fail("--truth compares label maps; it does not apply with --activation sigmoid");
    const auto truth = swinfer::read_nifti(o.truth);
    std::map<int, double> scores;
    try {
      scores = swinfer::dice_per_label(mask, truth.data);
    } catch (const swinfer::error& e) {
      swinfer::detail::fail(o.truth, ": ", e.what());  // which file is off the grid
    }
    nlohmann::json dice = nlohmann::json::object();
    for (const auto& [label, d] : scores) dice[std::to_string(label)] = d;
    report["dice"] = dice;
  }
  if (!out.report.empty()) {
    swinfer::write_stream_atomically(out.report, [&](std::ostream& file) { file << report.dump(2) << "\n"; });
  }
  return report;
}

void print_summary(const nlohmann::json& r) {
  char part[128];
  std::snprintf(part, sizeof part, ": %lld windows in %.2f s (total %.2f s)",
                static_cast<long long>(r["sliding_window"]["windows"].get<std::int64_t>()),
                r["timings_s"]["inference"].get<double>(), r["timings_s"]["total"].get<double>());
  std::string line = "  -> " + r["output"].get<std::string>() + part;
  for (const auto& l : r["labels"]) {
    if (l["label"] == 0) continue;
    std::snprintf(part, sizeof part, "; label %lld: %.2f mL", static_cast<long long>(l["label"].get<std::int64_t>()),
                  l["volume_ml"].get<double>());
    line += part;
  }
  if (r.contains("dice")) {
    for (const auto& [label, d] : r["dice"].items()) {
      std::snprintf(part, sizeof part, "; Dice[%s] %.4f", label.c_str(), d.get<double>());
      line += part;
    }
  }
  std::fprintf(stderr, "%s\n", line.c_str());
}

void run_segment(const segment_options& o) {
  if (o.activation == "sigmoid" && o.keep_largest) {
    swinfer::detail::fail("--keep-largest cleans a label map; it does not apply with --activation sigmoid");
  }
  const auto files = expand_inputs(o.inputs);
  const bool many = files.size() > 1;
  if (!many && fs::is_directory(o.output)) swinfer::detail::fail("--output '", o.output, "' is a folder; give a file name");
  const auto pipeline = pipeline_from_flags(o);
  const auto loaded = swinfer::load_model(o.model.model, o.model.config);
  if (o.activation == "softmax") {  // refused now rather than after the inference: the mask holds one uint8 label
    swinfer::detail::require_in_range(loaded.config.out_channels, softmax_label_range, o.model.model, "out_channels",
                                      " (a softmax mask holds labels 0..255; use --activation sigmoid)");
  }
  auto net = make_network({o.model.backend, o.model.precision, o.model.layout}, loaded.config, loaded.weights,
                          o.model.engine(), o.model.model);
  if (!o.quiet) {
    std::fprintf(stderr, "swinfer segment: %zu input(s), model %s on %s (%s)\n", files.size(),
                 o.model.model.c_str(), net->description().c_str(), net->device().c_str());
  }
  int failed = 0;
  for (const auto& file : files) {
    const std::string stem = swinfer::nifti_stem(file);
    const output_paths out{place(o.output, many, stem, "_seg.nii.gz"), place(o.logits, many, stem, "_logits.nii.gz"),
                           place(o.probabilities, many, stem, "_probabilities.nii.gz"),
                           place(o.report, many, stem, "_report.json"), place(o.preview, many, stem, "_preview.png")};
    try {
      const auto report = segment_one(o, *net, pipeline, file, out, o.model.threads);
      if (!o.quiet) print_summary(report);
    } catch (const std::exception& e) {
      ++failed;
      std::fprintf(stderr, "swinfer: error: %s\n", e.what());
      if (!many) throw swinfer::error("segmentation failed");
    }
  }
  if (failed) swinfer::detail::fail(failed, " of ", files.size(), " inputs failed (see the errors above)");
}

}  // namespace

void add_segment_command(CLI::App& app) {
  auto o = std::make_shared<segment_options>();
  CLI::App* cmd = app.add_subcommand("segment", "segment NIfTI volumes: preprocessing, sliding window, mask on the input grid");
  add_model_options(*cmd, o->model, true);
  cmd->add_option("--input,-i", o->inputs, "NIfTI file(s) or folder(s) of .nii/.nii.gz")->required();
  cmd->add_option("--output,-o", o->output, "mask .nii.gz (uint8; 4-D with --activation sigmoid); a folder when several inputs are given")->required();
  cmd->add_option("--logits", o->logits, "also write float32 logits, classes in the 4th dimension, on the input grid");
  cmd->add_option("--probabilities", o->probabilities, "also write softmax probabilities on the input grid");
  cmd->add_option("--report", o->report, "JSON report: timings, windows, peak memory, volume per label");
  cmd->add_option("--preview", o->preview, "PNG of the three mid-planes with the mask overlaid");
  cmd->add_option("--truth", o->truth, "reference mask on the same grid: Dice per label goes to the summary and report")
      ->check(CLI::ExistingFile);
  auto* sw = "Sliding window";
  add_window_options(*cmd, o->window, sw);
  cmd->add_option("--activation", o->activation,
                  "softmax: one label map by argmax (default); sigmoid: one 0/1 mask per channel (4-D), threshold 0.5")
      ->check(CLI::IsMember({"softmax", "sigmoid"}))->group(sw);
  cmd->add_flag("--keep-largest", o->keep_largest, "keep only the largest connected component of each label")->group(sw);
  auto* pre = "Preprocessing (MONAI transforms; inverted on the output)";
  cmd->add_option("--pipeline", o->pipeline, "pipeline JSON (replaces the flags below)")->check(CLI::ExistingFile)->group(pre);
  cmd->add_option("--orientation", o->orientation, "Orientation axcodes, e.g. RAS")->group(pre);
  cmd->add_option("--spacing", o->spacing, "Spacing pixdim in mm, e.g. 1.5,1.5,2")->delimiter(',')->group(pre);
  cmd->add_option("--intensity-range", o->intensity_range, "ScaleIntensityRange a_min,a_max,b_min,b_max")->delimiter(',')->group(pre);
  cmd->add_flag("--clip", o->clip, "clip after ScaleIntensityRange")->group(pre);
  cmd->add_flag("--normalize", o->normalize, "NormalizeIntensity")->group(pre);
  cmd->add_flag("--nonzero", o->nonzero, "NormalizeIntensity over non-zero voxels only")->group(pre);
  cmd->add_flag("--channel-wise", o->channel_wise, "NormalizeIntensity per channel")->group(pre);
  cmd->add_option("--crop-foreground", o->crop_foreground, "CropForeground with this margin")->group(pre);
  cmd->add_flag("--quiet,-q", o->quiet, "no progress or summary");
  cmd->callback([o] { run_segment(*o); });
}

}  // namespace swinfer_cli

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
#include <swinfer/runtime/backends.hpp>

#include "batch.hpp"
#include "commands.hpp"
#include "json_text.hpp"
#include "preprocess_flags.hpp"
#include "preview.hpp"
#include "progress.hpp"
#include "window_flags.hpp"

namespace swinfer_tool {
namespace {

namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

double seconds_between(clock_type::time_point a, clock_type::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

struct segment_options {
  model_options model;
  std::vector<std::string> inputs;
  std::string output, logits, probabilities, report, preview, truth;
  window_flags window;
  std::string activation = "softmax";
  preprocess_flags preprocess;
  bool keep_largest = false, quiet = false;
  batch::batch_flags batch;
};

/// Classes a softmax mask can hold: its labels are uint8.
constexpr swinfer::value_range<int> softmax_label_range{1, 256};

/// Where one input's outputs go: a file for a single input, `<dir>/<stem><suffix>` in a batch.
struct output_paths {
  fs::path mask, logits, probabilities, report, preview;

  /// The files written, the mask first.
  std::vector<fs::path> files() const {
    std::vector<fs::path> written;
    for (const auto* p : {&mask, &logits, &probabilities, &report, &preview})
      if (!p->empty()) written.push_back(*p);
    return written;
  }
};

fs::path place(const std::string& option, bool many, const std::string& stem, const std::string& suffix) {
  if (option.empty()) return {};
  if (!many) return option;
  fs::create_directories(option);
  return fs::path(option) / (stem + suffix);
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
  const bool on_gpu = net.description().rfind("hip/", 0) == 0;
  if (on_gpu) swinfer::runtime::reset_gpu_memory_peak();  // this volume's peak, not the previous one's
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
      {"timings_s", {{"read", seconds_between(t0, t1)},
                     {"preprocess", seconds_between(t1, t2)},
                     {"inference", seconds_between(t2, t3)},
                     {"postprocess", seconds_between(t3, t4)},
                     {"write", seconds_between(t4, t5)},
                     {"total", seconds_between(t0, t5)}}},
      {"seconds_per_window", seconds_between(t2, t3) / static_cast<double>(std::max<std::int64_t>(windows, 1))},
      {"peak_memory_mib", peak_memory_mib()},
      {"labels", labels}};
  if (on_gpu) report["device_peak_memory_mib"] = swinfer::runtime::gpu_memory_peak_mib();
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
    swinfer::write_stream_atomically(out.report, [&](std::ostream& file) { file << json_text(report, 2) << "\n"; });
  }
  return report;
}

void print_summary(const nlohmann::json& r) {
  char part[256];
  const auto& t = r["timings_s"];
  const auto windows = static_cast<long long>(r["sliding_window"]["windows"].get<std::int64_t>());
  std::snprintf(part, sizeof part,
                ": %.2f s (read %.2f, preprocess %.2f, sliding window %.2f for %lld windows, postprocess %.2f, "
                "write %.2f)",
                t["total"].get<double>(), t["read"].get<double>(), t["preprocess"].get<double>(),
                t["inference"].get<double>(), windows, t["postprocess"].get<double>(), t["write"].get<double>());
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

/// In a batch the per-volume report is the volume's entry in the batch report (--report), not a file of its own.
output_paths outputs_for(const segment_options& o, bool many, const fs::path& input) {
  const std::string stem = swinfer::nifti_stem(input);
  return {place(o.output, many, stem, "_seg.nii.gz"), place(o.logits, many, stem, "_logits.nii.gz"),
          place(o.probabilities, many, stem, "_probabilities.nii.gz"), many ? fs::path() : fs::path(o.report),
          place(o.preview, many, stem, "_preview.png")};
}

/// A batch worker's model: built once from the checkpoint the process has loaded, then volume after volume.
class model_segmenter final : public batch::volume_segmenter {
 public:
  /// `read_seconds`: how long reading the checkpoint took (once per process, before the workers start).
  model_segmenter(const segment_options& o, const swinfer::loaded_model& loaded,
                  swinfer::runtime::network_options engine, const swinfer::pipeline_spec& pipeline,
                  const batch::worker_placement& where, bool many, double read_seconds)
      : options_(o), pipeline_(pipeline), threads_(where.threads), many_(many), print_summaries_(!o.quiet) {
    // Window progress bars of several workers would overwrite each other; each volume's summary line stays.
    options_.quiet = o.quiet || where.workers > 1;
    if (o.model.backend == swinfer::tag_name<swinfer::backend::hip>()) {
      batch::use_gpu_of(where);
#ifdef SWINFER_HAS_HIP
      engine.hip = swinfer::runtime::hip_options_from_environment(engine.hip);  // this worker's GPU, just chosen
#endif
    }
    engine.threads = where.threads;
    const auto packing = clock_type::now();
    net_ = swinfer::runtime::make_network({o.model.backend, o.model.precision, o.model.layout}, loaded.config,
                                          loaded.weights, engine, o.model.model);
    const double pack_seconds = seconds_between(packing, clock_type::now());
    if (!o.quiet) {
      const std::string worker = where.workers > 1 ? swinfer::detail::concat(" worker ", where.worker, " on ", where.host, ":") : "";
      std::fprintf(stderr, "swinfer segment:%s model %s on %s (%s), %d thread(s); checkpoint read in %.2f s, weights "
                   "checked and packed in %.2f s\n", worker.c_str(), o.model.model.c_str(), net_->description().c_str(),
                   net_->device().c_str(), where.threads, read_seconds, pack_seconds);
    }
  }

  std::string device() const override { return net_->device(); }

  nlohmann::json segment(const fs::path& input) override {
    auto report = segment_one(options_, *net_, pipeline_, input, outputs_for(options_, many_, input), threads_);
    if (print_summaries_) print_summary(report);
    return report;
  }

 private:
  segment_options options_;
  const swinfer::pipeline_spec& pipeline_;
  int threads_;
  bool many_, print_summaries_;
  std::unique_ptr<swinfer::network> net_;
};

void run_segment(const segment_options& o) {
  if (o.activation == "sigmoid" && o.keep_largest) {
    swinfer::detail::fail("--keep-largest cleans a label map; it does not apply with --activation sigmoid");
  }
  const bool many = batch::is_batch(o.inputs);
  if (!many && fs::is_directory(o.output)) swinfer::detail::fail("--output '", o.output, "' is a folder; give a file name");
  if (many && !o.report.empty() && fs::is_directory(o.report)) {
    swinfer::detail::fail("--report '", o.report, "' is a folder; with several inputs it names one JSON file, the batch "
                          "report, which holds every volume's report");
  }
  const auto pipeline = o.preprocess.spec();
  // Read once per process before any worker starts: --jobs workers share it (copy-on-write after fork).
  const auto reading = clock_type::now();
  const auto loaded = swinfer::load_model(o.model.model, o.model.config);
  const double read_seconds = seconds_between(reading, clock_type::now());
  const swinfer::runtime::network_options engine = o.model.engine(loaded);  // a wrong precision or calibration fails here, once
  if (o.activation == "softmax") {  // refused now rather than after the inference: the mask holds one uint8 label
    swinfer::detail::require_in_range(loaded.config.out_channels, softmax_label_range, o.model.model, "out_channels",
                                      " (a softmax mask holds labels 0..255; use --activation sigmoid)");
  }
  batch::batch_job job;
  job.inputs = o.inputs;
  job.flags = o.batch;
  job.output_folder = many ? fs::path(o.output) : fs::path();
  job.report = many ? fs::path(o.report) : fs::path();
  job.threads = o.model.threads;
  job.quiet = o.quiet;
  job.outputs_of = [&](const fs::path& input) { return outputs_for(o, many, input).files(); };
  job.load_segmenter = [&](const batch::worker_placement& where) {
    return std::make_unique<model_segmenter>(o, loaded, engine, pipeline, where, many, read_seconds);
  };
  const auto outcome = batch::run_batch(job);
  if (outcome.failed == 0) return;
  if (!many) throw swinfer::error("segmentation failed");
  swinfer::detail::fail(outcome.failed, " of ", outcome.volumes, " inputs failed (see the errors above)");
}

}  // namespace

void add_segment_command(CLI::App& app) {
  auto o = std::make_shared<segment_options>();
  CLI::App* cmd = app.add_subcommand("segment", "segment NIfTI volumes: preprocessing, sliding window, mask on the input grid");
  add_model_options(*cmd, o->model, true);
  cmd->add_option("--input,-i", o->inputs, "NIfTI file(s) or folder(s) of .nii/.nii.gz")->required();
  cmd->add_option("--output,-o", o->output, "mask .nii.gz (uint8; 4-D with --activation sigmoid); a folder when the input is a folder or several files")->required();
  cmd->add_option("--logits", o->logits, "also write float32 logits, classes in the 4th dimension, on the input grid");
  cmd->add_option("--probabilities", o->probabilities, "also write softmax probabilities on the input grid");
  cmd->add_option("--report", o->report,
                  "JSON report: timings, windows, peak memory, volume per label; for several inputs one file with every "
                  "volume's report and a summary (done, failed, skipped, volumes per minute, per-worker busy time)");
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
  add_preprocess_options(*cmd, o->preprocess, pre);
  batch::add_batch_options(*cmd, o->batch);
  cmd->add_flag("--quiet,-q", o->quiet, "no progress or summary");
  cmd->callback([o] { run_segment(*o); });
}

}  // namespace swinfer_tool

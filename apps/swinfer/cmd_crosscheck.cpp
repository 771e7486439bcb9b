// swinfer crosscheck: the same model and input on a backend under test and on a reference CPU backend (float32, or
// int8 with the same calibration when int8 is under test); prints the error of every stage output (a .npy input) or
// of the blended logits (a NIfTI volume) and the label agreement, and fails when they are out of tolerance.
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>

#include <swinfer/core/compare.hpp>
#include <swinfer/inference/label_metrics.hpp>
#include <swinfer/inference/postprocess.hpp>
#include <swinfer/inference/sliding_window.hpp>
#include <swinfer/io/nifti.hpp>
#include <swinfer/preprocess/pipeline.hpp>
#include <swinfer/swinfer.hpp>
#include <swinfer/runtime/backends.hpp>

#include "commands.hpp"
#include "progress.hpp"
#include "window_flags.hpp"

namespace swinfer_tool {
namespace {

/// The backends a result can be checked against: the host ones.
using reference_backends = swinfer::tag_list<swinfer::backend::cpu, swinfer::backend::onednn>;

struct crosscheck_options {
  model_options model;
#ifdef SWINFER_HAS_ONEDNN
  std::string reference{swinfer::tag_name<swinfer::backend::onednn>()};
#else
  std::string reference{swinfer::tag_name<swinfer::backend::cpu>()};
#endif
  std::string reference_precision;  ///< empty: fp32, or int8 when int8 is under test
  std::string input, pipeline;
  window_flags window;
  double tolerance = 1e-4, min_agreement = 0.999;
  bool quiet = false;
};

/// What --tolerance and --min-agreement may be: fractions (0 tolerance demands bit-identical logits).
constexpr swinfer::value_range<double> tolerance_range{0.0, 1.0};
constexpr swinfer::value_range<double> agreement_range{0.0, 1.0};

/// One backend's result: logits and labels (on a NIfTI volume the backend's own softmax argmax: the GPU's on hip).
struct result {
  swinfer::tensor<float> logits;
  swinfer::tensor<std::uint8_t> labels;
};

void print_row(const char* stage, const std::string& shape, const swinfer::tensor_difference& d) {
  std::printf("  %-12s %-26s %12.3e %12.3e %12.3e%s\n", stage, shape.c_str(), d.max_abs, d.max_ref, d.relative(),
              d.finite() ? "" : "  NON-FINITE");
}

/// One network pass on both backends; every stage output of the test backend against the reference's.
result run_forward(swinfer::network& test, swinfer::network& reference, const swinfer::tensor<float>& x,
                   result& reference_result) {
  auto stages = std::make_shared<std::map<std::string, swinfer::tensor<float>, std::less<>>>();
  reference.set_observer([stages](std::string_view name, const swinfer::tensor<float>& v) {
    stages->emplace(std::string(name), v.clone());
  });
  reference_result.logits = reference.forward(x);
  reference_result.labels = swinfer::argmax_channels<std::uint8_t>(reference_result.logits);
  reference.set_observer({});
  std::printf("  %-12s %-26s %12s %12s %12s\n", "stage", "shape", "max|diff|", "max|ref|", "relative");
  test.set_observer([stages](std::string_view name, const swinfer::tensor<float>& v) {
    const auto it = stages->find(name);
    if (it == stages->end()) return;
    print_row(it->first.c_str(), v.shape().str(), swinfer::compare_tensors(v, it->second));
    stages->erase(it);  // free it as soon as it has been compared
  });
  result r{test.forward(x), {}};
  test.set_observer({});
  r.labels = swinfer::argmax_channels<std::uint8_t>(r.logits);
  return r;
}

/// A whole volume through the pipeline and the sliding window on both backends: blended logits and each backend's
/// softmax-argmax labels (on hip the windows are gathered, blended and normalised and the argmax taken on the GPU).
result run_volume(const crosscheck_options& o, const swinfer::pipeline_spec& pipeline, swinfer::network& test,
                  swinfer::network& reference, result& reference_result) {
  const auto volume = swinfer::read_nifti(o.input);
  if (volume.channels() != test.config().in_channels) {
    swinfer::detail::fail(o.input, ": the image has ", volume.channels(), " channel(s) but the model takes ",
                          test.config().in_channels, " (in_channels)");
  }
  const auto prepared = swinfer::preprocess(
      swinfer::spatial_image{volume.data.clone(), swinfer::affine_from_rows(volume.affine())}, pipeline);
  const auto options = o.window.options(o.model.threads);
  const auto windows = swinfer::sliding_window_grid(prepared.image.data.shape(), options).count();
  auto run = [&](swinfer::network& net, const std::string& label) {
    progress_bar bar("  " + label, windows, "windows", o.quiet);
    result r;
    r.labels = net.segment_volume(prepared.image.data, options,
                                  [&](std::int64_t done, std::int64_t) { bar.update(done); }, &r.logits);
    return r;
  };
  reference_result = run(reference, reference.description());
  return run(test, test.description());
}

void run_crosscheck(const crosscheck_options& o) {
  // Options first: a bad pipeline is reported before the model is loaded.
  const swinfer::pipeline_spec pipeline = o.pipeline.empty() ? swinfer::pipeline_spec{} : swinfer::load_pipeline(o.pipeline);
  const auto loaded = swinfer::load_model(o.model.model, o.model.config);
  const swinfer::runtime::network_options engine = o.model.engine(loaded);
  auto test = swinfer::runtime::make_network({o.model.backend, o.model.precision, o.model.layout}, loaded.config,
                                             loaded.weights, engine, o.model.model);
  const std::string fp32{swinfer::tag_name<swinfer::precision::fp32>()};
  // int8 is one scheme with the same scales on every backend: by default the reference quantizes too.
  const bool int8 = o.model.precision == swinfer::tag_name<swinfer::precision::int8>();
  const std::string reference_precision = !o.reference_precision.empty() ? o.reference_precision
                                          : int8                          ? o.model.precision
                                                                          : fp32;
  auto reference = swinfer::runtime::make_network(
      {o.reference, reference_precision, std::string(swinfer::tag_name<swinfer::layout::ndhwc>())}, loaded.config,
      loaded.weights, engine, o.model.model);
  std::printf("swinfer crosscheck: %s (%s) against %s on %s\n", test->description().c_str(),
              test->device().c_str(), reference->description().c_str(), o.input.c_str());
  result reference_result;
  const bool volume = swinfer::is_nifti_path(o.input);
  const result got = volume ? run_volume(o, pipeline, *test, *reference, reference_result)
                            : run_forward(*test, *reference, read_npy_volume(o.input), reference_result);
  const swinfer::tensor_difference d = swinfer::compare_tensors(got.logits, reference_result.logits);
  const double agreement = swinfer::label_agreement(got.labels, reference_result.labels);
  if (volume) print_row("logits", got.logits.shape().str(), d);
  // fp32 must match to float32 rounding; lower precisions are judged by the labels they produce.
  const bool check_values = o.model.precision == fp32;
  std::printf("  logits: max|diff| %.3e = %.3e of max|ref| %.3g%s; label agreement %.5f %% (min %.3f %%)\n",
              d.max_abs, d.relative(), d.max_ref, check_values ? "" : " (not checked below fp32)", 100 * agreement,
              100 * o.min_agreement);
  std::vector<std::string> failures;
  if (!d.finite()) failures.push_back("non-finite logits");
  if (check_values && d.relative() > o.tolerance) {
    failures.push_back(swinfer::detail::concat("relative error ", d.relative(), " above --tolerance ", o.tolerance));
  }
  if (agreement < o.min_agreement) {
    failures.push_back(swinfer::detail::concat("label agreement ", agreement, " below --min-agreement ", o.min_agreement));
  }
  if (!failures.empty()) {
    std::string why;
    for (const auto& f : failures) why += (why.empty() ? "" : "; ") + f;
    swinfer::detail::fail("crosscheck FAILED: ", why);
  }
  std::printf("  PASS\n");
}

}  // namespace

void add_crosscheck_command(CLI::App& app) {
  auto o = std::make_shared<crosscheck_options>();
  CLI::App* cmd = app.add_subcommand(
      "crosscheck", "run one model and input on --backend and on a reference CPU backend; report errors per stage");
  add_model_options(*cmd, o->model, true);
  cmd->get_option("--backend")->description(swinfer::detail::concat(
      "backend under test: ", swinfer::backend_tags::joined(), " (default ", o->model.backend, ")"));
  cmd->add_option("--reference", o->reference,
                  swinfer::detail::concat("reference backend: ", reference_backends::joined(), " (default ",
                                          o->reference, " in this build)"))
      ->check(CLI::IsMember(reference_backends::names()));
  cmd->add_option("--reference-precision", o->reference_precision,
                  "the reference's precision: fp32 (default), or int8 with the same scales (the default for "
                  "--precision int8; fp32 then measures what quantization changes)")
      ->check(CLI::IsMember({std::string(swinfer::tag_name<swinfer::precision::fp32>()),
                             std::string(swinfer::tag_name<swinfer::precision::int8>())}));
  cmd->add_option("--input,-i", o->input, "(N, C, D, H, W) float32 .npy (one pass, every stage compared) or a NIfTI "
                  "volume (pipeline + sliding window, blended logits compared)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--tolerance", o->tolerance, "largest fp32 max|diff| / max|ref logit| accepted")
      ->check(within<double>(tolerance_range, "tolerance"));
  cmd->add_option("--min-agreement", o->min_agreement, "smallest fraction of voxels with the same argmax label")
      ->check(within<double>(agreement_range, "min_agreement"));
  cmd->add_flag("--quiet,-q", o->quiet, "no progress bars");
  auto* volume = "NIfTI input";
  cmd->add_option("--pipeline", o->pipeline, "preprocessing pipeline JSON (docs/preprocessing.md)")
      ->check(CLI::ExistingFile)
      ->group(volume);
  add_window_options(*cmd, o->window, volume);
  cmd->callback([o] { run_crosscheck(*o); });
}

}  // namespace swinfer_tool

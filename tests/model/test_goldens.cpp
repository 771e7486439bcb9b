// The whole network against MONAI's own outputs (and the Swin Fusion author's code): every golden case on every
// CPU backend and layout, the backends against each other, low precision against fp32, and stage outputs against
// the references' intermediates.
#include <catch2/catch.hpp>

#include <cstdio>
#include <map>

#ifdef SWINFER_HAS_ONEDNN
#include <swinfer/backend/onednn/context.hpp>
#endif
#include <swinfer/runtime/backends.hpp>

#include "golden_case.hpp"
#include "tensor_testing.hpp"

namespace {

const std::vector<std::string> kCases = {"default_like", "stressed",     "aniso", "v2_mergingv2", "legacy",
                                         "multichannel", "batch2",       "options", "fs24", "pt_checkpoint",
                                         // Swin Fusion UNETR: the author's code (od, od_avg) and the spec reference
                                         "fusion_od",    "fusion_od_avg", "fusion_od_large", "fusion_2v2_k1",
                                         "fusion_2v2_k3_maxavg", "fusion_1v1", "fusion_2v1"};

/// The cpu backend's bf16 weights in `mode`, every other option at its default.
swinfer::runtime::network_options cpu_options(swinfer::bf16_weight_mode mode) {
  swinfer::runtime::network_options o;
  o.cpu.bf16_weights = mode;
  return o;
}

swinfer::tensor<float> run(const swinfer_test::golden_case& g, const swinfer::network_choice& choice,
                           swinfer::model::stage_observer observer = {},
                           const swinfer::runtime::network_options& options = {}) {
  auto net = swinfer::runtime::make_network(choice, g.config, g.weights, options, g.name);
  if (observer) net->set_observer(std::move(observer));
  return net->forward(g.input);
}

}  // namespace

TEST_CASE("fp32 logits match MONAI on every golden case, backend and layout", "[model][golden]") {
  for (const auto& name : kCases) {
    const swinfer_test::golden_case g(name);
    std::map<std::string, swinfer::tensor<float>> outputs;
    for (const auto& backend : swinfer_test::cpu_backends())
      for (const std::string layout : {"ndhwc", "ncdhw"}) {
        const auto logits = run(g, {backend, "fp32", layout});
        const auto e = swinfer_test::compare(logits, g.logits);
        std::printf("golden %-14s %-7s %-6s max|d| %.3g  max|logit| %.3g  ratio %.2e\n", name.c_str(), backend.c_str(),
                    layout.c_str(), e.max_abs, e.max_ref, e.max_abs / e.max_ref);
        INFO(name << " " << backend << "/" << layout << ": max|d| " << e.max_abs << ", max|logit| " << e.max_ref);
        CHECK(e.max_abs <= 1e-4 * e.max_ref);
        outputs.emplace(backend + "/" + layout, logits.clone());
      }
    // Backends and layouts against each other: all four are independent implementations of the same graph.
    const auto& first = outputs.begin()->second;
    for (const auto& [key, out] : outputs) {
      const auto e = swinfer_test::compare(out, first);
      INFO(name << " " << key << " vs " << outputs.begin()->first << ": max|d| " << e.max_abs);
      CHECK(e.max_abs <= 1e-4 * e.max_ref);
    }
  }
}

TEST_CASE("stage outputs match the references' intermediates", "[model][golden]") {
  const std::string name = GENERATE(as<std::string>(), "stressed", "fusion_od");
  const swinfer_test::golden_case g(name);
  for (const auto& backend : swinfer_test::cpu_backends()) {
    std::vector<std::string> checked;
    run(g, {backend, "fp32", "ncdhw"}, [&](std::string_view stage, const swinfer::tensor<float>& value) {
      const auto want = g.intermediate(std::string(stage));
      if (!want) return;
      const auto e = swinfer_test::compare(value, *want);
      INFO(name << " " << backend << " stage " << stage << ": max|d| " << e.max_abs << ", max|ref| " << e.max_ref);
      CHECK(e.max_abs <= 1e-4 * std::max(1.0, e.max_ref));
      checked.emplace_back(stage);
    });
    INFO(name << " " << backend << " checked " << checked.size() << " stages");
    CHECK(checked.size() >= 9);
  }
}

// Measured on the well-conditioned cases (MONAI's own initialisation; fs24 with an 8-voxel bottleneck). The
// 32x32x64 stressed cases end in a 2-voxel bottleneck whose InstanceNorm amplifies any rounding (even fp32 vs fp64
// differs by 1e-4 there), so they say nothing about a precision.
TEST_CASE("bf16 and fp16 storage stay within 1e-2 relative L2 of fp32", "[model][precision]") {
  struct expectation {
    swinfer::network_choice choice;
    double max_rel_l2;
    swinfer::bf16_weight_mode bf16_weights = swinfer::bf16_weight_mode::exact;
  };
  std::vector<expectation> low = {{{"cpu", "bf16", "ndhwc"}, 1e-2}, {{"cpu", "fp16", "ndhwc"}, 1e-2},
                                  {{"cpu", "bf16", "ncdhw"}, 1e-2}, {{"cpu", "fp16", "ncdhw"}, 1e-2}};
  // Weights rounded to bf16 as well (the AVX-512 BF16 pair dot product where the CPU has it): oneDNN's contract.
  low.push_back({{"cpu", "bf16", "ndhwc"}, 2e-2, swinfer::bf16_weight_mode::rounded});
#ifdef SWINFER_HAS_ONEDNN
  // oneDNN's bf16 primitives also round weights and attention internals to bf16; oneDNN 2.6 has them on AVX-512
  // CPUs only.
  if (swinfer::onednn::context::has_bf16_kernels()) low.push_back({{"onednn", "bf16", "ndhwc"}, 2e-2});
#endif
  for (const std::string name : {"pt_checkpoint", "fs24"}) {
    const swinfer_test::golden_case g(name);
    const auto fp32 = run(g, {"cpu", "fp32", "ndhwc"});
    for (const auto& [choice, limit, bf16_weights] : low) {
      const auto logits = run(g, choice, {}, cpu_options(bf16_weights));
      const auto e = swinfer_test::compare(logits, fp32);
      const char* weights = bf16_weights == swinfer::bf16_weight_mode::rounded ? " (rounded weights)" : "";
      std::printf("precision %-14s %s/%s/%s%s rel L2 %.3e  max|d| %.3g\n", name.c_str(), choice.backend.c_str(),
                  choice.precision.c_str(), choice.layout.c_str(), weights, e.rel_l2, e.max_abs);
      INFO(name << " " << choice.backend << "/" << choice.precision << "/" << choice.layout << weights << ": rel L2 "
                << e.rel_l2);
      CHECK(e.rel_l2 <= limit);
    }
  }
}

TEST_CASE("whole-volume inference through the model equals the predictor sliding window", "[model][sliding_window]") {
  // network::infer_volume / segment_volume run the model's own sliding window (detail::run_sliding_window with the
  // backend's window operations); on host backends they must give the predictor overload's logits bit for bit, and
  // labels equal to softmax then argmax of them.
  const swinfer_test::golden_case g("pt_checkpoint");
  swinfer::tensor<float> image({1, 1, 36, 32, 56}, swinfer::layout_kind::ndhwc);  // padded on the last axis
  swinfer_test::fill_random(image, -2.0f, 2.0f);
  swinfer::sliding_window_options options;
  options.roi = {32, 32, 64};
  options.overlap = 0.5;
  options.mode = swinfer::blend_mode::gaussian;
  for (const auto& backend : swinfer_test::cpu_backends()) {
    CAPTURE(backend);
    auto net = swinfer::runtime::make_network({backend, "fp32", "ncdhw"}, g.config, g.weights, swinfer::engine_options{},
                                         g.name);
    const auto want = swinfer::sliding_window_inference(
        image, options, [&](const swinfer::tensor<float>& batch) { return net->forward(batch); });
    std::int64_t calls = 0;
    const auto logits = net->infer_volume(image, options, [&](std::int64_t, std::int64_t) { ++calls; });
    CHECK(calls == 2);
    CHECK(logits.layout() == image.layout());
    CHECK(swinfer_test::compare(logits, want).max_abs == 0.0);
    swinfer::tensor<float> also_logits;
    const auto labels = net->segment_volume(image, options, {}, &also_logits);
    CHECK(swinfer_test::compare(also_logits, want).max_abs == 0.0);
    const auto want_labels = swinfer::argmax_channels<std::uint8_t>(swinfer::softmax_channels(want));
    REQUIRE(labels.shape() == want_labels.shape());
    std::int64_t differences = 0;
    for (std::int64_t i = 0; i < labels.size(); ++i) differences += labels.data()[i] != want_labels.data()[i];
    CHECK(differences == 0);
  }
}

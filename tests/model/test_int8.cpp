// precision::int8 on the whole network against an independent reference: the same scheme as fake quantization in
// PyTorch on MONAI's SwinUNETR (tools/goldens/make_int8_goldens.py, tests/data/goldens/int8), with the scales of
// its calibration file. Deliberately wrong variants of the reference (a wrong scale, per-tensor weight scales, no
// zero-point compensation) lie outside the tolerance, so the comparison can tell them apart; on the cpu backend and,
// where it is built, onednn. Dynamic scales (no calibration) against float32 and across backends. The calibration
// file's errors: missing, for other weights, truncated. And what calibration observes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>

#include <swinfer/inference/int8_calibrator.hpp>

#include "backends.hpp"
#include "golden_case.hpp"
#include "tensor_testing.hpp"

namespace {

std::filesystem::path int8_dir() { return swinfer_test::goldens_dir() / "int8"; }

swinfer::tensor<float> read_logits(const std::string& file) {
  const auto a = swinfer::read_npy((int8_dir() / file).string());
  return swinfer_test::to_tensor(a.shape, a.data);
}

swinfer::engine_options with_calibration(const std::string& path) {
  swinfer::engine_options o;
  o.calibration = std::make_shared<const swinfer::int8_calibration>(swinfer::read_calibration(path));
  return o;
}

}  // namespace

TEST_CASE("int8 logits match PyTorch fake quantization of MONAI's SwinUNETR with the same scales", "[model][int8]") {
  const swinfer_test::golden_case g("pt_checkpoint");
  for (const auto& backend : swinfer_test::cpu_backends()) {
    for (const std::string layout : {"ndhwc", "ncdhw"}) {
      const std::string where = backend + "/" + layout;
      SECTION("spot check (4 layers in int8), tight, and the wrong variants outside the tolerance: " + where) {
        const auto options = with_calibration((int8_dir() / "calibration.json").string());
        auto net = swinfer_cli::make_network({backend, "int8", layout}, g.config, g.weights, options, g.name);
        const auto got = net->forward(g.input);
        const auto e = swinfer_test::compare(got, read_logits("logits.npy"));
        std::printf("int8 spot check %s: max|d| %.3g  rel L2 %.3g  max|logit| %.3g\n", where.c_str(), e.max_abs,
                    e.rel_l2, e.max_ref);
        // Isolated requantization flips (an input a float ulp from a rounding boundary: one step of the head's
        // input moves a logit by ~0.7 % of the largest) and float32 rounding.
        const double tolerance = 2e-3;
        INFO(where << ": max|d| " << e.max_abs << ", rel L2 " << e.rel_l2);
        CHECK(e.rel_l2 <= tolerance);
        CHECK(e.max_abs <= 0.02 * e.max_ref);
        for (const char* wrong : {"logits_wrong_scale.npy", "logits_per_tensor_weights.npy",
                                  "logits_no_zero_point_compensation.npy"}) {
          const auto w = swinfer_test::compare(got, read_logits(wrong));
          std::printf("  vs %s: rel L2 %.3g\n", wrong, w.rel_l2);
          INFO(wrong << ": rel L2 " << w.rel_l2);
          CHECK(w.rel_l2 > 5 * tolerance);
        }
        CHECK(swinfer_test::compare(got, g.logits).rel_l2 > 5 * tolerance);  // and the float model too
      }
      SECTION("every layer in int8, statistically: " + where) {
        const auto options = with_calibration((int8_dir() / "calibration_all.json").string());
        auto net = swinfer_cli::make_network({backend, "int8", layout}, g.config, g.weights, options, g.name);
        const auto got = net->forward(g.input);
        const auto want = read_logits("logits_all.npy");
        const auto e = swinfer_test::compare(got, want);
        const auto to_float = swinfer_test::compare(got, g.logits);
        std::printf("int8 all layers %s: rel L2 %.3g to the reference, %.3g to float32\n", where.c_str(), e.rel_l2,
                    to_float.rel_l2);
        // Flips compound through 28 quantized layers (make_int8_goldens.py): measured 2.1 % relative L2.
        CHECK(e.rel_l2 <= 0.03);
        // The argmax over the two classes agrees almost everywhere.
        std::int64_t agree = 0, voxels = 0;
        const auto& s = got.shape();
        for (std::int64_t z = 0; z < s.d; ++z)
          for (std::int64_t y = 0; y < s.h; ++y)
            for (std::int64_t x = 0; x < s.w; ++x, ++voxels)
              agree += (got(0, 1, z, y, x) > got(0, 0, z, y, x)) == (want(0, 1, z, y, x) > want(0, 0, z, y, x));
        INFO("label agreement " << double(agree) / double(voxels));
        CHECK(double(agree) >= 0.99 * double(voxels));
      }
    }
  }
}

TEST_CASE("int8 with dynamic scales runs without a calibration, near float32, alike on every backend",
          "[model][int8]") {
  // Each convolution's scale is its input's max|x| / 127 (ops::ref against the kernels with the same dynamic scale:
  // tests/ops/int8_op_suite.hpp); here the whole network against MONAI's float32 logits.
  const swinfer_test::golden_case g("pt_checkpoint");
  swinfer::engine_options dynamic;
  dynamic.int8_dynamic = true;
  std::vector<swinfer::tensor<float>> results;
  for (const auto& backend : swinfer_test::cpu_backends()) {
    for (const std::string layout : {"ndhwc", "ncdhw"}) {
      auto net = swinfer_cli::make_network({backend, "int8", layout}, g.config, g.weights, dynamic, g.name);
      results.push_back(net->forward(g.input));
      const auto e = swinfer_test::compare(results.back(), g.logits);
      std::printf("int8 dynamic %s/%s: rel L2 %.3g to float32\n", backend.c_str(), layout.c_str(), e.rel_l2);
      INFO(backend << "/" << layout << ": rel L2 to float32 " << e.rel_l2);
      CHECK(e.rel_l2 > 1e-3);  // quantized
      CHECK(e.rel_l2 < 0.1);
    }
  }
  // Backends and layouts differ only where float rounding moves an input across a rounding boundary.
  for (std::size_t i = 1; i < results.size(); ++i) {
    const auto e = swinfer_test::compare(results[i], results[0]);
    INFO("run " << i << " against the first: rel L2 " << e.rel_l2);
    CHECK(e.rel_l2 < 0.03);
  }

  swinfer::engine_options both = dynamic;
  both.calibration = with_calibration((int8_dir() / "calibration.json").string()).calibration;
  CHECK_THROWS_WITH(swinfer_cli::make_network({"cpu", "int8", "ndhwc"}, g.config, g.weights, both, g.name),
                    Catch::Contains("a calibration or dynamic scales") && Catch::Contains("not both"));
}

TEST_CASE("int8 without a usable calibration is a clear error", "[model][int8]") {
  const swinfer_test::golden_case g("pt_checkpoint");
  const auto make = [&](const swinfer::engine_options& o) {
    return swinfer_cli::make_network({"cpu", "int8", "ndhwc"}, g.config, g.weights, o, "model.pt");
  };
  CHECK_THROWS_WITH(make({}), Catch::Contains("needs a calibration") && Catch::Contains("swinfer calibrate"));

  // Made for other weights: one value changed.
  swinfer::state_dict other;
  for (const auto& key : g.weights.keys()) {
    swinfer::weight w = g.weights.at(key);
    if (key == "out.conv.conv.bias") w.values[0] += 1.0f;
    other.insert(key, std::move(w));
  }
  CHECK_THROWS_WITH(swinfer_cli::make_network({"cpu", "int8", "ndhwc"}, g.config, other,
                                              with_calibration((int8_dir() / "calibration.json").string()), "model.pt"),
                    Catch::Contains("made for other weights") && Catch::Contains("swinfer calibrate --model model.pt"));

  // Truncated, not a calibration, a bad scale.
  const auto tmp = std::filesystem::temp_directory_path() / "swinfer_int8_test";
  std::filesystem::create_directories(tmp);
  std::ifstream in(int8_dir() / "calibration.json");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto write = [&](const std::string& name, const std::string& content) {
    std::ofstream(tmp / name) << content;
    return (tmp / name).string();
  };
  CHECK_THROWS_WITH(swinfer::read_calibration(write("truncated.json", text.substr(0, text.size() / 2))),
                    Catch::Contains("truncated.json") && Catch::Contains("not a complete int8 calibration file"));
  CHECK_THROWS_WITH(swinfer::read_calibration(write("other.json", "{\"in_channels\": 1}")),
                    Catch::Contains("is not an int8 calibration file"));
  std::string bad = text;
  bad.insert(bad.find("\"scale\": ") + 9, "-");
  CHECK_THROWS_WITH(swinfer::read_calibration(write("negative.json", bad)),
                    Catch::Contains("negative.json") && Catch::Contains("positive finite"));
  CHECK_THROWS_WITH(swinfer::read_calibration((tmp / "absent.json").string()), Catch::Contains("cannot open"));
  std::filesystem::remove_all(tmp);
}

TEST_CASE("calibration observes the products of the run-time model", "[model][int8]") {
  const swinfer_test::golden_case g("pt_checkpoint");
  // Only a float32 cpu model shows its products' inputs; another is refused as the calibrator is made.
  auto bf16_model = [&] {
    return swinfer_cli::make_network({"cpu", "bf16", "ndhwc"}, g.config, g.weights, {}, "model.pt");
  };
  CHECK_THROWS_WITH(swinfer::int8_calibrator(bf16_model(), g.weights),
                    Catch::Contains("float32 model on the cpu backend") && Catch::Contains("cpu/bf16/ndhwc"));

  swinfer::int8_calibrator calibrator(swinfer_cli::make_network({}, g.config, g.weights, {}, "model.pt"), g.weights);
  // A fresh image as one window: the patch embedding and encoder1's first convolution take it as it is, so the
  // calibration's max|x| at those two points is the image's own.
  swinfer::tensor<float> image({1, g.config.in_channels, 32, 32, 64}, swinfer::layout_kind::ncdhw);
  swinfer_test::fill_random(image, -3.0f, 2.0f);
  float image_max = 0;
  for (std::int64_t i = 0; i < image.size(); ++i) image_max = std::max(image_max, std::fabs(image.data()[i]));
  swinfer::sliding_window_options window;
  window.roi = {32, 32, 64};
  calibrator.add(image, window, "random");
  const swinfer::int8_calibration c = calibrator.finish({"max"});
  CHECK(c.points.size() == 28);
  for (const char* point : {"swinViT.patch_embed.proj", "encoder1.layer.conv1.conv"}) {
    INFO(point);
    REQUIRE(c.points.count(point) == 1);
    CHECK(c.points.at(point).max_abs == image_max);
    CHECK(c.points.at(point).scale == static_cast<float>(double{image_max} / 127.0));
  }
}

// [gpu] The sliding window's device half (hip::window_ops in the one loop of detail::run_sliding_window): every
// MONAI golden case of tests/data/sliding_window in both layouts, with the window predictions computed on the host
// by the goldens' formula and handed back as device tensors (float32, and float16 storage against the host loop on
// the same rounded predictions); the device softmax argmax against MONAI's AsDiscrete(argmax) of softmax.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include <swinfer/inference/postprocess.hpp>

#include "gpu_test_support.hpp"
#include "inference_testing.hpp"

using namespace swinfer;
using swinfer_gpu_test::gpu;

namespace {

/// The formula predictor over device window batches: down, the host formula, up again as storage type S.
template <class S>
struct device_formula {
  swinfer_test::formula_predictor formula;

  hip::device_tensor<S> operator()(const std::vector<hip::device_tensor<float>>& batches) {
    const tensor<float> x = batches[0].download(gpu());
    const tensor<float> out = batches.size() == 1 ? formula(x) : formula(x, batches[1].download(gpu()));
    tensor<S> stored(out.shape(), out.layout());
    for (std::int64_t i = 0; i < out.size(); ++i) stored.data()[i] = static_cast<S>(out.data()[i]);
    return hip::device_tensor<S>::upload(gpu(), stored);
  }
};

/// One golden case on the device: its inputs in `image_layout`, predictions in the other layout.
template <class S>
tensor<float> run_on_device(const nlohmann::json& c, layout_kind image_layout) {
  const auto options = swinfer_test::case_options(c);
  const auto shape = swinfer_test::shape_of(c.at("shape"));
  const auto image = swinfer_test::formula_tensor(shape, c.at("input_seed").get<std::uint32_t>(), image_layout);
  tensor<float> condition;
  std::vector<const tensor<float>*> inputs{&image};
  if (c.contains("condition_seed")) {
    condition = swinfer_test::formula_tensor(shape, c.at("condition_seed").get<std::uint32_t>(), image_layout);
    inputs.push_back(&condition);
  }
  const auto other = image_layout == layout_kind::ncdhw ? layout_kind::ndhwc : layout_kind::ncdhw;
  device_formula<S> predict{{c.at("k").get<std::int64_t>(), other}};
  hip::window_ops ops(gpu());
  const auto sum = detail::run_sliding_window(ops, inputs, options, predict, {});
  REQUIRE(sum.layout() == image_layout);
  return sum.download(gpu());
}

}  // namespace

TEST_CASE("gpu sliding window: gather, blend and normalise on the device match MONAI", "[gpu][sliding_window]") {
  for (const auto& [name, c] : swinfer_test::sliding_window_manifest().at("cases").items()) {
    const auto expected = swinfer_test::load_golden(name);
    for (const auto layout : {layout_kind::ncdhw, layout_kind::ndhwc}) {
      CAPTURE(name, layout_name(layout));
      const auto got = run_on_device<float>(c, layout);
      const auto e = swinfer_test::compare(got, expected);
      INFO("max|diff| " << e.max_abs);
      REQUIRE(e.count == expected.size());  // NaN: a voxel the normalisation never wrote
      CHECK(e.max_abs <= 1e-6);
    }
  }
}

TEST_CASE("gpu sliding window: float16 predictions blend like the host loop on the same values",
          "[gpu][sliding_window]") {
  const auto& cases = swinfer_test::sliding_window_manifest().at("cases");
  for (const char* name : {"gaussian_sigma02", "pad_reflect"}) {
    const auto& c = cases.at(name);
    CAPTURE(name);
    const auto got = run_on_device<Eigen::half>(c, layout_kind::ndhwc);
    // The host loop with the formula's outputs rounded to float16, as the device received them.
    const auto shape = swinfer_test::shape_of(c.at("shape"));
    const auto image = swinfer_test::formula_tensor(shape, c.at("input_seed").get<std::uint32_t>(), layout_kind::ndhwc);
    swinfer_test::formula_predictor formula{c.at("k").get<std::int64_t>(), layout_kind::ncdhw};
    const auto want = sliding_window_inference(image, swinfer_test::case_options(c), [&](const tensor<float>& x) {
      tensor<float> out = formula(x);
      for (std::int64_t i = 0; i < out.size(); ++i) out.data()[i] = static_cast<float>(Eigen::half(out.data()[i]));
      return out;
    });
    const auto e = swinfer_test::compare(got, want);
    INFO("max|diff| " << e.max_abs);
    REQUIRE(e.count == want.size());
    CHECK(e.max_abs <= 1e-6);
  }
}

TEST_CASE("gpu softmax argmax matches MONAI's AsDiscrete(argmax) of softmax", "[gpu][sliding_window]") {
  const auto layout = GENERATE(layout_kind::ncdhw, layout_kind::ndhwc);
  CAPTURE(layout_name(layout));
  // The golden logits hold exact ties (the lowest channel wins).
  const auto logits = swinfer_test::to_float_tensor(swinfer_test::load_golden("logits"), layout);
  const auto expected = swinfer_test::load_golden("argmax_softmax");
  hip::window_ops ops(gpu());
  const auto labels = ops.softmax_argmax(hip::device_tensor<float>::upload(gpu(), logits));
  REQUIRE(labels.shape() == expected.shape());
  std::int64_t differences = 0;
  for (std::int64_t i = 0; i < expected.size(); ++i) {
    const auto s = labels.shape();
    const std::int64_t x = i % s.w, y = i / s.w % s.h, z = i / (s.w * s.h) % s.d, n = i / (s.w * s.h * s.d);
    differences += labels(n, 0, z, y, x) != static_cast<std::uint8_t>(expected.data()[i]);
  }
  CHECK(differences == 0);

  // NaN wins as on the host; a NaN anywhere makes the softmax NaN, so the first channel is taken.
  tensor<float> s({1, 3, 1, 1, 2}, layout);
  s(0, 0, 0, 0, 0) = 1, s(0, 1, 0, 0, 0) = std::nanf(""), s(0, 2, 0, 0, 0) = 5;
  s(0, 0, 0, 0, 1) = 2, s(0, 1, 0, 0, 1) = 3, s(0, 2, 0, 0, 1) = 1;
  const auto host = argmax_channels<std::uint8_t>(softmax_channels(s));
  const auto device = ops.softmax_argmax(hip::device_tensor<float>::upload(gpu(), s));
  CHECK(int{device(0, 0, 0, 0, 0)} == int{host(0, 0, 0, 0, 0)});
  CHECK(int{device(0, 0, 0, 0, 1)} == 1);
}

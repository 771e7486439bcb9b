// Post-processing against MONAI: Activations (softmax, sigmoid), AsDiscrete(argmax) and
// KeepLargestConnectedComponent goldens, plus label volumes.
#include <catch2/catch.hpp>

#include "inference_testing.hpp"
#include "swinfer/inference/postprocess.hpp"
#include "tensor_testing.hpp"

using swinfer::layout_kind;
using swinfer::tensor;

namespace {

/// A stored label volume (float .npy) as integer labels.
template <class Label>
tensor<Label> load_labels(const std::string& name) {
  const auto f = swinfer_test::load_golden(name);
  tensor<Label> t(f.shape(), layout_kind::ncdhw);
  for (std::int64_t i = 0; i < f.size(); ++i) t.data()[i] = static_cast<Label>(f.data()[i]);
  return t;
}

template <class Label>
std::int64_t count_differences(const tensor<Label>& a, const tensor<Label>& b) {
  REQUIRE(a.shape() == b.shape());
  std::int64_t n = 0;
  for (std::int64_t i = 0; i < a.size(); ++i) n += a.data()[i] != b.data()[i];
  return n;
}

}  // namespace

TEST_CASE("softmax sigmoid and argmax match MONAI", "[inference][postprocess][golden]") {
  const auto layout = GENERATE(layout_kind::ncdhw, layout_kind::ndhwc);
  const auto logits = swinfer_test::to_float_tensor(swinfer_test::load_golden("logits"), layout);
  const auto probabilities = swinfer::softmax_channels(logits, 2);
  CHECK(probabilities.layout() == layout);
  CHECK(swinfer_test::compare(probabilities, swinfer_test::load_golden("softmax")).max_abs <= 1e-6);
  CHECK(swinfer_test::compare(swinfer::sigmoid(logits), swinfer_test::load_golden("sigmoid")).max_abs <= 1e-6);
  // The logits hold exact ties (channel 3 = 1, channel 4 = 0 on some voxels): the lowest channel wins.
  CHECK(count_differences(swinfer::argmax_channels(logits), load_labels<std::uint8_t>("argmax_logits")) == 0);
  CHECK(count_differences(swinfer::argmax_channels<std::int32_t>(probabilities),
                          load_labels<std::int32_t>("argmax_softmax")) == 0);
}

TEST_CASE("argmax: NaN wins like torch.argmax and the label type must fit", "[inference][postprocess]") {
  tensor<float> s({1, 3, 1, 1, 2}, layout_kind::ncdhw);
  s(0, 0, 0, 0, 0) = 1, s(0, 1, 0, 0, 0) = std::nanf(""), s(0, 2, 0, 0, 0) = 5;
  s(0, 0, 0, 0, 1) = 2, s(0, 1, 0, 0, 1) = 2, s(0, 2, 0, 0, 1) = 1;
  const auto a = swinfer::argmax_channels(s);
  CHECK(int{a(0, 0, 0, 0, 0)} == 1);
  CHECK(int{a(0, 0, 0, 0, 1)} == 0);
  tensor<float> wide({1, 257, 1, 1, 1}, layout_kind::ncdhw);
  wide.fill(0.0f);
  CHECK_THROWS_WITH(swinfer::argmax_channels<std::uint8_t>(wide), Catch::Contains("257 channels"));
  CHECK(swinfer::argmax_channels<std::int16_t>(wide)(0, 0, 0, 0, 0) == 0);
}

TEST_CASE("threshold_channels keeps scores >= the threshold per channel, as AsDiscrete(threshold)", "[inference][postprocess]") {
  for (const auto kind : {layout_kind::ncdhw, layout_kind::ndhwc}) {
    tensor<float> s({1, 2, 1, 1, 3}, kind);
    const float values[2][3] = {{0.5f, 0.49999997f, 0.9f}, {std::nanf(""), 1.0f, 0.0f}};
    for (int c = 0; c < 2; ++c)
      for (int x = 0; x < 3; ++x) s(0, c, 0, 0, x) = values[c][x];
    const auto m = swinfer::threshold_channels(s, 0.5f);
    const int want[2][3] = {{1, 0, 1}, {0, 1, 0}};  // NaN >= t is false in torch too
    for (int c = 0; c < 2; ++c)
      for (int x = 0; x < 3; ++x) CHECK(int{m(0, c, 0, 0, x)} == want[c][x]);
  }
}

TEST_CASE("keep_largest_connected_component matches MONAI", "[inference][postprocess][golden]") {
  const auto& variants = swinfer_test::sliding_window_manifest().at("keep_largest_connected_component");
  for (const auto& [name, kwargs] : variants.items()) {
    CAPTURE(name);
    auto labels = load_labels<std::uint8_t>(name == "lcc_ties" ? "labels_ties" : "labels");
    swinfer::largest_component_options o;
    o.connectivity = std::array{6, 18, 26}[static_cast<std::size_t>(kwargs.value("connectivity", 3) - 1)];
    o.num_components = kwargs.value("num_components", std::int64_t{1});
    o.applied_labels = kwargs.value("applied_labels", std::vector<std::int64_t>{});
    swinfer::keep_largest_connected_component(labels, o);
    CHECK(count_differences(labels, load_labels<std::uint8_t>(name)) == 0);
  }
}

TEST_CASE("keep_largest_connected_component: batch items are independent; errors", "[inference][postprocess]") {
  // Item 0: label 1 in a 2-voxel and a 1-voxel piece; item 1: the same shifted, so its small piece comes first.
  tensor<std::int32_t> l({2, 1, 1, 1, 6}, layout_kind::ndhwc);
  const std::int32_t in[2][6] = {{1, 1, 0, 1, 0, 2}, {1, 0, 1, 1, 0, 2}};
  for (int n = 0; n < 2; ++n)
    for (int x = 0; x < 6; ++x) l(n, 0, 0, 0, x) = in[n][x];
  swinfer::keep_largest_connected_component(l);
  const std::int32_t expected[2][6] = {{1, 1, 0, 0, 0, 2}, {0, 0, 1, 1, 0, 2}};
  for (int n = 0; n < 2; ++n)
    for (int x = 0; x < 6; ++x) CHECK(l(n, 0, 0, 0, x) == expected[n][x]);

  swinfer::largest_component_options o;
  o.connectivity = 8;
  CHECK_THROWS_WITH(swinfer::keep_largest_connected_component(l, o), Catch::Contains("connectivity 8"));
  o = {};
  o.num_components = 0;
  CHECK_THROWS_WITH(swinfer::keep_largest_connected_component(l, o), Catch::Contains("num_components 0"));
  tensor<std::int32_t> two_channels({1, 2, 1, 1, 1}, layout_kind::ncdhw);
  CHECK_THROWS_WITH(swinfer::keep_largest_connected_component(two_channels), Catch::Contains("(1, 2, 1, 1, 1)"));
}

TEST_CASE("label_volumes counts voxels and converts to millilitres", "[inference][postprocess]") {
  const auto labels = load_labels<std::uint8_t>("labels");
  const auto volumes = swinfer::label_volumes(labels, {1.5, 1.5, 2.0});
  std::vector<std::int64_t> brute(4);
  for (std::int64_t i = 0; i < labels.size(); ++i) ++brute[labels.data()[i]];
  REQUIRE(volumes.size() == 4);
  for (std::size_t i = 0; i < 4; ++i) {
    CHECK(volumes[i].label == static_cast<std::int64_t>(i));
    CHECK(volumes[i].voxels == brute[i]);
    CHECK(volumes[i].millilitres == Approx(static_cast<double>(brute[i]) * 4.5 / 1000.0));
  }
  tensor<std::int16_t> negative({2, 1, 1, 1, 3}, layout_kind::ncdhw);
  negative(1, 0, 0, 0, 0) = -2, negative(1, 0, 0, 0, 1) = 7, negative(1, 0, 0, 0, 2) = 7;
  const auto v = swinfer::label_volumes(negative, {10.0, 10.0, 10.0}, 1);
  REQUIRE(v.size() == 2);
  CHECK((v[0].label == -2 && v[0].voxels == 1 && v[0].millilitres == Approx(1.0)));
  CHECK((v[1].label == 7 && v[1].voxels == 2 && v[1].millilitres == Approx(2.0)));
  CHECK_THROWS_WITH(swinfer::label_volumes(labels, {1.0, 0.0, 1.0}), Catch::Contains("spacing 0 mm"));
  CHECK_THROWS_WITH(swinfer::label_volumes(labels, {1.0, 1.0, 1.0}, 1), Catch::Contains("item 1"));
}

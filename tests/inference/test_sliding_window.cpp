// sliding_window_inference against MONAI 1.5.0's (and, for `condition`, 1.6.1's) outputs, in both layouts, plus
// progress reporting, padding and the errors.
#include <catch2/catch.hpp>

#include "inference_testing.hpp"
#include "swinfer/inference/sliding_window.hpp"
#include "swinfer/inference/spatial_pad.hpp"
#include "tensor_testing.hpp"

using swinfer::layout_kind;
using swinfer::tensor;

namespace {

tensor<float> run_golden_case(const std::string& name, layout_kind image_layout, layout_kind output_layout,
                              int threads) {
  const auto& c = swinfer_test::sliding_window_manifest().at("cases").at(name);
  auto options = swinfer_test::case_options(c);
  options.threads = threads;
  const auto shape = swinfer_test::shape_of(c.at("shape"));
  const auto seed = c.at("input_seed").get<std::uint32_t>();
  const auto image = swinfer_test::formula_tensor(shape, seed, image_layout);
  swinfer_test::formula_predictor predict{c.at("k").get<std::int64_t>(), output_layout};
  if (c.contains("condition_seed")) {
    const auto condition_seed = c.at("condition_seed").get<std::uint32_t>();
    const auto condition = swinfer_test::formula_tensor(shape, condition_seed, image_layout);
    return swinfer::sliding_window_inference(image, condition, options, predict);
  }
  return swinfer::sliding_window_inference(image, options, predict);
}

}  // namespace

TEST_CASE("sliding_window_inference matches MONAI", "[inference][sliding_window][golden]") {
  for (const auto& [name, c] : swinfer_test::sliding_window_manifest().at("cases").items()) {
    const auto expected = swinfer_test::load_golden(name);
    for (const auto layout : {layout_kind::ncdhw, layout_kind::ndhwc}) {
      // The predictor answers in the other layout, so the blend's strided path is exercised too.
      const auto other = layout == layout_kind::ncdhw ? layout_kind::ndhwc : layout_kind::ncdhw;
      for (const auto output_layout : {layout, other}) {
        CAPTURE(name, swinfer::layout_name(layout), swinfer::layout_name(output_layout));
        const auto got = run_golden_case(name, layout, output_layout, 3);
        CHECK(got.layout() == layout);
        const auto err = swinfer_test::compare(got, expected);
        CHECK(err.max_abs <= 1e-6);
      }
    }
  }
}

TEST_CASE("sliding_window_inference: MONAI 1.6.1 gives the same results as 1.5.0", "[inference][sliding_window]") {
  for (const auto& [name, c] : swinfer_test::sliding_window_manifest().at("cases").items())
    if (c.contains("max_abs_diff_1.6.1")) {
      CAPTURE(name);
      CHECK(c.at("max_abs_diff_1.6.1").get<double>() == 0.0);
    }
}

TEST_CASE("sliding_window_inference: threads do not change the result", "[inference][sliding_window]") {
  const auto one = run_golden_case("batch2_overlap07", layout_kind::ncdhw, layout_kind::ncdhw, 1);
  const auto many = run_golden_case("batch2_overlap07", layout_kind::ncdhw, layout_kind::ncdhw, 0);
  CHECK(swinfer_test::compare(one, many).max_abs == 0.0);
}

TEST_CASE("sliding_window_inference: batches and progress", "[inference][sliding_window]") {
  // 2 items x 48 windows in calls of 5: 20 calls, the last one holding 1 window.
  const auto& c = swinfer_test::sliding_window_manifest().at("cases").at("batch2_overlap07");
  const auto image = swinfer_test::formula_tensor(swinfer_test::shape_of(c.at("shape")), 1);
  std::vector<std::int64_t> batch_sizes;
  std::vector<std::pair<std::int64_t, std::int64_t>> reports;
  swinfer_test::formula_predictor formula;
  const auto out = swinfer::sliding_window_inference(
      image, swinfer_test::case_options(c),
      [&](const tensor<float>& batch) {
        batch_sizes.push_back(batch.shape().n);
        return formula(batch);
      },
      [&](std::int64_t done, std::int64_t total) { reports.emplace_back(done, total); });
  REQUIRE(batch_sizes.size() == 20);
  CHECK(std::all_of(batch_sizes.begin(), batch_sizes.end() - 1, [](auto n) { return n == 5; }));
  CHECK(batch_sizes.back() == 1);
  REQUIRE(reports.size() == 20);
  CHECK(reports[0] == std::pair<std::int64_t, std::int64_t>{5, 96});
  CHECK(reports.back() == std::pair<std::int64_t, std::int64_t>{96, 96});
  CHECK(out.shape() == swinfer::shape5{2, 2, 26, 28, 21});
}

TEST_CASE("pad_spatial follows torch.nn.functional.pad", "[inference][sliding_window]") {
  tensor<float> x({1, 1, 1, 1, 3}, layout_kind::ncdhw);
  for (int i = 0; i < 3; ++i) x(0, 0, 0, 0, i) = static_cast<float>(i);
  const auto row = [](const tensor<float>& t) { return std::vector<float>(t.data(), t.data() + t.size()); };
  using V = std::vector<float>;
  CHECK(row(swinfer::pad_spatial(x, {0, 0, 2}, {0, 0, 2}, swinfer::pad_mode::reflect)) == V{2, 1, 0, 1, 2, 1, 0});
  CHECK(row(swinfer::pad_spatial(x, {0, 0, 3}, {0, 0, 3}, swinfer::pad_mode::circular)) ==
        V{0, 1, 2, 0, 1, 2, 0, 1, 2});
  CHECK(row(swinfer::pad_spatial(x, {0, 0, 2}, {0, 0, 1}, swinfer::pad_mode::replicate)) == V{0, 0, 0, 1, 2, 2});
  CHECK(row(swinfer::pad_spatial(x, {0, 0, 1}, {0, 0, 2}, swinfer::pad_mode::constant, -1)) == V{-1, 0, 1, 2, -1, -1});
  CHECK_THROWS_WITH(swinfer::pad_spatial(x, {0, 0, 3}, {0, 0, 0}, swinfer::pad_mode::reflect),
                    Catch::Contains("reflect padding of (3, 0)"));
  CHECK_THROWS_WITH(swinfer::pad_spatial(x, {0, 0, 4}, {0, 0, 1}, swinfer::pad_mode::circular),
                    Catch::Contains("circular padding of (4, 1)"));
}

TEST_CASE("sliding_window_inference: errors name the value at fault", "[inference][sliding_window]") {
  const auto image = swinfer_test::formula_tensor({1, 1, 20, 20, 20}, 3);
  swinfer_test::formula_predictor predict;
  swinfer::sliding_window_options o;
  o.roi = {8, 8, 8};
  const auto run = [&](const swinfer::sliding_window_options& options) {
    return swinfer::sliding_window_inference(image, options, predict);
  };
  SECTION("roi rank") {
    o.roi = {8, 8};
    CHECK_THROWS_WITH(run(o), Catch::Contains("roi has 2 values"));
  }
  SECTION("overlap out of range") {
    o.overlap = {0.5, 1.0, 0.5};
    CHECK_THROWS_WITH(run(o), Catch::Contains("'overlap' is 1; allowed range [0, 0.99]"));
    o.overlap = -0.25;
    CHECK_THROWS_WITH(run(o), Catch::Contains("'overlap' is -0.25"));
  }
  SECTION("sw_batch_size") {
    o.sw_batch_size = 0;
    CHECK_THROWS_WITH(run(o), Catch::Contains("'sw_batch_size' is 0; allowed range [1, 1024]"));
  }
  SECTION("sigma_scale") {
    o.mode = swinfer::blend_mode::gaussian;
    o.sigma_scale = -0.1;
    CHECK_THROWS_WITH(run(o), Catch::Contains("'sigma_scale' is -0.1"));
  }
  SECTION("roi past its range; 0 takes the image's extent") {
    o.roi = {8, 5000, 8};
    CHECK_THROWS_WITH(run(o), Catch::Contains("'roi' is 5000; allowed range [1, 4096] (or 0 for the image's extent)"));
    o.roi = 0;
    CHECK_NOTHROW(run(o));
  }
  SECTION("threads") {
    o.threads = 100000;
    CHECK_THROWS_WITH(run(o), Catch::Contains("'threads' is 100000; allowed range [0, 4096]"));
  }
  SECTION("predictor output of the wrong spatial size") {
    const auto wrong = [](const tensor<float>& b) {
      return tensor<float>({b.shape().n, 2, b.shape().d, b.shape().h, b.shape().w - 1}, layout_kind::ncdhw);
    };
    CHECK_THROWS_WITH(swinfer::sliding_window_inference(image, o, wrong),
                      Catch::Contains("returned shape (1, 2, 8, 8, 7)"));
  }
  SECTION("predictor changing its channel count") {
    int calls = 0;
    const auto changing = [&](const tensor<float>& b) {
      return tensor<float>({b.shape().n, ++calls == 1 ? 2 : 3, b.shape().d, b.shape().h, b.shape().w},
                           layout_kind::ncdhw);
    };
    CHECK_THROWS_WITH(swinfer::sliding_window_inference(image, o, changing), Catch::Contains("(1, 3, 8, 8, 8)"));
  }
  SECTION("padding that torch refuses") {
    const auto thin = swinfer_test::formula_tensor({1, 1, 3, 20, 20}, 3);
    o.padding_mode = swinfer::pad_mode::reflect;
    CHECK_THROWS_WITH(swinfer::sliding_window_inference(thin, o, predict),
                      Catch::Contains("reflect padding of (2, 3)"));
  }
  SECTION("condition of another shape") {
    const auto condition = swinfer_test::formula_tensor({1, 1, 20, 20, 19}, 3);
    CHECK_THROWS_WITH(swinfer::sliding_window_inference(image, condition, o, predict),
                      Catch::Contains("condition has shape (1, 1, 20, 20, 19)"));
  }
}
